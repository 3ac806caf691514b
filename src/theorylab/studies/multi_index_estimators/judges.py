"""multi-index-estimators: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.core.errors import Undecided
from theorylab.theory.sample_complexity import crossings_from_table, fitted_exponent

REF = "arXiv 2504.05426"


def _crossings(gap: pd.DataFrame) -> dict[int, float]:
    """Per d, the n at which the seed-mean capture first reaches 0.5 (log-linear interpolation in n/d)."""
    return crossings_from_table(gap, "alpha", "capture", times_dimension=True)


claims = Claims("multi-index-estimators")

# The card's preset sizes where ours differ (each applies only when the run's value differs from the card's).
BATTERY_SEEDS = [
    Departure.field_value(
        "battery_seeds",
        1,
        "cells are means over seeds (card: seed 0): He3 labels are "
        "heavy-tailed and one seed leaves ±0.1 on a cell; 24 put the gain of pHd on D (+0.09 ± 0.10 "
        "per seed) 3 SE under 0.15",
        presets=["quick"],
    ),
    Departure.field_value("battery_seeds", 20, "40 halve the standard error of the gains", presets=["paper"]),
]
COLLAPSE_SIZES = [
    Departure.field_value(
        "collapse_seeds",
        3,
        "3 seeds leave ±0.05 on a mean at n/d = 5, so the spread of three means reaches 0.12 on some seeds",
        presets=["quick"],
    ),
    Departure.field_value("collapse_seeds", 20, presets=["paper"]),
    Departure.field_value(
        "collapse_dims", (50, 100, 200), "the paper preset's sweep adds d = 400 to the judged spread"
    ),
]


# (link, estimator, direction) -> (bound kind, threshold): the card's 14 cells at alpha = 50.
BATTERY_THRESHOLDS = {
    ("z1+z1z2", "ADE", 1): (">=", 0.9),
    ("z1+z1z2", "ADE", 2): ("<=", 0.2),
    ("z1+z1z2", "pHd", 1): (">=", 0.8),
    ("z1+z1z2", "pHd", 2): (">=", 0.8),
    ("z1+z1z2", "SIR", 1): (">=", 0.8),
    ("z1+z1z2", "SIR", 2): (">=", 0.8),
    ("he2", "pHd", 1): (">=", 0.9),
    ("he2", "SAVE", 1): (">=", 0.9),
    ("he2", "ADE", 1): ("<=", 0.25),
    ("he2", "SIR", 1): ("<=", 0.25),
    ("z1z2", "pHd", 1): (">=", 0.85),
    ("z1z2", "pHd", 2): (">=", 0.85),
    ("z1z2", "SAVE", 1): (">=", 0.85),
    ("z1z2", "SAVE", 2): (">=", 0.85),
    ("z1z2", "ADE", 1): ("<=", 0.25),
    ("z1z2", "ADE", 2): ("<=", 0.25),
    ("z1z2", "SIR", 1): ("<=", 0.25),
    ("z1z2", "SIR", 2): ("<=", 0.25),
    ("he3", "SIR", 1): (">=", 0.85),
    ("he3", "ADE", 1): ("<=", 0.1),
    ("he3", "pHd", 1): ("<=", 0.5),
}


S_BATTERY = (
    "At d = 100, n/d = 50 each estimator captures exactly the directions Stein's identity and the link's "
    "symmetry predict "
    "(ADE: E[grad g]; pHd: E[hess g]; SIR: E[x|y]; SAVE: Cov(x|y)); the card's 21 thresholds on seed-mean "
    "captures."
)


def _misses(check: Check) -> list[str]:
    """The labels of the entries of ``check``'s Series that miss its bound (a NaN misses it)."""
    return [str(k) for k, x in check.value.items() if not dataclasses.replace(check, value=x).ok]


def _cell_means(battery: pd.DataFrame, alpha: float) -> pd.Series:
    return battery[battery["alpha"] == alpha].groupby(["link", "estimator", "direction"])["capture"].mean()


@claims.add("battery", S_BATTERY, REF + ", Sec. 3 (first- and second-order methods)", departures=BATTERY_SEEDS)
def judge_battery(res: Result, v: Judgement) -> Verdict:
    battery = res.table("battery")
    v.column(battery, "capture")
    alpha = max(res.config["alphas"])
    means = _cell_means(battery, alpha)
    checks = [
        (Check.at_least if kind == ">=" else Check.at_most)(f"{link}/{est}/u{i}", float(means[(link, est, i)]), thr)
        for (link, est, i), (kind, thr) in BATTERY_THRESHOLDS.items()
    ]
    bad = sum(not c.ok for c in checks)
    if res.config["d"] != 100 or alpha != 50:
        detail = f"thresholds are the card's for d = 100, n/d = 50; this run has d = {res.config['d']}, n/d = {alpha:g}"
        return v.undecided(detail, bad, 0, 0)
    detail = f"{len(checks) - bad}/{len(checks)} cells as predicted (means over {res.config['battery_seeds']} seeds)"
    return v.all_of(*checks, measured=bad, tolerance=0, detail=detail)


S_FAILURES = (
    "Population zeros stay zeros: in every predicted-zero cell the capture gains at most 0.15 from n/d = 20 "
    "to n/d = 50."
)


def _zero_gains(res, v) -> tuple[pd.DataFrame, pd.DataFrame, float, float]:
    """The predicted-zero rows of the battery and their gains from the smaller n/d to the larger, paired by seed (both
    n/d are fitted on nested samples of one model): per cell, the mean, standard deviation and count over seeds."""
    battery = res.table("battery")
    lo, hi = min(res.config["alphas"]), max(res.config["alphas"])
    zero = battery[~battery["predicted"].astype(bool)]
    v.column(zero, "capture")
    wide = zero.pivot_table(index=["link", "estimator", "direction", "seed"], columns="alpha", values="capture")
    per_seed = wide[hi] - wide[lo]
    return zero, per_seed.groupby(level=["link", "estimator", "direction"]).agg(["mean", "std", "count"]), lo, hi


@claims.add("failures-do-not-improve", S_FAILURES, REF + ", population zeros", departures=BATTERY_SEEDS)
def judge_failures(res: Result, v: Judgement) -> Verdict:
    _, gains, lo, hi = _zero_gains(res, v)
    worst_key = gains["mean"].idxmax()
    worst = float(gains.loc[worst_key, "mean"])
    count = int(gains.loc[worst_key, "count"])
    se = float(gains.loc[worst_key, "std"] / np.sqrt(count)) if count > 1 else float("nan")
    cells = pd.Series(gains["mean"].to_numpy(), index=[f"{k[0]}/{k[1]}/u{k[2]}" for k in gains.index])
    detail = (
        f"{len(gains)} predicted-zero cells, n/d {lo:g} -> {hi:g}; largest seed-mean gain {worst:+.3f} ± "
        f"{se:.3f} (SE over {count} paired seeds) at {worst_key[0]}/{worst_key[1]}/u{worst_key[2]}"
    )
    return v.at_most(cells, 0.15, name="seed-mean gain", tolerance=0.15, detail=detail)


S_FLOOR = (
    "Ours: pHd on D = He3(z1), blind in population but with anisotropic noise that gives it a capture floor far "
    "above chance, stays at n/d = 50 below that floor's n -> infinity value at this d (Gaussian-limit theory, "
    "theory.sdr.phd_noise_floor)."
)


@claims.add("phd-noise-floor", S_FLOOR, "ours: the finite-d noise floor of a blind pHd", departures=BATTERY_SEEDS)
def judge_floor(res: Result, v: Judgement) -> Verdict:
    zero, _, _, hi = _zero_gains(res, v)
    floor = res.table("noise_floor").iloc[0]
    bound = v.finite(floor["floor"], "pHd noise floor")
    phd_d = float(
        zero[(zero["link"] == "he3") & (zero["estimator"] == "pHd") & (zero["alpha"] == hi)]["capture"].mean()
    )
    detail = (
        f"pHd on D at n/d = {hi:g}: {phd_d:.3f} (seed mean) against its blind noise floor "
        f"{bound:.3f} ± {floor['se']:.3f} (n -> infinity at d = {int(floor['d'])}). pHd on D drifts up towards "
        "that floor (+0.09 per seed from 20 to 50 over 200 seeds at d = 100; the u1 row of its noise has "
        f"variance {floor['u1k']:.0f} against {floor['kl']:.0f} in the bulk)"
    )
    return v.at_most(phd_d, bound, name="pHd capture on D", detail=detail)


S_COLLAPSE = (
    "Sample complexity n ∝ d when the generative exponent is <= 2: for pHd on B and SIR on D the seed-mean "
    "capture at fixed n/d in {5, 10, 20} differs by <= 0.12 across d, and is >= 0.75 at n/d = 20."
)


def _collapse(res, v, judged: tuple[tuple[str, str], ...]) -> tuple[list, list, pd.Series]:
    """``(spreads, floors, means)`` of the ``judged`` (link, estimator) pairs: the spread across d of the seed-mean
    capture at each n/d in {5, 10, 20} and the lowest one at n/d = 20, each with where it was measured."""
    col = res.table("collapse")
    missing = {5.0, 10.0, 20.0} - set(col["alpha"])
    if missing:
        raise Undecided(f"this config has no n/d = {', '.join(f'{a:g}' for a in sorted(missing))} in 'collapse_alphas'")
    v.column(col, "capture")
    means = col.groupby(["link", "estimator", "alpha", "d"])["capture"].mean()
    spreads, floors = [], []
    for link, est in judged:
        for alpha in (5.0, 10.0, 20.0):
            vals = means[(link, est, alpha)]
            spreads.append((float(vals.max() - vals.min()), f"{est}/{link} at {alpha:g}"))
        floors.append((float(means[(link, est, 20.0)].min()), f"{est}/{link}"))
    return spreads, floors, means


def _collapse_verdict(v, spreads: list, floors: list, extra: str = "") -> Verdict:
    spread, where = max(spreads)
    floor, fwhere = min(floors)
    detail = (
        f"largest spread across d: {spread:.3f} ({where}); lowest capture at n/d = 20: {floor:.3f} ({fwhere}){extra}"
    )
    return v.all_of(
        Check.at_most("spread across d", spread, 0.12),
        Check.at_least("lowest seed-mean capture at n/d = 20", floor, 0.75),
        detail=detail,
    )


RAW_PHD_DRIFT = KnownFailure.on_some_seeds(
    1,
    10,
    [4],
    "raw pHd's unbounded label makes the top noise eigenvalue grow like max y / "
    "alpha ~ 2 log(n) / alpha, so its capture at fixed n/d falls with d (seed 4 at n/d = 5: 0.546, 0.548, 0.416 at "
    "d = 50, 100, 200, spread 0.132 > 0.12; seed 0: 0.572, 0.540, 0.495); with the label clipped it holds "
    "(proportional-collapse-clipped)",
    presets=["quick"],
)


@claims.add(
    "proportional-collapse",
    S_COLLAPSE,
    REF + ", sample complexity n ∝ d",
    departures=COLLAPSE_SIZES,
    known=RAW_PHD_DRIFT,
)
def judge_collapse(res: Result, v: Judgement) -> Verdict:
    spreads, floors, means = _collapse(res, v, (("he2", "pHd"), ("he3", "SIR")))
    raw = "; raw pHd on B at n/d = 5: " + ", ".join(f"d={d}: {x:.3f}" for d, x in means[("he2", "pHd", 5.0)].items())
    return _collapse_verdict(v, spreads, floors, raw)


S_COLLAPSE_CLIP = (
    "Ours: the same collapse with pHd on B fed the label clipped at 3 (the bounded preprocessing the "
    "proportional-limit theory assumes) and SIR on D: spread across d <= 0.12 at n/d in {5, 10, 20}, "
    ">= 0.75 at n/d = 20. Raw pHd's unbounded label makes the largest noise eigenvalue grow like "
    "max y / alpha ~ 2 log(n) / alpha, so its capture at fixed n/d falls slowly with d (0.59, 0.54, "
    "0.51, 0.40 at d = 50-400, n/d = 5)."
)


JUDGED_COLLAPSE = (("he2", "pHd-clip"), ("he3", "SIR"))


@claims.add(
    "proportional-collapse-clipped",
    S_COLLAPSE_CLIP,
    "ours: " + REF + ", sample complexity n ∝ d with a bounded label",
    departures=COLLAPSE_SIZES,
)
def judge_collapse_clipped(res: Result, v: Judgement) -> Verdict:
    spreads, floors, _ = _collapse(res, v, JUDGED_COLLAPSE)
    return _collapse_verdict(v, spreads, floors)


S_POPULATION = (
    "Monte Carlo population matrices (n = 1e6, d = 5) match Stein's predictions: pHd equals E[hess g] entry by entry, "
    "and SIR/SAVE are zero exactly in the directions the table says they miss (within 4 standard errors)."
)


@claims.add("population-matrices", S_POPULATION, REF + ", Stein's identity")
def judge_population(res: Result, v: Judgement) -> Verdict:
    pop = res.table("population")
    for col in ("measured", "se"):
        v.column(pop, col)
    v.column(pop[pop["method"] == "pHd"], "expected")
    phd = pop[pop["method"] == "pHd"]
    z_phd = ((phd["measured"] - phd["expected"]).abs() / phd["se"]).max()
    sliced = pop[pop["method"] != "pHd"]
    if phd.empty or sliced.empty:  # a method with no row was not checked: never a pass
        return v.failed(
            0,
            0,
            "4 SE",
            f"the 'population' table has {len(phd)} pHd and {len(sliced)} SIR/SAVE rows; each needs at least one",
        )
    # |measured - E[hess g]| <= 4 SE per entry, as its excess over 4 SE (a - b <= 0 exactly when a <= b)
    excess = ((phd["measured"] - phd["expected"]).abs() - 4 * phd["se"]).set_axis(
        [f"pHd {r.link}[{r.entry}]" for r in phd.itertuples()]
    )
    z = pd.Series(
        [r.measured / r.se for r in sliced.itertuples()],  # per row, as Python floats: a zero SE raises
        index=[f"{r.method} {r.link} {r.entry}" for r in sliced.itertuples()],
        dtype=float,
    )
    nonzero = sliced["predicted_nonzero"].astype(bool).to_numpy()
    checks = [Check.at_most("pHd |measured - E[hess g]| - 4 SE", excess, 0.0)]
    if nonzero.any():
        checks.append(Check.at_least("measured / SE where predicted nonzero", z[nonzero], 4))
    if (~nonzero).any():
        checks.append(Check.at_most("|measured / SE| where predicted zero", z[~nonzero].abs(), 4))
    missed = [name for c in checks for name in _misses(c)]
    detail = f"pHd: largest |measured - E[hess g]| / SE = {z_phd:.2f}; {len(sliced)} SIR/SAVE diagonal checks" + (
        f"; failing ({len(missed)}): " + "; ".join(missed[:6]) if missed else "; all as predicted"
    )
    return v.all_of(*checks, measured=len(missed), tolerance="4 SE", detail=detail)


S_STATSMODELS = (
    "Our SIR and SAVE span the same subspaces as statsmodels' SlicedInverseReg and SAVE with the same slicing (link A, "
    "d = 20, n = 2000): largest principal angle <= 1e-6 rad."
)


@claims.add("statsmodels-agreement", S_STATSMODELS, "statsmodels.regression.dimred (reference implementation)")
def judge_statsmodels(res: Result, v: Judgement) -> Verdict:
    t = res.table("statsmodels", unless='statsmodels is not installed here (pip install "theorylab[stats]")')
    detail = ", ".join(f"{r.method}: {r.max_angle:.1e} rad" for r in t.itertuples())
    angles = v.column(t, "max_angle")
    return v.at_most(
        pd.Series(angles.to_numpy(), index=t["method"]),
        1e-6,
        name="largest principal angle (rad)",
        tolerance=1e-6,
        detail=detail,
    )


S_GAP = (
    "Label transformations change the exponent: on D = He3(z1) ADE and pHd stay <= 0.5 up to n/d = 100, SIR crosses "
    "0.5 at n ∝ d (fitted exponent <= 1.25), while the naive order-3 tensor method needs n ∝ d^{1.5-2} (exponent "
    ">= 1.4)."
)


@claims.add(
    "information-gap",
    S_GAP,
    REF + ", label transformations and the generative exponent",
    decided_by="cpu",
    departures=[
        Departure.field_value("gap_seeds", 20, "CPU budget of the sweep"),
        Departure.field_value(
            "gap_dims",
            (50, 100, 200, 400),
            "cpu preset: the exponents are fitted over d = 50..200; "
            "d = 400 (its order-3 V-statistic at n/d up to 100) does not fit 10 min on 2 cores",
            presets=["cpu"],
        ),
        "SIR exponent <= 1.25, tensor exponent >= 1.4 with no upper bound (card: n ∝ d vs n ∝ d^1.5-2, no tolerance "
        "stated): tolerances ours",
    ],
)
def judge_gap(res: Result, v: Judgement) -> Verdict:
    gap = res.table(
        "gap",
        unless="needs the cpu preset (this config skips the information-gap sweep on D: gap_dims/gap_alphas empty)",
    )
    v.column(gap, "capture")
    blind = gap[gap["estimator"].isin(["ADE", "pHd"])].groupby(["estimator", "d", "alpha"])["capture"].mean()
    worst_blind = float(blind.max())
    e_sir = fitted_exponent(_crossings(gap[gap["estimator"] == "SIR"]))
    e_tensor = fitted_exponent(_crossings(gap[gap["estimator"] == "order-3 V-stat"]))
    if e_sir is None or e_tensor is None:
        return v.undecided(
            f"needs crossings of 0.5 at >= 2 dimensions for SIR and the tensor method (exponents: {e_sir}, {e_tensor})"
        )
    return v.all_of(
        Check.at_least("order-3 V-stat exponent", e_tensor, 1.4),
        Check.at_most("SIR exponent", e_sir, 1.25),
        Check.at_most("ADE/pHd max seed-mean capture", worst_blind, 0.5),
        detail=f"ADE/pHd max seed-mean capture {worst_blind:.3f}; SIR exponent {e_sir:.2f}; order-3 V-stat exponent "
        f"{e_tensor:.2f}",
    )


S_NN = (
    "A two-layer ReLU net (width 64) trained by online SGD on B = He2(z1) at d = 100 recovers u1 in its "
    "first-layer top singular vector "
    "(capture >= 0.8, from about 1/d at initialisation) by n/d = 200 (threshold ours)."
)


@claims.add("nn-gd-row", S_NN, REF + ", neural networks trained by gradient descent")
def judge_nn(res: Result, v: Judgement) -> Verdict:
    t = res.table("nn_row", unless="this config does not train the two-layer net (nn_alphas empty)")
    init = t[t["alpha"] == 0]
    trained = t[(t["alpha"] > 0) & (t["alpha"] <= 200)]
    if trained.empty:
        return v.undecided("this config has no checkpoint of the net at n/d <= 200 in 'nn_alphas'")
    v.column(t, "capture")
    best = float(trained["capture"].max())
    start = float(init["capture"].iloc[0]) if len(init) else float("nan")
    detail = (
        f"at initialisation {start:.3f}; "
        + ", ".join(f"n/d={r.alpha:g}: {r.capture:.3f}" for r in trained.itertuples())
        + f" (d = {res.config['d']}, width {res.config['nn_width']})"
    )
    return v.all_of(
        Check.at_least("best capture by n/d = 200", best, 0.8),
        # Trained, not born aligned: the initial top singular vector is a random direction (capture ~ 1/d); a
        # missing initial checkpoint (NaN) fails.
        Check.holds("capture at initialisation < 0.5", start < 0.5),
        detail=detail,
    )
