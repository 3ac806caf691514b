"""rg-order-parameter: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def _readings(t: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(t["reading"]))


def figure_ranks(ctx: RunContext, ranks: pd.DataFrame, vocab: int) -> None:
    """eRank_l vs l per reading: position level (solid), pooled (dashed), untrained (grey); layer 0 = embedding."""
    readings = _readings(ranks)
    fig, axes = new_figure(ncols=len(readings), width=3.2 * len(readings))
    axes = np.atleast_1d(axes)
    for ax, reading in zip(axes, readings):
        for i, xi in enumerate(sorted(set(ranks["xi"]))):
            for trained in (False, True):
                t = ranks[(ranks["reading"] == reading) & (ranks["xi"] == xi) & (ranks["trained"] == trained)]
                c = color(i) if trained else "0.6"
                lab = f"ξ = {xi:g}" + ("" if trained else " (step 0)")
                ax.plot(t["layer"], t["erank"], "o-", color=c, ms=3, label=lab)
                ax.plot(t["layer"], t["erank_pooled"], "--", color=c, lw=0.8)
        ax.axhline(vocab, color="k", lw=0.6, ls=":")
        ax.set_xlabel("layer l (0 = embedding)")
        ax.set_title(f"{reading}", fontsize=8)
    axes[0].set_ylabel("effective rank (solid: per position; dashed: pooled)")
    axes[0].legend(fontsize=6)
    ctx.figure("erank_vs_depth", fig)


def figure_selectivity(ctx: RunContext, ranks: pd.DataFrame) -> None:
    """ρ = eRank_N / eRank_1 vs ξ per reading, trained (markers and line) and at step 0 (grey)."""
    fig, ax = new_figure()
    r = ranks[ranks["layer"] >= 1]
    for i, reading in enumerate(_readings(r)):
        for trained in (True, False):
            t = r[(r["reading"] == reading) & (r["trained"] == trained)]
            rho = t.groupby("xi").apply(
                lambda g: g.sort_values("layer")["erank"].iloc[-1] / g.sort_values("layer")["erank"].iloc[0],
                include_groups=False,
            )
            ax.plot(
                rho.index,
                rho.to_numpy(),
                "o-" if trained else "x:",
                color=color(i) if trained else "0.6",
                label=reading + ("" if trained else " (step 0)"),
            )
    ax.axhline(0.8, color="k", lw=0.6, ls=":")
    ax.axhline(0.9, color="k", lw=0.6, ls="--")
    ax.set_xlabel("correlation length ξ")
    ax.set_ylabel("ρ = eRank_N / eRank_1")
    ax.legend(fontsize=6)
    ctx.figure("selectivity", fig)


def figure_drift(ctx: RunContext, drift: pd.DataFrame) -> None:
    """1 - CKA and the relative kernel change per transition, trained nets, per reading and ξ."""
    d = drift[drift["trained"]]
    readings = _readings(d)
    fig, axes = new_figure(ncols=len(readings), width=3.2 * len(readings))
    axes = np.atleast_1d(axes)
    for ax, reading in zip(axes, readings):
        xis = sorted(set(d["xi"]))
        for i, xi in enumerate(xis):
            t = d[(d["reading"] == reading) & (d["xi"] == xi)]
            w = 0.8 / len(xis)
            ax.bar(t["layer"] + i * w, t["one_minus_cka"], width=w, color=color(i), label=f"1 - CKA, ξ = {xi:g}")
            ax.plot(t["layer"] + i * w, t["kernel_change"], "k.", ms=3)
        ax.set_xlabel("transition l -> l + 1")
        ax.set_title(reading, fontsize=8)
    axes[0].set_ylabel("drift (bars: 1 - CKA; dots: ‖ΔK‖/‖K‖)")
    axes[0].legend(fontsize=6)
    ctx.figure("drift_profile", fig)


def figure_chain(ctx: RunContext, auto: pd.DataFrame) -> None:
    """Empirical indicator autocorrelation vs λ^k."""
    fig, ax = new_figure()
    for i, xi in enumerate(sorted(set(auto["xi"]))):
        t = auto[auto["xi"] == xi]
        ax.plot(t["lag"], t["lam_k"], "-", color=color(i), label=f"λ^k, ξ = {xi:g}")
        ax.plot(t["lag"], t["empirical"], "o", color=color(i), ms=4)
    ax.set_xlabel("lag k")
    ax.set_ylabel("Corr(1[x_t = a], 1[x_{t+k} = a])")
    ax.legend(fontsize=6)
    ctx.figure("chain_check", fig)
