"""multiscale-single-index: its claims, judged from a run's tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.core.errors import Undecided

REF = "Bruna, arXiv 2607.03347"
claims = Claims("multiscale-single-index")


def _slope(x, y) -> float:
    if np.any(np.asarray(y, float) <= 0):
        return math.nan
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def fit_edgeworth(rows: pd.DataFrame) -> tuple[float, float]:
    """Weighted least squares of ``rel_dev = a d^(-1/2)`` (through 0, weights 1/se^2): (a, se of a)."""
    x = rows["d"].to_numpy(float) ** -0.5
    y, w = rows["rel_dev"].to_numpy(float), rows["rel_se"].to_numpy(float) ** -2
    a = float((w * x * y).sum() / (w * x * x).sum())
    return a, float((w * x * x).sum() ** -0.5)


S_EDGE = (
    "K = 2, flat w, quadratic link (t + He_2/2)/sqrt(1.5): the relative first-chaos deviation E[y z]/(c1 c1) - "
    "1 fitted as a d^(-1/2) over d = 16, 64, 256 (10^6 samples each, shortcut sampler) gives a in [0.7, 0.93] "
    "(prediction 1/sqrt(1.5) = 0.8165, exact for a quadratic top link); with the linear link the deviation is "
    "0 within 4 standard errors at every d."
)


@claims.add("first-chaos-edgeworth", S_EDGE, REF + ", first chaos = spike + O(d^-1/2) (Edgeworth term: our derivation)")
def judge_edgeworth(res: Result, v: Judgement) -> Verdict:
    t = res.table("edgeworth")
    q, lin = t[t["link"] == "quadratic"].sort_values("d"), t[t["link"] == "linear"].sort_values("d")
    if len(q) < 2 or lin.empty:
        return v.failed(math.nan, "in [0.7, 0.93]", 0.115, "missing quadratic or linear-control rows")
    for frame in (q, lin):  # a NaN estimate fails naming its row (the fit and the z-scores would hide it)
        v.column(frame, "rel_dev"), v.column(frame, "rel_se")
    a, se = fit_edgeworth(q)
    z = (lin["rel_dev"].abs() / lin["rel_se"]).to_numpy()
    return v.all_of(
        Check.within("fitted a (theory 0.8165)", a, 0.7, 0.93),
        Check.at_most("linear control |dev|/se", pd.Series(z, index=[f"d = {d}" for d in lin["d"]]), 4),
        tolerance=0.115,
        detail=f"fitted a = {a:.4f} ± {se:.4f}; d^(1/2) x deviation: "
        + ", ".join(
            f"d = {r.d}: {r.rel_dev * math.sqrt(r.d):.3f} ± {r.rel_se * math.sqrt(r.d):.3f}" for r in q.itertuples()
        )
        + "; linear control |dev|/se: "
        + ", ".join(f"{x:.2f}" for x in z),
    )


S_HOSVD = (
    "K = 3, random (seeded) delocalised features on the sphere, n = 100 d^2: the rank-one HOSVD of T_hat = "
    "(1/n) sum y x gives min over layers of |<u_l, w_l>| >= 0.75 at every d in {8, 12, 16}; the control with y "
    "replaced by an independent copy (same x) gives min overlap <= 0.5."
)
HOSVD_FEATURES = Departure.field_value(
    "hosvd_features",
    "random",
    "random signs w = ±1/sqrt(d) instead of uniform on the sphere: the first chaos of a sphere-uniform w is not rank "
    "one at these d (its O(d^-1/2) term w^2 has norm ~ sqrt(3/d), 0.6 at d = 8); with it the claim held on 7 of seeds "
    "0-9 (min overlap 0.656, 0.703, 0.709 on seeds 9, 6, 8), with random signs (|w|_inf = d^-1/2 at every d) on 10",
)


def _hosvd_checks(worst: float, ctl_best: float) -> list[Check]:
    """The claim's two conditions on one ensemble: its worst target and its best control min overlap."""
    return [
        Check.at_least("worst target min overlap", worst, 0.75),
        Check.at_most("largest control min overlap", ctl_best, 0.5),
    ]


def _hosvd_verdict(h: pd.DataFrame, v) -> tuple[float, float, pd.DataFrame]:
    """(worst target min overlap, best control min overlap, target rows) of one ensemble's HOSVD rows."""
    tgt, ctl = h[h["y"] == "target"].sort_values("d"), h[h["y"] == "independent"].sort_values("d")
    if tgt.empty or ctl.empty:
        return math.nan, math.nan, tgt
    return float(v.column(tgt, "min_overlap").min()), float(v.column(ctl, "min_overlap").max()), tgt


@claims.add(
    "hosvd-recovers",
    S_HOSVD,
    REF + ", MSIM as non-linear tensor PCA: unfolding recovers the features",
    departures=[HOSVD_FEATURES],
)
def judge_hosvd(res: Result, v: Judgement) -> Verdict:
    t = res.table("hosvd")
    rest = t[~t["judged"] & (t["estimator"] == "hosvd")]
    t = t[t["judged"]]
    worst, ctl_best, tgt = _hosvd_verdict(t[t["estimator"] == "hosvd"], v)
    if math.isnan(worst):
        return v.failed(math.nan, ">= 0.75", 0.75, "missing target or control rows")
    bal = t[(t["estimator"] == "balanced") & (t["y"] == "target")]
    report = []
    for kind, g in rest.groupby("features"):
        w, c, _ = _hosvd_verdict(g, v)
        met = all(check.ok for check in _hosvd_checks(w, c))
        report.append(
            f"; {kind} features (report only, the same thresholds): worst min overlap {w:.3f}, control "
            f"{c:.3f}, {'met' if met else 'NOT met'}"
        )
    return v.all_of(
        *_hosvd_checks(worst, ctl_best),
        detail=f"{t['features'].iloc[0]} features; target min overlap (layers 1..K): "
        + "; ".join(
            f"d = {r.d}: {r.min_overlap:.3f} ("
            + ", ".join(f"{getattr(r, f'overlap_{i}'):.3f}" for i in range(1, r.K + 1))
            + ")"
            for r in tgt.itertuples()
        )
        + f"; control: largest {ctl_best:.3f}"
        + "; balanced flattening (report): "
        + ", ".join(f"{x:.3f}" for x in bal["min_overlap"])
        + "".join(report),
    )


def _medians(t: pd.DataFrame, col: str) -> pd.Series:
    """Per-d medians of a crossing column, a NaN (the run never reached 0.5 within its n samples) read as +inf: such a
    run is the latest of all, so it moves the median up instead of dropping out of it as pandas would."""
    return t.assign(**{col: t[col].fillna(math.inf)}).groupby("d")[col].median().sort_index()


def _ratio(med: pd.Series) -> float:
    """Median at the largest d over the median at the smallest; inf when either never reached 0.5 (undefined)."""
    lo, hi = float(med.iloc[0]), float(med.iloc[-1])
    return hi / lo if math.isfinite(lo) and math.isfinite(hi) and lo > 0 else math.inf


def _signed_sgd(res) -> pd.DataFrame:
    """The SGD table, whose overlap columns are signed; a run stored before they were (no ``final_min_abs``: its
    ``final_min`` holds |<u_l, w_l>|) cannot decide the signed claims and says so."""
    t = res.table("sgd")
    if "final_min_abs" not in t.columns:
        raise Undecided(
            "this run was stored before the SGD overlaps were recorded with signs (its final_min is "
            "|<u_l, w_l>|); run it again with --force"
        )
    return t


SIGNED = Departure.of(
    "signed overlaps <u_l, w_l> (card: |<u_l, w_l>|)",
    "the link is neither odd nor even, so no sign flip of the u_l leaves the network unchanged: a run at the "
    "spurious critical point (-w_1, -w_2) has not recovered the features, and |.| would count it as recovered",
)

CPU_SGD = [
    Departure.field_value(
        "sgd_cases",
        ((2, (16, 32, 64)), (3, (12, 16, 24, 32)), (4, (8, 12, 16))),
        "cpu preset: K = 3 at d = 12, 16, 24 and K = 4 at d = 6, 8, 10 (the card's K = 3 at d = 32 "
        "and K = 4 at d = 12, 16 take 54k and 142k sequential steps, ~1 h on one core): smaller d, "
        "where the O(d^-1/2) terms are larger",
        presets=["cpu"],
    ),
    Departure.field_value(
        "sgd_sample_ratio",
        400.0,
        "cpu preset: n = 200 d^(K-1) log d, quick's K = 2 budget (one "
        "ratio for every K, so sgd-k2 stays at its card's n); the paper's 400 doubles the steps",
        presets=["cpu"],
    ),
]

CPU_UNFOLD = Departure.field_value(
    "unfold_dims",
    (8, 12, 16),
    "cpu preset: the unfoldings at d = 6, 8, 10, the K = 4 SGD grid of the cpu preset, so "
    "all three exponents are fitted on one d range",
    presets=["cpu"],
)
CPU_CHAOS2 = Departure.field_value(
    "chaos2_dims",
    (12, 16, 24),
    "cpu preset: d = 8, 10, 12 (the estimate costs n D^2 = 200 d^9 flop: 1e12 at d = 12, "
    "~40 s on one core; 1.4e13 at d = 16 and 5e14 at d = 24 need a GPU); the exponent is fitted over a 1.5x d range "
    "instead of 2x",
    presets=["cpu"],
)

S_SGD2 = (
    "K = 2, spherical SGD on the correlation loss (B = 32, eta = 0.1 B/d, /10 over the last 30%), n = 200 d "
    "log d, 3 seeds, d in {16, 32, 64}: every seed ends with min_l overlap >= 0.6 at every d, and the "
    "median n_0.5/(d log d) at d = 64 is <= 2x its value at d = 16."
)
SGD2_KNOWN = KnownFailure.on_some_seeds(
    10,
    10,
    range(10),
    "43 of the 90 runs (13/30, 16/30, 14/30 at d = 16, 32, 64; 1-7 per seed) end at the spurious maximum "
    "(u_1, u_2) = (-w_1, -w_2) (final signs '--', signed min overlap -0.41 to -0.96), while every '++' run recovers "
    "(>= 0.75). Near the uniform start the correlation is ~ (4/9) m_1 m_2, symmetric under (m_1, m_2) -> (-m_1, -m_2), "
    "so the sign of the initial m_1 m_2 picks the basin; at m_1 = -1, d/dm_1 of kappa(m_1) = (2/3) m_1 + (1/3) m_1^2 "
    "vanishes and the run stays (correlation 0.26, not 1). The card's |.| form fails 3/10 (seeds 1, 4, 5; docs page)",
)


def _sgd_k2_checks(ratio: float, worst: float) -> list[Check]:
    """sgd-k2's two conditions: the ratio of the median n_0.5/(d log d) at the largest d to the smallest, and the
    smallest final min overlap."""
    return [
        Check.at_most("ratio of medians d = 64 / 16", ratio, 2.0),
        Check.at_least("smallest final min overlap", worst, 0.6),
    ]


@claims.add(
    "sgd-k2",
    S_SGD2,
    REF + ", online SGD with all layers on one timescale, n = Õ(d^(K-1))",
    departures=[SIGNED],
    known=SGD2_KNOWN,
)
def judge_sgd_k2(res: Result, v: Judgement) -> Verdict:
    t = _signed_sgd(res)
    t = t[t["K"] == 2]
    if t["d"].nunique() < 2:
        return v.failed(math.nan, "<= 2", 2.0, "fewer than two d at K = 2")
    worst = float(v.column(t, "final_min").min())
    med = _medians(t, "n05_scaled")
    ratio = _ratio(med)
    # the card's |.| form, reported beside the judged signed one
    worst_abs, ratio_abs = float(v.column(t, "final_min_abs").min()), _ratio(_medians(t, "n05_abs_scaled"))
    card = (
        f"; the card's |.| form (report only): smallest final {worst_abs:.3f}, ratio {ratio_abs:.3f}, "
        f"{'met' if all(c.ok for c in _sgd_k2_checks(ratio_abs, worst_abs)) else 'NOT met'}"
    )
    return v.all_of(
        *_sgd_k2_checks(ratio, worst),
        detail=f"signed final min overlaps: smallest {worst:.3f}; per d: "
        + "; ".join(f"d = {d}: " + ", ".join(f"{x:.3f}" for x in g["final_min"]) for d, g in t.groupby("d"))
        + "; median n_0.5/(d log d) (inf: a median run never reached 0.5): "
        + ", ".join(f"d = {d}: {m:.2f}" for d, m in med.items())
        + "; final signs of (<u_1, w_1>, <u_2, w_2>): "
        + ", ".join(t["final_signs"])
        + card,
    )


def _reduced_k2(t: pd.DataFrame) -> str:
    k2 = t[t["K"] == 2]
    if k2.empty:
        return "none"
    med = _medians(k2, "n05_scaled")
    return "K = 2 median n_0.5/(d log d), signed: " + ", ".join(f"d = {d}: {m:.2f}" for d, m in med.items())


S_RATE = (
    "K in {3, 4}, n up to 400 d^(K-1) log d, 5 seeds: the median n_0.5/(d^(K-1) log d) varies by at most a "
    "factor 3 across the d grid; the final min overlap is >= 0.9 at the largest d, and it increases with d."
)


SIGN_BASINS_CPU = KnownFailure.on_some_seeds(
    1,
    1,
    [0],
    "cpu preset, seed 0 (AVX-512 EPYC; the AVX2 run of 2026-12-06 failed too): the cause of sgd-k2 at K = 3 and 4. "
    "The start's sign pattern picks the basin (the link is neither odd nor even): 8 of the 15 K = 3 runs and all 15 "
    "K = 4 runs end with at least one feature at a wrong sign (e.g. '+--', '-+-', '++-+'; signed final min overlap "
    "down to -0.98, while their |.| reaches 0.79); the 7 K = 3 runs with every sign right end at 0.11-0.67 "
    "(none >= 0.9) within n = 200 d^(K-1) log d, half the card's budget, at d = 12-24. Median n_0.5 is then "
    "infinite at some d and the medians of the final overlap are negative",
    presets=["cpu"],
)


@claims.add(
    "sgd-sample-complexity",
    S_RATE,
    REF + ", SGD matches the linear counterpart's Õ(d^(K-1))",
    decided_by="cpu",
    departures=[
        SIGNED,
        *CPU_SGD,
        "the final overlap judged by its median over seeds, and 'increases with d' as "
        "larger at the largest d than at the smallest (card: aggregation and monotonicity not stated)",
    ],
    known=SIGN_BASINS_CPU,
)
def judge_rate(res: Result, v: Judgement) -> Verdict:
    t = _signed_sgd(res)
    hi = t[t["K"] >= 3]
    if hi.empty:
        return v.undecided("needs the cpu preset (K >= 3 runs); reduced measurement: " + _reduced_k2(t))
    parts, checks, worst = [], [], 0.0
    for K, g in hi.groupby("K"):
        v.column(g, "final_min")
        med, fin = _medians(g, "n05_scaled"), g.groupby("d")["final_min"].median().sort_index()
        spread = float(med.max() / max(med.min(), 1e-12)) if np.isfinite(med.to_numpy()).all() else math.inf
        checks += [
            Check.at_most(f"K = {K}: spread of the median n_0.5/(d^(K-1) log d)", spread, 3),
            Check.at_least(f"K = {K}: median final min overlap at the largest d", float(fin.iloc[-1]), 0.9),
            Check.holds(
                f"K = {K}: final min overlap larger at the largest d than at the smallest", fin.iloc[-1] > fin.iloc[0]
            ),
            Check.at_least(f"K = {K}: number of d", len(med), 2),
        ]
        worst = max(worst, spread)
        parts.append(
            f"K = {K}: median n_0.5/(d^(K-1) log d) (inf: never reached 0.5) "
            + ", ".join(f"{m:.2f}" for m in med)
            + f" (spread {spread:.2f}); median final min overlap "
            + ", ".join(f"{m:.3f}" for m in fin)
        )
    return v.all_of(*checks, measured=worst, tolerance=3.0, detail="; ".join(parts))


def _layer_ratio(g: pd.DataFrame) -> np.ndarray:
    if g.empty:
        return np.array([])
    cols = [f"n05_{i}" for i in range(1, int(g["K"].iloc[0]) + 1)]  # this K's layers (wider K leave NaN columns)
    vals = np.maximum(g[cols].to_numpy(float), 1.0)  # a crossing at the start (n = 0) counts as one sample
    if not vals.size:
        return np.array([])
    with np.errstate(all="ignore"):
        r = vals.max(1) / vals.min(1)
    # NaN has a stated meaning here: a layer that never crosses 0.5 is infinitely far from the others
    return np.where(np.isnan(r), math.inf, r)


S_SAME = (
    "With one step size for all layers (K in {3, 4}), the sample counts at which the individual overlaps cross "
    "0.5 differ by less than a factor 2 (every (K, d)): the layers are learned together."
)


@claims.add(
    "same-timescale",
    S_SAME,
    REF + ", all layers on the same timescale",
    decided_by="cpu",
    departures=[
        SIGNED,
        *CPU_SGD,
        "judged on the median over seeds of each run's largest/smallest "
        "crossing ratio (card: per run or aggregated not stated)",
    ],
    known=SIGN_BASINS_CPU,
)
def judge_same(res: Result, v: Judgement) -> Verdict:
    t = _signed_sgd(res)
    hi = t[t["K"] >= 3]
    if hi.empty:
        k2 = t[t["K"] == 2]
        r = _layer_ratio(k2)
        return v.undecided(
            "needs the cpu preset (K >= 3 runs); reduced measurement: K = 2 layer-crossing ratios "
            "(signed; inf: a layer never reached 0.5) " + ", ".join(f"{x:.2f}" for x in r),
            measured=float(np.median(r)) if r.size else None,
        )
    parts, worst = [], 0.0
    for (K, d), g in hi.groupby(["K", "d"]):
        r = _layer_ratio(g)
        m = float(np.median(r)) if r.size else math.inf
        worst = max(worst, m)
        parts.append(f"K = {K}, d = {d}: {m:.2f}")
    return v.all_of(
        Check.holds("median max/min layer crossing < 2 at every (K, d)", worst < 2),
        measured=worst,
        tolerance=2.0,
        detail="median max/min layer crossing: " + "; ".join(parts),
    )


def crossing_n(g: pd.DataFrame, level: float = 0.5) -> float:
    """First n of a grid at which min_overlap reaches ``level``, log-interpolated with the point before."""
    g = g.sort_values("n")
    n, m = g["n"].to_numpy(float), g["min_overlap"].to_numpy(float)
    hit = np.flatnonzero(m >= level)
    if not len(hit):
        return math.nan
    i = int(hit[0])
    if i == 0 or m[i] == m[i - 1]:
        return float(n[i])
    f = (level - m[i - 1]) / (m[i] - m[i - 1])
    return float(math.exp(math.log(n[i - 1]) + f * (math.log(n[i]) - math.log(n[i - 1]))))


S_UNFOLD = (
    "K = 4: the n needed for min overlap 0.5 scales as d^e with fitted e = 2 ± 0.4 for the balanced "
    "unfolding and 3 ± 0.4 for the mode-wise unfolding (HOSVD) and for online SGD, d in {8, 12, 16}."
)


@claims.add(
    "unfolding-vs-sgd",
    S_UNFOLD,
    REF + ", unfolding d^ceil(K/2) vs SGD d^(K-1) (tensor-PCA analogy)",
    decided_by="cpu",
    departures=[
        SIGNED,
        *CPU_SGD,
        CPU_UNFOLD,
        "SGD's n_0.5 is the median over seeds, the "
        "unfoldings' the log-interpolated crossing on a 40-point n grid (card: not stated)",
    ],
)
def judge_unfold(res: Result, v: Judgement) -> Verdict:
    u, t = res.table("unfolding"), _signed_sgd(res)
    sgd = t[t["K"] == 4]
    if u.empty or sgd.empty:
        return v.undecided("needs the cpu preset (K = 4 unfolding baselines and SGD runs)")
    v.column(u, "min_overlap")  # a NaN overlap on the n grid would read as "not yet crossed"
    exps, parts = {}, []
    for est, g in u.groupby("estimator"):
        ns = {d: crossing_n(h) for d, h in g.groupby("d")}
        parts.append(f"{est}: n_0.5 " + ", ".join(f"d = {d}: {n:.4g}" for d, n in ns.items()))
        exps[est] = (
            _slope(list(ns), list(ns.values())) if len(ns) >= 2 and not any(map(math.isnan, ns.values())) else math.nan
        )
    med = _medians(sgd, "n05")  # inf: the median run never reached 0.5, so no exponent (fails)
    exps["sgd"] = _slope(med.index, med.values) if len(med) >= 2 and np.isfinite(med.to_numpy()).all() else math.nan
    target = {"balanced": 2.0, "mode-wise": 3.0, "sgd": 3.0}
    return v.all_of(
        *(Check.at_most(f"|{k} exponent - {e:g}|", abs(exps.get(k, math.nan) - e), 0.4) for k, e in target.items()),
        measured=exps.get("balanced", math.nan),
        detail="exponents: " + ", ".join(f"{k} {x:.2f}" for k, x in exps.items()) + "; " + "; ".join(parts),
    )


def plateau_stats(s: np.ndarray, d: int, noise: float) -> tuple[int, int, float]:
    """(top-group size #{s >= s_1/2}, plateau multiplicity, plateau level = median of the next d values); the
    plateau counts the values after the top group within a factor 2 of the level and above 2x the noise edge."""
    s = np.sort(np.asarray(s, float))[::-1]
    top = int((s >= s[0] / 2).sum())
    rest = s[top:]
    level = float(np.median(rest[:d])) if len(rest) else math.nan
    mult = int(((rest >= level / 2) & (rest <= 2 * level) & (rest >= 2 * noise)).sum())
    return top, mult, level


S_CHAOS2 = (
    "Reconstructed (verify against the paper): at K = 3 the singular values of the balanced (d^3 x d^3) "
    "flattening of the second-chaos tensor E[y (x x^T - I)] show a top group of multiplicity O(1) and a "
    "plateau of multiplicity about d whose level scales as d^-1/2 between d = 12 and 24 (fitted exponent "
    "-0.5 ± 0.2)."
)


@claims.add(
    "higher-chaos-plateaus",
    S_CHAOS2,
    REF + ", staircase plateaus in higher chaoses (reconstructed)",
    decided_by="cpu",
    departures=[
        CPU_CHAOS2,
        "top group = singular values >= s_1/2, 'O(1)' read as <= 3, "
        "'about d' as [d/2, 2d], plateau level = median of the next d values, flattening rows x / "
        "columns x' of E[y (x x^T - I)] "
        "(card: none of these defined): ours, until the paper's definitions are read",
    ],
)
def judge_chaos2(res: Result, v: Judgement) -> Verdict:
    t = res.table("chaos2")
    if t.empty:
        return v.undecided("needs the cpu preset (the D x D second-chaos matrix at d = 8..12; reconstructed claim)")
    v.column(t, "singular_value"), v.column(t, "noise")  # a NaN would drop out of the sorted spectrum silently
    stats = {}
    for d, g in t.groupby("d"):
        stats[int(d)] = plateau_stats(
            g.sort_values("index")["singular_value"].to_numpy(), int(d), float(g["noise"].iloc[0])
        )
    ds = sorted(stats)
    e = _slope(ds, [stats[d][2] for d in ds]) if len(ds) >= 2 else math.nan
    shapes = [
        check
        for d, (top, mult, _) in stats.items()
        for check in (
            Check.at_most(f"d = {d}: top-group size", top, 3),
            Check.within(f"d = {d}: plateau multiplicity", mult, d / 2, 2 * d),
        )
    ]
    return v.all_of(
        Check.at_most("|level exponent + 0.5|", abs(e + 0.5), 0.2),
        *shapes,
        measured=e,
        detail="; ".join(f"d = {d}: top {top}, plateau x{mult} at {lvl:.3g}" for d, (top, mult, lvl) in stats.items())
        + f"; level exponent {e:.3f}",
    )
