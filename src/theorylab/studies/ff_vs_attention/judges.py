"""ff-vs-attention: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.probes.lowrank import laser_selection, pick_value_rank
from theorylab.theory.level_crossings import first_point_above

REF = "arXiv 2406.03068"


def final(curve: pd.DataFrame) -> pd.DataFrame:
    """The last evaluation of every (variant, seed)."""
    last = curve.groupby(["variant", "seed"])["step"].transform("max")
    return curve[curve["step"] == last]


def crossing_steps(curve: pd.DataFrame) -> tuple[int | None, int | None]:
    """t_FF: first evaluation where the mean FF2 margin is > 0; t_ICL: first where mean acc_noFF2 >= 0.5."""
    mean = curve.groupby("step")[["ff2_margin", "acc_noFF2"]].mean().sort_index()
    return first_point_above(mean.index, mean["ff2_margin"], 0.0), first_point_above(
        mean.index, mean["acc_noFF2"], 0.5, inclusive=True
    )


claims = Claims("ff-vs-attention")


def _paper_scale(cfg: dict) -> bool:
    return cfg["d_model"] >= 256 and cfg["length"] >= 256 and cfg["steps"] >= 5000


# The card's quick recipe changes only the optimiser (Adam, lr 3e-3) from the authors' SGD recipe (constant rate,
# weight decay 1e-4); the quick preset's schedule and weight decay are ours.
RECIPE = [
    Departure.field_value("schedule", "constant", "the quick preset's Adam recipe decays the rate (ours)"),
    Departure.field_value("weight_decay", 1e-4, "the quick preset's Adam recipe has none (ours)"),
]


def _reduced(cfg: dict) -> list[str]:
    """A paper claim judged below the paper's sizes (the no-ff-cpu preset, or a --set sweep at quick sizes)."""
    if _paper_scale(cfg):
        return []
    return [
        f"judged at d = {cfg['d_model']}, T = {cfg['length']}, {cfg['steps']} steps (card: the paper preset, "
        f"d = T = 256, 5000 steps): the paper's sizes are GPU work"
    ]


def _main_end(res) -> pd.DataFrame:
    end = final(res.table("curves"))
    return end[end["variant"] == "full"]


S_BAYES = (
    "The full model predicts the noise token at its training rate: mean P(noise) at test triggers lies in [p - 0.15, p "
    "+ 0.2] (Bayes: p)."
)


@claims.add("bayes-noise-rate", S_BAYES, REF + ", Sec. 3 (Bayes-optimal noise rate)", departures=RECIPE)
def judge_bayes(res: Result, v: Judgement) -> Verdict:
    p = res.config["p_noise"]
    end = _main_end(res)
    value = float(v.column(end, "P_noise_full").mean())
    lo, hi = p - 0.15, p + 0.2
    detail = f"over {len(end)} seed(s) (per seed {', '.join(f'{v:.3f}' for v in end['P_noise_full'])})"
    return v.within(value, lo, hi, name="P(noise)", tolerance="[p - 0.15, p + 0.2]", detail=detail)


S_ABLATE = (
    "Dropping FF2 deletes the association and keeps the in-context answer: accuracy without FF2 >= 0.8 (quick) "
    "/ 0.9 (paper), "
    "P(noise) without FF2 <= 0.15, and accuracy gains >= 0.25 over the full model."
)


@claims.add("ablate-ff2", S_ABLATE, REF + ", Sec. 3, Fig. 2 (FF2 ablation)", departures=RECIPE)
def judge_ablate(res: Result, v: Judgement) -> Verdict:
    end = _main_end(res)
    bar = 0.9 if _paper_scale(res.config) else 0.8
    for col in ("acc_noFF2", "acc_full", "P_noise_noFF2"):
        v.column(end, col)
    acc, acc_full, p_noise = (
        float(end["acc_noFF2"].mean()),
        float(end["acc_full"].mean()),
        float(end["P_noise_noFF2"].mean()),
    )
    gain = acc - acc_full
    return v.all_of(
        Check.at_least("accuracy without FF2", acc, bar),
        Check.at_most("P(noise) without FF2", p_noise, 0.15),
        Check.at_least("accuracy gain over the full model", gain, 0.25),
        detail=f"accuracy without FF2 {acc:.3f}, P(noise) without FF2 {p_noise:.3f}, full-model accuracy "
        f"{acc_full:.3f} (gain {gain:+.3f})",
    )


S_FF2 = (
    "FF2 stores the noise association: its direct-logit margin for the noise token is > 0 at >= 90% of test trigger "
    "positions at the end of training."
)


@claims.add("ff2-stores-noise", S_FF2, REF + ", Sec. 3 (FF stores the bigram)", departures=RECIPE)
def judge_ff2(res: Result, v: Judgement) -> Verdict:
    end = _main_end(res)
    frac = float(v.column(end, "ff2_margin_positive").mean())
    detail = (
        f"fraction with positive margin {frac:.3f} (need >= 0.9); mean margin {float(end['ff2_margin'].mean()):.3f}"
    )
    return v.at_least(frac, 0.9, tolerance=0.9, detail=detail)


S_FIRST = (
    "The association is learned first: t_FF (first evaluation with mean FF2 margin > 0) <= t_ICL / 2 (t_ICL: first "
    "evaluation with accuracy without FF2 >= 0.5)."
)


@claims.add("ff-first", S_FIRST, REF + ", Sec. 4 (gradient noise: FF learns first)", departures=RECIPE)
def judge_first(res: Result, v: Judgement) -> Verdict:
    curve = res.table("curves")
    for col in ("ff2_margin", "acc_noFF2"):  # a NaN evaluation would be skipped by the means over seeds
        v.column(curve[curve["variant"] == "full"], col)
    t_ff, t_icl = crossing_steps(curve[curve["variant"] == "full"])
    every = res.config["evaluate_every"]
    if t_icl is None:
        return v.failed(
            None,
            "<= 0.5",
            detail=f"in-context accuracy without FF2 never reached 0.5 (t_FF = {t_ff}); the in-context mechanism did "
            "not form",
        )
    if t_ff is None:
        return v.failed(None, "<= 0.5", detail=f"the FF2 margin never turned positive (t_ICL = {t_icl})")
    detail = (
        f"t_FF = {t_ff}, t_ICL = {t_icl} (evaluations every {every} steps; t_FF is an upper bound at that resolution)"
    )
    return v.at_most(t_ff / t_icl, 0.5, name="t_FF / t_ICL", detail=detail)


S_INDUCTION = (
    "The in-context answer comes from an induction head: mean layer-2 attention on the token after the previous "
    "trigger >= 0.2 (quick) / 0.4 (paper) (uniform causal attention: ~1/t)."
)


@claims.add("induction-head", S_INDUCTION, REF + ", Sec. 3 (induction head)", departures=RECIPE)
def judge_induction(res: Result, v: Judgement) -> Verdict:
    end = _main_end(res)
    bar = 0.4 if _paper_scale(res.config) else 0.2
    mass = float(v.column(end, "induction_mass").mean())
    uniform = 2.0 / res.config["length"]
    detail = (
        f"induction mass {mass:.3f} (need >= {bar}); uniform attention over the prefix would give about {uniform:.3f}"
    )
    return v.at_least(mass, bar, expected=f">= {bar}", tolerance=bar, detail=detail)


S_NOFF = (
    "Without FF layers the association moves into the layer-2 attention value path: the no-FF model's P(noise) "
    "still lies in [p - 0.15, p + 0.2], "
    "and dropping the lower singular directions of the layer-2 value matrix W_V (keeping its top-k part, k "
    "chosen on one half of the test "
    "sequences; the authors' value truncation) brings P(noise) below 0.15 on the other half without lowering the "
    "in-context accuracy "
    "(which must be at least 5x chance, 5/V). "
    "(Second half reconstructed; dropping a whole attention layer is reported, not judged: it removes the "
    "in-context answer too.)"
)


@claims.add(
    "no-ff-variant",
    S_NOFF,
    REF + ", Sec. 3 (models without FF)",
    decided_by="cpu",
    departures=[
        *RECIPE,
        (
            "layer-2 W_V truncated to its top-k directions, k picked on half the test sequences, in-context accuracy "
            "kept "
            "(card: the layer-2 attention value path dropped): the authors' code truncates W_V (wv_low_rank); dropping "
            "the "
            "path also removes the in-context answer (reported)"
        ),
    ],
)
def judge_no_ff(res: Result, v: Judgement) -> Verdict:
    end = final(res.table("curves"))
    noff = end[end["variant"] == "no-ff"]
    if noff.empty:
        return v.undecided(
            "this config trains no model without FF layers (no_ff_variant=false; off at quick for the CPU "
            "budget: "
            "--preset cpu (or --preset no-ff-cpu) trains it at quick sizes, the paper preset at "
            "paper size)"
        )
    p = res.config["p_noise"]
    value = float(v.column(noff, "P_noise_full").mean())
    for col in ("P_noise", "acc"):
        v.column(res.table("value_truncation"), col)
    picked = pick_value_rank(res.table("value_truncation"))
    p_cut, acc_cut, acc_full = (
        float(picked["P_noise"].mean()),
        float(picked["acc"].mean()),
        float(picked["acc_untouched"].mean()),
    )
    # the in-context path must exist for "keeps the in-context answer" to mean anything: at least 5x chance (1/V)
    floor = 5.0 / res.config["vocab_size"]
    detail = (
        f"no-FF P(noise) {value:.3f}; layer-2 W_V kept at rank "
        f"{', '.join(str(int(r)) for r in picked['rank'])} of {res.config['d_model']} (picked on the validation "
        f"half): on the test half P(noise) "
        f"{float(picked['P_noise_untouched'].mean()):.3f} -> {p_cut:.3f}, in-context accuracy "
        f"{acc_full:.3f} -> {acc_cut:.3f} (5/V = {floor:.3f}); "
        f"reported: whole layer-2 attention dropped: P(noise) {float(picked['P_noise_no_layer'].mean()):.3f}, "
        f"accuracy {float(picked['acc_no_layer'].mean()):.3f}; "
        f"attention 1 dropped: P(noise) {float(noff['P_noise_noAttn1'].mean()):.3f}"
    )
    return v.all_of(
        Check.within("no-FF P(noise)", value, p - 0.15, p + 0.2),
        Check.holds("truncated P(noise) < 0.15", p_cut < 0.15),
        Check.at_least("truncated in-context accuracy", acc_cut, max(acc_full, floor)),
        detail=detail,
        tolerance="[p - 0.15, p + 0.2]",
        departures=_reduced(res.config),
    )


S_SWEEP = (
    "Over training noise levels p in {0.1, 0.3, 0.5, 0.7}: |P(noise) - p| <= 0.12 and accuracy without FF2 >= 0.85 at "
    "every p."
)


# Measured at quick sizes (seed 0, --set p_sweep=0.1,0.3,0.7): the reason the quick preset leaves the sweep to the paper
# preset.
SWEEP_AT_QUICK = (
    "--preset cpu (or --set p_sweep=0.1,0.3,0.7) trains it at quick sizes (three more models, minutes "
    "on a CPU); what that measured, and why the card's accuracy bar may need paper size, is in "
    "docs/studies/ff-vs-attention.md; the paper preset judges it at paper size"
)


@claims.add("p-sweep", S_SWEEP, REF + ", Sec. 3 (noise level)", departures=RECIPE, decided_by="cpu")
def judge_sweep(res: Result, v: Judgement) -> Verdict:
    end = final(res.table("curves"))
    full = end[end["ff"]].groupby("p_noise")[["P_noise_full", "acc_noFF2"]].mean()
    if len(full) < 2:
        return v.undecided(
            f"this config trains no p sweep (p_sweep empty; four models exceed the quick budget); {SWEEP_AT_QUICK}"
        )
    for col in ("P_noise_full", "acc_noFF2"):
        v.column(end[end["ff"]], col)
    errors = (full["P_noise_full"] - full.index.to_numpy()).abs()
    tracking = Check.at_most("|P(noise) - p|", errors, 0.12)
    accuracy = Check.at_least("accuracy without FF2", full["acc_noFF2"], 0.85)
    detail = "; ".join(
        f"p={p:g}: P(noise) {r.P_noise_full:.3f}, acc without FF2 {r.acc_noFF2:.3f}" for p, r in full.iterrows()
    )
    # the measured value is the part that fails: the lowest accuracy when only it fails, else the largest error
    headline = accuracy if tracking.ok and not accuracy.ok else tracking
    return v.all_of(
        tracking,
        accuracy,
        measured=headline.worst,
        tolerance=headline.bound,
        detail=detail,
        departures=_reduced(res.config),
    )


S_LASER = (
    "Our analogue of the Pythia finding, on a language model trained on real text: a low-rank truncation of a "
    "late MLP (second half of the layers; "
    "layer and rank picked on a validation split, as LASER does) raises in-context accuracy at held-out trigger "
    "prompts by >= 0.1 "
    "while natural-text perplexity changes by <= 10%."
)


# Measured on CPU (preset lm: KJV, 2 layers, d = 64, 3000 steps, seed 0): why the quick preset leaves this claim to the
# paper preset.
LASER_AT_CPU = (
    "measure it on CPU with --preset lm (a 2-layer language model on the KJV, ~5 min on 2 cores); what that "
    "measured "
    "when we ran it is in the "
    "docs/studies/ff-vs-attention.md; judged at paper size"
)


# Measured at the lm preset, seed 0 (AVX-512 EPYC, 2026-12-07; the AVX2 run of 2026-12-06 failed the same way), with
# the rank grid widened to 32 and 48 by --set to see where the perplexity cost falls under 10%.
LASER_TRADE_OFF = KnownFailure.on_some_seeds(
    1,
    1,
    [0],
    "in the lm preset's 2-layer, d = 64 model, truncating the last MLP's input matrix trades perplexity for "
    "in-context accuracy along one curve (test gain, perplexity change): rank 1 +0.287, +190%; rank 4 +0.190, "
    "+114%; rank 16 +0.020, +34%; rank 32 -0.214, +9%; rank 48 -0.194, +2% (--set lm_ranks=1,4,16,32,48). Where "
    "the cost is within 10% the gain is negative: a model this small has no spare rank in that matrix. The paper "
    "truncates Pythia-size MLPs, 4d wide at d >= 512",
    presets=["lm"],
)


@claims.add(
    "truncation-helps",
    S_LASER,
    REF + ", Sec. 5 (LASER on Pythia; our own LM here)",
    decided_by="lm",
    departures=[
        "a word-level model on real text with the trigger task written in, perplexity on natural text (card: a "
        "synthetic "
        "corpus mixing the trigger task with generic bigram text, generic-bigram perplexity): closer to the paper's "
        "Pythia setting",
        "a late-layer MLP and its rank picked on a validation split among lm_ranks (card: the last-layer MLP at "
        "rank-1/10): LASER's own selection",
        Departure.field_value("lm_n_layers", 4, "the lm preset's CPU model has 2 layers"),
    ],
    known=LASER_TRADE_OFF,
)
def judge_laser(res: Result, v: Judgement) -> Verdict:
    lm = res.table("lm", unless=f"this config does not train the language model (lm=false); {LASER_AT_CPU}")
    pick, test = laser_selection(lm)
    base = lm[(lm["split"] == "test") & ~lm["truncated"]].iloc[0]
    late = test[test["layer"] >= test["n_layers"] / 2]
    grid = "; ".join(
        f"layer {int(r.layer)} rank {int(r.rank)}: {r.gain:+.3f} ({r.ppl_change:+.0%})" for r in late.itertuples()
    )
    head = f"test split: full model in-context accuracy {base['icl_acc']:.3f}, perplexity {base['perplexity']:.1f}"
    if pick is None:
        return v.failed(
            None,
            "test gain >= 0.1; |perplexity change| <= 0.1",
            0.1,
            f"{head}; no late-layer truncation keeps validation perplexity "
            f"within 10% (test grid, gain (perplexity change): {grid})",
        )
    detail = (
        f"{head}; picked on the validation split: layer {int(pick['layer'])}, rank {int(pick['rank'])} -> test "
        f"gain {pick['gain']:+.3f}, perplexity {pick['ppl_change']:+.1%}; late-layer test grid: {grid}"
    )
    return v.all_of(
        Check.at_least("test gain", float(pick["gain"]), 0.1),
        Check.at_most("|perplexity change|", abs(float(pick["ppl_change"])), 0.10),
        detail=detail,
    )
