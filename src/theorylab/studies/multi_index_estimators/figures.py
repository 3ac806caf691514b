"""multi-index-estimators: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import log_ticks, new_figure, prediction_vs_simulation
from theorylab.studies.multi_index_estimators.judges import _crossings
from theorylab.theory.sdr import SURVEY_SEES as SEES  # which directions each method sees (Stein, z -> -z symmetry)

BATTERY_LINKS = ("z1+z1z2", "he2", "z1z2", "he3")  # the card's links A, B, C, D


LINK_LABEL = {"z1+z1z2": "A: z1 + z1 z2", "he2": "B: He2(z1)", "z1z2": "C: z1 z2", "he3": "D: He3(z1)"}


ESTIMATORS = ("ADE", "pHd", "SIR", "SAVE")


def figure_battery(ctx: RunContext, battery: pd.DataFrame) -> None:
    top = battery[battery["alpha"] == battery["alpha"].max()]
    means = top.groupby(["link", "direction", "estimator"])["capture"].mean()
    labels = [(link, i) for link in BATTERY_LINKS for i in sorted(means[link].index.get_level_values(0).unique())]
    grid = np.array([[means[(link, i, est)] for est in ESTIMATORS] for link, i in labels])
    fig, ax = new_figure(width=5.5, height=4.2)
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for row, (link, i) in enumerate(labels):
        for col, est in enumerate(ESTIMATORS):
            mark = "✓" if SEES[(link, est)][i - 1] else "✗"
            ax.text(
                col,
                row,
                f"{grid[row, col]:.2f}\n{mark}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if grid[row, col] < 0.6 else "black",
            )
    ax.set_xticks(range(len(ESTIMATORS)), ESTIMATORS)
    ax.set_yticks(range(len(labels)), [f"{LINK_LABEL[l]}, u{i}" for l, i in labels], fontsize=7)
    ax.set_title(
        f"capture |P u_i|^2 at d = {int(top['d'].iloc[0])}, n/d = {top['alpha'].max():g} (✓/✗: population prediction)",
        fontsize=8,
    )
    fig.colorbar(im, ax=ax, fraction=0.04)
    ctx.figure("battery_heatmap", fig)


def figure_collapse(ctx: RunContext, collapse: pd.DataFrame) -> None:
    fig, axes = new_figure(ncols=3, width=11)
    for ax, ((link, est), grp) in zip(axes, collapse.groupby(["link", "estimator"], sort=False)):
        m = grp.groupby(["d", "alpha"])["capture"].agg(["mean", "std"]).reset_index()
        prediction_vs_simulation(
            ax,
            m,
            "alpha",
            None,
            "mean",
            err="std",
            group="d",
            label="d = {group}",
            xlabel="α = n/d",
            ylabel="capture (mean ± sd over seeds)",
            logx=True,
        )
        log_ticks(ax, sorted(grp["alpha"].unique()))
        ax.set_ylim(-0.02, 1.02)
        what = "judged" if est != "pHd" else "reported: unbounded label, drifts with log n"
        ax.set_title(f"{est} on {LINK_LABEL[link]} ({what})", fontsize=8)
    ctx.figure("collapse_curves", fig)


def figure_gap(ctx: RunContext, gap: pd.DataFrame) -> None:
    fig, ax = new_figure()
    ds = np.array(sorted(gap["d"].unique()), dtype=float)
    for slope, style in ((1.0, ":"), (1.5, "--"), (2.0, "-.")):
        ax.plot(ds, 10 * ds**slope, style, color="grey", lw=0.8, label=f"∝ d^{slope:g}")
    rows = [dict(estimator=est, d=d, n=n) for est, grp in gap.groupby("estimator") for d, n in _crossings(grp).items()]
    prediction_vs_simulation(
        ax,
        pd.DataFrame(rows, columns=["estimator", "d", "n"]),
        "d",
        None,
        "n",
        group="estimator",
        xlabel="d",
        ylabel="n where the mean capture crosses 0.5",
        logx=True,
        logy=True,
    )
    ax.set_title("link D = He3(z1): which methods need n ∝ d", fontsize=8)
    ctx.figure("gap_plot", fig)
