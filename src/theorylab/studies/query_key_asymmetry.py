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
import math
from typing import Annotated, Literal

import numpy as np
import pandas as pd
import torch
from pydantic import Field, model_validator

from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import Undecided
from theorylab.core.fields import Batch, Corpus, DModel, Fraction, LearningRate, Length, NHeads, NLayers, Steps
from theorylab.core.plotting import color, new_figure
from theorylab.data.text import char_stream, check_corpus
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.qk_identities import bias_effect, causal_key_support, gauge_rank_changes, key_gradient_sums
from theorylab.train.thin_key_decoders import thin_key_decoders

PAPER = "query-key asymmetry (paper unidentified; anchors: arXiv 2603.04427, Saponati et al. arXiv 2502.10927)"
REF = "query-key asymmetry (reconstructed)"
Pos = Literal["none", "absolute", "rope"]
POSITIONAL = {"none": "none", "absolute": "learned", "rope": "rotary"}
VOCAB = 50


class QueryKeyAsymmetryConfig(StudyConfig):
    identity_d_model: Annotated[DModel, Field(ge=4)] = Field(64, description="d of the random-init identity models")
    identity_n_heads: NHeads = Field(4, description="heads of the identity models")
    identity_n_layers: NLayers = Field(2, description="layers of the identity models")
    identity_length: Annotated[Length, Field(ge=4)] = Field(32, description="sequence length T of the identity checks")
    identity_batch: Batch = Field(2, description="sequences per identity check")
    positions: tuple[Pos, ...] = Field(("none", "absolute", "rope"), min_length=1, description="position encodings "
        "checked")
    bias_norm: float = Field(10.0, gt=0, le=1e6, description="norm of the random key (or query) bias")
    gauge_condition: float = Field(10.0, ge=1, le=1e6, description="largest condition number of the random gauge G")
    lm_d_model: Annotated[DModel, Field(ge=8)] = Field(128, description="d_model of the trained decoder")
    lm_n_layers: NLayers = Field(2, description="layers of the trained decoder")
    lm_n_heads: NHeads = Field(4, description="heads of the trained decoder")
    lm_length: Annotated[Length, Field(ge=4)] = Field(64, description="training window")
    lm_batch: Batch = Field(32, description="batch size")
    lm_steps: Steps = Field(300, description="AdamW steps (claims 5-6 need >= 5000)")
    lm_lr: LearningRate = Field(1e-3, description="AdamW learning rate")
    rank_fractions: tuple[Annotated[Fraction, Field(gt=0)], ...] = Field((0.125, 0.25, 0.5), min_length=1,
        description="truncation ranks as fractions of d_h")
    eval_batches: int = Field(4, ge=1, le=10_000, description="held-out batches for ΔLoss and perplexity")
    thin_keys: bool = Field(False, description="also train a decoder with d_select = d_h x thin_fraction (claim 6; "
        "paper preset)")
    thin_fraction: Annotated[Fraction, Field(gt=0)] = Field(0.25, description="query/key width of the thin decoder as "
        "a fraction of d_h")
    corpus: Corpus = Field("stdlib", min_length=1, description="character-level text: 'stdlib' (prose of Python's own "
        "docstrings, 1.1 MB), 'kjv' (Debian's bible-kjv, 4.4 MB) or a local plain-text file")

    @model_validator(mode="after")
    def _checks(self) -> "QueryKeyAsymmetryConfig":
        check_corpus("corpus", self.corpus)
        if self.identity_d_model % self.identity_n_heads or self.lm_d_model % self.lm_n_heads:
            raise ValueError("'identity_d_model' and 'lm_d_model' must be multiples of their head counts")
        if (self.identity_d_model // self.identity_n_heads) % 2:
            raise ValueError("rotary positions need an even head width: identity_d_model / identity_n_heads "
                             "must be even")
        return self


PRESETS = {
    "quick": Preset.of("quick", "2 CPU cores, ~25 s: identities on random-init models (every position x causal x "
                                "dtype), a 300-step decoder with truncation curves (descriptive)"),
    "paper": Preset.of(
        "paper",
        "GPU: a GPT-2-small-shaped decoder (12 layers, 768 wide, 12 heads) trained 5000 steps, truncation, and a "
        "thin-key decoder (d_select = d_h/4)",
        lm_d_model=(768, "card: 125M-scale decoder"),
        corpus=("kjv", "the larger real corpus where Debian's bible-kjv is installed (elsewhere: --set corpus=stdlib "
                       "or a local text file)"),
        lm_n_layers=(12, "card"),
        lm_n_heads=(12, "card"),
        lm_length=(256, "longer windows"),
        lm_steps=(5000, "ours: 5000 steps"),
        lm_lr=(6e-4, "GPT-2-small's peak learning rate"),
        eval_batches=(16, "more held-out data"),
        thin_keys=(True, "card: claim 6"),
    ),
}

STEPS_FOR_CLAIMS = 5000


def _model(cfg: QueryKeyAsymmetryConfig, pos: str, causal: bool, seed: int, dtype: torch.dtype) -> ToyTransformer:
    return ToyTransformer(d_model=cfg.identity_d_model, n_heads=cfg.identity_n_heads, n_layers=cfg.identity_n_layers,
                          mlp_width=2 * cfg.identity_d_model, vocab_size=VOCAB, causal=causal,
                          positional=POSITIONAL[pos], max_len=cfg.identity_length, seed=seed).to(dtype)


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
        tokens = torch.randint(0, VOCAB, (cfg.identity_batch, cfg.identity_length + 1), generator=ctx.generator(
            f"causal/data/{pos}"))
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
        stream, len(vocab), width=cfg.lm_d_model, heads=cfg.lm_n_heads, layers=cfg.lm_n_layers, context=cfg.lm_length,
        batch=cfg.lm_batch, steps=cfg.lm_steps, lr=cfg.lm_lr,
        thin_fraction=cfg.thin_fraction if cfg.thin_keys else None, rank_fractions=cfg.rank_fractions,
        eval_batches=cfg.eval_batches, init_seed=ctx.seed("lm/init"),
        eval_generator=ctx.generator("lm/eval"), data_generator=lambda name: ctx.generator(f"lm/data/{name}"),
        progress=ctx.progress, check=ctx.check_finite, device=ctx.device)
    trunc, ranks = ctx.table("truncation", trunc), ctx.table("ranks", ranks)
    ctx.table("decoders", lms)
    return trunc, ranks


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure_bias(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure(width=5.5)
    labels = [f"{r.side} bias, {r.pos}, {'causal' if r.causal else 'bidir.'}, {r.dtype}" for r in t.itertuples()]
    y = np.maximum(t["rel_change"].to_numpy(), 1e-18)
    colors = [color(0) if (s == "key" and p != "rope") else color(1) for s, p in zip(t["side"], t["pos"])]
    ax.barh(np.arange(len(t)), y, color=colors)
    ax.set_xscale("log")
    ax.set_yticks(np.arange(len(t)))
    ax.set_yticklabels(labels, fontsize=4)
    ax.axvline(1e-3, color="k", ls="--", lw=0.8)
    ax.set_xlabel("relative change of the output logits (bias of norm 10)")
    ax.set_title("key bias without RoPE: invisible (blue)", fontsize=8)
    ctx.figure("bias_invariance", fig)


def _figure_gradients(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    bins = np.logspace(-18, 0, 55)
    for i, (col, name) in enumerate((("key_ratio", "keys"), ("query_ratio", "queries"))):
        ax.hist(np.clip(t[col], 1e-18, 1), bins=bins, alpha=0.6, color=color(i), label=name)
    ax.set_xscale("log")
    ax.set_xlabel("‖Σ_j ∂L/∂x_j‖ / Σ_j ‖∂L/∂x_j‖ per head and sequence")
    ax.set_ylabel("heads x sequences")
    ax.legend(fontsize=7)
    ctx.figure("gradient_sums", fig)


def _figure_truncation(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, (which, g) in enumerate(t.groupby("which")):
        ax.plot(g["rank"], g["delta_loss"], "o-", color=color(i), label={"q": "truncate W_Q", "k": "truncate W_K",
            "qk": "truncate M"}[which])
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel("rank r")
    ax.set_ylabel("ΔLoss (held-out, nats)")
    ax.legend(fontsize=7)
    ctx.figure("truncation_curves", fig)


def _figure_ranks(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    by = t.groupby("layer")[["q_stable_rank", "k_stable_rank", "balanced_stable_rank"]].mean()
    for i, col in enumerate(by.columns):
        ax.plot(by.index, by[col], "o-", color=color(i), label=col.replace("_", " "))
    ax.set_xlabel("layer")
    ax.set_ylabel("stable rank (mean over heads)")
    ax.legend(fontsize=7)
    ctx.figure("rank_profile", fig)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------

claims = Claims("query-key-asymmetry")

S_BIAS = ("Identity check (derived from softmax over keys; a code check, not evidence for the paper): without rotary "
          "positions a random key bias of norm 10 changes the output logits by <= 1e-5 relative (float32) / 1e-12 "
          "(float64) and gets gradient "
          "<= 1e-10 x the query bias's (float64); the controls (RoPE, or the bias on the query side) change the logits "
          "by >= 1e-3.")


@claims.add("key-bias-invisible", S_BIAS, REF + ": softmax over keys ignores row constants (derived)")
def judge_bias(res, v) -> Verdict:
    b = res.table("bias_invariance")
    g = res.table("gradient_sums")
    inv = b[(b["side"] == "key") & (b["pos"] != "rope")]
    if inv.empty:
        raise Undecided("this config checks only rotary positions (positions = ('rope',)), where a key bias is visible "
                        "by design; add 'none' or 'absolute'")
    tol = np.where(inv["dtype"] == "float32", 1e-5, 1e-12)
    worst = float((inv["rel_change"] / tol).max())
    g64 = g[(g["dtype"] == "float64") & (g["pos"] != "rope")]
    grad_ratio = float((g64["key_bias_grad"] / g64["query_bias_grad"]).max())
    controls = b[(b["side"] == "query") | (b["pos"] == "rope")]
    ctrl = float(controls["rel_change"].min())
    ok = worst <= 1 and grad_ratio <= 1e-10 and ctrl >= 1e-3
    detail = (f"key bias, no RoPE: max change {inv[inv['dtype'] == 'float32']['rel_change'].max():.1e} (float32), "
              f"{inv[inv['dtype'] == 'float64']['rel_change'].max():.1e} (float64); "
              f"|∂L/∂b_K| / |∂L/∂b_Q| max {grad_ratio:.1e}; controls min change {ctrl:.2e} ({len(controls)} cases)")
    return v.judged(ok, float(inv["rel_change"].max()), "<= 1e-5 (f32) / 1e-12 (f64)", None, detail)


S_GRAD = ("Identity check (softmax over keys has zero-sum score gradients; a code check, not evidence for the paper): "
          "per head and sequence, "
          "‖Σ_j ∂L/∂k_j‖ / Σ_j ‖∂L/∂k_j‖ is within its float rounding 2Tε·κ (κ: the condition number of the T²-term "
          "sum Σ_ij dS_ij q_i), "
          "and the dS row sums within 2Tε of Σ_j|dS_ij| (ε of the dtype, float32 and float64), while for queries the "
          "ratio is >= 1e-3 on >= 95% of heads.")


@claims.add("key-gradients-centred", S_GRAD, REF + ": dS has zero row sums (derived)")
def judge_gradients(res, v) -> Verdict:
    g = res.table("gradient_sums")
    worst = float((g["key_ratio"] / g["key_tolerance"]).max())
    q_share = float((g["query_ratio"] >= 1e-3).mean())
    rows = float((g["dS_row_sum"] / g["row_sum_tolerance"]).max())
    ok = worst <= 1 and q_share >= 0.95 and rows <= 1
    detail = (f"keys: max ratio {g[g['dtype'] == 'float32']['key_ratio'].max():.1e} (float32), "
              f"{g[g['dtype'] == 'float64']['key_ratio'].max():.1e} (float64) over {len(g)} head-sequences "
              f"(every position encoding), worst ratio/tolerance {worst:.2g} (κ up to "
              f"{(g['key_tolerance'] / g['row_sum_tolerance']).max():.3g}); "
              f"queries >= 1e-3 on {100 * q_share:.1f}% (median {g['query_ratio'].median():.2f}); dS row sums / "
              f"tolerance {rows:.2g}")
    return v.judged(ok, worst, "ratio/(2Tε·κ) <= 1", 1.0, detail)


S_CAUSAL = ("Identity check (the causal mask; a code check, not evidence for the paper): in a causal model, ∂L/∂k_j "
            "from the losses at positions < j is 0 (<= 1e-12 relative, float64), and from the losses at positions >= j "
            "it equals the full gradient to 1e-12.")


@claims.add("causal-key-support", S_CAUSAL, REF + ": the causal mask (derived)")
def judge_causal(res, v) -> Verdict:
    t = res.table("causal_support")
    worst = float(max(t["before_norm"].max(), t["after_gap"].max()))
    return v.judged(worst <= 1e-12, worst, "<= 1e-12", 1e-12, f"{len(t)} (position encoding, j, layer) cases: before-j "
                                                              f"share {t['before_norm'].max():.1e}, after-j gap "
                                                              f"{t['after_gap'].max():.1e}")


S_GAUGE = ("Identity check (scores depend on W_Q, W_K only through M; a code check, not evidence for the paper): a "
           "random per-head gauge (W_Q, W_K) -> (G W_Q, G⁻ᵀ W_K) with condition number 10 leaves the output logits "
           "unchanged to 1e-5 relative (float32) while the stable rank "
           "of W_Q or W_K moves by >= 10% on >= 90% of heads; the balanced-gauge ranks stay within 1e-6.")


@claims.add("gauge-freedom", S_GAUGE, REF + ": scores depend on W_Q, W_K only through M (derived)")
def judge_gauge(res, v) -> Verdict:
    t = res.table("gauge")
    change = float(t["logit_change"].max())
    moved = float(((t["q_rank_change"] >= 0.1) | (t["k_rank_change"] >= 0.1)).mean())
    balanced = float(t["balanced_rank_change"].max())
    ok = change <= 1e-5 and moved >= 0.9 and balanced <= 1e-6
    return v.judged(ok, change, "<= 1e-5", 1e-5, f"logit change {change:.1e}; raw ranks moved >= 10% on "
                                                 f"{100 * moved:.0f}% of {len(t)} heads; balanced ranks {balanced:.1e}")


S_TRUNC = (
    "On a self-trained decoder (>= 5000 steps), at r = d_h/4 over all heads at once: ΔLoss(truncate W_K) <= 0.5 x "
    "ΔLoss(truncate W_Q) (the anchor: keys are far more compressible)."
)


@claims.add("keys-more-compressible", S_TRUNC, "arXiv 2603.04427 (anchor); threshold ours")
def judge_truncation(res, v) -> Verdict:
    t = res.table("truncation")
    at = t[np.isclose(t["fraction"], 0.25)].set_index("which")["delta_loss"]
    if at.empty:
        raise Undecided("this config truncates at no r = d_h/4 (add 0.25 to 'rank_fractions')")
    ratio = float(at["k"] / at["q"]) if at["q"] > 0 else math.inf
    detail = f"r = d_h/4: ΔLoss W_K {at['k']:.3f}, W_Q {at['q']:.3f}, M {at['qk']:.3f} nats; ratio {ratio:.2f}"
    if res.config["lm_steps"] < STEPS_FOR_CLAIMS:
        return v.undecided(f"needs paper preset ({res.config['lm_steps']} steps < {STEPS_FOR_CLAIMS}); reported: "
                           f"{detail}")
    return v.judged(ratio <= 0.5, ratio, "<= 0.5", 0.5, detail)


S_THIN = (
    "A decoder with d_select = d_h/4 (75% fewer query/key parameters) reaches held-out perplexity <= 1.10 x the full "
    "model's at equal steps (the anchor: +4.3% on WikiText)."
)


@claims.add("thin-keys", S_THIN, "arXiv 2603.04427 (anchor); threshold ours")
def judge_thin(res, v) -> Verdict:
    t = res.table("decoders").set_index("variant")
    if "thin keys" not in t.index:
        return v.undecided("needs paper preset (or --set thin_keys=true)")
    ratio = float(t.loc["thin keys", "perplexity"] / t.loc["full", "perplexity"])
    detail = (f"perplexity thin {t.loc['thin keys', 'perplexity']:.3f} (QK params "
              f"{int(t.loc['thin keys', 'qk_params'])}) vs full {t.loc['full', 'perplexity']:.3f} "
              f"({int(t.loc['full', 'qk_params'])}): ratio {ratio:.3f}")
    if res.config["lm_steps"] < STEPS_FOR_CLAIMS:
        return v.undecided(f"needs paper preset ({res.config['lm_steps']} steps); reported: {detail}")
    return v.judged(ratio <= 1.10, ratio, "<= 1.10", 1.10, detail)


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
    _figure_bias(ctx, bias)
    _figure_gradients(ctx, grads)
    _causal_support(cfg, ctx)
    _gauge(cfg, ctx)
    trunc, ranks = _decoders(cfg, ctx)
    _figure_truncation(ctx, trunc)
    _figure_ranks(ctx, ranks)
