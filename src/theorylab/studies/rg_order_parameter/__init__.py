"""rg-order-parameter: is depth a measurable renormalization-group flow in a pure-MLP residual stack?

Paper: Haggi-Mani & Rish, arXiv 2606.10324 (2026), abstract only; its setup is taken from the same authors'
follow-up, arXiv 2607.15449 (notes on it): masked-token prediction (15 % BERT masking) on Markov chains over 16
one-hot tokens, length 64, correlation lengths ξ ≈ 1.2 and 6.7, a stack of 6 residual MLP blocks of width 64
(hidden 4d, GELU, LayerNorm), Adam 3e-4, batch 32, 10,000 steps of fresh sequences; effective rank = exp(entropy
of the normalised singular values), kernel drift = 1 - CKA. The abstract's claims: after training, the effective
rank of the residual stream falls monotonically with depth at ξ ≈ 1 and not at ξ ≈ 7 (position level), and the
drift sits in one or two layer transitions; the follow-up adds that at long ξ the rank jumps above the input
dimension (16) at layer 1 and stays on a high plateau.

How a pure MLP stack mixes positions is stated nowhere, so each reading we have is a config choice (``readings``):

- ``mixer``: MLP-Mixer blocks, a token-mixing MLP along positions then a channel MLP (the card's default);
- ``window``: each position sees the one-hot window x_{t-w..t+w} through a linear map, then per-position blocks;
- ``flat``: the flattened one-hot sequence into one d-wide stream per sequence, a readout to every position.

Every card claim is judged on every reading (one claim per reading). The chain is the card's lazy chain
P = λI + (1 - λ)1πᵀ, whose correlation length is exactly ξ = -1/ln λ (:mod:`theorylab.data.markov`); the loss floor
is the forward-backward Bayes posterior (:mod:`theorylab.theory.markov`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.markov import indicator_autocorrelation_empirical, lazy_chain, mask_tokens, sample_chain
from theorylab.nn.residual_mlp import ResidualMLPStack
from theorylab.probes.layer_spectra import layer_drift, layer_ranks
from theorylab.studies.rg_order_parameter.config import PRESETS, RgOrderParameterConfig
from theorylab.studies.rg_order_parameter.figures import figure_chain, figure_drift, figure_ranks, figure_selectivity
from theorylab.studies.rg_order_parameter.judges import claims
from theorylab.theory.markov import bayes_masked_loss, indicator_autocorrelation, lazy_lambda
from theorylab.train.masked_chain import train_masked_chain

PAPER = "Haggi-Mani & Rish, arXiv 2606.10324 (2026; abstract only), setup from the follow-up arXiv 2607.15449"


def _chain_check(cfg: RgOrderParameterConfig, ctx: RunContext) -> None:
    """Claim 1: the spectrum of each generated P and the empirical indicator autocorrelation against λ^k."""
    spec, auto = [], []
    lags = np.arange(1, cfg.chain_lags + 1)
    for xi in cfg.xis:
        lam = lazy_lambda(xi)
        P = lazy_chain(cfg.vocab_size, lam)
        eig = np.sort(np.linalg.eigvals(P).real)
        want = np.sort(np.r_[np.full(cfg.vocab_size - 1, lam), 1.0])
        spec.append(dict(xi=xi, lam=lam, eig_error=float(np.abs(eig - want).max())))
        n_seq = -(-cfg.chain_tokens // cfg.length)
        tokens = sample_chain(P, n_seq, cfg.length, ctx.generator(f"chain/{xi}"))
        emp = indicator_autocorrelation_empirical(tokens, cfg.vocab_size, lags)
        theory = indicator_autocorrelation(P, lags)
        auto += [
            dict(xi=xi, lag=int(k), empirical=float(e), theory=float(t), lam_k=lam ** int(k))
            for k, e, t in zip(lags, emp, theory)
        ]
    ctx.table("chain_spectrum", pd.DataFrame(spec))
    figure_chain(ctx, ctx.table("chain_autocorrelation", pd.DataFrame(auto)))


def _measure(
    model: ResidualMLPStack, tokens: torch.Tensor, corrupted: torch.Tensor, mask: torch.Tensor, tag: dict
) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Ranks of layers 0..N (layer 0 = the embedding, excluded from the claims), drift of the block transitions and
    the masked loss, on the held-out sequences."""
    with torch.no_grad():
        logits, layers = model(corrupted, return_layers=True)
        loss = float(torch.nn.functional.cross_entropy(logits[mask], tokens[mask]))
        ranks = layer_ranks([model.embed(corrupted)] + layers, mask if model.variant != "flat" else None, first=0)
        drift = layer_drift(layers, first=1)
    return ranks.assign(**tag), drift.assign(**tag), loss


def _one_run(item: dict, progress) -> dict[str, pd.DataFrame]:
    """One (reading, ξ) job: the untrained net measured at step 0, trained, measured again."""
    cfg = RgOrderParameterConfig(**item["config"])
    reading, xi = item["reading"], item["xi"]
    P = lazy_chain(cfg.vocab_size, lazy_lambda(xi))
    tokens = sample_chain(P, cfg.eval_sequences, cfg.length, item["eval_generator"])
    corrupted, mask = mask_tokens(tokens, cfg.mask_rate, cfg.vocab_size, item["eval_generator"])
    model = ResidualMLPStack(
        cfg.vocab_size + 1,
        cfg.vocab_size,
        cfg.length,
        d=cfg.d_model,
        n_blocks=cfg.n_layers,
        variant=reading,
        window=cfg.window,
        tok_mult=cfg.tok_mult,
        ch_mult=cfg.mlp_mult,
        seed=item["init_seed"],
    ).to(item["device"])
    dev = item["device"]
    tokens, corrupted, mask = tokens.to(dev), corrupted.to(dev), mask.to(dev)
    tag = dict(reading=reading, xi=xi)
    r0, d0, loss0 = _measure(model, tokens, corrupted, mask, dict(tag, trained=False))
    curve = train_masked_chain(
        model,
        P,
        length=cfg.length,
        batch=cfg.batch,
        steps=cfg.steps,
        lr=cfg.lr,
        mask_rate=cfg.mask_rate,
        mask_id=cfg.vocab_size,
        generator=item["train_generator"],
        log_every=max(1, cfg.steps // 50),
        device=dev,
        schedule=cfg.lr_schedule,
        progress=(lambda it, total: progress(it, f"{reading}, ξ = {xi}", total=total)) if progress else None,
    )
    r1, d1, loss1 = _measure(model, tokens, corrupted, mask, dict(tag, trained=True))
    bayes = bayes_masked_loss(P, tokens.cpu().numpy(), mask.cpu().numpy())
    losses = pd.DataFrame([dict(**tag, loss=loss1, loss_init=loss0, bayes=bayes, gap=loss1 - bayes)])
    return dict(
        ranks=pd.concat([r0, r1], ignore_index=True),
        drift=pd.concat([d0, d1], ignore_index=True),
        losses=losses,
        training=curve.assign(**tag),
    )


def _memory(cfg: RgOrderParameterConfig) -> tuple[float, str]:
    """Peak bytes: the held-out activations (layers x B x L x d, float32, plus float64 copies in the spectra)."""
    width = cfg.d_model * max(cfg.mlp_mult, 1)
    act = (cfg.n_layers + 2) * cfg.eval_sequences * cfg.length * (cfg.d_model * 3 + width) * 4
    return float(act + 200e6), "--set eval_sequences=256"


@study(
    "rg-order-parameter",
    title="A renormalization-group order parameter in residual MLPs: rank collapse with depth, its selectivity in "
    "the correlation length, drift on one or two transitions (three readings of how the stack mixes positions)",
    paper=PAPER,
    config=RgOrderParameterConfig,
    presets=PRESETS,
    family="theory-of-depth",
    claims=claims,
    cpu_threads=2,  # both cores: quick 47 s idle (65.6 s pinned to one; 2-core AVX2)
    memory=_memory,
)
def run(cfg: RgOrderParameterConfig, ctx: RunContext) -> None:
    _chain_check(cfg, ctx)
    jobs = [
        dict(
            config=cfg.model_dump(),
            reading=reading,
            xi=xi,
            init_seed=ctx.seed(f"init/{reading}/{xi}"),
            eval_generator=ctx.generator(f"eval/{xi}"),
            train_generator=ctx.generator(f"train/{reading}/{xi}"),
            device=str(ctx.device),
        )
        for reading in cfg.readings
        for xi in cfg.xis
    ]
    parts: dict[str, list[pd.DataFrame]] = {}
    for out in ctx.map(_one_run, jobs, "readings x ξ"):
        for name, frame in out.items():
            parts.setdefault(name, []).append(frame)
    tables = {name: ctx.table(name, pd.concat(frames, ignore_index=True)) for name, frames in parts.items()}
    for loss in tables["losses"]["loss"]:
        ctx.check_finite("held-out masked loss", loss)
    figure_ranks(ctx, tables["ranks"], cfg.vocab_size)
    figure_selectivity(ctx, tables["ranks"])
    figure_drift(ctx, tables["drift"])
