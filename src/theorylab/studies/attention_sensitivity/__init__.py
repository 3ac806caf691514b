"""attention-sensitivity: the softmax Jacobian's ∞→1 norm is θ(p)/τ, and what follows for stability.

Paper: S. M. Emadi, "Exact Attention Sensitivity and the Geometry of Transformer Stability", arXiv
2602.18849 (2026); DeepNorm from H. Wang et al., "DeepNet: Scaling Transformers to 1,000 Layers"
(2022). The card is reconstructed from the abstract; θ's derivation is in
:mod:`theorylab.theory.softmax`.

- θ(p) = max_S 4p(S)(1 − p(S)) equals ‖J‖_{∞→1}·τ for J = (diag p − ppᵀ)/τ (checked against
  enumeration of sign vectors), with its closed forms;
- in the block-∞/RMS geometry an attention layer's local gain does not grow with the sequence
  length T and stays under a first-order bound with no T in it (a sequence-ℓ2 output norm, the
  control, grows like √T);
- post-LN with DeepNorm's α = (2N)^(1/4) and V/O/FFN init gain β = (8N)^(−p): the relative output
  change of one gradient step is flat in depth N at p ≈ ¼ (DeepNet's N^(−1/4) law), while plain
  post-LN's grows with N;
- θ of a GPT-2-style model stays near 1 through training (attention does not sharpen);
- (paper preset) a deep post-LN model needs learning-rate warmup.
"""

from __future__ import annotations

import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.text import char_stream, resolve_corpus
from theorylab.nn.toy_transformer import ToyTransformer, frozen_attention_layer
from theorylab.probes.attention_stats import checkpoint_theta
from theorylab.probes.jacobian import attention_gain_vs_length
from theorylab.probes.update_response import deepnorm_update_sweep, depth_gradient_profile
from theorylab.studies.attention_sensitivity.config import PRESETS, AttentionSensitivityConfig
from theorylab.studies.attention_sensitivity.figures import (
    figure_deepnorm,
    figure_gain,
    figure_grad,
    figure_theta,
    figure_theta_training,
)
from theorylab.studies.attention_sensitivity.judges import claims
from theorylab.theory.softmax import random_theta_rows, theta_closed_form_cases
from theorylab.train.monitored_lm import theta_over_training, warmup_comparison

PAPER = "Emadi, arXiv 2602.18849 (2026); DeepNorm: Wang et al., arXiv 2203.00555 (2022)"


VOCAB = 64  # tokens of the DeepNorm sweep and the gradient profile (random data)


def _deepnorm(cfg: AttentionSensitivityConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame]:
    """DeepNet's one-step model update vs depth N and β = (8N)^(−p), and plain post-LN; then the per-layer
    gradient norms at init, pre- vs post-LN."""
    shape = dict(
        d_model=cfg.deepnorm_d_model,
        n_heads=cfg.deepnorm_n_heads,
        vocab_size=VOCAB,
        batch=cfg.deepnorm_batch,
        length=cfg.deepnorm_length,
    )
    table = deepnorm_update_sweep(
        **shape,
        depths=cfg.deepnorm_n_layers,
        exponents=cfg.deepnorm_exponents,
        n_seeds=cfg.deepnorm_seeds,
        lr=cfg.deepnorm_lr,
        init_seed=lambda N, s: ctx.seed(f"dn/init/{N}/{s}"),
        data_generator=lambda s: ctx.generator(f"dn/data/{s}"),
        progress=ctx.progress,
    )
    grads = depth_gradient_profile(
        **shape,
        depths=cfg.grad_n_layers,
        init_seed=lambda N: ctx.seed(f"grad/init/{N}"),
        generator=ctx.generator("grad/data"),
    )
    return ctx.table("deepnorm", table), ctx.table("grad_profile", grads)


def _theta_training(cfg: AttentionSensitivityConfig, ctx: RunContext) -> pd.DataFrame:
    """θ over training of a GPT-2 (Hugging Face, random init, trained by us), and of a local checkpoint."""
    vocab, stream = char_stream(cfg.lm_corpus)
    table, loss = theta_over_training(
        stream,
        len(vocab),
        layers=cfg.lm_n_layers,
        width=cfg.lm_d_model,
        heads=cfg.lm_n_heads,
        context=cfg.lm_length,
        batch=cfg.lm_batch,
        steps=cfg.lm_steps,
        lr=cfg.lm_lr,
        log_every=cfg.lm_log_every,
        min_keys=cfg.min_keys,
        init_seed=ctx.seed("lm/init"),
        probe_generator=ctx.generator("lm/probe"),
        generator=ctx.generator("lm/data"),
        progress=ctx.progress,
        check=ctx.check_finite,
        device=ctx.device,
    )
    ctx.table("lm_loss", loss)
    if cfg.lm_local:
        text = resolve_corpus(cfg.lm_corpus)
        local = checkpoint_theta(cfg.lm_local, text, cfg.min_keys, ctx.generator("lm/local"), ctx.device)
        table = pd.concat([table, local.assign(step=-1, model=f"local: {cfg.lm_local}")], ignore_index=True)
    return ctx.table("theta_training", table)


def _warmup(cfg: AttentionSensitivityConfig, ctx: RunContext) -> pd.DataFrame:
    """Paper preset: a deep post-LN model trained with and without linear warmup on the same batches."""
    vocab, stream = char_stream(cfg.lm_corpus)
    seed = ctx.seed("warmup/init")

    def model():
        return ToyTransformer(
            d_model=cfg.postln_d_model,
            n_heads=cfg.postln_n_heads,
            n_layers=cfg.postln_n_layers,
            mlp_width=4 * cfg.postln_d_model,
            vocab_size=len(vocab),
            causal=True,
            positional="learned",
            max_len=cfg.postln_length,
            norm_position="post",
            seed=seed,
        )

    table = warmup_comparison(
        model,
        stream,
        warmups=(0, cfg.postln_warmup_steps),
        steps=cfg.postln_steps,
        batch=cfg.postln_batch,
        length=cfg.postln_length,
        lr=cfg.postln_lr,
        make_generator=lambda: ctx.generator("warmup/data"),
        device=ctx.device,
        progress=ctx.progress,
        log=ctx.log,
    )
    return ctx.table("warmup", table)


@study(
    "attention-sensitivity",
    title="Exact softmax sensitivity θ(p), length-independent gains, DeepNorm's N^(-1/4), θ over training",
    paper=PAPER,
    config=AttentionSensitivityConfig,
    presets=PRESETS,
    family="attention",
    claims=claims,
)
def run(cfg: AttentionSensitivityConfig, ctx: RunContext) -> None:
    threads = torch.get_num_threads()
    if ctx.device.type == "cpu":
        torch.set_num_threads(1)  # the card's advice: these small ops slow down badly under thread contention
    try:
        rows = random_theta_rows(ctx.rng("theta/rows"), cfg.theta_rows, cfg.theta_n_max, cfg.dirichlet_alphas, cfg.taus)
        theta = ctx.table("theta_rows", rows)
        ctx.table("closed_forms", theta_closed_form_cases())
        figure_theta(ctx, theta)
        torch.set_num_threads(threads)
        seed = ctx.seed("gain/init")  # a random attention layer (float64, no biases): local gain vs T and its bound
        attn = frozen_attention_layer(cfg.gain_d_model, cfg.gain_n_heads, seed)
        gain = attention_gain_vs_length(
            attn,
            cfg.gain_lengths,
            eps=cfg.gain_eps,
            steps=cfg.gain_steps,
            restarts=cfg.gain_restarts,
            control_restarts=cfg.control_restarts,
            generator=torch.Generator().manual_seed(seed),
            progress=ctx.progress,
        )
        figure_gain(ctx, ctx.table("gain", gain))
        torch.set_num_threads(1 if ctx.device.type == "cpu" else threads)
        deepnorm_table, grads = _deepnorm(cfg, ctx)
        figure_deepnorm(ctx, deepnorm_table, "sign")  # the card's step (the SGD step beside it)
        figure_grad(ctx, grads)
        torch.set_num_threads(threads)
        figure_theta_training(ctx, _theta_training(cfg, ctx))
        if cfg.postln:
            _warmup(cfg, ctx)
    finally:
        torch.set_num_threads(threads)
