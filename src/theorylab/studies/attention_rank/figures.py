"""attention-rank: its figures, drawn from the run's tables."""

from __future__ import annotations

import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, log_ticks, new_figure, sim_points


def figure_constructions(ctx: RunContext, table: pd.DataFrame) -> None:
    fig, (left, right) = new_figure(ncols=2)
    soft = table[table["kind"] == "full_rank_softmax"].sort_values("param")
    sim_points(left, soft["param"], soft["dmse"], label="full-rank softmax head", color=color(0))
    left.plot(soft["param"], soft["dmse"], color=color(0), lw=1)
    hard = table[table["kind"] == "full_rank_hardmax"]
    left.set(xscale="log", yscale="log", xlabel=r"inverse temperature $\beta$", ylabel="d·MSE")
    left.set_title(f"full rank: d·MSE -> 0 as β grows (hard-max: max {hard['dmse'].max():.1e})", fontsize=8)
    left.legend(fontsize=7)
    rank1 = table[table["kind"] == "random_rank1"]
    for i, (split, grp) in enumerate(rank1.groupby("split")):
        grp = grp.sort_values("param")
        right.plot(grp["param"], grp["dmse"], "o-", color=color(i + 1), label=f"random rank-1 heads ({split})", ms=4)
    right.axhline(1.0, color="grey", ls=":", lw=1, label="zero predictor")
    # linear y: the point is how little of the way to 0 they get
    right.set(xscale="log", ylim=(0, 1.08), xlabel="heads H (rank 1, least-squares readout)", ylabel="d·MSE")
    log_ticks(right, sorted(rank1["param"].unique()))
    right.set_title("many rank-1 heads stay near the zero predictor", fontsize=8)
    right.legend(fontsize=7)
    ctx.figure("construction_curves", fig)


def figure_grid(
    ctx: RunContext,
    summary: pd.DataFrame,
    grid: str,
    x: str,
    by: str | list[str],
    name: str,
    *,
    label: str,
    median_label: str | None,
    zero_label: str,
    xlabel: str,
    ylabel: str,
    title: str,
    legend_size: int,
) -> None:
    """d·MSE (min over seeds; with ``median_label``, the median too) against ``x``, one line per ``by``, log-log."""
    part = summary[summary["grids"].str.contains(grid)]
    if part.empty:
        return
    fig, ax = new_figure()
    for i, (key, grp) in enumerate(part.groupby(by)):
        grp, key = grp.sort_values(x), key if isinstance(key, tuple) else (key,)
        ax.plot(grp[x], grp["dmse_min"], "o-", color=color(i), label=label.format(*key), ms=5)
        if median_label is not None:
            ax.plot(grp[x], grp["dmse_median"], "x--", color=color(i), lw=0.8, label=median_label.format(*key))
    ax.axhline(1.0, color="grey", ls=":", lw=1, label=zero_label)
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel)
    log_ticks(ax, sorted(part[x].unique()))
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=legend_size)
    ctx.figure(name, fig)


def figure_loss(ctx: RunContext, curves: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, (job, grp) in enumerate(curves.groupby("job", sort=False)):
        first = grp[grp["seed"] == grp["seed"].min()]
        ax.plot(first["step"] + 1, first["loss"], color=color(i), lw=1, label=job)
    ax.set(xscale="log", yscale="log", xlabel="step", ylabel="training d·MSE (first seed)")
    ax.legend(fontsize=5, ncol=2)
    ctx.figure("training_curves", fig)
