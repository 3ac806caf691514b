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


def new_figure(
    ncols: int = 1, nrows: int = 1, width: float | None = None, height: float | None = None
) -> tuple[Figure, Any]:
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


def sim_points(
    ax: Any,
    x: Sequence[float],
    y: Sequence[float],
    err: Sequence[float] | Any = None,
    label: str | None = None,
    **kw: Any,
) -> Any:
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


def prediction_vs_simulation(
    ax: Any,
    table: Any,
    x: str,
    theory: str | None,
    measured: str,
    err: str | None = None,
    group: str | None = None,
    label: str = "{group}",
    theory_label: str | None = "theory",
    xlabel: str | None = None,
    ylabel: str | None = None,
    logx: bool = False,
    logy: bool = False,
) -> None:
    """The figure most studies draw: the theory as a line and the measurement as markers.

    ``table`` is a DataFrame with one row per point; ``x``, ``theory``, ``measured`` and ``err``
    (error-bar half-widths, e.g. two standard errors over seeds) name its columns. With ``group``,
    one colour per value of that column (``label`` is formatted with ``group=value``); the theory
    line is labelled once, by ``theory_label``. ``theory=None`` draws markers only."""
    groups = [(None, table)] if group is None else list(table.groupby(group, sort=True))
    for i, (value, part) in enumerate(groups):
        part = part.sort_values(x)
        c = color(i)
        if theory is not None:
            theory_line(ax, part[x], part[theory], color=c, label=theory_label if i == 0 else None)
        name = None if group is None else label.format(group=value)
        sim_points(
            ax,
            part[x],
            part[measured],
            None if err is None else part[err],
            color=c,
            label=name if group is not None else "simulation",
        )
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or measured)
    ax.legend(fontsize=7)
