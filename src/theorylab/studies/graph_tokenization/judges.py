"""graph-tokenization: its claims, judged from a run's tables and config (card numbering 1-10)."""

from __future__ import annotations

import math

import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure

REF = "Bechler-Speicher et al., arXiv 2605.22471"
claims = Claims("graph-tokenization", REF)

RW_TOL = 1e-12  # card: float64 matrix powers of a 16x16 walk matrix agree to ~1e-16 per entry
RECON_TOL = 1e-10  # card: U Λ Uᵀ from float64 eigh on n = 16
ROTATION_TOL = 1e-12  # card
TOKEN_CHANGE = 0.1  # card: entries ~ sqrt(2/n) ≈ 0.41 move by ~0.3 under a π/4 rotation
TRACE_TOL = 1e-9  # card
GAP_TOL = 1e-5  # card: float32 forward passes of identical token multisets in different orders
ACC_HIGH = 0.95  # card
ADJ_MARGIN = 0.08  # card
CONCAT_SLACK = 0.02  # card
DEGREE_ADJ = 0.98  # card
SRG_CHANCE_TOL = 0.02  # card
DEPTH_GAP = 0.1  # card

# The training recipe where it is not the card's (docs/studies/graph-tokenization.md, "Training recipe"); it applies
# only while the run's value differs from the card's constant rate, so `--set lr_decay_frac=0` judges as stated.
LR_DECAY = Departure.field_value(
    "lr_decay_frac",
    0.0,
    "linear decay to 0 over that last share of the steps (card: "
    "constant lr): at the constant rate seed 1's spectral "
    "components model ended at 0.826 after Adam's late loss spikes "
    "(claim 6 failed); a cosine decay slowed degree (adjacency "
    "0.952)",
)


def _acc(v, t: pd.DataFrame, task: str, kind: str, **where) -> pd.Series:
    """The accuracies of one (task, tokenization) selection; a NaN row fails the claim naming it (a mean would
    skip it)."""
    s = t[(t["task"] == task) & (t["tokenization"] == kind)]
    for k, val in where.items():
        s = s[s[k] == val]
    return v.column(s, "accuracy")


S_COLLISION = (
    "The random-walk tokens [(P^t)_ii] of the Shrikhande graph and the 4x4 rook's graph agree at every "
    "vertex for t = 1..32 (within 1e-12) and equal the srg(16, 6, 2, 2) closed form (A^t)_ii / 6^t, "
    "although the graphs are not isomorphic (K4 counts 0 vs 8 by brute force; networkx: not isomorphic, "
    "equal 1-WL hashes)."
)


@claims.add("rw-collision", S_COLLISION, REF + ", RW tokenization is lossy for every walk length (srg argument)")
def judge_collision(res: Result, v: Judgement) -> Verdict:
    t, f = res.table("rw_collision"), res.table("srg_facts")
    horizon = int(res.config["rw_horizon"])
    if len(t) != horizon or sorted(t["t"]) != list(range(1, horizon + 1)):
        return v.failed(math.nan, f"t = 1..{horizon} within {RW_TOL}", RW_TOL, f"walk lengths missing: {len(t)} rows")
    worst = float(max(v.column(t, "max_pair_diff").max(), v.column(t, "max_closed_form_diff").max()))
    k4 = dict(zip(f["graph"], f["k4_count"]))
    srg = set(f["srg"])
    hashes = set(f["wl_hash"])
    return v.all_of(
        Check.at_most("max RW-token difference", worst, RW_TOL),
        Check.holds("K4 counts: Shrikhande 0, rook 8", k4.get("shrikhande") == 0 and k4.get("rook") == 8),
        Check.holds("srg parameters (16, 6, 2, 2)", srg == {"(16, 6, 2, 2)"}),
        Check.holds("not isomorphic", not bool(f["isomorphic"].any())),
        Check.holds("equal 1-WL hashes", len(hashes) == 1),
        Check.holds("2 graphs", len(f) == 2),
        detail=f"max RW-token difference over all vertices of both graphs and t <= {horizon}: {worst:.2e} "
        f"(closed form at t = 2: {float(t['closed_form'].iloc[1]):.6f} = 6/36); K4 counts {k4}; srg "
        f"parameters {sorted(srg)}; isomorphic: {bool(f['isomorphic'].any())}; 1-WL hashes equal: "
        f"{len(hashes) == 1}",
    )


S_ADJ = (
    "From adjacency tokens, the number of components of the neighbourhood subgraph G[N(i)] is 1 at every "
    "Shrikhande vertex (a 6-cycle) and 2 at every rook vertex (two triangles): the adjacency view keeps what the "
    "RW view loses."
)


@claims.add("adjacency-separates", S_ADJ, REF + ", adjacency tokenization is lossless (card's statistic)")
def judge_adjacency(res: Result, v: Judgement) -> Verdict:
    t = res.table("nbhd_components")
    s, r = t[t["graph"] == "shrikhande"]["nbhd_components"], t[t["graph"] == "rook"]["nbhd_components"]
    return v.all_of(
        Check.within("components of G[N(i)], Shrikhande", s, 1, 1),
        Check.within("components of G[N(i)], rook", r, 2, 2),
        Check.holds("16 Shrikhande vertices", len(s) == 16),
        Check.holds("16 rook vertices", len(r) == 16),
        measured=f"shrikhande {sorted(set(s))}, rook {sorted(set(r))}",
        tolerance=0,
        detail=f"{len(s)} + {len(r)} vertices read back from relabelled adjacency tokens",
    )


S_LOSSLESS = (
    "Spectral tokens (k = n, random signs, random rotations inside repeated eigenvalues) rebuild the "
    "Laplacian L = U Λ Uᵀ with maximum entry error <= 1e-10 on both srg graphs and 100 random G(16, 0.3)."
)


@claims.add("spectral-lossless", S_LOSSLESS, REF + ", spectral tokenization is lossless")
def judge_lossless(res: Result, v: Judgement) -> Verdict:
    t = res.table("spectral_reconstruction")
    want = int(res.config["exact_er_graphs"])
    have = dict(t["graph"].value_counts())
    if have.get("erdos_renyi", 0) != want or have.get("shrikhande", 0) != 1 or have.get("rook", 0) != 1:
        return v.failed(math.nan, f"<= {RECON_TOL}", RECON_TOL, f"graphs missing: {have}")
    worst = float(v.column(t, "max_error").max())
    return v.at_most(
        worst,
        RECON_TOL,
        expected=f"<= {RECON_TOL}",
        tolerance=RECON_TOL,
        detail=f"{len(t)} graphs; worst on {t.loc[t['max_error'].idxmax(), 'graph']}",
    )


S_BASIS = (
    "For the cycle C_12, rotating the basis of a 2-dimensional eigenspace by π/4 gives a second valid "
    "decomposition (reconstruction error <= 1e-12) while some spectral token entry changes by >= 0.1."
)


@claims.add("spectral-basis-ambiguity", S_BASIS, REF + ", spectral tokens are ill-conditioned (basis ambiguity)")
def judge_basis(res: Result, v: Judgement) -> Verdict:
    t = res.table("basis_ambiguity")
    if len(t) != 1:
        return v.failed(math.nan, f">= {TOKEN_CHANGE}", TOKEN_CHANGE, f"{len(t)} rows, expected 1")
    r = t.iloc[0]
    return v.all_of(
        Check.at_least("largest token change", float(r["max_token_change"]), TOKEN_CHANGE),
        Check.at_most("reconstruction error after the rotation", r["error_rotated"], ROTATION_TOL),
        Check.at_most("reconstruction error before (eigh)", r["error_eigh"], ROTATION_TOL),
        Check.at_most("orthonormality error", r["orthonormal_error"], ROTATION_TOL),
        Check.at_most("|eigenvalue - (2 - 2cos(2π/n))|", abs(r["eigenvalue"] - r["expected_eigenvalue"]), ROTATION_TOL),
        tolerance=ROTATION_TOL,
        detail=f"C_{int(r['n'])}, eigenvalue {r['eigenvalue']:.6f} (2 - 2cos(2π/n) = "
        f"{r['expected_eigenvalue']:.6f}), columns {r['columns']}: reconstruction error "
        f"{r['error_rotated']:.1e} after the rotation, {r['error_eigh']:.1e} before; largest token change "
        f"{r['max_token_change']:.3f}",
    )


S_RWINV = (
    "A random-walk-token transformer with no positional encoding gives pooled logits that differ by <= 1e-5 "
    "between relabelled Shrikhande and rook graphs, even when trained to tell them apart: pair accuracy "
    "exactly 0.5."
)


@claims.add("rw-invariance", S_RWINV, REF + ", RW tokenization is lossy (consequence for any RW-token model)")
def judge_rw_invariance(res: Result, v: Judgement) -> Verdict:
    t = res.table("srg_pair")
    rw = t[t["tokenization"] == "random_walk"]
    if len(rw) != 1 or int(rw["pairs"].iloc[0]) < 1:
        return v.failed(math.nan, f"<= {GAP_TOL}", GAP_TOL, "no RW-model row")
    gap, acc = float(rw["max_logit_gap"].iloc[0]), float(rw["pair_accuracy"].iloc[0])
    adj = t[t["tokenization"] == "adjacency"]
    extra = (
        f"; the adjacency model trained alike: gap {float(adj['max_logit_gap'].iloc[0]):.3g}, pair accuracy "
        f"{float(adj['pair_accuracy'].iloc[0]):.3f}"
        if len(adj)
        else ""
    )
    return v.all_of(
        Check.at_most("max logit gap", gap, GAP_TOL),
        Check.within("pair accuracy", acc, 0.5, 0.5),
        detail=f"{int(rw['pairs'].iloc[0])} fresh relabelled pairs after {int(rw['steps'].iloc[0])} steps: "
        f"max gap {gap:.2e}, pair accuracy {acc:.4f}" + extra,
    )


S_COMPONENTS = (
    "At L = 1 on 'components', spectral and RW tokens both reach accuracy >= 0.95 while adjacency tokens "
    "stay at least 0.08 below the better of them: global counting is a readout of eigenvalues or return "
    "probabilities but needs propagation in the adjacency view."
)


@claims.add(
    "components-favour-global",
    S_COMPONENTS,
    REF + ", experiments: tasks favour different tokenizations",
    departures=[LR_DECAY],
)
def judge_components(res: Result, v: Judgement) -> Verdict:
    t = res.table("accuracy")
    n = min(res.config["n_nodes"])
    accs = {k: _acc(v, t, "components", k, n_layers=1, n=n) for k in ("adjacency", "spectral", "random_walk")}
    if any(len(a) == 0 for a in accs.values()):
        return v.undecided("needs components x {adjacency, spectral, random_walk} at L = 1 (quick preset)")
    m = {k: float(a.mean()) for k, a in accs.items()}
    best = max(m["spectral"], m["random_walk"])
    return v.all_of(
        Check.at_most(
            f"adjacency accuracy (bound: the better of spectral and RW - {ADJ_MARGIN})",
            m["adjacency"],
            best - ADJ_MARGIN,
        ),
        Check.at_least("spectral accuracy", m["spectral"], ACC_HIGH),
        Check.at_least("RW accuracy", m["random_walk"], ACC_HIGH),
        measured=best - m["adjacency"],
        tolerance=ADJ_MARGIN,
        detail=f"n = {n}, L = 1, mean over {len(accs['adjacency'])} seed(s): adjacency {m['adjacency']:.3f}, "
        f"spectral {m['spectral']:.3f}, RW {m['random_walk']:.3f}",
    )


S_CONCAT = (
    "On both 'components' and 'degree' (L = 1), the concatenated tokens score >= the best single tokenization "
    "- 0.02; on 'degree' adjacency tokens score >= 0.98."
)


@claims.add(
    "concat-best-of-both",
    S_CONCAT,
    REF + ", experiments: combining complementary tokenizations helps",
    departures=[LR_DECAY],
)
def judge_concat(res: Result, v: Judgement) -> Verdict:
    t = res.table("accuracy")
    n = min(res.config["n_nodes"])
    parts, checks, worst = [], [], math.inf
    for task in ("components", "degree"):
        m = {k: _acc(v, t, task, k, n_layers=1, n=n) for k in ("adjacency", "spectral", "random_walk", "concat")}
        if any(len(a) == 0 for a in m.values()):
            return v.undecided(f"needs {task} x all four tokenizations at L = 1 (quick preset)")
        m = {k: float(a.mean()) for k, a in m.items()}
        best = max(m["adjacency"], m["spectral"], m["random_walk"])
        margin = m["concat"] - best
        worst = min(worst, margin)
        checks.append(Check.at_least(f"{task}: concat - best single", margin, -CONCAT_SLACK))
        parts.append(
            f"{task}: concat {m['concat']:.3f} vs best single {best:.3f} ("
            + ", ".join(f"{k} {m[k]:.3f}" for k in ("adjacency", "spectral", "random_walk"))
            + ")"
        )
        if task == "degree":
            checks.append(Check.at_least("degree: adjacency accuracy", m["adjacency"], DEGREE_ADJ))
    return v.all_of(*checks, measured=worst, tolerance=CONCAT_SLACK, detail="; ".join(parts))


S_EIGEN = (
    "On every test union graph, the number of eigenvalues of P = D^{-1}A (from D^{-1/2} A D^{-1/2}) within 1e-9 "
    "of 1 equals its number of components c, and tr(P^t) = Σ_k μ_k^t within 1e-9 for t <= 16."
)


@claims.add("rw-eigenvalue-one", S_EIGEN, REF + ", why RW tokens suit component counting (tr(P^t) -> c)")
def judge_eigen(res: Result, v: Judgement) -> Verdict:
    t = res.table("rw_eigen")
    want = int(res.config["test_graphs"])
    if len(t) != want:
        return v.failed(math.nan, "0 mismatches", TRACE_TOL, f"{len(t)} graphs, expected {want}")
    wrong = int((v.column(t, "unit_eigenvalues") != v.column(t, "components")).sum())
    err = float(v.column(t, "max_trace_error").max())
    return v.all_of(
        Check.at_most("graphs with #(μ = 1) != c", wrong, 0),
        Check.at_most("max |tr(P^t) - Σ μ^t|", err, TRACE_TOL),
        measured=wrong,
        tolerance=TRACE_TOL,
        detail=f"{len(t)} unions (c = {sorted(set(t['components']))}): {wrong} with #(μ = 1) != c; max "
        f"|tr(P^t) - Σ μ^t| = {err:.1e}",
    )


S_DEPTH = (
    "Depth regimes: on 'edge_query' adjacency reaches >= 0.95 at L <= 2 while spectral needs >= 2 more layers "
    "to match it (or stays >= 0.1 below at the largest L); on 'components' adjacency needs L >= 4 to reach "
    "0.95."
)


def _first_depth(v, t: pd.DataFrame, task: str, kind: str, level: float) -> float:
    rows = t[(t["task"] == task) & (t["tokenization"] == kind)]
    s = v.column(rows, "accuracy").groupby(rows["n_layers"]).mean()
    hit = s[s >= level]
    return float(hit.index.min()) if len(hit) else math.inf


@claims.add(
    "depth-regimes",
    S_DEPTH,
    REF + ", depth separations between tokenizations (thresholds ours; reconstructed)",
    departures=[LR_DECAY],
    decided_by="paper",
)
def judge_depth(res: Result, v: Judgement) -> Verdict:
    t = res.table("accuracy")
    n = min(res.config["n_nodes"])
    t = t[t["n"] == n]
    depths = sorted(set(t["n_layers"]))
    need = {("edge_query", "adjacency"), ("edge_query", "spectral"), ("components", "adjacency")}
    have = set(zip(t["task"], t["tokenization"]))
    if len(depths) < 3 or max(depths) < 8 or need - have:
        # the reduced measurement is reported, not judged: a NaN there prints as nan
        adj = t[(t["task"] == "components") & (t["tokenization"] == "adjacency") & (t["n_layers"] == 1)]["accuracy"]
        extra = f"; reduced measurement: components, adjacency, L = 1: {adj.mean(skipna=False):.3f}" if len(adj) else ""
        return v.undecided(f"needs paper preset (depths {depths}, need L up to 8 on edge_query and components)" + extra)
    adj_eq = _first_depth(v, t, "edge_query", "adjacency", ACC_HIGH)
    top = max(depths)
    adj_top = float(_acc(v, t, "edge_query", "adjacency", n_layers=top).mean())
    spec_top = float(_acc(v, t, "edge_query", "spectral", n_layers=top).mean())
    spec_eq = _first_depth(v, t, "edge_query", "spectral", ACC_HIGH)  # "to match it": reach the same 0.95
    adj_comp = _first_depth(v, t, "components", "adjacency", ACC_HIGH)
    spectral_slow = spec_eq >= adj_eq + 2 or spec_top <= adj_top - DEPTH_GAP
    return v.all_of(
        Check.at_most("edge_query: adjacency L*", adj_eq, 2),
        Check.holds(
            f"edge_query: spectral L* >= adjacency L* + 2, or spectral <= adjacency - {DEPTH_GAP} at L = {top}",
            spectral_slow,
        ),
        Check.at_least("components: adjacency L*", adj_comp, 4),
        measured=f"edge_query: adjacency L* = {adj_eq:g}, spectral L* = {spec_eq:g}; "
        f"components: adjacency L* = {adj_comp:g}",
        tolerance=DEPTH_GAP,
        detail=f"n = {n}, depths {depths}; at L = {top}: edge_query adjacency {adj_top:.3f}, spectral {spec_top:.3f}",
    )


S_SRG = (
    "On relabelled srg(16, 6, 2, 2) graphs with the node-level in_K4 task, adjacency models (L >= 2) reach >= "
    "0.95 while RW models and eigenvalue-only spectral models stay at 0.5 ± 0.02 (identical or cospectral "
    "inputs)."
)


SRG_KNOWN_CPU = KnownFailure.on_every_seed(
    "the adjacency model memorises the training copies instead of learning in_K4: the cpu run's L = 2 model (256 "
    "relabelled copies of each graph, 2000 steps) reads 0.426 on fresh copies, below chance; rerun outside the preset "
    "with the same recipe (one thread, its own data seed) it ends at training loss 0.000 and training accuracy 1.000 "
    "with test accuracy 0.420, while with 2048 copies of each graph it cannot memorise (training accuracy 0.649, loss "
    "still falling, 0.55) and generalises above chance (test 0.555): the >= 0.95 needs more relabelled data and steps "
    "than this recipe's (in_K4 on srg(16, 6, 2, 2) asks for a triangle among a node's 6 neighbours, whose edge count "
    "is 6 in both graphs). RW and eigenvalue-only models sit at 0.500 as claimed. Measured on seed 0 only (the cpu "
    "preset's one run and one diagnostic per bank size)",
    presets=["cpu"],
)


@claims.add(
    "srg-discrimination",
    S_SRG,
    REF + ", tokenizations that cannot be converted (reconstructed experiment)",
    known=SRG_KNOWN_CPU,
    decided_by="cpu",
    departures=[
        LR_DECAY,
        Departure.of(
            "adjacency, RW and eigenvalue-only models at L = 2 only (paper preset: L in {1, 2, 4})",
            "cpu preset: L = 2 is the smallest depth the claim names; L = 4 needs more time than 2 CPU cores give",
            presets=["cpu"],
        ),
    ],
)
def judge_srg(res: Result, v: Judgement) -> Verdict:
    t = res.table("srg_discrimination")
    deep = t[t["n_layers"] >= 2] if len(t) else t
    if deep.empty or not {"adjacency", "random_walk", "eigenvalues"} <= set(deep["tokenization"]):
        p = res.table("srg_pair")
        extra = (
            "; reduced measurement: "
            + ", ".join(
                f"{r.tokenization} L = {r.n_layers} after {r.steps} steps tells the pair apart at {r.pair_accuracy:.3f}"
                for r in p.itertuples()
            )
            if len(p)
            else ""
        )
        return v.undecided("needs paper preset (in_K4 srg models at L >= 2)" + extra)
    adj = v.column(deep[deep["tokenization"] == "adjacency"], "accuracy")
    rw = v.column(t[t["tokenization"] == "random_walk"], "accuracy")
    ev = v.column(t[t["tokenization"] == "eigenvalues"], "accuracy")
    chance = max(float((rw - 0.5).abs().max()), float((ev - 0.5).abs().max()))
    return v.all_of(
        Check.at_least("adjacency accuracy (L >= 2)", float(adj.min()), ACC_HIGH),
        Check.at_most("|accuracy - 0.5|, RW and eigenvalue-only", chance, SRG_CHANCE_TOL),
        tolerance=SRG_CHANCE_TOL,
        detail=f"adjacency (L >= 2) min {float(adj.min()):.3f}; RW {sorted(rw.round(3))}; "
        f"eigenvalue-only {sorted(ev.round(3))}",
    )
