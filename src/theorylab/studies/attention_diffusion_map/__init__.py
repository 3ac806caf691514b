"""attention-diffusion-map: self-attention as a diffusion operator, equilibrium and its breaking.

Paper: Candanedo, arXiv 2604.09560 (card reconstructed from the abstract; the bidivergence split,
the product-of-experts symmetrisation and the magnetic Laplacian are our forms, to be swapped for the
paper's). With scores ``s_ij = x_iᵀ M x_j/√d`` and ``P = D⁻¹ exp(s)``:

- tied queries and keys (``M = βI``) make P the Coifman-Lafon random walk of a Gaussian kernel with
  bandwidth ``ε = 2√d/β`` up to per-key weights ``w_j = exp(β|x_j|²/(2√d))`` (exactly it on a
  sphere), so attention recovers manifold coordinates (circle, Swiss roll);
- a symmetric M gives detailed balance (real spectrum, zero entropy production); a skew part
  ``ηA₀`` drives a non-equilibrium steady state with entropy production ``σ ∝ η²``;
- ``P ⊙ Pᵀ`` is symmetric and blind to the skew part; the magnetic Laplacian carries the skew part
  as U(1) phases: gauge-invariant, and frustrated (λ_min > 0) by generic phases.

Everything is float64 linear algebra on CPU.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
from scipy.stats import spearmanr

from theorylab.core import RunContext, study
from theorylab.data.manifolds import circle, gaussian_points, sphere, swiss_roll
from theorylab.studies.attention_diffusion_map.config import PRESETS, AttentionDiffusionMapConfig
from theorylab.studies.attention_diffusion_map.figures import (
    figure_coords,
    figure_entropy,
    figure_magnetic,
    figure_tied,
)
from theorylab.studies.attention_diffusion_map.judges import claims
from theorylab.theory.diffusion_map_checks import magnetic_identities, operator_identities, tied_identity
from theorylab.theory.diffusion_maps import (
    attention_operator,
    canonical_correlations,
    corrected_tied_attention,
    entropy_production,
    knn_bandwidth,
    magnetic_laplacian,
    random_attention_draw,
    random_magnetic_draw,
    random_sym_skew,
    right_eigenvectors,
)

PAPER = "Candanedo, arXiv 2604.09560 (2026)"


def _operators(cfg: AttentionDiffusionMapConfig, ctx: RunContext) -> pd.DataFrame:
    """The identity checks of each random operator (recorded), and its entropy production along M = S + ηA₀
    (returned)."""
    rows, entropy = [], []
    for k in ctx.progress(range(cfg.draws), "random operators: identities and entropy production"):
        g = ctx.generator(f"operators/{k}")
        X, S, A0 = random_attention_draw(cfg.n, cfg.d, g)
        _, A_other = random_sym_skew(cfg.d, g)
        rows.append(dict(draw=k, **operator_identities(X, S, A0, A_other)))
        entropy += [
            dict(draw=k, eta=eta, sigma=entropy_production(attention_operator(X, S + eta * A0))) for eta in cfg.skews
        ]
    ctx.table("operators", pd.DataFrame(rows))
    return pd.DataFrame(entropy)


def _tied(cfg: AttentionDiffusionMapConfig, ctx: RunContext) -> pd.DataFrame:
    g = ctx.generator("tied")
    rows = [
        dict(case=case, **tied_identity(X, cfg.beta))
        for case, X in (
            ("sphere (equal norms)", 3.0 * sphere(cfg.n, cfg.d, generator=g)),
            ("gaussian (unequal norms)", gaussian_points(cfg.n, cfg.d, generator=g)),
        )
    ]
    table = pd.DataFrame(rows)
    ctx.table("tied", table)
    return table


def _manifolds(cfg: AttentionDiffusionMapConfig, ctx: RunContext) -> tuple[pd.DataFrame, dict]:
    X, theta = circle(cfg.circle_n, cfg.d, generator=ctx.generator("circle"))
    eps_c = 3.0**2 / 5
    phi = right_eigenvectors(corrected_tied_attention(X, eps_c), 2)
    cc = canonical_correlations(phi, torch.stack([theta.cos(), theta.sin()], -1))
    Y, uv = swiss_roll(cfg.roll_n, cfg.d, generator=ctx.generator("roll"))
    eps_r = knn_bandwidth(Y, 10)
    roll_phi = right_eigenvectors(corrected_tied_attention(Y, eps_r), 2)
    wide_phi = right_eigenvectors(corrected_tied_attention(Y, cfg.control_factor * eps_r), 1)
    # no correction
    raw_phi = right_eigenvectors(
        attention_operator(Y, (2 * math.sqrt(cfg.d) / eps_r) * torch.eye(cfg.d, dtype=torch.float64)), 2
    )
    table = pd.DataFrame(
        [
            dict(manifold="circle", measure="canonical correlation 1", value=float(cc[0]), epsilon=eps_c),
            dict(manifold="circle", measure="canonical correlation 2", value=float(cc[1]), epsilon=eps_c),
            dict(
                manifold="swiss roll",
                measure="|spearman(phi1, t)|",
                value=abs(spearmanr(roll_phi[:, 0], uv[:, 0]).statistic),
                epsilon=eps_r,
            ),
            dict(
                manifold="swiss roll",
                measure=f"|spearman(phi1, t)| at {cfg.control_factor:g} eps (control)",
                value=abs(spearmanr(wide_phi[:, 0], uv[:, 0]).statistic),
                epsilon=cfg.control_factor * eps_r,
            ),
            dict(
                manifold="swiss roll",
                measure="|spearman(phi1, t)| without the norm correction (report)",
                value=abs(spearmanr(raw_phi[:, 0], uv[:, 0]).statistic),
                epsilon=eps_r,
            ),
        ]
    )
    ctx.table("manifolds", table)
    return table, dict(circle=(phi, theta), roll=(roll_phi, uv[:, 0]), raw=(raw_phi, uv[:, 0]))


def _magnetic(cfg: AttentionDiffusionMapConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, spectra = [], []
    for k in ctx.progress(range(cfg.draws), "magnetic Laplacians"):
        # card: N(0, 1) entries of S, A₀; ours divided by √d
        X, S, A0, phi = random_magnetic_draw(cfg.magnetic_n, cfg.d, ctx.generator(f"magnetic/{k}"))
        row, lam_g = magnetic_identities(X, S, A0, cfg.magnetic_skew, phi)
        rows.append(dict(draw=k, **row))
        if k == 0:
            for eta in (0.0, 0.01, 0.03, 0.1, 0.3, 1.0):
                ev = torch.linalg.eigvalsh(magnetic_laplacian(X, S, A0, eta))[:10]
                spectra += [dict(eta=eta, index=i, value=float(v), case="skew phases") for i, v in enumerate(ev)]
            spectra += [dict(eta=0.0, index=i, value=float(v), case="pure gauge") for i, v in enumerate(lam_g[:10])]
    table, spec = pd.DataFrame(rows), pd.DataFrame(spectra)
    ctx.table("magnetic", table)
    ctx.table("magnetic_spectrum", spec)
    return table, spec


@study(
    "attention-diffusion-map",
    title="Self-attention as a diffusion operator: tied QK is a diffusion map; "
    "skew parts drive a non-equilibrium state",
    paper=PAPER,
    config=AttentionDiffusionMapConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
)
def run(cfg: AttentionDiffusionMapConfig, ctx: RunContext) -> None:
    ent = _operators(cfg, ctx)
    _tied(cfg, ctx)
    figure_tied(ctx, cfg)
    ctx.table("entropy", ent)
    figure_entropy(ctx, ent, cfg)
    _, coords = _manifolds(cfg, ctx)
    figure_coords(ctx, coords)
    _, spec = _magnetic(cfg, ctx)
    figure_magnetic(ctx, spec)
