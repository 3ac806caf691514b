"""attention-sensitivity: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure, prediction_vs_simulation
from theorylab.studies.attention_sensitivity.judges import _slopes


def figure_theta(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, (alpha, g) in enumerate(t.groupby("alpha")):
        ax.plot(g["p_max"], g["theta_exact"], "o", ms=3, color=color(i), label=f"θ exact, Dirichlet α = {alpha:g}")
    pm = np.linspace(0, 1, 201)
    ax.plot(pm, np.where(pm >= 0.5, 4 * pm * (1 - pm), np.nan), "k-", lw=1, label="4p(1−p) (exact for p_max ≥ ½)")
    ax.plot(pm, 1 - pm**2, "k--", lw=1, label="1 − p_max² (lower bound)")
    ax.set_xlabel("p_max")
    ax.set_ylabel("θ(p) = τ·‖J‖_{∞→1}")
    ax.legend(fontsize=6)
    ax.set_title("balanced-mass factor of random attention rows", fontsize=8)
    ctx.figure("theta_landscape", fig)


def figure_gain(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    ax.plot(t["T"], t["gain_sequence_l2"], "v:", color=color(2), label="control: output ℓ2 over the sequence")
    prediction_vs_simulation(
        ax,
        t.assign(what="local gain (block-∞/RMS)"),
        "T",
        "bound",
        "gain",
        group="what",
        theory_label="first-order bound (no T)",
        xlabel="sequence length T",
        logx=True,
        logy=True,
    )
    ax.set_title("random attention layer, tokens at RMS 1", fontsize=8)
    ctx.figure("gain_vs_T", fig)


def figure_deepnorm(ctx: RunContext, t: pd.DataFrame, update: str) -> None:
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    col = f"update_{update}"
    plain = t[t["variant"] == "post-LN"].groupby("N")[col].mean()
    ax.plot(plain.index, plain.to_numpy(), "^--", color="k", ms=4, label="plain post-LN")
    means = t[t["variant"] == "deepnorm"].groupby(["p", "N"], as_index=False)[col].mean()
    prediction_vs_simulation(
        ax,
        means,
        "N",
        None,
        col,
        group="p",
        label="DeepNorm, β = (8N)^−{group:g}",
        xlabel="depth N",
        ylabel=f"relative output change after one {update} step",
        logx=True,
        logy=True,
    )
    for i, u in enumerate(("sgd", "sign")):
        s = _slopes(t, f"update_{u}")
        bx.plot(s["p"], s["slope"], "o-", color=color(i), label=f"{u} step" + (" (judged)" if u == update else ""))
    bx.axhline(0, color="k", lw=0.8)
    bx.axvline(0.25, color="k", ls=":", lw=0.8)
    bx.set_xlabel("p in β = (8N)^(−p)")
    bx.set_ylabel("log-log slope in N")
    bx.legend(fontsize=7)
    ctx.figure("deepnorm_update", fig)


def figure_theta_training(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    ours = t[t["step"] >= 0]
    by = ours.groupby("step")
    ax.plot(by["mean"].mean().index, by["mean"].mean(), "o-", color=color(0), label="mean θ (greedy lower bound)")
    ax.plot(by["p10"].mean().index, by["p10"].mean(), "v--", color=color(1), label="10th percentile (mean over heads)")
    ax.plot(by["mean"].min().index, by["mean"].min(), "s:", color=color(2), label="lowest head mean")
    ax.axhline(0.9, color="k", ls="--", lw=0.8)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("training step")
    ax.set_ylabel("θ over rows with >= 16 keys")
    ax.legend(fontsize=7)
    ctx.figure("theta_training", fig)


def figure_grad(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, axes = new_figure(ncols=2, width=8.4)
    for ax, (position, g) in zip(np.atleast_1d(axes), t.assign(layer=t["layer"] + 1).groupby("norm_position")):
        prediction_vs_simulation(
            ax, g, "layer", None, "grad_norm", group="N", label="N = {group}", ylabel="gradient norm at init", logy=True
        )
        ax.set_title(f"{position}-LN", fontsize=8)
    ctx.figure("grad_profile", fig)
