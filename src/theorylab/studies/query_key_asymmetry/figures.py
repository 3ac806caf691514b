"""query-key-asymmetry: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def figure_bias(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure(width=5.5)
    labels = [f"{r.side} bias, {r.pos}, {'causal' if r.causal else 'bidir.'}, {r.dtype}" for r in t.itertuples()]
    y = np.maximum(t["rel_change"].to_numpy(), 1e-18)
    colors = [color(0) if (s == "key" and p != "rope") else color(1) for s, p in zip(t["side"], t["pos"])]
    ax.barh(np.arange(len(t)), y, color=colors)
    ax.set_xscale("log")
    ax.set_yticks(np.arange(len(t)))
    ax.set_yticklabels(labels, fontsize=4)
    ax.axvline(1e-3, color="k", ls="--", lw=0.8)
    ax.set_xlabel("relative change of the output logits (bias of norm 10)")
    ax.set_title("key bias without RoPE: invisible (blue)", fontsize=8)
    ctx.figure("bias_invariance", fig)


def figure_gradients(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    bins = np.logspace(-18, 0, 55)
    for i, (col, name) in enumerate((("key_ratio", "keys"), ("query_ratio", "queries"))):
        ax.hist(np.clip(t[col], 1e-18, 1), bins=bins, alpha=0.6, color=color(i), label=name)
    ax.set_xscale("log")
    ax.set_xlabel("‖Σ_j ∂L/∂x_j‖ / Σ_j ‖∂L/∂x_j‖ per head and sequence")
    ax.set_ylabel("heads x sequences")
    ax.legend(fontsize=7)
    ctx.figure("gradient_sums", fig)


def figure_truncation(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, (which, g) in enumerate(t.groupby("which")):
        ax.plot(
            g["rank"],
            g["delta_loss"],
            "o-",
            color=color(i),
            label={"q": "truncate W_Q", "k": "truncate W_K", "qk": "truncate M"}[which],
        )
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel("rank r")
    ax.set_ylabel("ΔLoss (held-out, nats)")
    ax.legend(fontsize=7)
    ctx.figure("truncation_curves", fig)


def figure_ranks(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    by = t.groupby("layer")[["q_stable_rank", "k_stable_rank", "balanced_stable_rank"]].mean()
    for i, col in enumerate(by.columns):
        ax.plot(by.index, by[col], "o-", color=color(i), label=col.replace("_", " "))
    ax.set_xlabel("layer")
    ax.set_ylabel("stable rank (mean over heads)")
    ax.legend(fontsize=7)
    ctx.figure("rank_profile", fig)
