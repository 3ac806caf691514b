"""ssm-consensus: tokens of a selective state-space model converge to consensus; the output gate prevents it.

Paper: J. P. Silvestre, Á. Rodríguez Abella, P. Tabuada, "The Attention Within: Consensus Dynamics in Selective
State Space Models" (2026; arXiv id not seen). Treating the layer-to-layer update of the tokens of Mamba-2 without
its output gate as an ODE on the sphere, consensus (all tokens ±-collinear) is locally exponentially stable when the
token interaction term is persistently exciting; in the isotropic case the domain of attraction is co-null. The
study runs the card's idealised model (`theory.consensus`, reconstructed scalings: see docs/studies/ssm-consensus.md)
in four configurations and measures the Gram spectrum of the normalised tokens (λ̄₁ = 1 at consensus) and the
persistence-of-excitation window. The real architecture is Hugging Face's Mamba-2 through `nn.hf_mamba2`: configured
as the idealised layer it must reproduce `simulate_ideal_ssm` (claim 7), and its output gate is toggled at depth 200
by cycling the blocks (claim 8, on a self-trained or local model at the paper preset).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.core.errors import MissingExtra
from theorylab.probes.spectra import gram_spectrum, participation_ratio
from theorylab.studies.ssm_consensus.config import PRESETS, SSMConsensusConfig
from theorylab.studies.ssm_consensus.figures import figure_gate_toggle, figure_lambda1_vs_depth, figure_pe_windows
from theorylab.studies.ssm_consensus.judges import claims
from theorylab.theory.consensus import draw_layer_weights, pe_window, simulate_ideal_ssm

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
    ell, n = cfg.length, max(cfg.d, cfg.length)
    u = torch.randn(n, generator=g, dtype=torch.float64)
    signs = torch.where(torch.rand(ell, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    collinear = signs[:, None] * torch.rand(ell, 1, generator=g, dtype=torch.float64).add(0.5) * u
    orthonormal = torch.linalg.qr(torch.randn(n, ell, generator=g, dtype=torch.float64))[0].T
    rows = []
    for case, Z, lam, r in (("collinear", collinear, 1.0, 1.0), ("orthonormal", orthonormal, 1 / ell, float(ell))):
        spec = gram_spectrum(Z)
        rows += [
            dict(case=case, measure="lambda1", measured=float(spec[0]), expected=lam),
            dict(case=case, measure="participation", measured=float(participation_ratio(spec)), expected=r),
        ]
    return ctx.table("sanity", pd.DataFrame(rows))


def _simulate(cfg: SSMConsensusConfig, ctx: RunContext, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    iso = name == "isotropic"
    n = cfg.isotropic_dim if iso else cfg.d
    depth = cfg.isotropic_n_layers if iso else cfg.n_layers
    trace = simulate_ideal_ssm(
        n,
        n if iso else cfg.state_dim,
        cfg.length,
        cfg.runs,
        depth,
        tau=cfg.tau,
        generator=ctx.generator(f"ideal/{name}"),
        record_every=cfg.record_every,
        **CONFIGS[name],
    )
    ctx.check_finite(f"{name} tokens", trace.z)
    lam, r = trace.lambda1.numpy(), trace.participation.numpy()
    trajectory = pd.DataFrame(
        [
            dict(config=name, layer=layer, run=k, lambda1=lam[i, k], participation=r[i, k])
            for i, layer in enumerate(trace.layers)
            for k in range(cfg.runs)
        ]
    )
    windows = [pe_window(trace.q[:, k]) for k in range(cfg.runs)]
    final = pd.DataFrame(
        dict(
            config=name,
            run=np.arange(cfg.runs),
            n=n,
            depth=depth,
            lambda1=lam[-1],
            participation=r[-1],
            pe_window=[np.nan if w is None else w for w in windows],
        )
    )
    return trajectory, final


def _hf_equivalence(cfg: SSMConsensusConfig, ctx: RunContext) -> pd.DataFrame:
    """Claim 7: the HF Mamba-2 configured as the idealised layer against simulate_ideal_ssm's layer, in float32."""
    from theorylab.probes.mamba2_consensus import idealization_error

    rows = []
    for name in ("silu", "linear", "silu+gate"):
        kw = CONFIGS[name]
        g = ctx.generator(f"hf/{name}")
        weights = [
            draw_layer_weights(cfg.hf_runs, cfg.d, cfg.state_dim, gate=kw.get("gate", False), generator=g)
            for _ in range(cfg.hf_weight_sets)
        ]
        z0 = torch.randn(1, cfg.length, cfg.d, generator=g, dtype=torch.float64)
        for r in range(cfg.hf_runs):
            err = idealization_error(
                weights,
                z0.float(),
                depth=cfg.hf_n_layers,
                run=r,
                nonlinearity=kw["nonlinearity"],
                tau=cfg.tau,
                dtype=torch.float32,
            )
            rows.append(dict(config=name, run=r, max_error=float(err.max()), first_layer_error=float(err[0])))
    return ctx.table("hf_equivalence", pd.DataFrame(rows))


def _hf_model(cfg: SSMConsensusConfig, ctx: RunContext):
    """The gate-toggle model: local weights, or the card's random-init shape (trained on text when asked)."""
    from theorylab.nn.hf import load_local, random_init
    from theorylab.train.causal_lm import train_hf_causal_lm

    if cfg.mamba_local is not None:
        return load_local(cfg.mamba_local, device=ctx.device)[0].float(), "local"
    vocab, stream = None, None
    if cfg.mamba_train:
        from theorylab.data.text import char_stream

        vocab, stream = char_stream(cfg.train_corpus)
    heads = 2 * cfg.mamba_d_model // cfg.mamba_head_dim
    model = random_init(
        "mamba2",
        seed=ctx.seed("hf/model"),
        dtype=torch.float32,
        hidden_size=cfg.mamba_d_model,
        num_hidden_layers=cfg.mamba_n_layers,
        state_size=cfg.mamba_state_dim,
        head_dim=cfg.mamba_head_dim,
        num_heads=heads,
        expand=2,
        n_groups=1,
        vocab_size=len(vocab) if vocab else 512,
    ).to(ctx.device)
    if stream is None:
        return model, "random-init"
    train_hf_causal_lm(
        model,
        stream,
        cfg.train_steps,
        generator=ctx.generator("hf/train"),
        length=cfg.train_length,
        batch=cfg.train_batch,
        lr=cfg.train_lr,
        progress=ctx.progress,
        check=ctx.check_finite,
        device=ctx.device,
    )
    return model, "trained"


def _hf_gate(cfg: SSMConsensusConfig, ctx: RunContext) -> pd.DataFrame:
    """Claim 8's measurement: λ̄₁ and r of the real residual stream, gate on and off, cycling blocks to depth."""
    from theorylab.nn.hf_mamba2 import layer_states
    from theorylab.probes.mamba2_consensus import consensus_measures

    model, source = _hf_model(cfg, ctx)
    vocab = model.get_input_embeddings().num_embeddings
    tokens = torch.randint(vocab, (cfg.gate_runs, cfg.length), generator=ctx.generator("hf/tokens")).to(ctx.device)
    rows = []
    for gate in (True, False):
        states = layer_states(model, tokens, cfg.gate_n_layers, gate=gate, project=False, record_every=cfg.record_every)
        ctx.check_finite(f"HF Mamba-2 states (gate {'on' if gate else 'off'})", states.states)
        lam, r = (m.cpu().numpy() for m in consensus_measures(states.states))
        rows += [
            dict(
                source=source,
                gate="on" if gate else "off",
                layer=layer,
                run=k,
                lambda1=lam[i, k],
                participation=r[i, k],
            )
            for i, layer in enumerate(states.layers)
            for k in range(cfg.gate_runs)
        ]
    return ctx.table("hf_gate", pd.DataFrame(rows))


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
    ctx.scalar("hf_missing", "")
    if cfg.hf:
        try:
            _hf_equivalence(cfg, ctx)
            figure_gate_toggle(ctx, _hf_gate(cfg, ctx))
        except MissingExtra as err:  # the idealised claims stand without transformers; claims 7-8 say why not
            ctx.scalar("hf_missing", str(err))
