"""ssm-consensus: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure

PAPER_LAMBDA1 = {"silu": 0.88, "linear": 0.23}  # the paper's reported values (reference lines)


def figure_lambda1_vs_depth(ctx: RunContext, trajectory: pd.DataFrame) -> None:
    fig, (left, right) = new_figure(ncols=2, width=10)
    for i, (config, g) in enumerate(trajectory.groupby("config", sort=False)):
        for ax, col in ((left, "lambda1"), (right, "participation")):
            q = g.groupby("layer")[col].quantile([0.25, 0.5, 0.75]).unstack()
            ax.plot(q.index, q[0.5], color=color(i), label=config)
            ax.fill_between(q.index, q[0.25], q[0.75], color=color(i), alpha=0.2, lw=0)
        if config in PAPER_LAMBDA1:
            left.axhline(PAPER_LAMBDA1[config], color=color(i), ls=":", lw=1)
    left.set(xscale="symlog", xlabel="layer k", ylabel="λ̄₁ (median, IQR over runs)", ylim=(0, 1.02))
    right.set(xscale="symlog", yscale="log", xlabel="layer k", ylabel="participation ratio r")
    left.set_title("dotted: the paper's λ̄₁ (SiLU 0.88, linear 0.23)", fontsize=8)
    left.legend(fontsize=7)
    ctx.figure("lambda1_vs_depth", fig)


def figure_pe_windows(ctx: RunContext, final: pd.DataFrame, depth: int) -> None:
    fig, ax = new_figure()
    bins = np.linspace(0, depth, 21)
    for i, (config, g) in enumerate(final[final["config"] != "isotropic"].groupby("config", sort=False)):
        wins = g["pe_window"].dropna()
        ax.hist(wins, bins=bins, color=color(i), alpha=0.5, label=f"{config} (none: {g['pe_window'].isna().sum()})")
    ax.set(xlabel="persistence-of-excitation window T* (layers)", ylabel="runs")
    ax.legend(fontsize=7)
    ctx.figure("pe_windows", fig)


def figure_gate_toggle(ctx: RunContext, hf_gate: pd.DataFrame) -> None:
    """λ̄₁ and r against depth for the HF Mamba-2 with its output gate on and off (median, IQR over runs)."""
    fig, (left, right) = new_figure(ncols=2, width=10)
    for i, (gate, g) in enumerate(hf_gate.groupby("gate", sort=False)):
        for ax, col in ((left, "lambda1"), (right, "participation")):
            q = g.groupby("layer")[col].quantile([0.25, 0.5, 0.75]).unstack()
            ax.plot(q.index, q[0.5], color=color(i), label=f"gate {gate}")
            ax.fill_between(q.index, q[0.25], q[0.75], color=color(i), alpha=0.2, lw=0)
    left.set(xscale="symlog", xlabel="layer k (blocks cycled)", ylabel="λ̄₁ (median, IQR over runs)", ylim=(0, 1.02))
    right.set(xscale="symlog", yscale="log", xlabel="layer k (blocks cycled)", ylabel="participation ratio r")
    left.set_title(f"HF Mamba-2 ({hf_gate['source'].iloc[0]})", fontsize=8)
    left.legend(fontsize=7)
    ctx.figure("gate_toggle", fig)
