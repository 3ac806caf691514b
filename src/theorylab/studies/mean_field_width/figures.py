"""mean-field-width: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, log_ticks, new_figure, prediction_vs_simulation
from theorylab.theory.mean_field_rates import (
    pooled_inverse_width,
)


def figure_gap_vs_time(ctx: RunContext, gaps: pd.DataFrame, loss: pd.DataFrame) -> None:
    d, k = gaps["d"].iloc[0], gaps["k"].iloc[0]
    g = gaps[(gaps["d"] == d) & (gaps["k"] == k)]
    fig, ax = new_figure()
    ax.axhline(g["init_theory"].iloc[0], color="grey", ls=":", lw=1, label="theory at t = 0: K(1) - E K")
    means = g.groupby(["width", "t"])["m_gap"].mean().reset_index()
    prediction_vs_simulation(
        ax,
        means,
        "t",
        None,
        "m_gap",
        group="width",
        label="m = {group}",
        xlabel="mean-field time t",
        ylabel="m · gap_m(t) (seed mean)",
    )
    twin = ax.twinx()
    lg = loss[(loss["d"] == d) & (loss["k"] == k)]
    twin.plot(lg["t"], lg["L_mf"], color="black", lw=1, alpha=0.6, label="L_MF(t)")
    twin.set_yscale("log")
    twin.set_ylabel("mean-field loss L_MF(t)")
    ax.set_title(f"d = {d}, k = {k}: collapse of m·gap is the 1/m law", fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    ctx.figure("gap_vs_time", fig)


def figure_gap_vs_width(ctx: RunContext, gaps: pd.DataFrame) -> None:
    d, k = gaps["d"].iloc[0], gaps["k"].iloc[0]
    g = gaps[(gaps["d"] == d) & (gaps["k"] == k)]
    fig, ax = new_figure()
    ms = np.array(sorted(g["width"].unique()), dtype=float)
    ax.plot(ms, g["init_theory"].iloc[0] / ms, "k--", lw=1, label="slope -1 (initial theory)")
    means = g.groupby(["t", "width"])["gap"].mean().clip(lower=1e-12).reset_index()
    prediction_vs_simulation(
        ax,
        means,
        "width",
        None,
        "gap",
        group="t",
        label="t = {group:g}",
        xlabel="width m",
        ylabel="gap_m(t) (seed mean, reference-corrected)",
        logx=True,
        logy=True,
    )
    log_ticks(ax, ms)
    ax.set_title(f"pooled exponent β = {pooled_inverse_width(g['t'], g['width'], g['gap'])[0]:.2f}", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("gap_vs_width", fig)


def figure_overlaps(ctx: RunContext, overlaps: pd.DataFrame) -> None:
    d, k = overlaps["d"].iloc[0], overlaps["k"].iloc[0]
    o = overlaps[(overlaps["d"] == d) & (overlaps["k"] == k)]
    times = sorted(o["t"].unique())
    fig, axes = new_figure(ncols=len(times), width=2.0 * len(times), height=2.4)
    bins = np.linspace(-1, 1, 41)
    for ax, t in zip(np.atleast_1d(axes), times):
        for i, (system, grp) in enumerate(o[o["t"] == t].groupby("system")):
            ax.hist(grp["s"], bins=bins, density=True, alpha=0.5, color=color(i), label=system)
        ax.set_title(f"t = {t:g}", fontsize=8)
        ax.set_xlabel("s = <w, w*>", fontsize=7)
    np.atleast_1d(axes)[0].legend(fontsize=6)
    ctx.figure("overlap_histograms", fig)


def figure_reduction(ctx: RunContext, reduction: pd.DataFrame) -> None:
    d, k = reduction["d"].iloc[0], reduction["k"].iloc[0]
    fig, ax = new_figure()
    prediction_vs_simulation(
        ax,
        reduction[(reduction["d"] == d) & (reduction["k"] == k)],
        "t",
        "L_reduced",
        "L_ref",
        theory_label="1-D overlap reduction",
        xlabel="mean-field time t",
        ylabel="L_MF(t) (markers: particle reference)",
        logy=True,
    )
    ax.set_title(f"d = {d}, k = {k}: the reduction reproduces the particle system", fontsize=8)
    ctx.figure("reduction_vs_particles", fig)
