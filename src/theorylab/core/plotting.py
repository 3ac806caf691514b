"""House plotting style: theory as lines, simulation as markers with error bars over seeds/draws."""

from __future__ import annotations

from typing import Any, Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure

STYLE = {
    "figure.figsize": (5.2, 3.8),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "font.size": 9,
}


def new_figure(ncols: int = 1, nrows: int = 1, width: float | None = None, height: float | None = None) -> tuple[Figure, Any]:
    """A figure and its axes in the house style.

    A plain :class:`matplotlib.figure.Figure`, not a pyplot one: runs write files and never open
    windows, so no backend is chosen (a notebook user's backend is left alone) and nothing needs
    closing."""
    with matplotlib.rc_context(STYLE):
        w = width or STYLE["figure.figsize"][0] * ncols
        h = height or STYLE["figure.figsize"][1] * nrows
        fig = Figure(figsize=(w, h))
        axes = fig.subplots(nrows, ncols, squeeze=True)
        for ax in np.atleast_1d(axes).ravel():
            ax.grid(True, alpha=STYLE["grid.alpha"])
            ax.spines["top"].set_visible(False)
            ax.spines["right"].set_visible(False)
    return fig, axes


def theory_line(ax: Any, x: Sequence[float], y: Sequence[float], label: str | None = None, **kw: Any) -> Any:
    """Theory: a solid line."""
    kw.setdefault("lw", 1.6)
    return ax.plot(x, y, "-", label=label, **kw)[0]


def sim_points(ax: Any, x: Sequence[float], y: Sequence[float], err: Sequence[float] | Any = None, label: str | None = None, **kw: Any) -> Any:
    """Simulation: markers, with error bars (e.g. 2 standard errors over seeds) when given."""
    kw.setdefault("ms", 4)
    kw.setdefault("capsize", 2)
    kw.setdefault("elinewidth", 0.8)
    return ax.errorbar(x, y, yerr=err, fmt="o", label=label, mfc="none", **kw)


def color(i: int) -> str:
    return f"C{i % 10}"


def log_ticks(ax: Any, values: Sequence[float]) -> None:
    """Log-scaled x axis labelled exactly at ``values`` (e.g. the sample sizes that were run)."""
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.set_xticks(list(values))
    ax.set_xticklabels([f"{v:g}" for v in values])
    ax.xaxis.set_minor_formatter(NullFormatter())
