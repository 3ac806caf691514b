"""propagation-of-chaos: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, log_ticks, new_figure, prediction_vs_simulation
from theorylab.studies.propagation_of_chaos.config import PropagationOfChaosConfig
from theorylab.theory.mean_field_rates import (
    power_law_through_window,
    root_loss_integral,
)
from theorylab.theory.rates import fit_inverse_width


def figure_loss(ctx: RunContext, loss: pd.DataFrame, rates: pd.DataFrame, cfg: PropagationOfChaosConfig) -> None:
    fig, ax = new_figure()
    twin = ax.twinx()
    for i, ((setting, d), grp) in enumerate(loss[(loss["eta"] == cfg.lr) & (loss["t"] > 0)].groupby(["setting", "d"])):
        ax.plot(grp["t"], grp["L_mf"], color=color(i), lw=1.2, label=f"{setting}, d = {d}")
        r = rates[(rates["setting"] == setting) & (rates["d"] == d) & (rates["eta"] == cfg.lr)].iloc[0]
        if np.isfinite(r["c"]):
            tt, line = power_law_through_window(grp["t"], grp["L_mf"], r["c"], cfg.rate_window, r["L0"])
            ax.plot(tt, line, "--", color="black", lw=0.8, label=f"fit t^-{r['c']:.2f}")
        twin.plot(grp["t"], root_loss_integral(grp["t"], grp["L_mf"]), ":", color=color(i), lw=1)
    ax.axhspan(
        cfg.rate_window[0] * loss["L_mf"].iloc[0], cfg.rate_window[1] * loss["L_mf"].iloc[0], color="grey", alpha=0.1
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("mean-field time t")
    ax.set_ylabel("L_MF(t) (band: fit window)")
    twin.set_ylabel("I(t) = ∫ L^1/2 (dotted)")
    ax.legend(fontsize=6)
    ctx.figure("loss_rate", fig)


def figure_sup_gap(ctx: RunContext, sup: pd.DataFrame, rates: pd.DataFrame) -> None:
    parts = []
    for (setting, d), grp in sup.groupby(["setting", "d"]):
        grp = grp[grp["eta"] == grp["eta"].max()].sort_values("width")
        pred = rates[(rates["setting"] == setting) & (rates["d"] == d)]["beta_pred"].iloc[0]
        curve = f"{setting}, d = {d}: β = {fit_inverse_width(grp['width'], grp['sup_gap']):.2f} (theorem {pred:.2f})"
        theorem = grp["sup_gap"].iloc[0] * (grp["width"] / grp["width"].iloc[0]) ** -pred  # the theorem's slope
        parts.append(grp.assign(curve=curve, theorem=theorem))
    fig, ax = new_figure()
    prediction_vs_simulation(
        ax,
        pd.concat(parts),
        "width",
        "theorem",
        "sup_gap",
        group="curve",
        xlabel="width m",
        theory_label="theorem's slope -min(1, c/6)",
        ylabel="sup_t gap_m(t)",
        logx=True,
        logy=True,
    )
    log_ticks(ax, sorted(sup["width"].unique()))
    ax.legend(fontsize=6)
    ctx.figure("sup_gap_vs_m", fig)


def figure_long_time(ctx: RunContext, gaps: pd.DataFrame) -> None:
    fast = gaps[(gaps["setting"] == "fast") & (gaps["d"] == gaps["d"].min()) & (gaps["eta"] == gaps["eta"].max())]
    means = fast[fast["t"] > 0].groupby(["width", "t"])["m_gap"].mean().reset_index()
    fig, ax = new_figure()
    prediction_vs_simulation(
        ax,
        means,
        "t",
        None,
        "m_gap",
        group="width",
        label="m = {group}",
        logx=True,
        logy=True,
        xlabel="mean-field time t",
        ylabel="m · gap_m(t) (seed mean)",
    )
    ax.set_title("no late growth of the fluctuation (fast setting)", fontsize=8)
    ctx.figure("gap_over_long_time", fig)
