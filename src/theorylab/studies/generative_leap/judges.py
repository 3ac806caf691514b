"""generative-leap: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure
from theorylab.core.errors import Undecided
from theorylab.theory.generative import P3_TRIPLE
from theorylab.theory.sample_complexity import crossings_from_table, fitted_exponent

REF = "arXiv 2506.05500"


def _crossings(table: pd.DataFrame, level: float = 0.5) -> dict[int, float]:
    """Per d, the n at which the seed-mean overlap first reaches ``level``; d whose smallest n is already there are left
    out."""
    return crossings_from_table(table, "n", "overlap", level, skip_started=True)


claims = Claims("generative-leap")


S_P3 = (
    "For the 3-parity every order-1 and order-2 moment of y vanishes, and E[y z1 z2 z3] = (2/pi)^{3/2} ≈ 0.5079 (Monte "
    "Carlo, 1e6 samples, within 4 SE)."
)


@claims.add("p3-moments", S_P3, REF + ", the 3-parity's moments")
def judge_p3_moments(res: Result, v: Judgement) -> Verdict:
    t = res.table("moments")
    t = t[t["link"] == "parity3"].assign(z=lambda f: (f["measured"] - f["expected"]).abs() / f["se"])
    v.column(t, "z")
    worst = t.loc[t["z"].idxmax()]
    triple = t[t["moment"] == "E[y z1 z2 z3]"].iloc[0]
    detail = (
        f"{len(t)} moments; largest deviation {worst['z']:.2f} SE ({worst['moment']}); E[y z1 z2 z3] = "
        f"{triple['measured']:.4f} ± {triple['se']:.4f} vs {P3_TRIPLE:.4f}"
    )
    return v.at_most(t.set_index("moment")["z"], 4, name="|measured - expected| / SE", tolerance="4 SE", detail=detail)


S_M3 = (
    "For the monomial y = z1 z2 z3, E[(y^2 - 1)(z1^2 - 1)] = 2: a label transform exposes an order-2 signal (Monte "
    "Carlo, within 4 SE)."
)


@claims.add("m3-moment", S_M3, REF + ", label transforms lower the exponent")
def judge_m3_moment(res: Result, v: Judgement) -> Verdict:
    row = res.table("moments").query("link == 'z1z2z3'").iloc[0]
    z = abs(row["measured"] - 2.0) / row["se"]
    detail = f"{row['measured']:.4f} ± {row['se']:.4f} vs 2 ({z:.2f} SE)"
    return v.all_of(
        Check.at_most("|measured - 2| / SE", z, 4), measured=float(row["measured"]), tolerance="4 SE", detail=detail
    )


S_LEAP = (
    "Computed from samples, the first-stage generative leap is 3 for the 3-parity and 2 for z1 z2 z3 (4 for the "
    "4-parity at the paper preset): the smallest k whose conditional Hermite tensor E[He_k(z) | y] is nonzero."
)


@claims.add("leap-values", S_LEAP, REF + ", definition of the generative leap (first stage; reconstructed)")
def judge_leaps(res: Result, v: Judgement) -> Verdict:
    t = res.table("leaps")
    found = t.groupby("link")[["leap", "known"]].first()
    if found.empty:  # no link measured: nothing shown (an empty table must not read as "no wrong leap")
        return v.failed(0, ">= 1 link", 0, "the 'leaps' table has no link")
    bad = [f"{link}: {int(r.leap)} (known {int(r.known)})" for link, r in found.iterrows() if r.leap != r.known]
    detail = ", ".join(f"{link}: k* = {int(r.leap)}" for link, r in found.iterrows()) + (
        f"; wrong: {', '.join(bad)}" if bad else ""
    )
    zs = t.pivot(index="link", columns="k", values="z_score").round(1).to_dict("index")
    return v.at_most(len(bad), 0, name="links with a wrong leap", tolerance=0, detail=detail + f"; z-scores by k: {zs}")


S_SEQ = (
    "The agnostic sequential spectral estimator (orders 1-3, no knowledge of the link) needs exactly order k* and "
    "recovers the whole index space "
    "(overlap >= 0.9, no extra direction) on each leap link, for every seed (ours: a check of our estimator "
    "against the known first-stage leaps on one-stage links; the card's multi-stage link is sequential-leap)."
)


@claims.add("sequential-estimator", S_SEQ, REF + ", agnostic sequential estimation (our reconstruction)")
def judge_sequential(res: Result, v: Judgement) -> Verdict:
    t = res.table("sequential")
    known = t["known"].astype(int)
    testable = t[known <= 3]  # our estimator stops at order 3
    if testable.empty:
        return v.undecided("this config has no link with k* <= 3 in 'leap_links' (the estimator stops at order 3)")
    v.column(testable, "overlap")  # a NaN overlap is not "< 0.9": it would pass as a good seed
    bad = testable[
        (testable["leap"] != testable["known"]) | (testable["found"] != testable["r"]) | (testable["overlap"] < 0.9)
    ]
    detail = "; ".join(f"{r.link} seed {r.seed}: {r.stages} (overlap {r.overlap:.3f})" for r in testable.itertuples())
    return v.at_most(len(bad), 0, name="seeds with a wrong leap, found or overlap", tolerance=0, detail=detail)


S_STAGED = (
    "Two-stage link y = sign(z1) sign(z2^2 - 1) (ours; the card's multi-stage link, degree 1 then degree 2 given x_S): "
    "its stage moments match their exact values (within 4 SE: E[y z1] != 0 at degree 1; every order-1 and order-2 "
    "moment of z2 given y alone is 0; E[y sign(z1)(z2^2 - 1)] = E|z2^2 - 1| given z1), so its generative leap is "
    "k* = max(1, 2) = 2 and n ∝ d suffices. At n = alpha d, alpha the largest of the grid, the sequential estimator "
    "(orders <= 2) finds the stages the theory gives (k = 1 then k = 2, one direction each, nothing more) on >= 80% of "
    "seeds at every d, and recovers the whole space with the collapse in n/d of m3-linear (seed-mean overlap >= 0.85 "
    "at every d, spread <= 0.1 across d); the single-stage order-2 estimator (SAVE on y) misses z2 (seed-mean capture "
    "<= 0.3); and the control sign(z1) sign(z2^2 - m), m the median of chi^2_1 (no degree-1 stage: k* = 3), gives "
    "the same estimator nothing (seed-mean overlap <= 0.3)."
)
STAGED_LINK = Departure.of(
    "the two-stage link sign(z1) sign(z2^2 - 1) is ours (card: 'pick the link from the paper')",
    "the paper's multi-stage examples could not be read here (arXiv 2506.05500: abstract only); this link has the "
    "card's structure (degree 1, then degree 2 given x_S) and, being +-1, cannot leak the hidden sign through |y|",
)


@claims.add(
    "sequential-leap",
    S_STAGED,
    REF + ", the generative leap of a multi-stage link (sequential estimation; reconstructed)",
    departures=[STAGED_LINK],
)
def judge_staged(res: Result, v: Judgement) -> Verdict:
    mom = res.table("staged_moments").assign(z=lambda f: (f["measured"] - f["expected"]).abs() / f["se"])
    t = res.table("staged").assign(two_stages=lambda f: f["stages"] == "k=1:1;k=2:1")
    alpha = float(t["alpha"].max())
    at = t[t["alpha"] == alpha]
    staged, control = at[at["role"] == "staged"], at[at["role"] == "control"]
    if staged.empty or control.empty:
        return v.undecided("this run has no staged or control rows at the largest alpha")
    v.column(staged, "overlap")
    v.column(staged, "single_stage_z2")  # a group mean would skip a NaN seed
    v.column(control, "overlap")
    rate = staged.groupby("d")["two_stages"].mean()
    mean = staged.groupby("d")["overlap"].mean()
    spread = float(mean.max() - mean.min())
    single = staged.groupby("d")["single_stage_z2"].mean()
    ctrl = control.groupby("d")["overlap"].mean()
    worst_z = float(mom["z"].max())
    others = t[(t["alpha"] != alpha) & (t["role"] == "staged")].groupby(["alpha", "d"])["overlap"].mean()
    detail = (
        f"stage moments: largest deviation {worst_z:.2f} SE over {len(mom)} (need <= 4); at n = {alpha:g} d by d: "
        "stages k=1:1;k=2:1 on " + ", ".join(f"{d}: {r:.0%}" for d, r in rate.items()) + " of seeds (need >= 80%); "
        "seed-mean overlap "
        + ", ".join(f"{d}: {x:.3f}" for d, x in mean.items())
        + f" (need >= 0.85), spread {spread:.3f} (need <= 0.1); single-stage SAVE capture of z2: "
        + ", ".join(f"{d}: {x:.3f}" for d, x in single.items())
        + " (need <= 0.3); control overlap: "
        + ", ".join(f"{d}: {x:.3f}" for d, x in ctrl.items())
        + " (need <= 0.3); reported, seed-mean overlap at "
        "smaller alpha: "
        + ", ".join(f"alpha {a:g} d {d}: {x:.3f}" for (a, d), x in others.items())
        + f"; {staged['seed'].nunique()} seeds per point"
    )
    return v.all_of(
        Check.at_least("seed-mean overlap", mean, 0.85),
        Check.at_most("stage-moment deviation (SE)", mom["z"], 4),
        Check.at_least("share of seeds with stages k=1:1;k=2:1", rate, 0.8),
        Check.at_most("spread of the seed-mean overlap across d", spread, 0.1),
        Check.at_most("single-stage SAVE capture of z2", single, 0.3),
        Check.at_most("control overlap", ctrl, 0.3),
        measured=float(mean.min()),
        detail=detail,
    )


S_COLLAPSE = (
    "3-parity (k* = 3): the order-3 U-statistic's seed-mean overlap collapses in c = n/d^{3/2}: >= 0.85 at c = 16 for "
    "every d, spread <= 0.15 across d at c = 8, and <= 0.5 at c = 2."
)


@claims.add("u-stat-collapse", S_COLLAPSE, REF + ", sufficiency of the spectral U-statistic")
def judge_u_collapse(res: Result, v: Judgement) -> Verdict:
    t = res.table("parity")
    v.column(t[t["statistic"] == "U"], "overlap")
    u = t[t["statistic"] == "U"].groupby(["c", "d"])["overlap"].mean()
    cs = set(u.index.get_level_values(0))
    if not {2.0, 8.0, 16.0} <= cs:
        return v.undecided(
            f"this config has no c = {', '.join(f'{c:g}' for c in sorted({2.0, 8.0, 16.0} - cs))} in 'parity_c'"
        )
    high, mid, low = u[16.0], u[8.0], u[2.0]
    spread = float(mid.max() - mid.min())
    detail = (
        f"c=16: min {high.min():.3f} (need >= 0.85); c=8: {', '.join(f'd={d}: {v:.3f}' for d, v in mid.items())}, "
        f"spread {spread:.3f} (need <= 0.15); c=2: max {low.max():.3f} (need <= 0.5)"
    )
    return v.all_of(
        Check.at_most("spread across d at c = 8", spread, 0.15),
        Check.at_least("seed-mean overlap at c = 16", high, 0.85),
        Check.at_most("seed-mean overlap at c = 2", low, 0.5),
        detail=detail,
    )


S_BLIND = (
    "Order-2 methods are blind to the 3-parity: at d = 32, n = 16 d^{3/2}, the order-2 estimator's overlap stays <= "
    "0.3 (chance 3/32), whatever the label transform."
)


@claims.add("order2-blind", S_BLIND, REF + ", necessity (low-degree lower bound)")
def judge_order2_blind(res: Result, v: Judgement) -> Verdict:
    t = res.table("order2").query("link == 'parity3'")
    worst = float(v.column(t, "overlap").max())
    detail = (
        f"overlaps over {len(t)} seeds: "
        + ", ".join(f"{v:.3f}" for v in t["overlap"])
        + f" (need <= 0.3; chance {3 / t['d'].iloc[0]:.3f})"
    )
    return v.at_most(worst, 0.3, tolerance=0.3, detail=detail)


S_M3_LINEAR = (
    "Monomial z1 z2 z3 (information exponent 3, k* = 2): the order-2 estimator on log|y| reaches seed-mean "
    "overlap >= 0.85 at n/d = 40 for every d, and its curves collapse in n/d: spread <= 0.1 across d at "
    "n/d = 10, 20 and 40 (n ∝ d holds for k* = 2 even though the information exponent is 3)."
)
M3_SEEDS = Departure.field_value(
    "monomial_seeds", 3, "at d = 32 an overlap is near 1/3, 2/3 or 1, so 3 seeds leave ±0.1 on the mean; 32 leave ±0.02"
)
M3_KNOWN = KnownFailure.on_every_seed(
    "n/d = 10 lies below the order-2 estimator's spectral threshold, where the proportional-limit overlap is 0 and "
    "finite-d overlaps fall slowly with d (0.50, 0.43, 0.35, 0.22, 0.13 at d = 32, 64, 128, 256, 512; 40 seeds "
    "each): the spread across d at n/d = 10 exceeds 0.1 (0.159 at seed 0 of quick) and grows with the d grid. Above "
    "the threshold the curves do collapse: m3-linear-above-threshold"
)
M3_JUDGED = (20.0, 40.0)  # above the spectral threshold (fixed from the d-trend above, not from this run)


def _m3_verdict(res, v, judged: tuple[float, ...]) -> Verdict:
    """min over d of the seed-mean overlap at n/d = 40 (>= 0.85) and its spread across d at each n/d in ``judged``."""
    t = res.table("order2").query("link == 'z1z2z3'")
    v.column(t, "overlap")
    means = t.groupby(["alpha", "d"])["overlap"].mean()
    alphas = sorted(set(means.index.get_level_values(0)))
    missing = [a for a in (*judged, 40.0) if a not in alphas]
    if missing:
        raise Undecided(f"this config has no n/d = {', '.join(f'{a:g}' for a in missing)} in 'monomial_alphas'")
    top = means[40.0]
    spreads = {a: float(means[a].max() - means[a].min()) for a in alphas}
    others = [a for a in alphas if a not in judged]
    detail = (
        f"n/d = 40: min over d {top.min():.3f} (need >= 0.85); spread across d: "
        + ", ".join(f"{a:g}: {spreads[a]:.3f}" for a in judged)
        + " (need <= 0.1)"
        + "".join(
            f"; reported, n/d = {a:g}: spread {spreads[a]:.3f}, by d "
            + ", ".join(f"{d}: {x:.3f}" for d, x in means[a].items())
            for a in others
        )
        + f"; {t['seed'].nunique()} seeds per point"
    )
    return v.at_most(
        [spreads[a] for a in judged],
        0.1,
        name="spread across d",
        tolerance=0.1,
        also=float(top.min()) >= 0.85,
        detail=detail,
    )


@claims.add("m3-linear", S_M3_LINEAR, REF + ", k* = 2 gives n ∝ d", departures=[M3_SEEDS], known=M3_KNOWN)
def judge_m3_linear(res: Result, v: Judgement) -> Verdict:
    return _m3_verdict(res, v, (10.0, *M3_JUDGED))


S_M3_ABOVE = (
    "Ours: the card's m3-linear above the estimator's spectral threshold: seed-mean overlap >= 0.85 at "
    "n/d = 40 for every d and spread <= 0.1 across d at n/d = 20 and 40 (the card's n/d = 10 lies below the "
    "threshold, where overlaps fall with d; reported)."
)


@claims.add(
    "m3-linear-above-threshold",
    S_M3_ABOVE,
    "ours, after " + REF + ": the collapse above the spectral "
    "threshold (Damian et al.'s order-2 estimator needs n/d above it)",
    departures=[M3_SEEDS],
)
def judge_m3_above(res: Result, v: Judgement) -> Verdict:
    return _m3_verdict(res, v, M3_JUDGED)


S_U_BEATS_V = (
    "Removing the diagonal does not hurt: at c = 8 the U-statistic's seed-mean overlap is >= the V-statistic's for "
    "every d."
)


@claims.add("u-beats-v", S_U_BEATS_V, REF + ", U- vs V-statistic")
def judge_u_beats_v(res: Result, v: Judgement) -> Verdict:
    t = res.table("parity")
    at = t[t["c"] == 8.0].groupby(["d", "statistic"])["overlap"].mean().unstack()
    if at.empty:
        return v.undecided("this config has no c = 8 in 'parity_c'")
    v.column(t[t["c"] == 8.0], "overlap")
    margin = float((at["U"] - at["V"]).min())
    detail = ", ".join(f"d={d}: U {r.U:.3f} vs V {r.V:.3f}" for d, r in at.iterrows())
    return v.at_least(margin, 0, tolerance=0, detail=detail)


S_EXPONENTS = (
    "Fitted exponent of the crossing n (overlap 0.5) against d: 1.5 ± 0.2 for the 3-parity U-statistic (n ∝ "
    "d^{k*/2}), >= 1.75 for the V-statistic, and 2.0 ± 0.25 for the 4-parity with its order-4 U-statistic."
)


@claims.add(
    "exponents",
    S_EXPONENTS,
    REF + ", n = Θ(d^{k*/2})",
    decided_by="cpu",
    departures=[
        Departure.field_value(
            "parity_dims",
            (32, 64, 128, 256),
            "cpu preset: d = 256 needs n up to 64 d^1.5 = 2.6e5 in "
            "an n^2 kernel (a GPU); the fit runs over d = 32..128",
            presets=["cpu"],
        ),
        Departure.field_value(
            "parity_c",
            (2.0, 8.0, 16.0),
            "cpu preset: the card's grid refined (c = 1..16 in eight "
            "steps) so that the crossings of 0.5 are interpolated between close points",
            presets=["cpu"],
        ),
        Departure.of(
            "4-parity: n = c d^2 with c = 1..8, so n <= 18432 (card: n up to 1e6) and 3 seeds (card: 10)",
            "the order-4 U-statistic crosses 0.5 near c = 4 at every d (measured), so larger n only add points "
            "above the crossing; 1e6 samples in an n^2 kernel need a GPU",
            presets=["cpu"],
        ),
    ],
)
def judge_exponents(res: Result, v: Judgement) -> Verdict:
    t = res.table("parity")
    exps = {}
    for stat in ("U", "V"):
        cross = _crossings(t[t["statistic"] == stat])
        if len(cross) >= 3 and max(cross) >= 128:
            exps[stat] = fitted_exponent(cross)
    p4 = res.table("parity4") if "parity4" in res.tables else pd.DataFrame(columns=["statistic"])
    cross4 = {s: _crossings(p4[p4["statistic"] == s]) if not p4.empty else {} for s in ("U", "V")}
    if len(exps) < 2 or len(cross4["U"]) < 3:
        return v.undecided(
            "needs the cpu preset (3-parity crossings of 0.5 at >= 3 dimensions up to d >= 128, 4-parity "
            "crossings at >= 3 dimensions)"
        )
    exps["P4"] = fitted_exponent(cross4["U"])
    parts = {
        "U": Check.at_most("|3-parity U exponent - 1.5|", abs(exps["U"] - 1.5), 0.2),
        "V": Check.at_least("3-parity V exponent", exps["V"], 1.75),
        "P4": Check.at_most("|4-parity U exponent - 2|", abs(exps["P4"] - 2.0), 0.25),
    }
    mark = {k: "holds" if c.ok else "FAILS" for k, c in parts.items()}
    v4 = (
        f"; reported, 4-parity V-statistic: {fitted_exponent(cross4['V']):.2f} (theory d^{{k*-1}} = d^3)"
        if len(cross4["V"]) >= 3
        else "; reported, 4-parity V-statistic: fewer than 3 crossings (it needs n ∝ d^3)"
    )
    detail = (
        f"3-parity U: {exps['U']:.2f} (need 1.5 ± 0.2: {mark['U']}); 3-parity V: {exps['V']:.2f} (need >= 1.75: "
        f"{mark['V']}); 4-parity U (order 4): {exps['P4']:.2f} (need 2.0 ± 0.25: {mark['P4']}), crossings "
        + ", ".join(f"d={d}: n={n:.0f}" for d, n in sorted(cross4["U"].items()))
        + v4
    )
    return v.all_of(*parts.values(), measured=exps["U"], detail=detail)
