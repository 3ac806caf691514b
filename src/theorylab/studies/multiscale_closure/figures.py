"""multiscale-closure: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure

MODELS = ("none", "direct", "multiscale")


def figure_germano(ctx: RunContext, germano: pd.DataFrame) -> None:
    fig, ax = new_figure()
    floor = 1e-18
    for i, (variant, g) in enumerate(germano.groupby("variant", sort=False)):
        ax.plot(
            g["snapshot"], np.maximum(g["error"], floor), color=color(i), marker="o", ms=3, ls="none", label=variant
        )
    ax.axhline(1e-10, color="0.4", ls="--", lw=1, label="exact level 1e-10")
    ax.axhline(0.1, color="0.6", ls=":", lw=1, label="control must exceed 0.1")
    ax.set(
        yscale="log",
        xlabel="snapshot",
        ylabel="|LHS − RHS| / |LHS|",
        title="Germano identity S^(n0) = D S^(Nc) + S^(Nc→n0)",
    )
    ax.legend(fontsize=7)
    ctx.figure("germano", fig)


def figure_spectrum(ctx: RunContext, spec: pd.DataFrame) -> None:
    fig, ax = new_figure()
    truth = spec[spec["model"] == "truth"]
    ax.plot(truth["mode"], truth["E"], color="k", lw=1.5, label="filtered truth")
    for i, name in enumerate(MODELS):
        g = spec[spec["model"] == name]
        if g.empty:
            continue
        err = np.vstack([np.maximum(g["E"] - g["q25"], 0), np.maximum(g["q75"] - g["E"], 0)])
        ax.errorbar(
            g["mode"],
            g["E"],
            yerr=err,
            color=color(i),
            marker="os^"[i],
            ms=4,
            ls="none",
            capsize=2,
            label=f"coarse + {name} closure" if name != "none" else "coarse, no closure",
        )
    ax.set(yscale="log", xlabel="mode m", ylabel="E(m), second half of the run (IQR over trajectories)")
    ax.legend(fontsize=7, loc="center left")
    ctx.figure("online_spectrum", fig)


def figure_tracking(ctx: RunContext, tracking: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, name in enumerate(MODELS):
        g = tracking[tracking["model"] == name]
        if g.empty:
            continue
        ax.plot(g["time"], g["rho_median"], color=color(i), label=name)
        ax.fill_between(g["time"], g["rho_q25"], g["rho_q75"], color=color(i), alpha=0.2)
    ax.axhline(0.8, color="0.5", ls=":", lw=1, label="ρ = 0.8")
    ax.set(xlabel="time", ylabel="ρ_t with the filtered truth (median, IQR)")
    ax.legend(fontsize=7)
    ctx.figure("tracking", fig)


def figure_offline_by_size(ctx: RunContext, offline: pd.DataFrame) -> None:
    q = offline[(offline["system"] == "qg") & offline["final"]]
    if q.empty:
        return
    fig, ax = new_figure()
    styles = {"direct": "o", "multiscale": "s"}
    for i, (op, g_op) in enumerate(q.groupby("operator")):
        for model, g in g_op.groupby("model"):
            m = g.groupby("params")["rel_mse"].agg(["mean", "min", "max"]).sort_index()
            ax.errorbar(
                m.index,
                m["mean"],
                yerr=[m["mean"] - m["min"], m["max"] - m["mean"]],
                color=color(i),
                marker=styles.get(model, "x"),
                ls="-" if model == "multiscale" else "--",
                capsize=2,
                label=f"{model}, {op}",
            )
    ax.set(xscale="log", yscale="log", xlabel="parameters", ylabel="offline relative MSE at N_c (range over seeds)")
    ax.legend(fontsize=7)
    ctx.figure("offline_by_size", fig)
