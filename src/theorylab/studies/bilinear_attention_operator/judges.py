"""bilinear-attention-operator: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure, tolerance_departures

REF = "arXiv 2607.06621"


PAIR_STEPS_FOR_CLAIMS = 20_000  # the card's steps
# The cpu preset judges claims 6-7 on a smaller pair trained fewer steps; every difference from the card's pair is
# declared on the claims, and below CPU_PAIR_STEPS the training is too short to judge at all (the quick preset's 300).
CPU_PAIR_STEPS = 4_000
PAIR_SIZE = [
    Departure.field_value(
        "pair_steps",
        PAIR_STEPS_FOR_CLAIMS,
        "cpu preset: two 20k-step models take ~40 min of one "
        "core; 4000 steps each fit 10 min (the card's 20k: paper preset)",
    ),
    Departure.field_value(
        "pair_d_model", 256, "cpu preset: a d = 64 pair fits a CPU (the card's d = 256: paper preset)"
    ),
    Departure.field_value("pair_n_layers", 4, "cpu preset: 2 layers (the card's 4: paper preset)"),
    Departure.field_value("pair_seeds", 3, "one encoder/decoder pair (the card's 3: paper preset)"),
]


IDENTITY = "Identity check (a code check of our extraction and algebra, not evidence for the paper): "


claims = Claims("bilinear-attention-operator")


def _tolerance_departures(checks: list[tuple[pd.Series, pd.Series | float, float, str]]) -> list[str]:
    return tolerance_departures(checks, "our bound")


S_LOGITS = (
    "Convention check (a code check of our extraction, not evidence for the paper): for every head of "
    "random-init ToyTransformers (with biases, causal and not) "
    "and of random-init Hugging Face GPT-2 (Conv1D) and BERT, x M xᵀ (+ the query bias's key term) reproduces "
    "the module's logits to 1e-5 relative (float32); "
    "M transposed misses by >= 1e-2."
)


@claims.add("logits-match-operator", S_LOGITS, REF + ", score(i, j) = x_iᵀ M x_j")
def judge_logits(res: Result, v: Judgement) -> Verdict:
    t = res.table("convention")
    real, ctrl = t[~t["control"]], t[t["control"]]
    v.column(t, "rel_error")
    worst = float(real["rel_error"].max())
    ctrl_min = float(ctrl.groupby("model")["rel_error"].max().min()) if len(ctrl) else math.nan
    detail = (
        "; ".join(f"{m}: {g['rel_error'].max():.1e} over {len(g)} heads" for m, g in real.groupby("model"))
        + f"; transposed M: >= {ctrl_min:.2f} (worst head per model)"
    )
    return v.all_of(
        Check.at_most("worst relative error", worst, 1e-5),
        Check.at_least("transposed-M error (worst head per model, least model)", ctrl_min, 1e-2),
        detail=detail,
    )


S_SPLIT = (
    IDENTITY + "M = S + A with ‖M‖² = ‖S‖² + ‖A‖² (relative), ⟨S, A⟩ <= tol·‖M‖² and |xᵀAx| <= tol·‖x‖²‖M‖ on "
    "every head, "
    "with tol = d²ε (the float64 rounding bound of a d²-term sum; 3.6e-12 at d = 128)."
)


@claims.add("split-exact", S_SPLIT, REF + ", symmetric and skew parts (exact)")
def judge_split(res: Result, v: Judgement) -> Verdict:
    t = res.table("heads")
    split, cross, quad, tol = (v.column(t, c) for c in ("split_error", "cross", "quad_form", "tolerance"))
    ratio = t[["split_error", "cross", "quad_form"]].max(axis=1) / t["tolerance"]
    worst = float(ratio.max())
    return v.at_most(
        worst,
        1,
        expected="residual/d²ε <= 1",
        tolerance=1.0,
        detail=(
            f"{len(t)} heads: split {t['split_error'].max():.1e}, <S, A> {t['cross'].max():.1e}, xᵀAx "
            f"{t['quad_form'].max():.1e} (tolerance d²ε >= {t['tolerance'].min():.1e}); worst residual/tolerance "
            f"{worst:.2g}"
        ),
        departures=_tolerance_departures(
            [
                (split, tol, 1e-12, "relative split residual"),
                (cross, tol, 1e-12, "<S, A>/‖M‖²"),
                (quad, tol, 1e-12, "|xᵀAx|/(‖x‖²‖M‖)"),
            ]
        ),
    )


S_NULL = (
    "Over the random-init heads, the mean symmetry score is in [0.48, 0.53] (theory ½ + 1/(2d)) and the mean "
    "directionality |d| <= 0.15."
)


@claims.add("random-baseline", S_NULL, "derived: E tr(M²) = d d_h σ⁴, E‖M‖² = d² d_h σ⁴")
def judge_null(res: Result, v: Judgement) -> Verdict:
    t = res.table("heads")
    null = t[t["family"] == "random init"]
    s, dmean = float(v.column(null, "symmetry").mean()), float(v.column(null, "directionality").mean())
    theory = 0.5 + 1 / (2 * int(null["d"].iloc[0]))
    return v.all_of(
        Check.within("mean s", s, 0.48, 0.53),
        Check.at_most("|mean d|", abs(dmean), 0.15),
        detail=f"{len(null)} heads: mean s {s:.4f} (theory {theory:.4f}, SD "
        f"{null['symmetry'].std():.4f}); mean d {dmean:+.4f} (SD "
        f"{null['directionality'].std():.3f})",
    )


S_TIED = (
    IDENTITY + "with W_q = W_k: s = 1 and the rotation content is 0 to d²ε (the null space's eigenvalues come "
    "out of the eigensolver at ~1e-17 with arbitrary phases), "
    "d = 0 to d²ε times the score's condition number d·max norm/(norm excess), and S is PSD with exactly d_h "
    "positive and d − d_h zero eigenvalues."
)


@claims.add("tied-qk", S_TIED, "derived: M = WᵀW/√d_h")
def judge_tied(res: Result, v: Judgement) -> Verdict:
    t = res.table("heads")
    tied = t[t["family"] == "tied QK"]
    if tied.empty:
        return v.undecided("this config builds no tied-QK model (tied_models = 0)")
    dh = int(tied["d"].iloc[0]) // res.config["n_heads"]
    sym, dirn, rot, tol, d_tol = (
        v.column(tied, c) for c in ("symmetry", "directionality", "rotation", "tolerance", "directionality_tolerance")
    )
    d_abs, d_tol = tied["directionality"].abs(), tied["directionality_tolerance"]
    # no norm excess: the score is exactly 0
    d_ratio = np.where(d_tol > 0, d_abs / d_tol.where(d_tol > 0, 1.0), np.where(d_abs == 0, 0.0, np.inf))
    ratio = float(
        max(
            ((tied["symmetry"] - 1).abs() / tied["tolerance"]).max(),
            (tied["rotation"] / tied["tolerance"]).max(),
            d_ratio.max(),
        )
    )
    shape = bool(
        ((tied["inertia_pos"] == dh) & (tied["inertia_neg"] == 0) & (tied["inertia_zero"] == tied["d"] - dh)).all()
    )
    return v.all_of(
        Check.at_most("residual/tolerance", ratio, 1.0),
        Check.holds("inertia (d_h, 0, d − d_h) on every head", shape),
        detail=f"{len(tied)} heads: |s − 1| max "
        f"{(tied['symmetry'] - 1).abs().max():.1e}, |d| max "
        f"{tied['directionality'].abs().max():.1e} "
        f"(tolerance >= {tied['directionality_tolerance'].min():.1e}), rotation max "
        f"{tied['rotation'].max():.1e} (tolerance d²ε = {tied['tolerance'].min():.1e}); "
        f"inertia (d_h, 0, d − d_h) = ({dh}, 0, {int(tied['d'].iloc[0]) - dh}) on all: {shape}",
        departures=_tolerance_departures(
            [
                ((sym - 1).abs(), tol, 1e-12, "|s − 1|"),
                (rot, tol, 1e-12, "rotation content"),
                (dirn.abs(), d_tol, 1e-12, "|d| (bound: d²ε times the score's condition number)"),
            ]
        ),
    )


S_RANK = (
    IDENTITY + "every head (random, tied, trained) has at least d − d_h singular values <= 1e-10·σ₁ (computed "
    "null singular values are ~dε·σ₁), "
    "and its non-real eigenvalues come in conjugate pairs to 1e-10·σ₁."
)


@claims.add("rank-bound", S_RANK, "derived: rank M <= d_h; M real")
def judge_rank(res: Result, v: Judgement) -> Verdict:
    t = res.table("heads")
    dh = t["d"] // res.config["n_heads"]
    pair_dh = t["d"] // res.config["pair_n_heads"]
    need = np.where(t["family"].isin(["encoder", "decoder"]), t["d"] - pair_dh, t["d"] - dh)
    short = int((t["small_singular"] < need).sum())
    conj = float(v.column(t, "conjugate_gap").max())
    # the judged gap is relative to σ₁ (card: 1e-10, absolute): compare the absolute gap with the card's
    gap = v.column(t, "conjugate_gap")
    departures = _tolerance_departures(
        [(gap * v.column(t, "sigma1"), 1e-10 * t["sigma1"], 1e-10, "conjugate-pair gap")]
    )
    return v.all_of(
        Check.at_most("heads short of d − d_h tiny singular values", float(short), 0),
        Check.at_most("conjugate-pair gap / σ₁", conj, 1e-10),
        detail=f"{len(t)} heads; heads with fewer than d − d_h tiny "
        f"singular values: {short}; conjugate-pair gap max "
        f"{conj:.1e}",
        departures=departures,
    )


def _pair_means(res) -> pd.DataFrame:
    t = res.table("heads")
    t = t[t["family"].isin(["encoder", "decoder"])]
    return t.groupby(["seed", "family"])[["symmetry", "directionality"]].mean().unstack("family")


S_PAIR = (
    "After 20k steps on the same text, in every seed: mean s(encoder) − mean s(decoder) >= 0.05 and mean "
    "d(decoder) >= mean d(encoder) + 0.1 "
    "(the anchor's BERT/GPT split; thresholds ours)."
)


PAIR_KNOWN_CPU = KnownFailure.on_every_seed(
    "at the cpu preset's size (d = 64, 2 layers, 4000 steps) the masked-LM encoder has not left the unigram plateau: "
    "its training loss is 3.09 nats at step 4000 (3.13 at step 250; the corpus's unigram entropy is 3.18) while the "
    "causal decoder reaches 1.50, so the encoder's attention has learned little and its operators barely moved from "
    "their shared init (mean s 0.511 -> 0.517, decoder 0.514): s(encoder) - s(decoder) = 0.0027 (need >= 0.05). The "
    "directional half holds (d decoder +0.353 vs encoder +0.177, difference 0.176 >= 0.1). A masked position carries "
    "only the mask token, so the encoder must learn positional attention before it beats the unigram loss, whereas "
    "the decoder gets bigram statistics from its own token at once; the card's 20k steps at d = 256 are the paper "
    "preset (GPU). Measured on seed 0 only (the cpu preset's one pair)",
    presets=["cpu"],
)


@claims.add(
    "encoder-symmetric-decoder-directional",
    S_PAIR,
    "Saponati et al., arXiv 2502.10927 (anchor)",
    decided_by="cpu",
    departures=PAIR_SIZE,
    known=PAIR_KNOWN_CPU,
)
def judge_pair(res: Result, v: Judgement) -> Verdict:
    m = _pair_means(res)
    detail = "; ".join(
        f"seed {int(s)}: s enc {r[('symmetry', 'encoder')]:.3f} / dec {r[('symmetry', 'decoder')]:.3f}, "
        f"d enc {r[('directionality', 'encoder')]:+.3f} / dec {r[('directionality', 'decoder')]:+.3f}"
        for s, r in m.iterrows()
    )
    if res.config["pair_steps"] < CPU_PAIR_STEPS:
        return v.undecided(
            f"needs paper preset or cpu ({res.config['pair_steps']} steps < {CPU_PAIR_STEPS}); reported: {detail}"
        )
    heads = res.table("heads")
    for col in ("symmetry", "directionality"):  # judged: a NaN head fails, naming it (the means would skip it)
        v.column(heads[heads["family"].isin(["encoder", "decoder"])], col)
    ds = m[("symmetry", "encoder")] - m[("symmetry", "decoder")]
    dd = m[("directionality", "decoder")] - m[("directionality", "encoder")]
    seeds = [f"seed {int(s)}" for s in m.index]
    return v.all_of(
        Check.at_least("s(encoder) − s(decoder)", ds.set_axis(seeds), 0.05),
        Check.at_least("d(decoder) − d(encoder)", dd.set_axis(seeds), 0.1),
        measured=float(ds.min()),
        detail=detail,
    )


S_DRIFT = (
    "The trained decoder's mean s differs from the random-init mean, or its mean d from 0, by more than 3 standard "
    "errors of the random-init distribution."
)


@claims.add(
    "drift-from-null",
    S_DRIFT,
    "Saponati et al., arXiv 2502.10927 (anchor); threshold ours",
    decided_by="cpu",
    departures=PAIR_SIZE,
)
def judge_drift(res: Result, v: Judgement) -> Verdict:
    t = res.table("heads")
    null = t[t["family"] == "random init"]
    dec = t[t["family"] == "decoder"]
    n = len(dec)
    z_s = abs(dec["symmetry"].mean() - null["symmetry"].mean()) / (null["symmetry"].std() / math.sqrt(n))
    z_d = abs(dec["directionality"].mean()) / (null["directionality"].std() / math.sqrt(n))
    detail = f"decoder ({n} heads): z(s) = {z_s:.1f}, z(d) = {z_d:.1f} (null SDs from {len(null)} random heads)"
    if res.config["pair_steps"] < CPU_PAIR_STEPS:
        return v.undecided(
            f"needs paper preset or cpu ({res.config['pair_steps']} steps < {CPU_PAIR_STEPS}); reported: {detail}"
        )
    for col in ("symmetry", "directionality"):  # judged: a NaN head fails, naming it (the means would skip it)
        v.column(t[t["family"].isin(["random init", "decoder"])], col)
    z = float(max(z_s, z_d))
    return v.all_of(Check.holds("max(z(s), z(d)) > 3", z > 3), measured=z, tolerance=3.0, detail=detail)
