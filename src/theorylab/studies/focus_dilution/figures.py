"""focus-dilution: its figures (stages, focus_heatmap, key_score_vs_freq), drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure
from theorylab.probes.stages import detect_plateaus
from theorylab.studies.focus_dilution.judges import first_window, focus_peak


def _band(ax, curves: pd.DataFrame, column: str, label: str, i: int) -> None:
    g = curves.groupby("step")[column]
    mean, sd = g.mean(), g.std().fillna(0.0)
    steps = np.maximum(mean.index.to_numpy(), 1)  # step 0 drawn at 1 on the log axis
    ax.plot(steps, mean.to_numpy(), color=color(i), lw=1.2, label=label)
    ax.fill_between(steps, (mean - sd).to_numpy(), (mean + sd).to_numpy(), color=color(i), alpha=0.2, lw=0)


def figure_stages(ctx: RunContext, curves: pd.DataFrame, levels: pd.DataFrame) -> None:
    """Loss (dashed: ln V, H(π), H_cond), σ₂/σ₁ of E and U, ‖W_Q W_Kᵀ‖_F and F on one log-step axis; mean ± SD over
    members. Grey bands: loss plateaus (probes.stages.detect_plateaus); green: member 0's window W₁."""
    fig, axes = new_figure(nrows=4, width=7, height=9)
    axes = np.ravel(axes)
    _band(axes[0], curves, "loss", "loss", 0)
    for name, col, ls in (("ln V", "ln_v", ":"), ("H(π)", "unigram_entropy", "--"), ("H_cond", "entropy_rate", "-.")):
        axes[0].axhline(float(levels[col].mean()), color="k", ls=ls, lw=0.8, label=name)
    _band(axes[1], curves, "e_ratio", "σ₂/σ₁(E)", 1)
    _band(axes[1], curves, "u_ratio", "σ₂/σ₁(U)", 2)
    _band(axes[2], curves, "qk_norm", "‖W_Q W_Kᵀ‖_F", 3)
    _band(axes[3], curves, "focus", "F (Top = V/4 most frequent)", 4)
    axes[3].axhline(1.0, color="k", lw=0.6, ls=":")
    axes[2].set_yscale("log")
    mean_loss = curves.groupby("step")["loss"].mean()
    for p in detect_plateaus(mean_loss.to_numpy(), mean_loss.index.to_numpy(), rel_tol=2e-5, min_length=200)[:6]:
        for ax in axes:
            ax.axvspan(max(p.start, 1), p.end, color="0.85", zorder=0)
    c0 = curves[curves["member"] == curves["member"].min()].sort_values("step")
    w = first_window(c0.reset_index(drop=True), levels.set_index("member").iloc[0])
    if w is not None:
        for ax in axes:
            ax.axvspan(max(w[0], 1), w[1], color="tab:green", alpha=0.15, zorder=0)
    for ax in axes:
        ax.set_xscale("log")
        ax.legend(fontsize=7, loc="upper left" if ax is not axes[0] else "lower left")
    axes[-1].set_xlabel("step")
    fig.suptitle("focus-dilution: stages (mean ± SD over members)", fontsize=9)
    ctx.figure("stages", fig)


def figure_focus_heatmap(ctx: RunContext, mass: pd.DataFrame, tokens: pd.DataFrame) -> None:
    """Attention mass per token over its value at init (uniform attention), tokens by rank of π (most frequent on
    top), over training; averaged over members by rank."""
    t = mass.merge(tokens[["member", "token", "rank"]], on=["member", "token"])
    # relative to step 0 (uniform attention: mass = the token's share of the prefix), so focus shows as > 1
    start = t[t["step"] == t["step"].min()].set_index(["member", "token"])["mass"]
    base = start.reindex(pd.MultiIndex.from_frame(t[["member", "token"]])).to_numpy()
    # a token absent from the training sequences has no mass at all: no ratio (a blank cell)
    t = t.assign(ratio=np.where(base > 0, t["mass"].to_numpy() / np.where(base > 0, base, 1.0), np.nan))
    grid = t.groupby(["rank", "step"])["ratio"].mean().unstack("step")
    fig, ax = new_figure(width=7, height=3.5)
    ax.grid(False)
    im = ax.imshow(
        grid.to_numpy(),
        aspect="auto",
        cmap="RdBu_r",
        origin="upper",
        vmin=0,
        vmax=2,
        extent=(-0.5, grid.shape[1] - 0.5, grid.shape[0] - 0.5, -0.5),
    )
    ticks = np.linspace(0, grid.shape[1] - 1, 6).astype(int)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(grid.columns[i]) for i in ticks])
    ax.set_xlabel("step")
    ax.set_ylabel("token rank by π (0 = most frequent)")
    fig.colorbar(im, ax=ax, label="attention mass / its value at init (t >= 4)")
    ctx.figure("focus_heatmap", fig)


def figure_key_scores(ctx: RunContext, curves: pd.DataFrame, keys: pd.DataFrame, tokens: pd.DataFrame) -> None:
    """Member 0's per-token key score (π-averaged over queries) against π, at the focus peak and at the end."""
    m = int(curves["member"].min())
    c = curves[curves["member"] == m].sort_values("step").reset_index(drop=True)
    first = c["step"].iloc[0]
    _, at, _ = focus_peak(c, first)
    end = c["step"].iloc[-1]
    fig, ax = new_figure(width=5, height=4)
    pi = tokens[tokens["member"] == m].set_index("token")["pi"]
    for i, (step, name) in enumerate(((at, "focus peak"), (end, "end"))):
        k = keys[(keys["member"] == m) & (keys["step"] == step)].set_index("token")["key_score"]
        rho = float(c.loc[c["step"] == step, "key_spearman"].iloc[0])
        ax.scatter(
            pi.loc[k.index], k - k.mean(), color=color(i), s=18, label=f"{name} (step {step:.0f}, ρ = {rho:.2f})"
        )
    ax.set_xscale("log")
    ax.set_xlabel("π (token frequency)")
    ax.set_ylabel("key score − mean")
    ax.legend(fontsize=7)
    ctx.figure("key_score_vs_freq", fig)


def figure_focus_markers(ctx: RunContext, curves: pd.DataFrame, levels: pd.DataFrame) -> None:
    """The paper setting's markers vs step: the per-token attention on the high-frequency token (averaged over query
    tokens; dashed: the last query's in-context mass on it) and the per-token attention entropy (averaged over query
    tokens; dotted: ln V, uniform attention; dashed: the last query's entropy over positions, in context). One thin
    line per member, the mean bold."""
    fig, axes = new_figure(nrows=2, width=7, height=6)
    axes = np.ravel(axes)
    for i, (m, g) in enumerate(curves.groupby("member")):
        g = g.sort_values("step")
        axes[0].plot(g["step"], g["hf_attention"], color=color(i), lw=0.8, label=f"member {m}")
        axes[0].plot(g["step"], g["hf_in_context"], color=color(i), lw=0.6, ls="--")
        axes[1].plot(g["step"], g["entropy"], color=color(i), lw=0.8, label=f"member {m}")
        if "entropy_in_context" in g:
            axes[1].plot(g["step"], g["entropy_in_context"], color=color(i), lw=0.6, ls="--")
    axes[0].plot(curves.groupby("step")["hf_attention"].mean(), color="k", lw=1.4, label="mean")
    axes[1].plot(curves.groupby("step")["entropy"].mean(), color="k", lw=1.4, label="mean")
    axes[1].axhline(float(levels["ln_v"].iloc[0]), color="k", ls=":", lw=0.8, label="ln V (uniform)")
    axes[0].set_ylabel("attention on token 0 (π = 0.75)")
    axes[1].set_ylabel("attention entropy (nats)")
    axes[1].set_xlabel("step")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.suptitle(
        "focus-dilution, paper setting: per-token attention, averaged over query tokens "
        "(dashed: last query in context)",
        fontsize=8,
    )
    ctx.figure("focus_markers", fig)
