"""RunContext.figure measures the tight box once for the png and the pdf: the png must be the pixels that
savefig(bbox_inches="tight") gives, for the figures studies draw (legends placed at draw time, colorbars, a
suptitle, log axes)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.image import imread

from theorylab.core.context import FIGURE_DPI, RunContext
from theorylab.core.plotting import new_figure


def _figure(with_image: bool):
    fig, axes = new_figure(2, 2)
    rng = np.random.default_rng(0)
    for i, ax in enumerate(axes.ravel()):
        if with_image and i == 0:
            fig.colorbar(ax.imshow(rng.standard_normal((50, 20)), aspect="auto"), ax=ax)
        for k in range(4):
            ax.plot(np.abs(rng.standard_normal(60).cumsum()) + 0.1, label=f"a long legend entry {k}")
        ax.set_xlabel("step $t$")
        ax.set_ylabel("a wide y label")
        ax.set_title(f"panel {i}")
        ax.legend(loc="best")
        if i == 3:
            ax.set_yscale("log")
    fig.suptitle("a suptitle wider than the axes above it, to move the box")
    return fig


@pytest.mark.parametrize("with_image", [False, True])
def test_figure_png_equals_savefig_tight(tmp_path, with_image):
    ref = tmp_path / "ref.png"
    _figure(with_image).savefig(ref, dpi=FIGURE_DPI, bbox_inches="tight")
    png = RunContext(0, workdir=tmp_path / "run").figure("f", _figure(with_image))
    a, b = imread(ref), imread(png)
    assert a.shape == b.shape and np.array_equal(a, b)
    assert (tmp_path / "run" / "figures" / "f.pdf").stat().st_size > 1000


def test_timed_records_the_block_wall_time():
    import time

    from theorylab.core.context import RunContext

    ctx = RunContext(0)
    with ctx.timed("phase"):
        time.sleep(0.05)
    assert 0.04 < ctx.scalars["phase_s"] < 1.0
    try:
        with ctx.timed("broken"):
            raise KeyError("x")
    except KeyError:
        pass
    assert "broken_s" in ctx.scalars  # recorded even when the block raises
