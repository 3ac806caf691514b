"""bilinear-attention-operator: a head's score is the bilinear form x_i M x_jᵀ, M = W_qᵀ W_k / √d_h.

Paper: Li Hengyu, arXiv 2607.06621 (2026); only its first sentence was available, so the card is
reconstructed, with Saponati et al., ICML 2025 (arXiv 2502.10927) as the anchor for the
encoder-symmetric / decoder-directional finding. Claims 1–5 are exact or derived:

- the extracted M (ours, GPT-2's Conv1D, BERT's Linear) reproduces each module's own logits;
- M = S + A splits orthogonally, and xᵀAx = 0;
- at random init the symmetry score is ½ + 1/(2d) and the directionality is centred;
- tied queries and keys give a symmetric PSD operator of rank d_h with no rotation;
- rank M <= d_h, and M's complex eigenvalues come in conjugate pairs.

Claims 6–7 (paper preset) compare an encoder (masked LM) and a decoder (causal LM) trained on the
same text: the encoder's operators end more symmetric, the decoder's more directional.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from pydantic import Field, model_validator

from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import Undecided
from theorylab.core.fields import (
    Batch,
    Corpus,
    DModel,
    Draws,
    Every,
    LearningRate,
    Length,
    NHeads,
    NLayers,
    Seeds,
    Steps,
)
from theorylab.core.plotting import color, new_figure
from theorylab.data.text import char_stream, check_corpus
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.bilinear_operators import (
    CONVENTION_MODELS,
    convention_check,
    head_operators,
    random_init_head_rows,
)
from theorylab.theory.bilinear import random_init_sigma1_bound
from theorylab.train.encoder_decoder import train_encoder_decoder_pairs

PAPER = "Li, arXiv 2607.06621 (2026); anchor: Saponati et al., arXiv 2502.10927 (ICML 2025)"
REF = "arXiv 2607.06621"
PAIR_STEPS_FOR_CLAIMS = 20_000
IDENTITY = "Identity check (a code check of our extraction and algebra, not evidence for the paper): "


class BilinearOperatorConfig(StudyConfig):
    random_models: Draws = Field(64, description="random-init one-layer ToyTransformers of the null (card: 64 x 4 "
        "heads)")
    d_model: DModel = Field(128, description="width d of the random and tied models")
    n_heads: NHeads = Field(4, description="heads per layer (d_h = d / heads)")
    tied_models: Draws = Field(8, description="tied-QK models (W_q = W_k)")
    hf_d_model: DModel = Field(64, description="hidden size of the random-init BERT and GPT-2 of the convention check")
    hf_n_layers: NLayers = Field(2, description="layers of the random-init BERT and GPT-2")
    pair_d_model: DModel = Field(64, description="d_model of the encoder/decoder pair")
    pair_n_layers: NLayers = Field(2, description="layers of the pair")
    pair_n_heads: NHeads = Field(4, description="heads of the pair")
    pair_length: Length = Field(64, description="training window")
    pair_batch: Batch = Field(32, description="batch size")
    pair_steps: Steps = Field(300, description="AdamW steps of each model (claims 6-7 need >= 20,000, the card's)")
    pair_lr: LearningRate = Field(1e-3, description="AdamW learning rate")
    pair_seeds: Seeds = Field(1, description="encoder/decoder pairs (card, paper: 3)")
    pair_log_every: Every = Field(50, description="operator scores are logged every this many steps")
    corpus: Corpus = Field("stdlib", min_length=1, description="character-level text: 'stdlib' (prose of Python's own "
        "docstrings, 1.1 MB), 'kjv' (Debian's bible-kjv, 4.4 MB) or a local plain-text file")

    @model_validator(mode="after")
    def _checks(self) -> "BilinearOperatorConfig":
        check_corpus("corpus", self.corpus)
        for width, heads, name in ((self.d_model, self.n_heads, "d_model"), (self.hf_d_model, 4, "hf_d_model"), (
            self.pair_d_model,
            self.pair_n_heads, "pair_d_model")):
            if width % heads:
                raise ValueError(f"'{name}' ({width}) must be a multiple of its head count ({heads})")
        return self


PRESETS = {
    "quick": Preset.of("quick", "2 CPU cores, ~20 s: 256 random heads (d = 128), tied models, random-init BERT/GPT-2 "
                                "convention checks, a 300-step encoder/decoder pair (descriptive)"),
    "paper": Preset.of(
        "paper",
        "GPU: encoder/decoder pairs with d = 256, 4 layers, 4 heads, 20k steps, 3 seeds",
        pair_d_model=(256, "card"),
        corpus=("kjv", "the larger real corpus where Debian's bible-kjv is installed (elsewhere: --set corpus=stdlib "
                       "or a local text file)"),
        pair_n_layers=(4, "card"),
        pair_steps=(20_000, "card"),
        pair_seeds=(3, "card"),
        pair_length=(128, "longer windows"),
        pair_log_every=(1000, "sparser tracking"),
    ),
}


def _convention(cfg: BilinearOperatorConfig, ctx: RunContext) -> pd.DataFrame:
    """Every head's logits from M against the module itself: ours (causal or not, with biases), GPT-2, BERT."""
    tokens = torch.randint(0, 50, (2, 12), generator=ctx.generator("convention/tokens"))
    seeds = {k: ctx.seed(f"convention/{k}") for k in CONVENTION_MODELS}
    table = convention_check(cfg.hf_d_model, cfg.hf_n_layers, tokens, seeds,
                             {k: ctx.generator(f"convention/bias/{k}") for k in CONVENTION_MODELS})
    ctx.table("convention", table)
    return table


def _pair(cfg: BilinearOperatorConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An encoder (masked LM, bidirectional) and a decoder (causal LM) of the same size on the same text."""
    vocab, stream = char_stream(cfg.corpus)
    track, finals = train_encoder_decoder_pairs(
        stream, len(vocab), width=cfg.pair_d_model, heads=cfg.pair_n_heads, layers=cfg.pair_n_layers,
        context=cfg.pair_length, batch=cfg.pair_batch, steps=cfg.pair_steps, lr=cfg.pair_lr,
        log_every=cfg.pair_log_every,
        init_seeds=[ctx.seed(f"pair/init/{seed}") for seed in range(cfg.pair_seeds)],
        data_generator=lambda seed, kind: ctx.generator(f"pair/data/{seed}/{kind}"), device=ctx.device,
        progress=ctx.progress, check=ctx.check_finite,
    )
    ctx.table("pair_tracking", track)
    return track, pd.DataFrame(finals)


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure_scatter(ctx: RunContext, heads: pd.DataFrame) -> None:
    fig, ax = new_figure()
    null = heads[heads["family"] == "random init"]
    s_lo, s_hi = null["symmetry"].quantile([0.025, 0.975])
    d_lo, d_hi = null["directionality"].quantile([0.025, 0.975])
    ax.add_patch(__import__("matplotlib").patches.Rectangle((s_lo, d_lo), s_hi - s_lo, d_hi - d_lo, color="0.85",
                                                            zorder=0, label="random init, 95%"))
    for i, (family, g) in enumerate(heads.groupby("family", sort=False)):
        ax.plot(g["symmetry"], g["directionality"], "o", ms=3, alpha=0.6, color=color(i), label=family)
    ax.set(xlabel="symmetry score ‖S‖²/‖M‖²", ylabel="directionality score")
    ax.legend(fontsize=6)
    ctx.figure("scores_scatter", fig)


def _figure_tracking(ctx: RunContext, track: pd.DataFrame) -> None:
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


def _figure_spectra(ctx: RunContext, cfg: BilinearOperatorConfig) -> None:
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


def _figure_inertia(ctx: RunContext, heads: pd.DataFrame) -> None:
    fig, ax = new_figure()
    trained = heads[heads["family"].isin(["encoder", "decoder"])]
    for i, (kind, g) in enumerate(trained.groupby("family")):
        by = g.groupby("layer")[["inertia_pos", "inertia_neg"]].mean()
        ax.plot(by.index + 0.1 * i, by["inertia_pos"], "^-", color=color(i), label=f"{kind}: positive")
        ax.plot(by.index + 0.1 * i, by["inertia_neg"], "v--", color=color(i), label=f"{kind}: negative")
    ax.set(xlabel="layer", ylabel="eigenvalues of S (mean over heads)")
    ax.legend(fontsize=7)
    ctx.figure("inertia", fig)


def _figure_layers(ctx: RunContext, heads: pd.DataFrame) -> None:
    """Symmetry and directionality per layer, encoder vs decoder (mean and spread over heads and seeds)."""
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    trained = heads[heads["family"].isin(["encoder", "decoder"])]
    null = heads[heads["family"] == "random init"]
    for a, col in ((ax, "symmetry"), (bx, "directionality")):
        for i, (kind, g) in enumerate(trained.groupby("family")):
            by = g.groupby("layer")[col].agg(["mean", "min", "max"])
            a.errorbar(by.index + 0.1 * i, by["mean"], yerr=[by["mean"] - by["min"], by["max"] - by["mean"]], fmt="o-",
                       capsize=2, color=color(i), label=kind)
        a.axhspan(*null[col].quantile([0.025, 0.975]), color="0.85", zorder=0, label="random init, 95%")
        a.set(xlabel="layer", ylabel=f"{col} score")
        a.legend(fontsize=7)
    ctx.figure("scores_per_layer", fig)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------

claims = Claims("bilinear-attention-operator")

S_LOGITS = ("Convention check (a code check of our extraction, not evidence for the paper): for every head of "
            "random-init ToyTransformers (with biases, causal and not) "
            "and of random-init Hugging Face GPT-2 (Conv1D) and BERT, x M xᵀ (+ the query bias's key term) reproduces "
            "the module's logits to 1e-5 relative (float32); "
            "M transposed misses by >= 1e-2.")


@claims.add("logits-match-operator", S_LOGITS, REF + ", score(i, j) = x_iᵀ M x_j")
def judge_logits(res, v) -> Verdict:
    t = res.table("convention")
    real, ctrl = t[~t["control"]], t[t["control"]]
    worst = float(real["rel_error"].max())
    ctrl_min = float(ctrl.groupby("model")["rel_error"].max().min()) if len(ctrl) else math.nan
    ok = worst <= 1e-5 and ctrl_min >= 1e-2
    detail = "; ".join(f"{m}: {g['rel_error'].max():.1e} over {len(g)} heads" for m, g in real.groupby(
        "model")) + f"; transposed M: >= {ctrl_min:.2f} (worst head per model)"
    return v.judged(ok, worst, "<= 1e-5", 1e-5, detail)


S_SPLIT = (IDENTITY + "M = S + A with ‖M‖² = ‖S‖² + ‖A‖² (relative), ⟨S, A⟩ <= tol·‖M‖² and |xᵀAx| <= tol·‖x‖²‖M‖ on "
                      "every head, "
           "with tol = d²ε (the float64 rounding bound of a d²-term sum; 3.6e-12 at d = 128).")


@claims.add("split-exact", S_SPLIT, REF + ", symmetric and skew parts (exact)")
def judge_split(res, v) -> Verdict:
    t = res.table("heads")
    ratio = t[["split_error", "cross", "quad_form"]].max(axis=1) / t["tolerance"]
    worst = float(ratio.max())
    return v.judged(worst <= 1, worst, "residual/d²ε <= 1", 1.0, f"{len(t)} heads: split {t['split_error'].max():.1e}, "
        f"<S, A> {t['cross'].max():.1e}, xᵀAx {t['quad_form'].max():.1e} "
                    f"(tolerance d²ε >= {t['tolerance'].min():.1e}); worst residual/tolerance {worst:.2g}")


S_NULL = (
    "Over the random-init heads, the mean symmetry score is in [0.48, 0.53] (theory ½ + 1/(2d)) and the mean "
    "directionality |d| <= 0.15."
)


@claims.add("random-baseline", S_NULL, "derived: E tr(M²) = d d_h σ⁴, E‖M‖² = d² d_h σ⁴")
def judge_null(res, v) -> Verdict:
    t = res.table("heads")
    null = t[t["family"] == "random init"]
    s, dmean = float(null["symmetry"].mean()), float(null["directionality"].mean())
    theory = 0.5 + 1 / (2 * int(null["d"].iloc[0]))
    ok = 0.48 <= s <= 0.53 and abs(dmean) <= 0.15
    return v.judged(ok, s, "in [0.48, 0.53]", None, f"{len(null)} heads: mean s {s:.4f} (theory {theory:.4f}, SD "
                                                    f"{null['symmetry'].std():.4f}); mean d {dmean:+.4f} (SD "
                                                    f"{null['directionality'].std():.3f})")


S_TIED = (IDENTITY + "with W_q = W_k: s = 1 and the rotation content is 0 to d²ε (the null space's eigenvalues come "
                     "out of the eigensolver at ~1e-17 with arbitrary phases), "
          "d = 0 to d²ε times the score's condition number d·max norm/(norm excess), and S is PSD with exactly d_h "
          "positive and d − d_h zero eigenvalues.")


@claims.add("tied-qk", S_TIED, "derived: M = WᵀW/√d_h")
def judge_tied(res, v) -> Verdict:
    t = res.table("heads")
    tied = t[t["family"] == "tied QK"]
    if tied.empty:
        raise Undecided("this config builds no tied-QK model (tied_models = 0)")
    dh = int(tied["d"].iloc[0]) // res.config["n_heads"]
    d_abs, d_tol = tied["directionality"].abs(), tied["directionality_tolerance"]
    # no norm excess: the score is exactly 0
    d_ratio = np.where(d_tol > 0, d_abs / d_tol.where(d_tol > 0, 1.0), np.where(d_abs == 0, 0.0, np.inf))
    ratio = float(max(((tied["symmetry"] - 1).abs() / tied["tolerance"]).max(), (tied["rotation"] / tied[
        "tolerance"]).max(), d_ratio.max()))
    shape = bool(((tied["inertia_pos"] == dh) & (tied["inertia_neg"] == 0) & (tied["inertia_zero"] == tied[
        "d"] - dh)).all())
    ok = ratio <= 1 and shape
    return v.judged(ok, ratio, "residual/tolerance <= 1", 1.0, f"{len(tied)} heads: |s − 1| max "
                                                               f"{(tied['symmetry'] - 1).abs().max():.1e}, |d| max "
                                                               f"{tied['directionality'].abs().max():.1e} "
                    f"(tolerance >= {tied['directionality_tolerance'].min():.1e}), rotation max "
                    f"{tied['rotation'].max():.1e} (tolerance d²ε = {tied['tolerance'].min():.1e}); "
                    f"inertia (d_h, 0, d − d_h) = ({dh}, 0, {int(tied['d'].iloc[0]) - dh}) on all: {shape}")


S_RANK = (IDENTITY + "every head (random, tied, trained) has at least d − d_h singular values <= 1e-10·σ₁ (computed "
                     "null singular values are ~dε·σ₁), "
          "and its non-real eigenvalues come in conjugate pairs to 1e-10·σ₁.")


@claims.add("rank-bound", S_RANK, "derived: rank M <= d_h; M real")
def judge_rank(res, v) -> Verdict:
    t = res.table("heads")
    dh = t["d"] // res.config["n_heads"]
    pair_dh = t["d"] // res.config["pair_n_heads"]
    need = np.where(t["family"].isin(["encoder", "decoder"]), t["d"] - pair_dh, t["d"] - dh)
    short = int((t["small_singular"] < need).sum())
    conj = float(t["conjugate_gap"].max())
    ok = short == 0 and conj <= 1e-10
    return v.judged(ok, float(short), "0 heads short", None, f"{len(t)} heads; heads with fewer than d − d_h tiny "
                                                             f"singular values: {short}; conjugate-pair gap max "
                                                             f"{conj:.1e}")


def _pair_means(res) -> pd.DataFrame:
    t = res.table("heads")
    t = t[t["family"].isin(["encoder", "decoder"])]
    return t.groupby(["seed", "family"])[["symmetry", "directionality"]].mean().unstack("family")


S_PAIR = ("After 20k steps on the same text, in every seed: mean s(encoder) − mean s(decoder) >= 0.05 and mean "
          "d(decoder) >= mean d(encoder) + 0.1 "
          "(the anchor's BERT/GPT split; thresholds ours).")


@claims.add("encoder-symmetric-decoder-directional", S_PAIR, "Saponati et al., arXiv 2502.10927 (anchor)")
def judge_pair(res, v) -> Verdict:
    m = _pair_means(res)
    detail = "; ".join(f"seed {int(s)}: s enc {r[('symmetry', 'encoder')]:.3f} / dec {r[('symmetry', 'decoder')]:.3f}, "
                       f"d enc {r[('directionality', 'encoder')]:+.3f} / dec {r[('directionality', 'decoder')]:+.3f}"
                       for s, r in m.iterrows())
    if res.config["pair_steps"] < PAIR_STEPS_FOR_CLAIMS:
        return v.undecided(f"needs paper preset ({res.config['pair_steps']} steps < {PAIR_STEPS_FOR_CLAIMS}); "
                           f"reported: {detail}")
    ds = m[("symmetry", "encoder")] - m[("symmetry", "decoder")]
    dd = m[("directionality", "decoder")] - m[("directionality", "encoder")]
    ok = bool((ds >= 0.05).all() and (dd >= 0.1).all())
    return v.judged(ok, float(ds.min()), ">= 0.05", 0.05, detail)


S_DRIFT = (
    "The trained decoder's mean s differs from the random-init mean, or its mean d from 0, by more than 3 standard "
    "errors of the random-init distribution."
)


@claims.add("drift-from-null", S_DRIFT, "Saponati et al., arXiv 2502.10927 (anchor); threshold ours")
def judge_drift(res, v) -> Verdict:
    t = res.table("heads")
    null = t[t["family"] == "random init"]
    dec = t[t["family"] == "decoder"]
    n = len(dec)
    z_s = abs(dec["symmetry"].mean() - null["symmetry"].mean()) / (null["symmetry"].std() / math.sqrt(n))
    z_d = abs(dec["directionality"].mean()) / (null["directionality"].std() / math.sqrt(n))
    detail = f"decoder ({n} heads): z(s) = {z_s:.1f}, z(d) = {z_d:.1f} (null SDs from {len(null)} random heads)"
    if res.config["pair_steps"] < PAIR_STEPS_FOR_CLAIMS:
        return v.undecided(f"needs paper preset ({res.config['pair_steps']} steps); reported: {detail}")
    z = float(max(z_s, z_d))
    return v.judged(z > 3, z, "> 3", 3.0, detail)


@study(
    "bilinear-attention-operator",
    title="The attention score as a bilinear form in M = W_qᵀW_k: symmetry, directionality, spectrum",
    paper=PAPER,
    config=BilinearOperatorConfig,
    presets=PRESETS,
    family="attention",
    claims=claims,
)
def run(cfg: BilinearOperatorConfig, ctx: RunContext) -> None:
    _convention(cfg, ctx)
    random_seeds = [ctx.seed(f"random/{i}") for i in range(cfg.random_models)]
    rows = random_init_head_rows(cfg.d_model, cfg.n_heads, random_seeds, "random init", progress=ctx.progress)
    tied_seeds = [ctx.seed(f"tied/{i}") for i in range(cfg.tied_models)]
    rows += random_init_head_rows(cfg.d_model, cfg.n_heads, tied_seeds, "tied QK", qk="tied")
    track, final = _pair(cfg, ctx)
    heads = pd.concat([pd.DataFrame(rows), final], ignore_index=True)
    ctx.table("heads", heads)
    _figure_scatter(ctx, heads)
    _figure_tracking(ctx, track)
    _figure_spectra(ctx, cfg)
    _figure_inertia(ctx, heads)
    _figure_layers(ctx, heads)
