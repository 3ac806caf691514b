"""ssm-consensus: tokens of a selective state-space model converge to consensus; the output gate prevents it.

Paper: J. P. Silvestre, Á. Rodríguez Abella, P. Tabuada, "The Attention Within: Consensus Dynamics in Selective
State Space Models" (2026; arXiv id not seen). Treating the layer-to-layer update of the tokens of Mamba-2 without
its output gate as an ODE on the sphere, consensus (all tokens ±-collinear) is locally exponentially stable when the
token interaction term is persistently exciting; in the isotropic case the domain of attraction is co-null. The
study runs the card's idealised model (`theory.consensus`, reconstructed scalings: see docs/studies/ssm-consensus.md)
in four configurations and measures the Gram spectrum of the normalised tokens (λ̄₁ = 1 at consensus) and the
persistence-of-excitation window. Not built yet: the Hugging Face Mamba-2 adapter and its two claims
(`hf-matches-idealization`, `trained-gate-effect`), which are reported as not decided.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.probes.spectra import gram_spectrum, participation_ratio
from theorylab.studies.ssm_consensus.config import PRESETS, SSMConsensusConfig
from theorylab.studies.ssm_consensus.figures import figure_lambda1_vs_depth, figure_pe_windows
from theorylab.studies.ssm_consensus.judges import claims
from theorylab.theory.consensus import pe_window, simulate_ideal_ssm

PAPER = "Silvestre, Rodríguez Abella, Tabuada, The Attention Within (2026)"
CONFIGS = {  # name -> keyword arguments of simulate_ideal_ssm (the card's configurations)
    "silu": dict(nonlinearity="silu"),
    "linear": dict(nonlinearity="linear"),
    "silu+gate": dict(nonlinearity="silu", gate=True),
    "isotropic": dict(isotropic=True),
}


def _sanity(cfg: SSMConsensusConfig, ctx: RunContext) -> pd.DataFrame:
    """λ̄₁ and r on constructed tokens with exact answers: ±-collinear, and orthonormal (n >= ℓ)."""
    g = ctx.generator("sanity")
    ell, n = cfg.length, max(cfg.n, cfg.length)
    u = torch.randn(n, generator=g, dtype=torch.float64)
    signs = torch.where(torch.rand(ell, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    collinear = signs[:, None] * torch.rand(ell, 1, generator=g, dtype=torch.float64).add(0.5) * u
    orthonormal = torch.linalg.qr(torch.randn(n, ell, generator=g, dtype=torch.float64))[0].T
    rows = []
    for case, Z, lam, r in (("collinear", collinear, 1.0, 1.0), ("orthonormal", orthonormal, 1 / ell, float(ell))):
        spec = gram_spectrum(Z)
        rows += [dict(case=case, measure="lambda1", measured=float(spec[0]), expected=lam),
                 dict(case=case, measure="participation", measured=float(participation_ratio(spec)), expected=r)]
    return ctx.table("sanity", pd.DataFrame(rows))


def _simulate(cfg: SSMConsensusConfig, ctx: RunContext, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    iso = name == "isotropic"
    n = cfg.isotropic_n if iso else cfg.n
    depth = cfg.isotropic_n_layers if iso else cfg.n_layers
    trace = simulate_ideal_ssm(n, n if iso else cfg.m, cfg.length, cfg.runs, depth, tau=cfg.tau,
                               generator=ctx.generator(f"ideal/{name}"), record_every=cfg.record_every,
                               **CONFIGS[name])
    ctx.check_finite(f"{name} tokens", trace.z)
    lam, r = trace.lambda1.numpy(), trace.participation.numpy()
    trajectory = pd.DataFrame([dict(config=name, layer=layer, run=k, lambda1=lam[i, k], participation=r[i, k])
                               for i, layer in enumerate(trace.layers) for k in range(cfg.runs)])
    windows = [pe_window(trace.q[:, k]) for k in range(cfg.runs)]
    final = pd.DataFrame(dict(config=name, run=np.arange(cfg.runs), n=n, depth=depth, lambda1=lam[-1],
                              participation=r[-1], pe_window=[np.nan if w is None else w for w in windows]))
    return trajectory, final


@study(
    "ssm-consensus",
    title="Selective SSMs drive tokens to consensus; the output gate prevents it",
    paper=PAPER,
    config=SSMConsensusConfig,
    presets=PRESETS,
    family="state-space models",
    claims=claims,
)
def run(cfg: SSMConsensusConfig, ctx: RunContext) -> None:
    _sanity(cfg, ctx)
    parts = [_simulate(cfg, ctx, name) for name in ctx.progress(list(CONFIGS), "idealised configurations")]
    trajectory = ctx.table("trajectory", pd.concat([p[0] for p in parts], ignore_index=True))
    final = ctx.table("final", pd.concat([p[1] for p in parts], ignore_index=True))
    figure_lambda1_vs_depth(ctx, trajectory)
    figure_pe_windows(ctx, final, cfg.n_layers)
