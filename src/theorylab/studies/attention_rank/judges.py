"""attention-rank: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.train.farthest_point import grid_summary

REF = "arXiv 2407.16153"


claims = Claims("attention-rank")

# A claim the card states at the quick size (d = 16, N = 8, one attention layer) is judged at another size when a
# preset trains another (the paper and slice presets train post-norm encoders at d = 64, N = 16).
QUICK_SIZE = [
    Departure.field_value("d", 16, "the card states this claim at the quick size"),
    Departure.field_value("n_points", 8, "the card states this claim at the quick size"),
    Departure.field_value("architecture", "attention", "the card states this claim for one attention layer"),
]
# A paper claim judged on the 15-minute slice (the card's own GPU slice, not its Fig. 1 protocol).
GPU = ["paper", "slice"]
PAPER_RECIPE = [
    Departure.field_value("steps", 100_000, "the slice trains a fifth of the paper's steps", presets=GPU),
    Departure.field_value("seeds", 5, "the slice trains two seeds (minimum over seeds)", presets=GPU),
]


S_HARDMAX = (
    "One full-rank hard-max head (Q^T K = -I, V = I) computes the farthest-point target exactly at every "
    "sequence length."
)


@claims.add("hardmax-exact", S_HARDMAX, REF + ", Sec. 3 (full-rank construction)")
def judge_hardmax(res: Result, v: Judgement) -> Verdict:
    t = res.table("constructions")
    hard = t[t["kind"] == "full_rank_hardmax"]
    worst = float(v.column(hard, "dmse").max())
    detail = (
        "; ".join(f"N={int(r.n_points)}: {r.dmse:.1e}" for r in hard.itertuples())
        + " (exact construction: 0 up to rounding, tol 1e-12)"
    )
    return v.at_most(worst, 1e-12, expected=str(0.0), tolerance=1e-12, detail=detail)


S_SOFTMAX = (
    "The full-rank softmax head (Q^T K = -beta I) converges to the target as beta grows: d·MSE falls strictly in beta "
    "and is <= 0.05 at beta = 300 (d = 16, N = 8)."
)


@claims.add("softmax-limit", S_SOFTMAX, REF + ", Sec. 3 (softmax approximation)")
def judge_softmax(res: Result, v: Judgement) -> Verdict:
    t = res.table("constructions")
    soft = t[t["kind"] == "full_rank_softmax"].sort_values("param")
    errs = v.column(soft, "dmse").to_numpy()
    falls = bool(np.all(np.diff(errs) < 0))
    top_beta, last = float(soft["param"].iloc[-1]), float(errs[-1])
    detail = ", ".join(f"β={b:g}: {e:.4f}" for b, e in zip(soft["param"], errs)) + f"; strictly decreasing: {falls}"
    if top_beta < 300:
        return v.undecided(
            f"this config's betas stop at {top_beta:g}; the claim needs beta >= 300 in 'betas': {detail}"
        )
    return v.all_of(
        Check.at_most(f"d·MSE at β={top_beta:g}", last, 0.05),
        Check.holds("d·MSE strictly decreasing in β", falls),
        detail=detail,
    )


S_RANK1 = (
    "Random rank-1 hard-max heads with a least-squares readout stay far from the target: d·MSE >= 0.5 on held-out sets "
    "at H = d^2 heads, and it falls by less than 0.5 from H = 1."
)


@claims.add("rank1-floor", S_RANK1, REF + ", Sec. 4 (rank-1 lower bound)")
def judge_rank1(res: Result, v: Judgement) -> Verdict:
    t = res.table("constructions")
    d = int(t["d"].iloc[0])
    test = t[(t["kind"] == "random_rank1") & (t["split"] == "test")].sort_values("param")
    v.column(test, "dmse")
    h_max = float(test["param"].iloc[-1])
    at_max, at_one = float(test["dmse"].iloc[-1]), float(test["dmse"].iloc[0])
    drop = at_one - at_max
    detail = (
        f"held-out d·MSE: H={int(test['param'].iloc[0])}: {at_one:.4f}, H={int(h_max)}: {at_max:.4f} (need >= 0.5); "
        f"drop {drop:.4f} (need < 0.5)"
    )
    if h_max < d * d:
        return v.undecided(
            f"this config's rank1_n_heads stop at H = {int(h_max)}; the claim needs H >= d^2 = {d * d}: {detail}"
        )
    return v.all_of(
        Check.at_least(f"held-out d·MSE at H={int(h_max)}", at_max, 0.5),
        Check.holds("drop from H=1 < 0.5", drop < 0.5),
        detail=detail,
    )


S_HEADS = (
    "Trained one-layer attention at fixed d: one full-rank head reaches d·MSE <= 0.2, while H >= 4 heads of rank r = "
    "d/H <= d/4 stay >= 0.35, at least 3x worse."
)


@claims.add("trained-heads-hurt", S_HEADS, REF + ", Fig. 1 (quick analogue at d = 16)", departures=QUICK_SIZE)
def judge_heads(res: Result, v: Judgement) -> Verdict:
    d = res.config["d"]
    s = grid_summary(res.table("trained"), "heads", depth=1, width=1, n_points=res.config["n_points"])
    full = s[s["rank"] == d]
    low = s[s["rank"] <= d // 4]
    if full.empty or low.empty:
        return v.undecided(
            f"this config's heads grid {sorted(s['heads'].unique().tolist())} at depth 1, w = 1 lacks H = "
            f"1 or any H >= 4 (both are needed)"
        )
    full_err = float(v.column(full, "dmse_min").iloc[0])
    low_min = float(v.column(low, "dmse_min").min())
    ratio = low_min / full_err
    detail = (
        f"min over seeds: H=1 (r={d}): {full_err:.4f}; "
        + ", ".join(f"H={int(r.heads)} (r={int(r.rank)}): {r.dmse_min:.4f}" for r in low.itertuples())
        + f"; ratio {ratio:.2f}"
    )
    return v.all_of(
        Check.at_least("low-rank / full-rank d·MSE", ratio, 3),
        Check.at_most("full-rank (H=1) d·MSE", full_err, 0.2),
        Check.at_least("lowest low-rank (H >= 4) d·MSE", low_min, 0.35),
        detail=detail,
    )


def _paper_scale(res) -> bool:
    return res.config["d"] == 64 and res.config["n_points"] == 16


S_FIG1 = (
    "Fig. 1, one layer, d = 64, N = 16: rank 64 reaches d·MSE <= 0.05 at every width, rank 32 stays >= 0.25 and ranks "
    "1-16 stay >= 0.4 (paper: 1.5e-2/7e-3/2e-3 vs 0.70/0.43/0.31)."
)


CPU_FIG1 = [
    Departure.field_value(
        "steps", 100_000, "cpu preset: 1500 steps, 1.5% of the paper's (~30 ms of one core a step)", presets=["cpu"]
    ),
    Departure.field_value("seeds", 5, "cpu preset: one seed (the paper reports the minimum over 5)", presets=["cpu"]),
    Departure.field_value(
        "architecture",
        "encoder",
        "cpu preset: one attention layer alone (V_h full rank), the "
        "card's quick model; the paper's post-norm encoder layer with its 2048-wide FF block costs "
        "~5x more a step",
        presets=["cpu"],
    ),
    Departure.field_value("width_multipliers", (1, 8, 64), "the cpu preset trains w = 1 only", presets=["cpu"]),
    Departure.field_value(
        "n_heads",
        (1, 2, 4, 8, 16, 32, 64),
        "cpu preset: ranks 64, 32, 16 (H = 1, 2, 4); ranks "
        "1-8 (H = 8..64, up to ~0.4 s of one core a step at H = 64) are not trained",
        presets=["cpu"],
    ),
]


# Measured (seed 0, issue 45): the cpu preset's 1500 steps stop the full-rank head short of the inverse temperature
# the target needs; the same layer trained 4000 steps alone passes. The threshold is kept.
FIG1_KNOWN_CPU = KnownFailure.on_every_seed(
    (
        "seed 0 at the cpu preset: rank 64 reaches d·MSE 0.081 (need <= 0.05) while rank 32 (0.588, need >= 0.25) "
        "and rank 16 (0.702, need >= 0.4) meet theirs. Cause: the step budget, not the model. The full-rank head "
        "already picks the farthest point (arg-max hit 0.992, mean entropy 0.39 nats); its error is the softmax's "
        "finite inverse temperature, which AdamW builds up slowly (each weight moves by at most ~lr = 1e-2 a step) "
        "and the cosine decay freezes: the loss plateaus at 0.08 from step ~1100 of 1500. The same layer and recipe "
        "on other streams: 1500 steps 0.079 (effective beta = -tr(Q^T K)/d = 66), 4000 steps 0.047 (beta = 111); "
        "the construction Q^T K = -beta I, V = I needs beta ~ 110 for 0.05 at d = 64, N = 16 (beta = 100: 0.055, "
        "200: 0.027). The paper trains 1e5 steps; the threshold is kept. Measured on seed 0 only (the cpu preset's "
        "one run)"
    ),
    presets=["cpu"],
)


@claims.add(
    "fig1-one-layer",
    S_FIG1,
    REF + ", Fig. 1",
    decided_by="cpu",
    known=FIG1_KNOWN_CPU,
    departures=[
        *PAPER_RECIPE,
        Departure.field_value("width_multipliers", (1, 8, 64), "the slice trains w = 1 only", presets=GPU),
        *CPU_FIG1,
    ],
)
def judge_fig1(res: Result, v: Judgement) -> Verdict:
    s = grid_summary(res.table("trained"), "heads", depth=1, n_points=16)
    if not _paper_scale(res) or s[s["rank"] == 64].empty or s[s["rank"] < 64].empty:
        return v.undecided(
            f"needs the cpu preset: the claim is about one layer at d = 64, N = 16 with rank 64 and lower "
            f"ranks; this config trains d = {res.config['d']}, N = {res.config['n_points']}"
        )
    v.column(s, "dmse_min")
    full, r32, low = s[s["rank"] == 64], s[s["rank"] == 32], s[s["rank"] <= 16]

    def cells(rows):
        return rows["dmse_min"].set_axis([f"r={int(r.rank)}, w={int(r.width)}" for r in rows.itertuples()])

    checks = [Check.at_most("rank-64 d·MSE", cells(full), 0.05)]  # non-empty: checked above
    if len(r32):
        checks.append(Check.at_least("rank-32 d·MSE", cells(r32), 0.25))
    if len(low):
        checks.append(Check.at_least("rank <= 16 d·MSE", cells(low), 0.4))
    widths = sorted(int(w) for w in s["width"].unique())
    ranks = sorted(int(r) for r in s["rank"].unique())
    partial = (
        "" if {1, 8, 64} <= set(widths) else (f" (partial grid: widths {widths} of the card's 1, 8, 64; ranks {ranks})")
    )
    detail = (
        "; ".join(
            f"r={int(r.rank)}, w={int(r.width)}: {r.dmse_min:.4f}"
            for r in s.sort_values(["rank", "width"]).itertuples()
        )
        + partial
    )
    return v.all_of(*checks, detail=detail)


S_PARAMS = (
    "More attention parameters do not help low rank: for r <= 32, going from w = 1 to w = 64 leaves d·MSE >= 0.25, "
    "while r = 64 at w = 1 is <= 0.05."
)


@claims.add(
    "params-do-not-help", S_PARAMS, REF + ", Fig. 1 (width multiplier)", decided_by="paper", departures=PAPER_RECIPE
)
def judge_params(res: Result, v: Judgement) -> Verdict:
    s = grid_summary(res.table("trained"), "heads", depth=1, n_points=16)
    wide = s[(s["width"] == 64) & (s["rank"] <= 32)]
    full = s[(s["width"] == 1) & (s["rank"] == 64)]
    if not _paper_scale(res) or wide.empty or full.empty:
        return v.undecided(
            f"needs paper preset: the claim compares w = 1 and w = 64 at d = 64, N = 16; this config "
            f"trains d = {res.config['d']}, N = {res.config['n_points']}, "
            f"w in {list(res.config['width_multipliers'])}"
        )
    low = float(v.column(wide, "dmse_min").min())
    full_err = float(v.column(full, "dmse_min").iloc[0])
    return v.all_of(
        Check.at_least("min d·MSE over r <= 32 at w = 64", low, 0.25),
        Check.at_most("r = 64 d·MSE at w = 1", full_err, 0.05),
        detail=f"min over r <= 32 at w = 64: {low:.4f}; r = 64 at w = 1: {full_err:.4f}",
    )


S_LENGTH = (
    "Low-rank error grows with sequence length while full rank stays near zero (paper Fig. N at d = 64: full "
    "rank <= 0.1 for N up to 256, "
    "each r < 64 grows by >= 0.2 from N = 16 to 256; on a reduced grid: full rank <= 0.2 and low rank grows by "
    ">= 0.1 from the shortest to the longest N)."
)


@claims.add("length-hurts-low-rank", S_LENGTH, REF + ", Fig. N")
def judge_length(res: Result, v: Judgement) -> Verdict:
    s = grid_summary(res.table("trained"), "length")
    d = res.config["d"]
    lengths = sorted(s["n_points"].unique())
    if len(lengths) < 2 or s[s["rank"] == d].empty or s[s["rank"] < d].empty:
        return v.undecided(
            f"this config's length grid (length_n_points {list(res.config['length_n_points'])}, ranks "
            f"{list(res.config['length_ranks'])}) needs >= 2 lengths, full rank and some r < d"
        )
    paper = d == 64 and 16 in lengths and 256 in lengths
    n_ref, n_max = (16, 256) if paper else (lengths[0], lengths[-1])
    full_tol, growth_tol = (0.1, 0.2) if paper else (0.2, 0.1)
    v.column(s, "dmse_min")
    full = s[s["rank"] == d]
    full_worst = float(full["dmse_min"].max())
    growths = {}
    for r, grp in s[s["rank"] < d].groupby("rank"):
        by_n = grp.set_index("n_points")["dmse_min"]
        growths[int(r)] = float(by_n[n_max] - by_n[n_ref])
    scale = (
        "paper thresholds (Fig. N)"
        if paper
        else (f"reduced grid at d = {d} (qualitative thresholds; the card's apply at the paper preset)")
    )
    departures = (
        []
        if paper
        else [
            f"reduced grid: d = {d}, N {', '.join(str(int(n)) for n in lengths)}, "
            f"{res.config['length_n_layers']} layer(s), w = {res.config['length_width_multiplier']}; full rank <= 0.2 "
            f"and growth >= 0.1 from N = {n_ref} to {n_max} "
            f"(card: d = 64, 2 layers, w = 64; <= 0.1 up to N = 256 and growth >= 0.2 from N = 16 to 256): the card's "
            f"Fig. N grid is GPU work"
        ]
    )
    detail = f"{scale}: full rank max over N = {full_worst:.4f}; growth N={n_ref}->{n_max}: " + ", ".join(
        f"r={r}: {g:+.4f}" for r, g in sorted(growths.items())
    )
    growth = pd.Series({f"r={r}": g for r, g in sorted(growths.items())})
    return v.all_of(
        Check.at_least(f"low-rank growth N={n_ref}->{n_max}", growth, growth_tol),
        Check.at_most("full-rank d·MSE (max over N)", full_worst, full_tol),
        measured=min(growths.values()),
        detail=detail,
        departures=departures,
    )


S_DEPTH = (
    "Depth rescues low rank on short sequences: at N = 16, w = 1, three layers at r = d/4 reach a d·MSE at least 0.2 "
    "below one layer (paper, d = 64, r = 16: ~0.12 vs >= 0.45)."
)


CPU_DEPTH = [
    Departure.field_value("d", 64, "cpu-depth preset: half the paper's dimension (CPU budget)", presets=["cpu-depth"]),
    Departure.field_value(
        "mlp_width", 2048, "cpu-depth preset: FF width 32 d, the paper's ratio at d = 64", presets=["cpu-depth"]
    ),
    Departure.field_value("steps", 100_000, "cpu-depth preset: 1000 steps, 1% of the paper's", presets=["cpu-depth"]),
    Departure.field_value("seeds", 5, "cpu-depth preset: one seed", presets=["cpu-depth"]),
    Departure.field_value(
        "warmup_frac",
        0.05,
        "cpu-depth preset: 500 warm-up steps (the paper's 5% of 1e5 is 5000; 5% of 1000 left the 3-layer post-norm "
        "encoder at the zero predictor)",
        presets=["cpu-depth"],
    ),
]


DEPTH_KNOWN_CPU = KnownFailure.on_some_seeds(
    2,
    2,
    [0, 1],
    "cpu-depth preset, seeds 0 and 1 (~350 s CPU idle, 1100-1200 s at load 5-8): 1 layer 0.791 and 0.790, 3 layers "
    "0.632 and 0.630, gain 0.159 and 0.160 (needs 0.2). Depth does help (with the 5% warm-up of 50 steps the "
    "3-layer post-norm encoder never left the zero predictor, 1.000; with 500 it learns), but at 1% of the paper's "
    "steps the 3-layer model is still descending when the cosine schedule ends (loss 0.659 -> 0.625 over the last "
    "200 steps at seed 0, 0.650 -> 0.626 at seed 1) while the 1-layer model has sat at ~0.79 since step 400: the "
    "run stops before the deeper model's plateau",
    presets=["cpu-depth"],
)


@claims.add(
    "depth-helps-short",
    S_DEPTH,
    REF + ", Fig. 1 (depth)",
    decided_by="cpu-depth",
    known=DEPTH_KNOWN_CPU,
    departures=[*PAPER_RECIPE, *CPU_DEPTH],
)
def judge_depth(res: Result, v: Judgement) -> Verdict:
    d = res.config["d"]
    s = grid_summary(res.table("trained"), "heads", width=1, n_points=16, rank=d // 4)
    by_depth = s.set_index("depth")["dmse_min"] if not s.empty else {}
    encoder = res.config["architecture"] == "encoder"
    if d < 32 or not encoder or 1 not in by_depth or 3 not in by_depth:
        reduced = ", ".join(f"{int(k)} layer(s) {float(x):.4f}" for k, x in dict(by_depth).items()) or "none"
        return v.undecided(
            f"needs the cpu-depth preset: the claim compares encoders of depth 1 and 3 at N = 16, w = 1, r = d/4 with "
            f"d >= 32; this config trains d = {d}, N = {res.config['n_points']}, {res.config['architecture']}, "
            f"n_layers {list(res.config['n_layers'])}; reduced measurement: {reduced}"
        )
    v.column(s, "dmse_min")
    gain = float(by_depth[1] - by_depth[3])
    detail = (
        f"d = {d}, r = {d // 4}: 1 layer {by_depth[1]:.4f}, 3 layers {by_depth[3]:.4f}; gain {gain:.4f} (need >= 0.2)"
    )
    return v.at_least(gain, 0.2, tolerance=0.2, detail=detail)
