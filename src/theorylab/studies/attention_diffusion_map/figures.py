"""attention-diffusion-map: its figures, drawn from the run's tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure
from theorylab.data.manifolds import gaussian_points, sphere
from theorylab.studies.attention_diffusion_map.config import AttentionDiffusionMapConfig
from theorylab.theory.diffusion_maps import (
    attention_operator,
    gaussian_kernel,
    random_attention_draw,
    random_walk,
)


def figure_tied(ctx: RunContext, cfg: AttentionDiffusionMapConfig) -> None:
    g = ctx.generator("tied-figure")
    fig, axes = new_figure(ncols=2, width=8.4)
    eps = 2 * math.sqrt(cfg.d) / cfg.beta
    for ax, (name, X) in zip(
        axes,
        (
            ("sphere", 3.0 * sphere(200, cfg.d, generator=g)),
            ("unequal norms", gaussian_points(cfg.n, cfg.d, generator=g)[:200]),
        ),
    ):
        P = attention_operator(X, cfg.beta * torch.eye(cfg.d, dtype=torch.float64))
        Q = random_walk(gaussian_kernel(X, eps))
        ax.loglog(Q.flatten().numpy(), P.flatten().numpy(), ".", ms=1, alpha=0.3)
        lim = [float(Q[Q > 0].min()), 1.0]
        ax.plot(lim, lim, "k--", lw=0.8)
        ax.set_xlabel("Gaussian random walk D⁻¹K (ε = 2√d/β)")
        ax.set_ylabel("tied-QK attention P")
        ax.set_title(f"{name}: on the line iff the norms are equal", fontsize=8)
    ctx.figure("tied_identity", fig)


def figure_entropy(ctx: RunContext, ent: pd.DataFrame, cfg: AttentionDiffusionMapConfig) -> None:
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    for k, gk in ent.groupby("draw"):
        ax.loglog(gk["eta"], gk["sigma"], "o-", ms=3, color=color(int(k)), label=f"draw {k}")
    e = np.array(sorted(ent["eta"].unique()))
    ax.loglog(e, ent["sigma"].median() * (e / np.median(e)) ** 2, "k--", lw=0.8, label="slope 2")
    ax.set_xlabel("skew strength η")
    ax.set_ylabel("entropy production σ")
    ax.set_title("non-equilibrium steady state: σ ∝ η²", fontsize=8)
    ax.legend(fontsize=6)
    X, S, A0 = random_attention_draw(cfg.n, cfg.d, ctx.generator("operators/0"))
    for eta, marker in ((0.0, "o"), (1.0, "x")):
        lam = torch.linalg.eigvals(attention_operator(X, S + eta * A0))
        bx.plot(lam.real.numpy(), lam.imag.numpy(), marker, ms=3, label=f"η = {eta:g}")
    bx.set_xlabel("Re λ(P)")
    bx.set_ylabel("Im λ(P)")
    bx.set_title("spectrum of P: real at equilibrium", fontsize=8)
    bx.legend(fontsize=7)
    ctx.figure("entropy_production", fig)


def figure_coords(ctx: RunContext, coords: dict) -> None:
    fig, axes = new_figure(ncols=3, width=12)
    for ax, (key, title) in zip(
        axes,
        (
            ("circle", "circle: (φ₁, φ₂) coloured by θ"),
            ("roll", "Swiss roll: (φ₁, φ₂) coloured by t"),
            ("raw", "Swiss roll without the norm correction"),
        ),
    ):
        phi, c = coords[key]
        ax.scatter(phi[:, 0].numpy(), phi[:, 1].numpy(), c=c.numpy(), s=4, cmap="viridis")
        ax.set_xlabel("φ₁")
        ax.set_ylabel("φ₂")
        ax.set_title(title, fontsize=8)
    ctx.figure("diffusion_coords", fig)


def figure_magnetic(ctx: RunContext, spec: pd.DataFrame) -> None:
    fig, ax = new_figure()
    skew = spec[spec["case"] == "skew phases"]
    for i, g in skew.groupby("index"):
        ax.plot(g["eta"].clip(lower=1e-3), g["value"], "o-", ms=3, color=color(0), alpha=0.3 + 0.07 * (10 - int(i)))
    gauge = spec[spec["case"] == "pure gauge"]
    ax.plot(np.full(len(gauge), 1e-3), gauge["value"], "x", color=color(1), label="pure-gauge phases (η axis: n/a)")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_xlabel("η (η = 0 drawn at 1e-3)")
    ax.set_ylabel("lowest 10 eigenvalues of L")
    ax.set_title("magnetic Laplacian: frustration lifts the bottom", fontsize=8)
    ax.legend(fontsize=7)
    ctx.figure("magnetic_spectrum", fig)
