"""compositional-reasoning: its claims, judged from a run's tables and config."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure

REF = "Yehudai, Amsel & Bruna, arXiv 2503.01544"
claims = Claims("compositional-reasoning", REF)
FAMILIES = ("random_binary", "caterpillar", "complete_binary", "random_kary")
GRU_ACC = 0.98  # heavy-first accuracy (card)
GRU_LIGHT = 0.9  # light-first ceiling (card)
GRU_GAP = 0.1
REACH = 0.95  # accuracy that counts as "solved" in the sweeps (card)


S_BOOL = (
    "On 10^4 random Boolean formulas (n <= 64, all four families), the CRQ evaluator on the +-e encoding "
    "(True = +1, False = -1, OR = +1, AND = -1) agrees with direct AND/OR evaluation at every node (100%)."
)


@claims.add("boolean-encoding", S_BOOL, REF + ", Sec. 2: Boolean formulas are CRQs with m = 1 (exact)")
def judge_boolean(res: Result, v: Judgement) -> Verdict:
    t = res.table("boolean")
    cfg = res.config
    trees = int(t["trees"].sum()) if len(t) else 0
    fams = set(t["family"]) if len(t) else set()
    if trees < cfg["exact_trees"] - len(FAMILIES) or fams != set(FAMILIES):
        return v.failed(
            trees,
            f"{cfg['exact_trees']} formulas over {len(FAMILIES)} families",
            0,
            f"only {trees} formulas over {sorted(fams)}",
        )
    agree = int(t["root_agree"].sum())
    nodes = int(t["node_mismatches"].sum())
    return v.all_of(
        Check.within("roots that agree", agree, trees, trees),
        Check.within("node mismatches", nodes, 0, 0),
        measured=agree / trees,
        tolerance=0.0,
        detail=f"{agree}/{trees} roots agree, {nodes} node mismatches; n in [{int(t['n'].min())}, "
        f"{int(t['n'].max())}]; True roots {int(t['root_true'].sum()) / trees:.3f}",
    )


S_FOLD = (
    "On 10^4 real-label CRQs (m = 8, z_v uniform on the sphere), the streaming fold evaluator, which keeps only "
    "each open ancestor's best child answer, returns the recursive evaluator's root answer bitwise."
)


@claims.add("fold-equals-recursive", S_FOLD, REF + ", Sec. 2 definition (recursive) vs Sec. 4 streaming (exact)")
def judge_fold(res: Result, v: Judgement) -> Verdict:
    t = res.table("fold")
    cfg = res.config
    trees = int(t["trees"].sum()) if len(t) else 0
    if trees < cfg["exact_trees"] - len(FAMILIES) or set(t["family"] if len(t) else ()) != set(FAMILIES):
        return v.failed(trees, f"{cfg['exact_trees']} CRQs", 0, f"only {trees} CRQs were compared")
    equal = int(t["bitwise_equal"].sum())
    diff = float(t["max_abs_diff"].max())
    return v.all_of(
        Check.within("roots bitwise equal", equal, trees, trees),
        Check.within("largest |fold - recursive|", diff, 0.0, 0.0),
        measured=equal / trees,
        tolerance=0.0,
        detail=f"{equal}/{trees} roots bitwise equal (largest |difference| {diff:g}); orders {sorted(set(t['order']))}",
    )


S_HEAVY = (
    "In heavy-first order the streaming fold never holds more than floor(log2 n) pending partial answers, "
    "on every generated tree of every family, with equality on complete binary trees for n = 2^D, D <= 10."
)


@claims.add("heavy-first-bound", S_HEAVY, REF + ", Sec. 4 (suitable order; Sethi-Ullman), reconstructed bound")
def judge_heavy(res: Result, v: Judgement) -> Verdict:
    t = res.table("stack")
    cfg = res.config
    h = t[t["order"] == "heavy_first"] if len(t) else t
    if h.empty:
        return v.failed(math.nan, "<= floor(log2 n)", 0, "no heavy-first rows")
    over = h[h["max_pending"] > h["log2_floor"]]  # for the detail
    cb = h[h["family"] == "complete_binary"]
    want = {int(n) for n in cfg["stack_leaves"]}
    missing = sorted(want - set(cb["n"].astype(int)))
    fams = set(h["family"])
    exact = bool(len(cb)) and bool((cb["max_pending"] == np.log2(cb["n"]).round().astype(int)).all())
    slack = float((h["max_pending"] - h["log2_floor"]).max())
    return v.all_of(
        Check.at_most(
            "max_pending - floor(log2 n)",
            (h["max_pending"] - h["log2_floor"]).set_axis(h["family"] + " n = " + h["n"].astype(str)),
            0,
        ),
        Check.holds("max_pending = log2 n on complete binary trees", exact),
        Check.holds("complete binary trees at every n of stack_leaves", not missing),
        Check.holds("heavy-first trees of every family", fams == set(FAMILIES)),
        measured=slack,
        tolerance=0,
        detail=f"{len(h)} heavy-first trees over {sorted(fams)}: {len(over)} above floor(log2 n); complete "
        f"binary equal to log2 n at every n: {exact}" + (f"; n missing: {missing}" if missing else ""),
    )


S_ADV = (
    "Order matters, not only the tree: caterpillars in light-first order hold exactly n - 1 pending partials, "
    "and in random order more than floor(log2 n) on at least 90% of caterpillars with n >= 32."
)


@claims.add("adversarial-order", S_ADV, REF + ", Sec. 4 (an unsuitable order needs linear memory)")
def judge_adversarial(res: Result, v: Judgement) -> Verdict:
    t = res.table("stack")
    c = t[t["family"] == "caterpillar"] if len(t) else t
    light = c[c["order"] == "light_first"] if len(c) else c
    rand = c[(c["order"] == "random") & (c["n"] >= 32)] if len(c) else c
    if light.empty or rand.empty:
        return v.failed(math.nan, "= n - 1; >= 0.9", 0, "no light-first caterpillars or none with n >= 32")
    exact = bool((light["max_pending"] == light["n"] - 1).all())
    frac = float((rand["max_pending"] > rand["log2_floor"]).mean())
    return v.all_of(
        Check.at_least("share of random-order caterpillars (n >= 32) above floor(log2 n)", frac, 0.9),
        Check.holds("light-first max_pending = n - 1 on every caterpillar", exact),
        tolerance=0.0,
        detail=f"light-first = n - 1 on all {len(light)} caterpillars (n up to {int(light['n'].max())}): "
        f"{exact}; random order above floor(log2 n) on {frac:.3f} of {len(rand)} caterpillars with n >= 32",
    )


S_GRU = (
    "A GRU with h = 16 reading n = 16 caterpillar formulas in postfix reaches >= 0.98 root accuracy in "
    "heavy-first order and <= 0.9 in light-first order (gap >= 0.1) after 1000 Adam steps."
)


@claims.add("gru-order", S_GRU, REF + ", Sec. 4 (RNNs need a suitable order); thresholds ours")
def judge_gru(res: Result, v: Judgement) -> Verdict:
    t = res.table("gru")
    sel = t[(t["n"] == 16) & (t["hidden"] == 16)] if len(t) else t
    heavy = sel[sel["order"] == "heavy_first"]["accuracy"]
    light = sel[sel["order"] == "light_first"]["accuracy"]
    if heavy.empty or light.empty:
        return v.failed(
            math.nan, f">= {GRU_ACC} vs <= {GRU_LIGHT}", GRU_GAP, "no GRU rows at n = 16, h = 16 in both orders"
        )
    v.column(sel, "accuracy")
    hmin, lmax = float(heavy.min()), float(light.max())
    return v.all_of(
        Check.at_least("heavy-first min - light-first max accuracy", hmin - lmax, GRU_GAP),
        Check.at_least("heavy-first accuracy (min over seeds)", hmin, GRU_ACC),
        Check.at_most("light-first accuracy (max over seeds)", lmax, GRU_LIGHT),
        detail=f"heavy-first accuracy {hmin:.4f} (min over {len(heavy)} seeds), light-first {lmax:.4f} (max over "
        f"{len(light)})",
    )


def _min_reaching(frame: pd.DataFrame, by: str, size: str) -> dict:
    """For each value of ``by``: the smallest ``size`` whose mean accuracy reaches REACH (inf if none)."""
    out = {}
    for key, g in frame.groupby(by):
        acc = g.groupby(size)["accuracy"].mean()
        hit = acc[acc >= REACH]
        out[int(key)] = float(hit.index.min()) if len(hit) else math.inf
    return out


S_STATE = (
    "On caterpillars the smallest GRU state reaching 0.95 is <= 8 in heavy-first order for every n <= 128, "
    "while in light-first order it at least doubles from n = 16 to n = 64 (or exceeds 128)."
)


@claims.add(
    "rnn-state-scaling",
    S_STATE,
    REF + ", Sec. 4: Theta(log n) state in a suitable order, linear otherwise; thresholds ours",
    decided_by="cpu",
    departures=[
        Departure.field_value(
            "gru_leaves",
            (16, 32, 64, 128),
            "n = 16 and 64 only (cpu preset): the two n the "
            "light-first doubling compares; heavy-first is checked at these n",
        ),
        Departure.field_value(
            "gru_hidden",
            (4, 8, 16, 32, 64, 128),
            "h <= 32 (cpu preset): on the power-of-2 grid a "
            "light-first h_min above 32 at n = 64 is at least double an h_min(16) <= 32, but 'exceeds "
            "128' cannot be seen",
        ),
        Departure.field_value(
            "gru_steps",
            20_000,
            "1000 Adam steps (cpu preset, the quick recipe; card: 20k): a GRU "
            "that needs longer to learn counts as not reaching 0.95",
        ),
        Departure.field_value("gru_seeds", 3, "one seed per (n, h, order) (cpu preset; card: 3, accuracy averaged)"),
    ],
    known=KnownFailure.on_some_seeds(
        1,
        1,
        [0],
        (
            "cpu preset, seed 0 (358 s CPU): heavy-first h_min = 4 at n = 16 and 64 (every h reaches 1.000), but "
            "within "
            "1000 steps every light-first GRU (h = 4..32) stays on the one-leaf plateau of random AND/OR caterpillars "
            "(accuracy 1 - 2^-2 = 0.75: 0.774-0.781 at n = 16, 0.740-0.747 at n = 64), so light-first h_min is above "
            "32 at "
            "both n and the grid, capped at 32, can show neither a doubling nor 'exceeds 128'. Leaving the plateau is "
            "a "
            "matter of training length and seed: a standalone n = 16, h = 32 light-first GRU reached 0.988 after 1500 "
            "steps "
            "(escaping near step 600) while h = 128 stayed at 0.74"
        ),
        presets=["cpu"],
    ),
)
def judge_state(res: Result, v: Judgement) -> Verdict:
    t = res.table("gru")
    hs = sorted(set(t["hidden"])) if len(t) else []
    ns = set(t["n"]) if len(t) else set()
    if len(hs) < 3 or not {16, 64} <= ns:
        extra = ""
        if len(t):
            extra = "; reduced measurement: " + ", ".join(
                f"{r.order} n = {r.n} h = {r.hidden}: {r.accuracy:.3f}" for r in t.itertuples()
            )
        return v.undecided("needs the cpu preset (a sweep over h and n = 16, 64) or the paper preset" + extra)
    v.column(t, "accuracy")
    heavy = _min_reaching(t[t["order"] == "heavy_first"], "n", "hidden")
    light = _min_reaching(t[t["order"] == "light_first"], "n", "hidden")
    top = max(hs)
    l16, l64 = light.get(16, math.inf), light.get(64, math.inf)
    # The statement's "or exceeds 128" adds nothing to the doubling: an h_min(64) above the grid over a finite
    # h_min(16) is an infinite ratio. An h_min(16) above the grid as well leaves the ratio undefined (inf / inf, not
    # a measurement gone NaN): the doubling is not shown, so the claim fails on that condition, named as such.
    if math.isfinite(l16) and l16 > 0:
        doubling = Check.at_least("light-first h_min(64) / h_min(16)", l64 / l16, 2.0)
    else:
        doubling = Check.holds(f"light-first reaches 0.95 at n = 16 within h <= {top} (so a doubling can show)", False)
    checks = [doubling, Check.holds("heavy-first rows at some n", bool(heavy))]
    small = pd.Series({f"n = {n}": h for n, h in heavy.items() if n <= 128}, dtype=float)
    if len(small):
        checks.append(Check.at_most("heavy-first h_min at n <= 128", small, 8))
    return v.all_of(
        *checks,
        detail=f"heavy-first h_min per n: {heavy}; light-first: {light} (h swept up to {top})",
    )


TF = "cpu-transformer"  # the CPU preset that decides claims 7-8 at reduced D (config.PRESETS)
TF_DEPARTURES = [
    Departure.field_value(
        "tf_tree_depths",
        (3, 4, 5, 6),
        "D = 2, 3 (cpu-transformer preset): judged between the smallest and largest D run (card: D = 3 to 6); "
        "a step costs ~0.2 s at D = 4 and ~13 s at D = 6 (L = 8) on one core",
    ),
    Departure.field_value(
        "tf_n_layers", (1, 2, 4, 6, 8), "L in {1, 2} (cpu-transformer preset): L_min above 2 reads as inf"
    ),
    Departure.field_value(
        "tf_steps",
        30_000,
        "1000 Adam steps (cpu-transformer preset; card: 30k): a model that needs longer counts as not reaching "
        "0.95, so under-training reads as needing more depth",
    ),
    Departure.field_value("tf_seeds", 3, "one seed per (D, L) (card: 3, accuracy averaged)"),
]


def _tf_undecided(v: Judgement, t: pd.DataFrame, need: str) -> Verdict:
    extra = ""
    if len(t):
        extra = "; reduced measurement: " + ", ".join(
            f"D = {r.depth} L = {r.n_layers}{' CoT' if r.cot else ''}: {r.accuracy:.3f}" for r in t.itertuples()
        )
    return v.undecided(f"needs the {TF} preset (D = 2, 3) or the paper preset (D = 3..6): {need}" + extra)


S_DEPTH = (
    "On complete binary Boolean formulas the smallest transformer depth L reaching 0.95 is non-decreasing in "
    "D = log2 n (D = 3..6), and at L = 2 accuracy drops by >= 0.15 from D = 3 to D = 6 (balanced labels)."
)


@claims.add(
    "transformer-depth",
    S_DEPTH,
    REF + ", Sec. 3: depth must grow with n (TC0 != NC1); thresholds ours",
    decided_by=TF,
    departures=TF_DEPARTURES,
    known=KnownFailure.on_some_seeds(
        2,
        2,
        [0, 1],
        "cpu-transformer preset, seed 0 (370 s CPU): L = 1 misses 0.95 at both D (0.913 at D = 2, 0.865 at D = 3) "
        "and L = 2 reaches it at both (1.000, 0.980), so L_min = 2 at D = 2 and 3 (non-decreasing holds), but the "
        "L = 2 drop from D = 2 to D = 3 is 0.020 (needs >= 0.15): two layers still evaluate depth-3 formulas; the "
        "card's drop is expected towards D = 6 (a step ~13 s on one core). A D = 4 probe without CoT, L = 2, was at "
        "0.832 after 400 steps, still rising. Seed 1: L = 2 at 1.000 and 0.923 (drop 0.077; L_min(3) above 2)",
        presets=[TF],
    ),
)
def judge_depth(res: Result, v: Judgement) -> Verdict:
    t = res.table("transformer")
    plain = t[~t["cot"].astype(bool)] if len(t) else t
    ds = sorted(set(plain["depth"])) if len(plain) else []
    if len(ds) < 2 or 2 not in set(plain["n_layers"]):
        return _tf_undecided(v, t, "transformers at two or more D, L = 2 among them; quick trains none")
    v.column(plain, "accuracy")
    need = _min_reaching(plain, "depth", "n_layers")
    mono = all(need[a] <= need[b] for a, b in zip(ds, ds[1:]))
    acc = plain[plain["n_layers"] == 2].groupby("depth")["accuracy"].mean()
    lo, hi = ds[0], ds[-1]
    drop = float(acc.get(lo, math.nan) - acc.get(hi, math.nan))
    return v.all_of(
        Check.at_least(f"L = 2 accuracy drop from D = {lo} to D = {hi}", drop, 0.15),
        Check.holds("L_min non-decreasing in D", mono),
        detail=f"L_min per D: {need} (L swept over {sorted(set(plain['n_layers']))}); L = 2 accuracy per D: "
        f"{acc.round(3).to_dict()}",
    )


S_COT = (
    "A 2-layer transformer with chain of thought (the internal nodes' answers in post-order) reaches >= 0.95 "
    "root accuracy for every D <= 6, while the 2-layer model without CoT is <= 0.8 at D = 6."
)


@claims.add(
    "cot-fixed-depth",
    S_COT,
    REF + ", Sec. 5: CoT with n tokens and fixed depth; thresholds ours",
    decided_by=TF,
    departures=[
        "the root answer is read at the trace's last token (card: the trace, then the root answer "
        "again): in post-order the root is the last internal node",
        *(d for d in TF_DEPARTURES if d.field != "tf_n_layers"),
    ],
    known=KnownFailure.on_some_seeds(
        2,
        2,
        [0, 1],
        "cpu-transformer preset, seed 0 (370 s CPU): the 2-layer CoT transformer reaches 1.000 at D = 2 and 3, but "
        "the 2-layer model without CoT reaches 0.980 at D = 3 (needs <= 0.8): at D <= 3 two layers suffice without "
        "CoT, so the contrast the card places at D = 6 cannot show; a D = 4 probe without CoT was at 0.832 after "
        "400 steps, still rising. Seed 1: CoT 1.000 at both D, no CoT 0.923 at D = 3",
        presets=[TF],
    ),
)
def judge_cot(res: Result, v: Judgement) -> Verdict:
    t = res.table("transformer")
    cot = t[t["cot"].astype(bool)] if len(t) else t
    plain = t[~t["cot"].astype(bool) & (t["n_layers"] == 2)] if len(t) else t
    hi = int(cot["depth"].max()) if len(cot) else None
    if cot.empty or len(set(cot["depth"])) < 2 or hi not in set(plain["depth"]):
        return _tf_undecided(v, t, "CoT and 2-layer transformers at two or more D; quick trains none")
    v.column(cot, "accuracy")
    v.column(plain, "accuracy")
    cacc = cot.groupby("depth")["accuracy"].mean()
    worst = float(cacc.min())
    p_hi = float(plain[plain["depth"] == hi]["accuracy"].mean())
    return v.all_of(
        Check.at_least("CoT accuracy (worst D)", worst, REACH),
        Check.at_most(f"2-layer no-CoT accuracy at D = {hi}", p_hi, 0.8),
        tolerance=0.0,
        detail=f"CoT accuracy per D: {cacc.round(3).to_dict()}; 2 layers without CoT at D = {hi}: {p_hi:.3f}",
    )
