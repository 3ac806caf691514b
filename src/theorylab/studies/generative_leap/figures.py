"""generative-leap: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, log_ticks, new_figure, prediction_vs_simulation
from theorylab.studies.generative_leap.judges import _crossings


def figure_overlap_vs_c(ctx: RunContext, parity: pd.DataFrame) -> None:
    fig, ax = new_figure()
    means = parity.groupby(["statistic", "d", "c"])["overlap"].mean().reset_index()
    for i, d in enumerate(sorted(means["d"].unique())):
        for stat, style in (("U", "o-"), ("V", "s--")):
            g = means[(means["d"] == d) & (means["statistic"] == stat)]
            ax.plot(g["c"], g["overlap"], style, color=color(i), ms=4, label=f"d = {d}, {stat}-statistic")
    ax.axhline(3 / min(means["d"]), color="grey", ls=":", lw=1, label="chance 3/d (smallest d)")
    ax.set_xscale("log")
    log_ticks(ax, sorted(means["c"].unique()))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("c = n / d^1.5")
    ax.set_ylabel("overlap |P̂P|²/3 (seed mean)")
    ax.set_title("3-parity (k* = 3): curves collapse in n/d^(k*/2)", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("overlap_vs_c", fig)


def figure_m3_vs_p3(ctx: RunContext, order2: pd.DataFrame) -> None:
    fig, ax = new_figure()
    m3 = order2[order2["link"] == "z1z2z3"].groupby(["d", "alpha"])["overlap"].mean().reset_index()
    prediction_vs_simulation(
        ax,
        m3,
        "alpha",
        None,
        "overlap",
        group="d",
        label="M3 = z1 z2 z3, d = {group}",
        xlabel="n/d",
        ylabel="order-2 overlap (T(y) = log|y|; P3: any T)",
        logx=True,
    )
    p3 = order2[order2["link"] == "parity3"]
    ax.plot(p3["alpha"], p3["overlap"], "kx", ms=7, label=f"P3 = sign(z1 z2 z3), d = {int(p3['d'].iloc[0])}")
    ax.set_ylim(0, 1.02)
    ax.set_title("the sign hides the order-2 signal: M3 has k* = 2, P3 has k* = 3", fontsize=8)
    ax.legend(fontsize=7)
    ctx.figure("m3_vs_p3", fig)


def figure_crossing(ctx: RunContext, parity: pd.DataFrame) -> None:
    fig, ax = new_figure()
    ds = np.array(sorted(parity["d"].unique()), dtype=float)
    for slope, style in ((1.0, ":"), (1.5, "--"), (2.0, "-.")):
        ax.plot(ds, 5 * ds**slope, style, color="grey", lw=0.8, label=f"∝ d^{slope:g}")
    rows = []
    for stat in ("U", "V"):
        cross = _crossings(parity[parity["statistic"] == stat])
        rows += [dict(statistic=f"{stat}-statistic", d=d, n=n) for d, n in cross.items()] if len(cross) >= 2 else []
    cross = pd.DataFrame(rows, columns=["statistic", "d", "n"])
    prediction_vs_simulation(
        ax,
        cross,
        "d",
        None,
        "n",
        group="statistic",
        xlabel="d",
        ylabel="n where the seed-mean overlap crosses 0.5",
        logx=True,
        logy=True,
    )
    ax.set_title("crossing points of the 3-parity estimators", fontsize=8)
    ctx.figure("crossing_scaling", fig)
