"""multi-index-gradient-flow: its claims, judged from a run's tables and config."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from theorylab.core import Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure

REF = "Bietti, Bruna & Pillaud-Vivien, arXiv 2310.19793"
claims = Claims("multi-index-gradient-flow")


def _slope(x, y) -> float:
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def _labelled(values, labels) -> pd.Series:
    """Values named by their rows, so that a judged NaN or the worst value says which run it was."""
    return pd.Series(np.asarray(values, float), index=list(labels))


# The basis-free first exit (docs: "Plateau exits are basis-free"): the card's |M_11| >= 1/2.
FIRST_EXIT = Departure.of(
    "first exit at ||M_1,:|| >= 1/2 (card: |M_11| >= 1/2)",
    "Phi is invariant under M -> MQ, so |M_11| depends on the student basis and for some starts never reaches 1/2; "
    "||M_1,:|| is the cosine between w*_1 and span(W) (= |m| for r = 1)",
)
# Claims 4-5 are judged from r2_start; the seed-free start is kept as an option, declared when used.
START = Departure.field_value(
    "r2_start",
    "gaussian",
    "M(0) = I/sqrt(d) is seed-free (card: seeded Gaussian M(0), entries N(0, 1/d)), so a seed sweep says nothing "
    "about the claim",
)


S_SEMIGROUP = (
    "The averaging operator A_M g(z) = E g(Mz + (I - MM^T)^{1/2} xi) is a semigroup, A_{M1} A_{M2} = "
    "A_{M2 M1}, for random contractions (r = 2, ||M||_op <= 0.9) and a random degree-4 polynomial at 50 "
    "points, by 20-node-per-axis Gauss-Hermite quadrature to 1e-10; and A_m He_k = m^k He_k for k <= 6."
)


@claims.add("semigroup", S_SEMIGROUP, REF + ", semigroup of A_M (Sec. 3)")
def judge_semigroup(res: Result, v: Judgement) -> Verdict:
    t = res.table("semigroup")
    sg, he = t[t["check"] == "semigroup"], t[t["check"] == "hermite-1d"]
    if sg.empty or he.empty:
        return v.failed(math.nan, "<= 1e-10", 1e-10, "missing semigroup or Hermite rows")
    # other_order_gap is NaN on the Hermite rows by construction (no second operator there); it is read on the
    # semigroup rows only, where a NaN fails the claim.
    gap = float(v.column(sg, "other_order_gap").max())
    errors = pd.concat(
        [
            _labelled(v.column(sg, "error"), (f"semigroup point {p}" for p in sg["point"])),
            _labelled(v.column(he, "error"), (f"A_m He_{k}" for k in he["k"])),
        ]
    )
    kmax = int(he["k"].max())
    return v.at_most(
        errors,
        1e-10,
        name="quadrature error",
        tolerance=1e-10,
        also=gap > 1e-6 and kmax >= 6,
        detail=f"{len(sg)} points: largest |A_M1 A_M2 g - A_(M2 M1) g| {sg['error'].max():.2g} (the other "
        f"order A_(M1 M2) differs by up to {gap:.3g}, need > 1e-6, so the check resolves the "
        f"convention); A_m He_k, k = 0..{kmax} (need 6): largest error {he['error'].max():.2g}",
    )


S_LOSS = (
    "For a random W and the staircase link z1 + z1 z2, the population loss of the best link (ridge on degree-4 "
    "Hermite features of W^T x, fitted on 5e5 samples and evaluated on 5e5 others) matches Phi(M) = ||f*||^2 - "
    "||A_M f*||^2 within 4 standard errors + 1e-3."
)


@claims.add("loss-identity", S_LOSS, REF + ", two-timescale loss (reconstructed form)")
def judge_loss(res: Result, v: Judgement) -> Verdict:
    r = res.table("loss_identity").iloc[0]
    est, phi_m, se = (v.finite(r[c], c) for c in ("estimate", "phi", "se"))
    tol = 4 * se + 1e-3
    return v.at_most(
        abs(est - phi_m),
        tol,
        name="|estimate - Phi(M)|",
        tolerance=float(tol),
        expected=f"<= 4 se + 1e-3 = {tol:.3g}",
        detail=f"Monte Carlo {est:.5f} ± {se:.5f} vs Phi(M) = {phi_m:.5f} (d = {r['d']}, singular values "
        f"of M {r['sigma_max']:.3f}, {r['sigma_min']:.3f})",
    )


S_ESCAPE = (
    "For r = 1 and f* = He_k/sqrt(k!), the ODE time from m0 = d^-1/2 to m = 1/2 equals t_k(d) = "
    "int_{1/d}^{1/4} ds/(4k(1-s)s^k) to relative 1e-6; for k = 1 it equals ln((d-1)/3)/4 to 1e-6; the log-log "
    "slope over d = 1e2..1e5 is k - 1 ± 0.02 for k = 2, 3."
)


@claims.add("escape-exponent", S_ESCAPE, REF + ", Hermite timescales (our time normalisation)")
def judge_escape(res: Result, v: Judgement) -> Verdict:
    t = res.table("escape")
    ode = t[t["method"] == "ode"]
    if ode.empty:
        return v.failed(math.nan, "<= 1e-6", 1e-6, "no escape ODE ran")
    # t_ode is NaN when a run never reached m = 1/2: that fails the claim, naming the run
    never = [f"k = {k}, d = {d:g}" for k, d, x in zip(ode["k"], ode["d"], ode["t_ode"]) if np.isnan(x)]
    if never:
        return v.failed(math.nan, "<= 1e-6", 1e-6, "escape runs that never reached m = 1/2: " + "; ".join(never))
    names = [f"k = {k}, d = {d:g}" for k, d in zip(ode["k"], ode["d"])]
    rel = _labelled((ode["t_ode"] / v.column(ode, "t_integral") - 1).abs(), names)
    k1 = ode[ode["k"] == 1]
    rel1 = _labelled((k1["t_ode"] / v.column(k1, "t_asymptotic") - 1).abs(), (f"k = 1, d = {d:g}" for d in k1["d"]))
    slopes = {int(k): _slope(g["d"], g["t_ode"]) for k, g in ode.groupby("k") if k in (2, 3)}
    bad = {k: s for k, s in slopes.items() if not abs(s - (k - 1)) <= 0.02}
    return v.at_most(
        pd.concat([rel, rel1]),
        1e-6,
        name="relative time error",
        tolerance=1e-6,
        expected="<= 1e-6 (and slopes k - 1 ± 0.02)",
        also=not bad and len(slopes) > 0,
        detail=f"{len(ode)} runs: largest |t_ode/t_k - 1| {rel.max():.2g}; k = 1 vs ln((d-1)/3)/4: "
        f"{rel1.max() if len(rel1) else math.nan:.2g}; slopes "
        + (", ".join(f"k = {k}: {s:.4f}" for k, s in slopes.items()) or "none (need k = 2 or 3)"),
    )


def _r2(res, link: str, start: str):
    t = res.table("r2")
    return t[(t["link"] == link) & (t["start"] == start)].sort_values("d")


def _starts(res) -> tuple[str, str]:
    """The judged start (config ``r2_start``; the card's seeded Gaussian by default) and the reported one."""
    judged = res.config.get("r2_start", "gaussian")
    return judged, "identity" if judged == "gaussian" else "gaussian"


def _stuck(frame, what: str) -> str:
    """The runs (by d) whose plateau exit ``what`` is NaN, i.e. never reached before the run's horizon."""
    return ", ".join(f"d = {d:g}" for d, x in zip(frame["d"], frame[what]) if np.isnan(x))


def _draw(res) -> str:
    """The seeded M(0) = G/sqrt(d) in numbers (what makes a draw's plateaus short or long)."""
    sc = res.scalars
    if "M0_row2_sq" not in sc:
        return ""
    return (
        f"; the draw G: |G_1,:|^2 = {sc['M0_row1_sq']:.2f}, |G_2,:|^2 = {sc['M0_row2_sq']:.2f}, sigma_min(G) = "
        f"{sc['M0_sigma_min']:.3f}, cos(G_1,:, G_2,:) = {sc['M0_cos_rows']:+.3f}"
    )


S_STAIR = (
    "For f* = z1 + z1 z2 from the seeded M(0) (entries N(0, 1/d), one draw G scaled by 1/sqrt(d) for every d), "
    "the plateau exits grow at most logarithmically: t(sigma_min(M) >= 1/2) at d = 1e4 is <= 2.5x its value at "
    "d = 1e2 (ln 1e4/ln 1e2 = 2); the first exit (||M_1,:|| >= 1/2) is reported."
)


@claims.add("staircase-log-time", S_STAIR, REF + ", staircase: saddle-to-saddle in O(log d)", departures=[START])
def judge_stair(res: Result, v: Judgement) -> Verdict:
    start, other = _starts(res)
    s, o = _r2(res, "staircase", start), _r2(res, "staircase", other)
    if len(s) < 2:
        return v.failed(math.nan, "<= 2.5", 2.5, f"fewer than two staircase runs from the {start} start")
    stuck = _stuck(s, "t_second") or _stuck(s, "t_first")
    if stuck:
        return v.failed(math.nan, "<= 2.5", 2.5, f"staircase runs ({start} start) that never left a plateau: {stuck}")
    t2 = s["t_second"].to_numpy()
    ratio = float(t2[-1] / t2[0])
    r1 = float(s["t_first"].iloc[-1] / s["t_first"].iloc[0])
    rep = (
        f"; {other} M(0) (report only): ratio {o['t_second'].iloc[-1] / o['t_second'].iloc[0]:.3f}"
        if len(o) >= 2
        else ""
    )
    return v.at_most(
        ratio,
        2.5,
        name=f"t_second(d = {s['d'].iloc[-1]:g})/t_second(d = {s['d'].iloc[0]:g})",
        tolerance=2.5,
        detail=f"{start} M(0): t_second "
        + ", ".join(f"{t:.3f}" for t in t2)
        + " at d = "
        + ", ".join(f"{d:g}" for d in s["d"])
        + " (increments per decade "
        + ", ".join(f"{x:.3f}" for x in np.diff(t2))
        + f"); first-exit ratio {r1:.3f}"
        + rep
        + (_draw(res) if start == "gaussian" else ""),
    )


S_NONSTAIR = (
    "For f* = z1 + He_2(z2)/sqrt(2) from the seeded M(0) (entries N(0, 1/d), one draw G scaled by 1/sqrt(d) "
    "for every d), the second exit time grows linearly in d: log-log slope 1 ± 0.1 over d = 1e2..1e4; the "
    "first exit matches the staircase's (same M(0)) within 5%."
)
NONSTAIR_FAILS = KnownFailure.on_some_seeds(
    2,
    10,
    [1, 9],
    (
        "d = 1e2 is pre-asymptotic for these draws: a large w*_2 overlap |G_2,:|^2 = 2.84, 6.00 (mean 2) along the "
        "student direction of w*_1 (cos(G_1,:, G_2,:) = -0.996, -0.998), so the He_2 term acts during the first phase "
        "and its plateau (~ d/(8|G_2,:|^2)) is short: first-exit gaps 5.5%, 12.1% (bound 5%), slope 1.052, 1.121 (seed "
        "9 "
        "outside 1 ± 0.1). Both shrink as 1/d (gaps 0.6%, 1.2% at d = 1e3; slopes over 1e3-1e4 1.013, 1.027); with "
        "|G_2,:|^2 set to 1 the gaps are 1.9%, 1.9%"
    ),
)


@claims.add(
    "non-staircase-poly-time",
    S_NONSTAIR,
    REF + ", Hermite timescale d^(k-1) of the degree-2 term",
    departures=[START, FIRST_EXIT],
    known=NONSTAIR_FAILS,
)
def judge_nonstair(res: Result, v: Judgement) -> Verdict:
    start, other = _starts(res)
    n, s = _r2(res, "non-staircase", start), _r2(res, "staircase", start)
    if len(n) < 3 or len(s) != len(n) or list(n["d"]) != list(s["d"]):
        return v.failed(math.nan, "1 ± 0.1", 0.1, f"non-staircase or staircase runs ({start} start) are missing")
    stuck = _stuck(n, "t_second") or _stuck(n, "t_first") or _stuck(s, "t_first")
    if stuck:
        return v.failed(math.nan, "1 ± 0.1", 0.1, f"runs ({start} start) that never left a plateau: {stuck}")
    slope = _slope(n["d"], n["t_second"])
    gaps = _labelled(np.abs(n["t_first"].to_numpy() / s["t_first"].to_numpy() - 1), (f"d = {d:g}" for d in n["d"]))
    on, os_ = _r2(res, "non-staircase", other), _r2(res, "staircase", other)
    rep = ""
    if len(on) >= 3 and len(os_) == len(on) and not on["t_second"].isna().any():
        rep = (
            f"; {other} M(0) (report only): slope {_slope(on['d'], on['t_second']):.3f}, first-exit gap "
            f"{np.abs(on['t_first'].to_numpy() / os_['t_first'].to_numpy() - 1).max():.3f}"
        )
    return v.within(
        slope,
        0.9,
        1.1,
        name="log-log slope of t_second",
        tolerance=0.1,
        expected="1 ± 0.1 (and first exit within 5%)",
        also=bool(gaps.max() <= 0.05),
        detail=f"{start} M(0): t_second "
        + ", ".join(f"{t:.4g}" for t in n["t_second"])
        + "; first exit vs staircase: gaps "
        + ", ".join(f"{g:.4f}" for g in gaps)
        + " (need <= 0.05)"
        + rep
        + (_draw(res) if start == "gaussian" else ""),
    )


S_MONO = (
    "Along every ODE run of the two-timescale flow Phi(M(t)) is non-increasing (rises <= 1e-10 between solver "
    "steps) and the run ends in O(r): ||M^T M - I||_F <= 1e-3."
)


@claims.add("monotone-and-global", S_MONO, REF + ", global convergence of the Grassmann flow")
def judge_mono(res: Result, v: Judgement) -> Verdict:
    e = res.table("escape")
    e = e[e["method"] == "ode"]  # quadrature-only rows (k = 4) have no run: NaN there means "not integrated"
    t = res.table("r2")
    names = [f"He_{k}, d = {d:g}" for k, d in zip(e["k"], e["d"])] + [
        f"{link} ({start}), d = {d:g}" for link, start, d in zip(t["link"], t["start"], t["d"])
    ]
    rise = _labelled(np.concatenate([v.column(e, "phi_max_rise"), v.column(t, "phi_max_rise")]), names)
    dist = _labelled(np.concatenate([v.column(e, "final_dist"), v.column(t, "final_dist")]), names)
    return v.at_most(
        dist,
        1e-3,
        name="final ||M^T M - I||_F",
        tolerance=1e-3,
        expected="<= 1e-3 (and rises <= 1e-10)",
        also=bool(rise.max() <= 1e-10),
        detail=f"{len(names)} runs: largest rise of Phi {rise.max():.2g} at {rise.idxmax()} (need <= 1e-10)",
    )


S_PLANTED = (
    "For the planted He_3/sqrt(6) (link known and fixed, r = 1): from m0 = -0.1, m(1e4) lies in [-0.01, 0] "
    "(stalled at the saddle m = 0); from m0 = +0.1, m(1e4) >= 0.999; the two-timescale flow from -0.1 reaches "
    "|m| >= 0.999 (reconstructed example of the paper's rough planted landscape)."
)


@claims.add("planted-trap", S_PLANTED, REF + ", planted problem (our r = 1 example)")
def judge_planted(res: Result, v: Judgement) -> Verdict:
    t = res.table("planted")

    def row(flow, sign):
        r = t[(t["flow"] == flow) & (np.sign(t["m0"]) == sign)]
        return r.iloc[0] if len(r) else None

    neg, pos, tt = row("planted", -1), row("planted", 1), row("two-timescale", -1)
    if neg is None or pos is None or tt is None:
        return v.failed(math.nan, "[-0.01, 0]", 0.01, "missing planted or two-timescale runs")
    m_pos, m_tt = v.finite(pos["m_end"], "planted m_end from +m0"), v.finite(tt["m_end"], "two-timescale m_end")
    return v.within(
        neg["m_end"],
        -0.01,
        0.0,
        name="planted m(T) from -m0",
        tolerance=0.01,
        also=m_pos >= 0.999 and abs(m_tt) >= 0.999,
        detail=f"planted from {neg['m0']:+g}: m({neg['t_end']:g}) = {neg['m_end']:.3g}; from "
        f"{pos['m0']:+g}: {m_pos:.6f} (need >= 0.999); two-timescale from {tt['m0']:+g}: m = "
        f"{m_tt:.6f} (need |m| >= 0.999; |m| = 0.999 at t = {tt['t_reach']:.4g})",
    )


S_TRACK = (
    "At d = 256 with n = 2e5 fresh samples per step, the finite-d staircase run's ||M_1,:||(t) and "
    "sigma_min(M(t)) stay within 0.15 of the ODE started at the same M(0), on the ODE time axis, until both "
    "exceed 0.9 (tolerance ours)."
)


@claims.add(
    "finite-d-tracks-ode",
    S_TRACK,
    REF + ", two-timescale algorithm vs its population limit",
    decided_by="cpu",
    departures=[Departure.of("||M_1,:||(t) (card: M_11(t))", FIRST_EXIT.why)],
)
def judge_track(res: Result, v: Judgement) -> Verdict:
    t = res.table("tracking")
    if t.empty:
        return v.undecided("needs the cpu preset (no finite-d run in this preset)")
    dev = np.maximum(v.column(t, "dev_m1"), v.column(t, "dev_smin"))
    detail = "; ".join(
        f"{r.link} d = {r.d}, n = {r.batch}, {r.features}, seed {r.seed}: deviation {m:.3f} up to "
        f"t = {r.t_window:.3g}{'' if r.reached else ' (ODE never past 0.9)'}"
        for r, m in zip(t.itertuples(), dev)
    )
    sel = (t["link"] == "staircase") & (t["d"] == 256) & (t["batch"] == 200_000) & (t["features"] == "hermite")
    if not sel.any():
        return v.undecided(
            "needs the cpu preset (d = 256, n = 2e5); reduced measurement: " + detail, measured=float(dev.max())
        )
    return v.at_most(
        _labelled(dev[sel], (f"seed {s}" for s in t.loc[sel, "seed"])),
        0.15,
        name="deviation",
        tolerance=0.15,
        also=bool(t.loc[sel, "reached"].all()),
        detail=detail,
    )
