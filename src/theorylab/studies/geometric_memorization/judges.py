"""geometric-memorization: its claims, judged from a run's tables and config."""

from __future__ import annotations

import math

import numpy as np

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure

REF = "Ravfogel, Yehudai, Bruna & Bietti, arXiv 2605.12426"
claims = Claims("geometric-memorization")
TOL = 1e-9

# The card trains the quick model 1500 full-batch steps and the paper models 20k.
STEPS = [
    Departure.field_value(
        "steps",
        1500,
        "100% is reached by step 250 and the held-out R² moves < 0.01 after step 500 (seeds 0 and 1, tracked to 1500)",
        presets=["quick"],
    ),
    Departure.field_value("steps", 20_000, presets=["paper"]),
]


S_EXACT = (
    "For every (N, R) in the grid, the sign-code construction with k = ceil(log2 N) bits (d = Rk + R + k), run "
    "as a ToyTransformer with hard attention and a ReLU selector MLP, recalls all N·R facts with minimum margin "
    "exactly 2 (± 1e-9); its nonzero parameters match the closed form N k (R + 1) + 3R + 10Rk."
)


@claims.add("construction-exact", S_EXACT, REF + ", one-layer construction with d = O(R log N) (our reconstruction)")
def judge_exact(res: Result, v: Judgement) -> Verdict:
    t = res.table("construction")
    cfg = res.config
    want = {(n, r) for n in cfg["construction_n_entities"] for r in cfg["construction_relations"]}
    have = set(zip(t["n"], t["r"])) if len(t) else set()
    if want - have:
        return v.failed(math.nan, "= 2 ± 1e-9", TOL, f"grid points missing: {sorted(want - have)}")
    worst = float((v.column(t, "min_margin") - 2).abs().max())
    acc = float(v.column(t, "accuracy").min())
    facts_ok = bool((t["n_facts"] == t["n"] * t["r"]).all())
    params_ok = bool(
        (t["nonzero_params"] == t["nonzero_closed_form"]).all() and (t["dense_params"] == t["dense_closed_form"]).all()
    )
    return v.all_of(
        Check.at_most("max |margin - 2|", worst, TOL),
        Check.within("min accuracy", acc, 1.0, 1.0),
        Check.holds("every fact counted (n_facts = N·R)", facts_ok),
        Check.holds("parameter counts = closed forms", params_ok),
        measured=float(t["min_margin"].min()),
        detail=f"{len(t)} grid points, {int(t['n_facts'].sum())} facts: accuracy >= {acc:.6f}, margins in "
        f"[{t['min_margin'].min():g}, {t['max_margin'].max():g}]; every fact counted: {facts_ok}; "
        f"parameter counts = closed forms: {params_ok} (largest: {int(t['nonzero_params'].max())} nonzero "
        f"of {int(t['dense_params'].max())})",
    )


S_TIGHT = (
    "With one bit fewer, k = ceil(log2 N) - 1 and N > 2^k, codes must collide: the construction's strict "
    "recall is < 1 and at most the pigeonhole bound (2^k - 1)/N, with minimum margin 0."
)


@claims.add(
    "construction-tight",
    S_TIGHT,
    REF + ", pigeonhole (codes need log2 N bits per relation)",
    departures=[
        "strict recall, a tie counts as a miss (card: accuracy): what the pigeonhole bound bounds for any code "
        "assignment",
        Departure.field_value(
            "tight_relations", (1, 2, 4), "codes collide per relation block: more relations add cost and no information"
        ),
    ],
)
def judge_tight(res: Result, v: Judgement) -> Verdict:
    t = res.table("tight")
    if t.empty:
        return v.failed(math.nan, "<= (2^k - 1)/N", 0.0, "no pigeonhole rows")
    v.column(t, "accuracy")
    v.column(t, "min_margin")
    crowded = bool((t["n"] > 2 ** t["k"]).all())
    return v.all_of(
        Check.holds("accuracy < 1 on every row", bool((t["accuracy"] < 1).all())),
        Check.at_most("accuracy - (2^k - 1)/N", t["accuracy"] - t["recall_bound"], TOL),
        Check.at_most("min margin", t["min_margin"], TOL),
        Check.holds("N > 2^k on every row (codes must collide)", crowded),
        measured=float(t["accuracy"].max()),
        tolerance=0.0,
        detail="; ".join(
            f"N = {row.n}, R = {row.r}, k = {row.k}: accuracy {row.accuracy:.4f} (bound "
            f"{row.recall_bound:.4f}), min margin {row.min_margin:g}"
            for row in t.itertuples()
        )
        + ("" if crowded else "; some row has N <= 2^k (no collision forced)"),
    )


S_COT = (
    "Applying the construction twice (chain of thought: the predicted intermediate entity fed back as the "
    "subject) answers all N·R² two-hop queries (N = 2048, R = 4) with both hops' margins exactly 2."
)


@claims.add("cot-two-hop-exact", S_COT, REF + ", multi-hop with chain of thought")
def judge_cot(res: Result, v: Judgement) -> Verdict:
    t = res.table("cot")
    if t.empty:
        return v.failed(math.nan, "= 1", 0.0, "no two-hop row")
    row = t.iloc[0]
    return v.all_of(
        Check.within("accuracy", float(row["accuracy"]), 1.0, 1.0),
        Check.holds("n_queries = N·R²", int(row["n_queries"]) == int(row["n"]) * int(row["r"]) ** 2),
        Check.at_most("|min margin - 2|", abs(row["min_margin"] - 2), TOL),
        tolerance=0.0,
        detail=f"N = {int(row['n'])}, R = {int(row['r'])}: {int(row['n_queries'])} queries, accuracy "
        f"{row['accuracy']:.6f}, min margin {row['min_margin']:g}",
    )


def _base(res):
    t = res.table("training")
    return t[(t["multiplier"] == 1) & (t["r"] <= 4)] if len(t) else t


S_GD = (
    "Full-batch AdamW (lr 1e-2) on all N·R facts reaches 100% training accuracy at d = R ceil(log2 N) (quick: "
    "N = 256, R = 2, d = 16, MLP 64, 500 steps (card: 1500); paper: every N with R <= 4, 20k steps), every "
    "seed."
)


@claims.add("gd-log-dim", S_GD, REF + ", gradient descent finds d = O(R log N) solutions", departures=STEPS)
def judge_gd(res: Result, v: Judgement) -> Verdict:
    t = _base(res)
    if t.empty:
        return v.failed(math.nan, "= 1", 0.0, "no trained model at d = R ceil(log2 N) with R <= 4")
    worst = float(v.column(t, "accuracy").min())
    return v.within(
        worst,
        1.0,
        1.0,
        name="min accuracy",
        tolerance=0.0,
        detail="; ".join(
            f"N = {row.n}, R = {row.r}, d = {row.d}, seed {row.seed}: accuracy {row.accuracy:.4f} "
            f"(100% from step {row.first_full_step}), min margin {row.min_margin:.3g}, "
            f"{row.seconds:.1f} s"
            for row in t.itertuples()
        ),
    )


S_SUP = (
    "Learned subject embeddings are linear superpositions of their own attributes' unembedding rows: one linear "
    "map from [U_pi1(s), ..., U_piR(s)] to e_s, fitted on half the subjects, has held-out R² >= 0.45; the same "
    "fit on independent (shuffled) bijections has R² <= 0.05 (d = R ceil(log2 N), R >= 2)."
)


@claims.add(
    "superposition", S_SUP, REF + ", subject embeddings as superpositions of attribute vectors", departures=STEPS
)
def judge_sup(res: Result, v: Judgement) -> Verdict:
    t = _base(res)
    t = t[(t["r"] >= 2) & np.isfinite(t["r2"]) & np.isfinite(t["r2_control"])] if len(t) else t
    if t.empty:
        return v.failed(math.nan, ">= 0.45", 0.45, "no model with R >= 2 and a determined fit")
    low, high = float(t["r2"].min()), float(t["r2_control"].max())
    return v.all_of(
        Check.at_least("min held-out R²", low, 0.45),
        Check.at_most("max shuffled-control R²", high, 0.05),
        detail="; ".join(
            f"N = {row.n}, R = {row.r}, d = {row.d}, seed {row.seed}: R² {row.r2:.3f}, shuffled {row.r2_control:.3f}"
            for row in t.itertuples()
        ),
    )


S_TRANSFER = (
    "At d = 4R ceil(log2 N), training only the (re-initialised) subject embeddings on new bijections for "
    "half the step budget, with attention, MLP, relation embeddings and readout frozen, reaches >= 0.9 "
    "accuracy; with the MLP re-drawn at random and frozen, accuracy stays >= 0.2 lower (thresholds ours)."
)


@claims.add(
    "transfer",
    S_TRANSFER,
    REF + ", zero-shot transfer of the selector MLP (E-only training: ours)",
    decided_by="cpu",
    departures=[
        Departure.of(
            "N = 2^10, R = 2, one seed, 1500 steps (paper preset: N in {2^10, 2^13, 2^16} x R in {1, 2, 4, 8}, 3 "
            "seeds, 20k steps)",
            "cpu preset: the smallest paper N at the card's quick step count fits 2 CPU cores; the larger N need a GPU",
            presets=["cpu"],
        )
    ],
)
def judge_transfer(res: Result, v: Judgement) -> Verdict:
    t = res.table("transfer")
    if t.empty:
        return v.undecided("needs paper preset (no transfer run in this preset)")
    piv = t.pivot_table(index=["n", "r", "d", "seed", "multiplier"], columns="mlp", values="accuracy").reset_index()
    if not {"trained", "random"} <= set(piv.columns):
        return v.failed(math.nan, ">= 0.9", 0.9, "transfer rows lack the trained or the random-MLP arm")
    detail = "; ".join(
        f"N = {row.n}, R = {row.r}, d = {row.d}, seed {row.seed}: trained MLP {row.trained:.3f}, random "
        f"MLP {row.random:.3f}"
        for row in piv.itertuples()
    )
    steps = int(t["steps"].iloc[0])
    at_paper = piv[piv["multiplier"] == 4]
    if at_paper.empty or 2 * steps < int(res.config["steps"]):
        return v.undecided(
            "needs paper preset (d = 4R log2 N, half the training steps); reduced measurement at "
            f"d = {int(piv['d'].iloc[0])}, {steps} steps: " + detail,
            measured=float(piv["trained"].min()),
        )
    v.column(t, "accuracy")
    low = float(at_paper["trained"].min())
    gap = float((at_paper["trained"] - at_paper["random"]).min())
    return v.all_of(
        Check.at_least("min trained-MLP accuracy", low, 0.9),
        Check.at_least("min (trained - random MLP) accuracy", gap, 0.2),
        detail=detail,
    )


S_PARAMS = (
    "At 100% recall and N = 2^16, the geometric solution's MLP has fewer than 0.1 N·R parameters (smallest "
    "trained d per R), while the associative-memory baseline (d = 16, MLP width grown until 100%) needs MLP "
    "parameters growing linearly in N·R: log-log slope 1 ± 0.25 (tolerance ours)."
)


def _slope(x, y) -> float:
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


@claims.add("params-per-fact", S_PARAMS, REF + ", geometric vs associative memory parameter counts", decided_by="paper")
def judge_params(res: Result, v: Judgement) -> Verdict:
    t, a = res.table("training"), res.table("assoc")
    big = t[(t["n"] == 65536) & (t["accuracy"] == 1.0)] if len(t) else t
    if big.empty or a.empty:
        c = res.table("construction")
        top = c.sort_values(["n", "r"]).iloc[-1]
        ratio = float(t["mlp_params"].iloc[0] / (t["n"].iloc[0] * t["r"].iloc[0])) if len(t) else math.nan
        per_fact = float(top["mlp_nonzero"] / (top["n"] * top["r"]))
        return v.undecided(
            f"needs paper preset (N = 2^16 and the baseline sweep); reduced measurement: the "
            f"construction's MLP uses {int(top['mlp_nonzero'])} nonzero weights at N = {int(top['n'])}, "
            f"R = {int(top['r'])} ({per_fact:.2g} per fact); the quick trained MLP has {ratio:.3g} "
            f"parameters per fact at N = {int(t['n'].iloc[0]) if len(t) else '?'}",
            measured=per_fact,
        )
    per_r = big.groupby("r").apply(lambda g: g.sort_values("d").iloc[0], include_groups=False).reset_index()
    ratio = float((per_r["mlp_params"] / (65536 * per_r["r"])).max())
    solved = a[a["accuracy"] == 1.0]
    facts = solved["n"] * solved["r"]
    slope = _slope(facts, solved["mlp_params"]) if len(solved) >= 2 else math.nan
    return v.all_of(
        Check.holds("geometric MLP params per fact < 0.1", ratio < 0.1),
        Check.at_least("baseline sizes solved", len(solved), 2),
        Check.at_most("|baseline log-log slope - 1|", abs(slope - 1), 0.25),
        measured=ratio,
        tolerance=0.1,
        detail="geometric at N = 2^16: "
        + ", ".join(f"R = {row.r}: d = {row.d}, {row.mlp_params} MLP params" for row in per_r.itertuples())
        + f"; baseline: {len(solved)} sizes solved, slope {slope:.3f}",
    )


S_TWOHOP = (
    "Without chain of thought a 2-layer model needs a larger width than the 1-layer model with CoT to answer "
    "all two-hop queries at N = 2^13: d_min(no CoT) >= 2 d_min(CoT) (reconstructed, directional)."
)

TWOHOP_CPU = [
    Departure.field_value(
        "twohop_n_entities",
        (8192,),
        "cpu preset: both sweeps train full-batch on every query (N·R² "
        "two-hop queries x N logits); N = 2^8 fits one CPU core, 2^13 needs a GPU",
        presets=["cpu"],
    ),
    Departure.field_value(
        "steps",
        20_000,
        "cpu preset: the card's quick step count; the one-hop model reaches 100% within it at this N",
        presets=["cpu"],
    ),
]


@claims.add(
    "two-hop-tradeoff",
    S_TWOHOP,
    REF + ", capacity-depth trade-off (reconstructed)",
    decided_by="cpu",
    departures=TWOHOP_CPU,
)
def judge_twohop(res: Result, v: Judgement) -> Verdict:
    t = res.table("twohop")
    if t.empty:
        c = res.table("cot")
        extra = (
            f"; reduced measurement: the CoT construction answers {c['accuracy'].iloc[0]:.4f} of two-hop queries "
            f"at N = {int(c['n'].iloc[0])}"
            if len(c)
            else ""
        )
        return v.undecided("needs the cpu preset (no two-hop training in this preset)" + extra)
    n = int(t["n"].max())  # the claim's N: 2^13 at paper, the cpu preset's reduced N there (a declared departure)
    t = t[t["n"] == n]
    v.column(t, "accuracy")

    def d_min(mode: str) -> float:
        ok = t[(t["mode"] == mode) & (t["accuracy"] == 1.0)]
        return float(ok["d"].min()) if len(ok) else math.inf

    cot, deep = d_min("cot"), d_min("no-cot")
    top = float(t.loc[t["mode"] == "no-cot", "d"].max()) if (t["mode"] == "no-cot").any() else math.nan
    sweep = "; ".join(
        f"{mode} d = {row.d}: {row.accuracy:.4f}"
        for mode in ("cot", "no-cot")
        for row in t[t["mode"] == mode].sort_values("d").itertuples()
    )
    return v.all_of(
        Check.holds("CoT reaches 100% at a swept d", math.isfinite(cot)),
        Check.holds("d_min(no CoT) >= 2 d_min(CoT)", deep >= 2 * cot),
        Check.holds("no-CoT solved, or swept to d >= 2 d_min(CoT)", math.isfinite(deep) or top >= 2 * cot),
        measured=deep / cot if math.isfinite(cot) else math.nan,
        tolerance=2.0,
        detail=f"N = {n}, R = {int(t['r'].iloc[0])}: d_min with CoT {cot:g}, without {deep:g} (no-CoT swept to "
        f"d = {top:g}); {sweep}",
    )
