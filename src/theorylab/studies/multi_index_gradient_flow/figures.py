"""multi-index-gradient-flow: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def figure_escape_scaling(ctx: RunContext, escape: pd.DataFrame) -> None:
    """t_k(d) vs d (log-log): ODE markers, the integral as lines, the asymptotes dashed (slope k - 1; ln d / 4)."""
    fig, ax = new_figure()
    for i, (k, g) in enumerate(escape.groupby("k")):
        ax.plot(g["d"], g["t_integral"], color=color(i), lw=1.2, label=f"k = {k}: integral t_k(d)")
        ax.plot(g["d"], g["t_asymptotic"], color=color(i), lw=0.8, ls="--")
        ode = g.dropna(subset=["t_ode"])
        if len(ode):
            ax.scatter(ode["d"], ode["t_ode"], color=color(i), marker="o", zorder=3)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="d",
        ylabel="time to m = 1/2",
        title="escape times (markers: ODE; dashed: ln((d-1)/3)/4, d^(k-1)/(4k(k-1)))",
    )
    ax.legend(fontsize=7)
    ctx.figure("escape_scaling", fig)


def figure_saddle_to_saddle(ctx: RunContext, path: pd.DataFrame, finite: pd.DataFrame, start: str) -> None:
    """Singular values of M(t) vs t (log-x): ODE lines per d from the judged start (``r2_start``); finite-d runs as
    markers."""
    fig, axes = new_figure(ncols=2, width=10, height=4)
    for ax, name in zip(axes, ("staircase", "non-staircase")):
        g = path[(path["link"] == name) & (path["start"] == start)]
        for i, (d, h) in enumerate(g.groupby("d")):
            ax.plot(h["t"], h["s_max"], color=color(i), lw=1.2, label=f"d = {d:g}: σ_max")
            ax.plot(h["t"], h["s_min"], color=color(i), lw=1.2, ls="--", label=f"d = {d:g}: σ_min")
        f = finite[(finite["link"] == name) & (finite["source"] == "finite-d")]
        for i, (d, h) in enumerate(f.groupby("d")):
            band = h.groupby("t")["s_min"].agg(["mean", "min", "max"]).reset_index()
            ax.scatter(band["t"], band["mean"], s=6, color=color(i + 5), label=f"finite d = {d}: σ_min (runs)")
            ax.fill_between(band["t"], band["min"], band["max"], color=color(i + 5), alpha=0.2)
        ax.set(
            xscale="log",
            xlabel="t",
            ylabel="singular values of M(t)",
            title=f"{name} (M(0): {start})",
            ylim=(0, 1.05),
            xlim=(1e-2, None),
        )
        ax.legend(fontsize=6)
    ctx.figure("saddle_to_saddle", fig)


def figure_phi(ctx: RunContext, path: pd.DataFrame, start: str) -> None:
    """Phi(M(t)) along the r = 2 ODE runs from the judged start (plateaus at the saddles' loss values)."""
    fig, ax = new_figure()
    for i, ((name, d), h) in enumerate(path[(path["start"] == start) & (path["t"] > 0)].groupby(["link", "d"])):
        ax.plot(h["t"], np.maximum(h["phi"], 1e-16), color=color(i), label=f"{name}, d = {d:g}")
    ax.set(xscale="log", yscale="log", xlabel="t", ylabel="Φ(M(t))", title=f"two-timescale loss (M(0): {start})")
    ax.legend(fontsize=6)
    ctx.figure("phi", fig)


def figure_planted(ctx: RunContext, path: pd.DataFrame) -> None:
    """m(t) from ±m0 for the planted and the two-timescale flow of He_3/sqrt(6)."""
    fig, ax = new_figure()
    for i, ((flow, m0), h) in enumerate(path.groupby(["flow", "m0"])):
        ax.plot(h["t"], h["m"], color=color(i), ls="-" if flow == "planted" else "--", label=f"{flow}, m0 = {m0:+g}")
    ax.set(
        xscale="symlog",
        xlabel="t",
        ylabel="m(t)",
        title="planted (link fixed) vs two-timescale, He_3",
        ylim=(-1.05, 1.05),
    )
    ax.legend(fontsize=7)
    ctx.figure("planted_vs_two_timescale", fig)
