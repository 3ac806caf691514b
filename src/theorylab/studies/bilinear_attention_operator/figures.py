"""bilinear-attention-operator: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.bilinear_operators import (
    head_operators,
)
from theorylab.studies.bilinear_attention_operator.config import BilinearOperatorConfig
from theorylab.theory.bilinear import random_init_sigma1_bound


def figure_scatter(ctx: RunContext, heads: pd.DataFrame) -> None:
    fig, ax = new_figure()
    null = heads[heads["family"] == "random init"]
    s_lo, s_hi = null["symmetry"].quantile([0.025, 0.975])
    d_lo, d_hi = null["directionality"].quantile([0.025, 0.975])
    ax.add_patch(
        __import__("matplotlib").patches.Rectangle(
            (s_lo, d_lo), s_hi - s_lo, d_hi - d_lo, color="0.85", zorder=0, label="random init, 95%"
        )
    )
    for i, (family, g) in enumerate(heads.groupby("family", sort=False)):
        ax.plot(g["symmetry"], g["directionality"], "o", ms=3, alpha=0.6, color=color(i), label=family)
    ax.set(xlabel="symmetry score ‖S‖²/‖M‖²", ylabel="directionality score")
    ax.legend(fontsize=6)
    ctx.figure("scores_scatter", fig)


def figure_tracking(ctx: RunContext, track: pd.DataFrame) -> None:
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    for i, (kind, g) in enumerate(track.groupby("kind")):
        stats = g.groupby("step")[["symmetry", "directionality"]].agg(["mean", "std"])
        for a, col in ((ax, "symmetry"), (bx, "directionality")):
            m, s = stats[(col, "mean")], stats[(col, "std")].fillna(0)
            a.plot(m.index, m, "o-", ms=3, color=color(i), label=kind)
            a.fill_between(m.index, m - s, m + s, color=color(i), alpha=0.2)
    ax.axhline(0.5, color="k", ls=":", lw=0.8)
    bx.axhline(0.0, color="k", ls=":", lw=0.8)
    for a, col in ((ax, "symmetry"), (bx, "directionality")):
        a.set(xlabel="training step", ylabel=f"mean {col} score")
        a.legend(fontsize=7)
    ctx.figure("scores_over_training", fig)


def figure_spectra(ctx: RunContext, cfg: BilinearOperatorConfig) -> None:
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    model = ToyTransformer(d_model=cfg.d_model, n_heads=cfg.n_heads, bias=False, seed=ctx.seed("random/0")).double()
    dh = cfg.d_model // cfg.n_heads
    for h, op in enumerate(head_operators(model)[:2]):
        sv = torch.linalg.svdvals(op.M)
        ax.semilogy(np.arange(1, len(sv) + 1), sv.clamp_min(1e-20).numpy(), ".", color=color(h), label=f"head {h}")
        lam = torch.linalg.eigvals(op.M)
        bx.plot(lam.real.numpy(), lam.imag.numpy(), ".", color=color(h), ms=4, label=f"head {h}")
    edge = random_init_sigma1_bound(cfg.d_model, dh)  # entries of W_q, W_k ~ N(0, 1/d)
    ax.axhline(edge, color="k", ls="--", lw=0.8, label="σ²(√d + √d_h)²/√d_h (init edge)")
    ax.axvline(dh + 0.5, color="k", ls=":", lw=0.8)
    ax.set(xlabel="index", ylabel="singular value of M")
    bx.set(xlabel="Re λ(M)", ylabel="Im λ(M)")
    for a in (ax, bx):
        a.legend(fontsize=6)
    ctx.figure("spectra", fig)


def figure_inertia(ctx: RunContext, heads: pd.DataFrame) -> None:
    fig, ax = new_figure()
    trained = heads[heads["family"].isin(["encoder", "decoder"])]
    for i, (kind, g) in enumerate(trained.groupby("family")):
        by = g.groupby("layer")[["inertia_pos", "inertia_neg"]].mean()
        ax.plot(by.index + 0.1 * i, by["inertia_pos"], "^-", color=color(i), label=f"{kind}: positive")
        ax.plot(by.index + 0.1 * i, by["inertia_neg"], "v--", color=color(i), label=f"{kind}: negative")
    ax.set(xlabel="layer", ylabel="eigenvalues of S (mean over heads)")
    ax.legend(fontsize=7)
    ctx.figure("inertia", fig)


def figure_layers(ctx: RunContext, heads: pd.DataFrame) -> None:
    """Symmetry and directionality per layer, encoder vs decoder (mean and spread over heads and seeds)."""
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    trained = heads[heads["family"].isin(["encoder", "decoder"])]
    null = heads[heads["family"] == "random init"]
    for a, col in ((ax, "symmetry"), (bx, "directionality")):
        for i, (kind, g) in enumerate(trained.groupby("family")):
            by = g.groupby("layer")[col].agg(["mean", "min", "max"])
            a.errorbar(
                by.index + 0.1 * i,
                by["mean"],
                yerr=[by["mean"] - by["min"], by["max"] - by["mean"]],
                fmt="o-",
                capsize=2,
                color=color(i),
                label=kind,
            )
        a.axhspan(*null[col].quantile([0.025, 0.975]), color="0.85", zorder=0, label="random init, 95%")
        a.set(xlabel="layer", ylabel=f"{col} score")
        a.legend(fontsize=7)
    ctx.figure("scores_per_layer", fig)
