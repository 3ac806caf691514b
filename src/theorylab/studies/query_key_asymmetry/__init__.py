"""query-key-asymmetry: queries and keys are symmetric in form, not in role.

Paper: title and id not seen (only the abstract's opening); anchors arXiv 2603.04427 (asymmetric
attention: keys compress, "thin keys") and Saponati et al. (arXiv 2502.10927). Claims 1–4 are exact
consequences of softmax over keys that we derived (:mod:`theorylab.probes.qk_identities`):

- a key bias adds q_i·b to every logit of row i, so without rotary positions it changes nothing and
  gets exactly zero gradient; a query bias, or RoPE, breaks this;
- the score gradient dS has zero row sums, so the key gradients of each head and sequence sum to 0
  (the query gradients do not);
- in a causal model ∂L/∂k_j only sees the losses at positions >= j;
- (W_Q, W_K) -> (G W_Q, G⁻ᵀ W_K) leaves every logit unchanged while moving the separate ranks of W_Q
  and W_K: statements about W_Q vs W_K describe the training path, not the function.

Claims 5–6 (paper preset) are the anchor's: keys of a trained decoder truncate more cheaply than
queries, and a decoder with thin keys (d_select = d_h/4) loses little perplexity.
"""

from __future__ import annotations

import itertools

import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.text import char_stream
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.qk_identities import bias_effect, causal_key_support, gauge_rank_changes, key_gradient_sums
from theorylab.studies.query_key_asymmetry.config import PRESETS, QueryKeyAsymmetryConfig
from theorylab.studies.query_key_asymmetry.figures import (
    figure_bias,
    figure_gradients,
    figure_ranks,
    figure_truncation,
)
from theorylab.studies.query_key_asymmetry.judges import claims
from theorylab.train.thin_key_decoders import thin_key_decoders

PAPER = "query-key asymmetry (paper unidentified; anchors: arXiv 2603.04427, Saponati et al. arXiv 2502.10927)"


POSITIONAL = {"none": "none", "absolute": "learned", "rope": "rotary"}


VOCAB = 50


def _model(cfg: QueryKeyAsymmetryConfig, pos: str, causal: bool, seed: int, dtype: torch.dtype) -> ToyTransformer:
    return ToyTransformer(
        d_model=cfg.identity_d_model,
        n_heads=cfg.identity_n_heads,
        n_layers=cfg.identity_n_layers,
        mlp_width=2 * cfg.identity_d_model,
        vocab_size=VOCAB,
        causal=causal,
        positional=POSITIONAL[pos],
        max_len=cfg.identity_length,
        seed=seed,
    ).to(dtype)


def _identities(cfg: QueryKeyAsymmetryConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Claims 1-2 on random-init models: every position encoding x causal/bidirectional x float32/float64."""
    bias_rows, grad_rows = [], []
    combos = list(itertools.product(cfg.positions, (False, True), (torch.float32, torch.float64)))
    for pos, causal, dtype in ctx.progress(combos, "query/key identities"):
        model = _model(cfg, pos, causal, ctx.seed(f"id/{pos}/{causal}"), dtype)
        g = ctx.generator(f"id/data/{pos}/{causal}/{dtype}")
        tokens = torch.randint(0, VOCAB, (cfg.identity_batch, cfg.identity_length + 1), generator=g)
        tag = dict(pos=pos, causal=causal, dtype=str(dtype).removeprefix("torch."))
        for side in ("key", "query"):
            change = bias_effect(model, tokens[:, :-1], side, cfg.bias_norm, g)
            bias_rows.append(dict(**tag, side=side, rel_change=change))
        grad_rows += [dict(**tag, **row) for row in key_gradient_sums(model, tokens)]
    return ctx.table("bias_invariance", pd.DataFrame(bias_rows)), ctx.table("gradient_sums", pd.DataFrame(grad_rows))


def _causal_support(cfg: QueryKeyAsymmetryConfig, ctx: RunContext) -> pd.DataFrame:
    """∂L/∂k_j from the losses at positions < j (must be 0) and >= j (must be all of it), float64."""
    rows = []
    for pos in cfg.positions:
        model = _model(cfg, pos, True, ctx.seed(f"causal/{pos}"), torch.float64)
        tokens = torch.randint(
            0, VOCAB, (cfg.identity_batch, cfg.identity_length + 1), generator=ctx.generator(f"causal/data/{pos}")
        )
        support = causal_key_support(model, tokens, (1, cfg.identity_length // 2, cfg.identity_length - 1))
        rows += [dict(pos=pos, **row) for row in support]
    return ctx.table("causal_support", pd.DataFrame(rows))


def _gauge(cfg: QueryKeyAsymmetryConfig, ctx: RunContext) -> pd.DataFrame:
    """The same random G per head applied to a float32 model (logits, the card's precision) and to its
    float64 copy (ranks: float32 rounding of the transformed weights alone moves a stable rank by ~1e-7)."""
    rows = []
    g = ctx.generator("gauge")
    for pos in [p for p in cfg.positions if p != "rope"] or ["none"]:
        model = _model(cfg, pos, False, ctx.seed(f"gauge/{pos}"), torch.float32)
        exact = _model(cfg, pos, False, ctx.seed(f"gauge/{pos}"), torch.float64)
        tokens = torch.randint(0, VOCAB, (cfg.identity_batch, cfg.identity_length), generator=g)
        rows += [dict(pos=pos, **row) for row in gauge_rank_changes(model, exact, tokens, cfg.gauge_condition, g)]
    return ctx.table("gauge", pd.DataFrame(rows))


def _decoders(cfg: QueryKeyAsymmetryConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame]:
    vocab, stream = char_stream(cfg.corpus)
    trunc, ranks, lms = thin_key_decoders(
        stream,
        len(vocab),
        width=cfg.lm_d_model,
        heads=cfg.lm_n_heads,
        layers=cfg.lm_n_layers,
        context=cfg.lm_length,
        batch=cfg.lm_batch,
        steps=cfg.lm_steps,
        lr=cfg.lm_lr,
        thin_fraction=cfg.thin_fraction if cfg.thin_keys else None,
        rank_fractions=cfg.rank_fractions,
        eval_batches=cfg.eval_batches,
        init_seed=ctx.seed("lm/init"),
        eval_generator=ctx.generator("lm/eval"),
        data_generator=lambda name: ctx.generator(f"lm/data/{name}"),
        progress=ctx.progress,
        check=ctx.check_finite,
        device=ctx.device,
    )
    trunc, ranks = ctx.table("truncation", trunc), ctx.table("ranks", ranks)
    ctx.table("decoders", lms)
    return trunc, ranks


@study(
    "query-key-asymmetry",
    title="Queries and keys: symmetric in form, not in role (invisible key bias, centred key gradients, gauge, "
    "thin keys)",
    paper=PAPER,
    config=QueryKeyAsymmetryConfig,
    presets=PRESETS,
    family="attention",
    claims=claims,
)
def run(cfg: QueryKeyAsymmetryConfig, ctx: RunContext) -> None:
    bias, grads = _identities(cfg, ctx)
    figure_bias(ctx, bias)
    figure_gradients(ctx, grads)
    _causal_support(cfg, ctx)
    _gauge(cfg, ctx)
    trunc, ranks = _decoders(cfg, ctx)
    figure_truncation(ctx, trunc)
    figure_ranks(ctx, ranks)
