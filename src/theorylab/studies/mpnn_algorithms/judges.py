"""mpnn-algorithms: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure

REF = "arXiv 2602.13106"


claims = Claims("mpnn-algorithms")

QUICK = ["quick", "mst-cpu"]  # mst-cpu is the quick preset plus the minimax models: the card's quick sizes hold there
# The card's recipe (Adam lr 1e-3, 5000 full-batch steps) and the quick preset's MSE loss, where ours differ.
RECIPE = [
    Departure.field_value(
        "lr",
        1e-3,
        "ours: Adam at 1e-2 with cosine decay trains the quick stack in 1500 steps on 2 "
        "CPU cores (--set lr=1e-3 --set schedule=constant --set steps=5000 restores the card)",
    ),
    Departure.field_value("schedule", "constant", "with lr 1e-2: the decay settles the last steps"),
    Departure.field_value("steps", 5000, "CPU budget (quick ~50 s on 2 cores)"),
]
BF_LOSS = [
    Departure.field_value(
        "losses",
        ("mse",),
        "with MSE and η = 1e-3 the L1 term dominates a loss already near "
        "1e-5 and the quick run stalls at 2-7e-2 relative error",
        presets=QUICK,
    ),
    Departure.field_value("losses", ("mse", "multiplicative"), presets=["paper"]),
]
BF = RECIPE + BF_LOSS
CONTROLS = [
    Departure.field_value(
        "control_seeds", 3, "a control: the baselines' 1024-node test runs dominate the test time", presets=QUICK
    ),
    Departure.field_value("control_seeds", 10, "a control (ours: 5)", presets=["paper"]),
]
KNAPSACK = RECIPE + [
    Departure.field_value("knap_loss", "mse", "MSE at the same budget stalls at 3-7% error at 50 items", presets=QUICK),
    Departure.field_value("knap_seeds", 3, "CPU budget: each seed trains two restarts", presets=QUICK),
    Departure.field_value("knap_seeds", 10, presets=["paper"]),
    Departure.field_value(
        "knap_restarts",
        1,
        "restart rule (ours): one init in a few stalls (run seed 5: 50-item "
        "error 9.7e-2), so each seed keeps the restart with the lowest error on held-out "
        "instances of the training sizes, never the test sizes",
    ),
    Departure.field_value("knap_test_instances", 20, "the 50-item DAGs dominate the test time"),
    "16 random training instances of 1-4 items and capacity 1-8 (card: all instances on a small grid): the card's "
    "grid is not specified",
    "judged on the mean relative error over the 50-item instances per seed (card: 'relative error on the optimum', no "
    "aggregate stated; the max over instances is reported)",
]


S_REF = (
    "The reference Bellman-Ford agrees with scipy.sparse.csgraph.shortest_path to 1e-9 on every test graph, and the "
    "knapsack DP with brute force on every instance of <= 12 items."
)


@claims.add("reference-bf", S_REF, "oracles (ours)")
def judge_reference(res: Result, v: Judgement) -> Verdict:
    t = res.table("references")
    v.column(t, "error")
    worst = t.groupby("check")["error"].max()
    return v.at_most(
        worst,
        1e-9,
        name="max error",
        tolerance=1e-9,
        detail="; ".join(f"{k}: max error {x:.1e} over {int((t['check'] == k).sum())} cases" for k, x in worst.items()),
    )


def _bf_min(res, eta: float = 1e-3) -> pd.DataFrame:
    t = res.table("size_generalization")
    return t[(t["aggr"] == "min") & (t["task"] == "bf") & np.isclose(t["eta"], eta)]


S_SIZE = (
    "Trained on <= 10 graphs of <= 3 nodes with η = 1e-3, the min-aggregation MPNN's mean relative error is <= "
    "1e-2 at every test size for every seed, "
    "and flat: err(n_max) <= 2·err(16) + 1e-3 (thresholds ours; the paper states O(ε))."
)


@claims.add(
    "size-generalization", S_SIZE, REF + "; Nerem et al. arXiv 2503.19173 (extrapolation guarantee)", departures=BF
)
def judge_size(res: Result, v: Judgement) -> Verdict:
    t = _bf_min(res)
    if t.empty:
        return v.undecided(
            f"this config trains no min-aggregation model with η = 1e-3 (eta={tuple(res.config.get('sparsities', ()))})"
        )
    v.column(t, "mean_rel_error")
    worst = float(t["mean_rel_error"].max())
    flat = []
    for _, g in t.groupby(["family", "loss", "seed"]):
        e = g.set_index("n")["mean_rel_error"]
        flat.append(e[e.index.max()] <= 2 * e[e.index.min()] + 1e-3)
    by_n = t.groupby("n")["mean_rel_error"].max()
    detail = (
        "max over seeds by n: "
        + ", ".join(f"{n}: {v:.2e}" for n, v in by_n.items())
        + f"; flat in {sum(flat)}/{len(flat)} (family, loss, seed)"
    )
    un = _bf_min(res, 0.0)
    if not un.empty:
        detail += "; η = 0 (reported): " + ", ".join(
            f"{n}: {v:.2e}" for n, v in un.groupby("n")["mean_rel_error"].max().items()
        )
    return v.all_of(
        Check.at_most("mean relative error (max over n and seeds)", worst, 1e-2),
        Check.holds("flat in every (family, loss, seed): err(n_max) <= 2·err(n_min) + 1e-3", all(flat)),
        detail=detail,
    )


S_F = (
    "With η = 1e-3 the learned message function is x + w: max over x in [0, 200], w in [1, 10] of |f_θ(x, w) − (x + "
    "w)|/(x + w) <= 1e-2 for every seed (training inputs stay at x <= ~20 besides the sentinel)."
)


@claims.add("learned-function", S_F, REF + ", the aligned target x + w", departures=BF)
def judge_learned_f(res: Result, v: Judgement) -> Verdict:
    t = res.table("learned_function")
    t = t[(t["task"] == "bf") & (t["aggr"] == "min")]
    reg = t[np.isclose(t["eta"], 1e-3)]
    if reg.empty:
        return v.undecided(
            f"this config trains no min-aggregation model with η = 1e-3 (eta={tuple(res.config.get('sparsities', ()))})"
        )
    v.column(reg, "max_rel_error")
    worst = float(reg["max_rel_error"].max())
    detail = (
        f"η = 1e-3: max {worst:.2e} (seeds: {', '.join(f'{v:.1e}' for v in reg['max_rel_error'])}); η = 0 (reported): "
        f"{', '.join(f'{v:.1e}' for v in t[t['eta'] == 0]['max_rel_error'])}"
    )
    return v.at_most(worst, 0.01, tolerance=0.01, detail=detail)


S_AGG = (
    "Sum- and mean-aggregation MPNNs trained identically have mean relative error >= 0.2 at n = 1024, for every seed."
)

AGG_N = 1024  # the card's test size of the aggregation control


@claims.add("aggregation-control", S_AGG, REF + ", algorithmic alignment of the aggregation", departures=BF + CONTROLS)
def judge_aggregation(res: Result, v: Judgement) -> Verdict:
    t = res.table("size_generalization")
    t = t[t["aggr"].isin(["sum", "mean"])]
    if t.empty:
        return v.undecided("this config trains no sum/mean baseline (controls=())")
    n = AGG_N if (t["n"] == AGG_N).any() else int(t["n"].max())
    moved = [] if n == AGG_N else [f"judged at n = {n}, the largest test size (card: n = {AGG_N}, not tested here)"]
    top = t[t["n"] == n]
    detail = ", ".join(f"{a}: min {g['mean_rel_error'].min():.3g}" for a, g in top.groupby("aggr")) + f" at n = {n}"
    errors = v.column(top, "mean_rel_error")
    errors = pd.Series(errors.to_numpy(), index=[f"{a} seed {s}" for a, s in zip(top["aggr"], top["seed"])])
    return v.at_least(errors, 0.2, name="mean relative error", tolerance=0.2, detail=detail, departures=moved)


S_L1 = (
    "The regulariser is active: ‖θ‖₁ at η = 1e-3 is <= 0.5 x ‖θ‖₁ at η = 0 for every seed (same initialisation, end of "
    "training)."
)


@claims.add("regulariser-active", S_L1, REF + ", the sparsity regulariser", departures=BF)
def judge_l1(res: Result, v: Judgement) -> Verdict:
    t = res.table("learned_function")
    t = t[(t["task"] == "bf") & (t["aggr"] == "min")]
    a, b = t[np.isclose(t["eta"], 1e-3)], t[t["eta"] == 0]
    if a.empty or b.empty:
        return v.undecided(
            f"this config does not train both η = 0 and η = 1e-3 (eta={tuple(res.config.get('sparsities', ()))})"
        )
    pairs = a.merge(b, on=["seed", "loss"], suffixes=("_reg", "_free"))
    ratio = pairs["l1_reg"] / pairs["l1_free"]
    detail = ", ".join(f"seed {r.seed}: {r.l1_reg:.0f} / {r.l1_free:.0f}" for r in pairs.itertuples())
    ratio.index = [f"seed {r.seed} ({r.loss})" for r in pairs.itertuples()]
    return v.at_most(ratio, 0.5, name="‖θ‖₁ ratio η = 1e-3 / η = 0", tolerance=0.5, detail=detail)


S_WL = (
    "C6 and two disjoint triangles are 1-WL-indistinguishable: for every random-init node MPNN (min, max, sum, "
    "mean) the sorted node embeddings and the summed readouts "
    "agree to 1e-6 after K = 6 rounds, although msf_weight gives 5 vs 4; node-id features (a leak) break the tie "
    "(gap >= 1e-3)."
)


@claims.add("wl-impossibility", S_WL, REF + ", tasks standard MPNNs cannot do; 1-WL")
def judge_wl(res: Result, v: Judgement) -> Verdict:
    t = res.table("wl_pair")
    node = t[t["variant"] == "node MPNN"]
    leak = t[t["variant"].str.contains("leak")]
    gaps = pd.concat([v.column(node, "embedding_gap"), v.column(node, "readout_gap")])
    leak_gap = v.column(leak, "embedding_gap")
    same = float(gaps.max())
    detail = (
        f"node MPNN max gap {same:.1e} over {len(node)} models; 1-WL colours equal: "
        f"{bool(t['wl_colours_equal'].iloc[0])}; MSF {t['msf_c6'].iloc[0]:g} vs {t['msf_two_c3'].iloc[0]:g}; "
        f"leak control min gap {leak_gap.min():.3g}"
    )
    return v.all_of(
        Check.at_most("node MPNN max gap", same, 1e-6),
        Check.holds("1-WL colours equal", bool(t["wl_colours_equal"].iloc[0])),
        Check.holds("MSF weights (C6, two C3) = (5, 4)", (t["msf_c6"].iloc[0], t["msf_two_c3"].iloc[0]) == (5.0, 4.0)),
        Check.at_least("leak control embedding gap", leak_gap, 1e-3),  # no leak model: fails (empty)
        detail=detail,
    )


S_PAIR = (
    "Ours (the card's open question: a more expressive MPNN-like variant): the pair-based (2-WL-style) MPNN "
    "separates C6 from two disjoint triangles, embedding gap >= 1e-3 in every random-init model."
)


@claims.add("pair-mpnn-separates", S_PAIR, "ours: " + REF + ", more expressive MPNN-like architectures")
def judge_pair(res: Result, v: Judgement) -> Verdict:
    t = res.table("wl_pair")
    pair = t[t["variant"].str.startswith("pair")]
    gaps = v.column(pair, "embedding_gap")
    return v.at_least(
        pd.Series(gaps.to_numpy(), index=[f"model {m}" for m in pair["model"]]),
        1e-3,
        name="pair MPNN embedding gap",
        tolerance=1e-3,
        detail=f"{len(pair)} models",
    )


S_KNAP = (
    "The max-aggregation MPNN trained on <= 4 items / capacity <= 8 reaches mean relative error <= 1e-2 on the "
    "optimum at 50 items / capacity 100, for every seed "
    "(each seed keeps the best of its restarts on held-out instances of the training sizes; the test sizes play "
    "no part in the choice)."
)


# Measured at the quick preset over run seeds 0-19, 42, 100, 123, 1234, 2026 and 12345 (issue 44).
KNAPSACK_KNOWN = KnownFailure.on_some_seeds(
    1,
    26,
    [14],
    (
        "run seed 14's first network reads mean relative error 1.74e-2 at 50 items (the other 7e-5) although its "
        "held-out "
        "error at the training sizes is 5.2e-5, the lowest of its restarts: a max-aggregation update that fits <= "
        "4-item "
        "instances to 1e-4 need not be the DP's own, and the training-size selection cannot see the drift that 50 "
        "items "
        "amplify; the other 25 seeds' worst network reads 4.3e-3"
    ),
    presets=QUICK,
)


@claims.add(
    "knapsack-extrapolation",
    S_KNAP,
    REF + ", dynamic programs (our DAG encoding)",
    departures=KNAPSACK,
    known=KNAPSACK_KNOWN,
)
def judge_knapsack(res: Result, v: Judgement) -> Verdict:
    t = res.table("knapsack")
    top = t[t["items"] == t["items"].max()]
    if int(top["items"].max()) < 50:
        return v.undecided(
            f"this config tests knapsack only up to {int(top['items'].max())} items (the claim is at 50: "
            f"knap_test_items)"
        )
    v.column(top, "rel_error")
    per = top.groupby("seed")["rel_error"].mean()
    detail = (
        f"{int(top['items'].max())} items: mean per seed "
        + ", ".join(f"{v:.2e}" for v in per)
        + f"; max over instances {top['rel_error'].max():.2e}"
    )
    if "knapsack_selection" in res.tables:
        sel = res.tables["knapsack_selection"]
        detail += (
            "; kept the restart with the lowest held-out <= 4-item error per seed ("
            + ", ".join(
                f"seed {s}: {g['val_rel_error'].min():.1e} of {', '.join(f'{v:.1e}' for v in g['val_rel_error'])}"
                for s, g in sel.groupby("seed")
            )
            + ")"
        )
    return v.at_most(
        per.set_axis([f"seed {s}" for s in per.index]),
        1e-2,
        name="mean relative error at the largest size",
        tolerance=1e-2,
        detail=detail,
    )


S_MST = (
    "Ours (reconstruction of the paper's MST task): a min-aggregation MPNN trained on tiny one- and two-edge "
    "paths with bottleneck targets (f* = max(x, w); per seed the best "
    "of its restarts on held-out tiny paths) classifies minimum-spanning-tree edges (edge in tree iff w_uv <= "
    "learned bottleneck distance) with mean F1 >= 0.99 and "
    "spanning-forest weight within 1e-2 of networkx's, for every seed and test size."
)


@claims.add(
    "mst-minimax",
    S_MST,
    REF + ", minimum spanning trees (our bottleneck encoding)",
    decided_by="mst-cpu",
    departures=RECIPE[:2]
    + [
        Departure.field_value("mst_steps", 5000, "the card's step count for every model"),
        Departure.field_value(
            "mst_judged_nodes", 256, "mst-cpu preset: judged on test graphs up to 64 nodes (CPU budget)"
        ),
        Departure.field_value("mst_seeds", 10, "mst-cpu preset: 2 seeds (CPU budget)", presets=["mst-cpu"]),
        Departure.field_value(
            "mst_restarts",
            2,
            "mst-cpu preset: one init per seed, so no restart selection (the paper preset keeps the better of 2)",
            presets=["mst-cpu"],
        ),
        Departure.field_value(
            "mst_train_weights",
            tuple(range(1, 11)),
            "mst-cpu preset: weights 1, 4, 7, 10 (20 training paths instead of 110)",
            presets=["mst-cpu"],
        ),
    ],
    known=KnownFailure.on_some_seeds(
        2,
        2,
        [0, 1],
        "mst-cpu preset (the card's 5000 minimax steps), run seeds 0 and 1 (323 s CPU at seed 0): at seed 0 one "
        "model is exact (F1 1.000 at 16 and 64 nodes) and the other misses (0.677, 0.664); at seed 1 both are exact "
        "at 16 nodes and miss at 64 (0.636, 0.856); worst weight error 0.61 and 0.58 (at 1500 steps all four "
        "models missed, F1 0.62-0.72). Misses grow with n, as the cause predicts: the min-fixpoint composes f_θ "
        "around cycles, and above the kink max(x, w) is the identity in x, so a deficit δ = max over x > w of "
        "x - f_θ(x, w) lowers bottlenecks by up to ~nδ; the readout w_uv <= D(u, v)(1 + 1e-3) then drops true tree "
        "edges once nδ exceeds 1e-3 w (the members end at training loss 1.5e-5..2.3e-5). Bellman-Ford is immune: "
        "x + w grows by w >= 1 a hop. Whether the paper's 10 weights and restart selection differ is open",
        presets=["mst-cpu"],
    ),
)
def judge_mst(res: Result, v: Judgement) -> Verdict:
    t = res.table(
        "mst",
        unless="this config trains no minimax models (mst=false; off at quick for the CPU budget: "
        "--preset mst-cpu decides the claim at reduced size, ~5 min on 2 cores)",
    )
    v.column(t, "f1")
    v.column(t, "weight_rel_error")
    f1 = t.groupby(["seed", "n"])["f1"].mean()
    werr = t.groupby(["seed", "n"])["weight_rel_error"].mean()
    cells = [f"seed {s}, n = {n}" for s, n in f1.index]
    checks = [
        Check.at_least("mean F1", f1.set_axis(cells), 0.99),
        Check.at_most("mean weight error", werr.set_axis(cells), 1e-2),
    ]
    ok = all(c.ok for c in checks)
    detail = (
        "mean F1 by (seed, n): "
        + ", ".join(f"{k}: {v:.3f}" for k, v in f1.items())
        + f"; worst mean weight error {werr.max():.1e}"
    )
    if "minimax_selection" in res.tables:
        sel = res.tables["minimax_selection"]
        if sel.groupby("seed").size().max() > 1:
            kept = ", ".join(
                f"seed {s}: {g['val_rel_error'].min():.1e} of {', '.join(f'{v:.1e}' for v in g['val_rel_error'])}"
                for s, g in sel.groupby("seed")
            )
            detail += f"; kept the restart with the lowest held-out tiny-graph error per seed ({kept})"
    judged_n = int(res.config.get("mst_judged_nodes", 256))
    if int(t["n"].max()) < judged_n:
        bad = sorted({int(k[0]) for k, v in f1.items() if v < 0.99} | {int(k[0]) for k, v in werr.items() if v > 1e-2})
        inits = int(res.config.get("mst_restarts", 1))
        grid = tuple(res.config.get("mst_train_weights", ()))
        fits = ""
        if "minimax_selection" in res.tables:
            losses = res.tables["minimax_selection"]["train_loss"]
            fits = f" (final training loss {losses.min():.0e}..{losses.max():.0e} here)"
        return v.undecided(
            f"at reduced size it measures {detail} (n <= {int(t['n'].max())}, {t['seed'].nunique()} seeds, "
            f"{inits} init(s) each, training weights {grid}; "
            f"{'passes' if ok else f'fails F1 >= 0.99 / weight error <= 1e-2 in seeds {bad}'}); judged at "
            f"paper size (n up to {judged_n}, restart selection). "
            "Why it is fragile: above the kink max(x, w) is the identity in x, so the n-round min-fixpoint "
            "lowers a bottleneck by up to n times "
            f"f_θ's deficit there, and the fits{fits} can leave more than the readout's 1e-3 slack"
        )
    return v.all_of(*checks, detail=detail)
