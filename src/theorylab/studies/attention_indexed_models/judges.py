"""attention-indexed-models: its claims, judged from a run's tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import Departure, KnownFailure

REF = "Xu, Sagitova, Zdeborová & Krzakala, arXiv 2609.03858"
claims = Claims("attention-indexed-models")
PAPER_D = 400  # the paper's Fig.-2 size (claim 6)

# Where the students and the step are not the card's (docs/studies/attention-indexed-models.md, "Normalisations").
# The card's tied scale 1/sqrt(2d) depends on d, which the constant `kappa` cannot express, so it always applies.
KAPPA = Departure.of(
    "tied scale S = κWWᵀ with κ = kappa constant in d (default 1/2; card: WWᵀ/sqrt(2d), a "
    "reconstruction the paper does not use)",
    "the paper (Sec. 3.1) trains S = W'W'ᵀ with ‖W'(0)‖_F² = Θ(d) and no 1/sqrt(2d); ours is that "
    "model with W' = √κ W (‖W'(0)‖_F² = d/2) and the step κ·lr, and the centred G of the paper. At "
    "the card's scale the student starts O(d^-1/2) below the unit-variance teacher, so the tied "
    "drift (∝ t1 p22) is √d weaker: ρ_final 0.52 / 0.24 (h1 / h2) at d = 48, 0.38 / 0.08 at d = 96 by "
    "n = 12 d² ln d; κ = 1/2 gives the teacher's law at init (Var G = 1) and Tr S/d of order 1",
)
LR_CONSTANT = Departure.field_value(
    "lr_constant",
    0.5,
    "step = lr_constant B/(d ln d) on the batch-mean loss: the "
    "card's 0.5 diverges for h2 at d = 48 and 64 (seeds 0, 1), "
    "0.25 still at d = 48; 0.1 is in the theorem's regime with a "
    "smaller constant",
)


def _fmt(xs) -> str:
    return ", ".join(f"{x:.3g}" for x in xs)


S_MOMENTS = (
    "For tokens x ~ N(0, C ⊗ I_d) with C = [[1, 0.5], [0.5, 1]] and two random (non-symmetric) S, S' at "
    "d = 64, the Monte Carlo mean and covariance of all eight G_ij = x_i^T S x_j / sqrt(d) match E G_ij = "
    "C_ij Tr S/sqrt(d) and Cov = C_ii'C_jj' Tr(S S'^T)/d + C_ij'C_ji' Tr(S S')/d within 4 standard errors "
    "(2e5 draws); the formulas with Tr(S S'^T) and Tr(S S') exchanged (a transposed S) are rejected."
)


@claims.add(
    "exact-moments",
    S_MOMENTS,
    REF + ", Isserlis moments of the bilinear forms (Sec. 2)",
    departures=[
        Departure.of(
            "non-symmetric S, S' with a trace (card: random symmetric S, S')",
            "for symmetric S the formulas with S and Sᵀ coincide, so a transposed S, which the card asks the "
            "check to catch, could not fail",
        )
    ],
)
def judge_moments(res: Result, v: Judgement) -> Verdict:
    t = res.table("moments")
    if t.empty or not np.isfinite(t[["measured", "se"]].to_numpy()).all():
        return v.failed(math.nan, "<= 4", 4.0, "no finite moment rows")
    z = ((t["measured"] - t["predicted"]) / t["se"]).abs()
    zt = ((t["measured"] - t["predicted_swapped"]) / t["se"]).abs()
    worst, power = float(z.max()), float(zt.max())
    return v.all_of(
        Check.at_most("|z| (measured vs predicted, standard errors)", z, 4.0),
        Check.holds("largest |z| with Tr(S S'^T) and Tr(S S') exchanged > 4", power > 4),  # strict
        detail=f"{len(t)} entries ({(t['kind'] == 'mean').sum()} means, {(t['kind'] == 'cov').sum()} covariances) "
        f"at d = {int(t['d'].iloc[0])}: largest |z| {worst:.2f} (mean {z[t['kind'] == 'mean'].max():.2f}, "
        f"cov {z[t['kind'] == 'cov'].max():.2f}); with Tr(S S'^T) and Tr(S S') exchanged |z| reaches "
        f"{power:.1f}",
    )


S_KURT = (
    "The excess kurtosis of the single-token G(S) (tied random S) matches 12 Tr(S^4)/Tr(S^2)^2 within 4 "
    "standard errors (delta method, 2e5 draws) at d = 64 and d = 256, and the formula's value falls by a factor "
    "in [3, 5] from d = 64 to d = 256 (O(1/d))."
)


@claims.add("kurtosis", S_KURT, REF + ", non-Gaussianity of G is O(1/d)")
def judge_kurtosis(res: Result, v: Judgement) -> Verdict:
    t = res.table("kurtosis").sort_values("d")
    if len(t) < 2 or not np.isfinite(t[["measured", "se", "predicted"]].to_numpy()).all():
        return v.failed(math.nan, "<= 4 se", 4.0, "needs two finite kurtosis rows")
    z = ((t["measured"] - t["predicted"]) / t["se"]).abs()
    lo, hi = t.iloc[0], t.iloc[-1]
    fall = float(lo["predicted"] / hi["predicted"])
    return v.all_of(
        Check.at_most("|z| (measured vs 12 Tr S^4/Tr(S^2)^2, standard errors)", z, 4.0),
        Check.within(f"fall of the formula from d = {int(lo.d)} to {int(hi.d)}", fall, 3, 5),
        detail="; ".join(
            f"d = {int(r.d)}: {r.measured:.4f} ± {r.se:.4f} vs 12 Tr S^4/Tr(S^2)^2 = {r.predicted:.4f} (|z| = {zz:.2f})"
            for r, zz in zip(t.itertuples(), z)
        )
        + f"; formula falls by {fall:.2f} from d = {int(lo.d)} to {int(hi.d)}",
    )


S_LAND = (
    "For h1 the Monte Carlo population loss at a random tied S equals the Gaussian reduction Φ(q) (2-d "
    "Gauss-Hermite) within 4 standard errors at d = 64; for h2 the discrepancy MC - Φ at d = 256 is <= 0.4 x "
    "the discrepancy at d = 64 (non-Gaussian corrections vanish like 1/d)."
)


@claims.add(
    "landscape-reduction", S_LAND, REF + ", Corollary 1 (Gaussian reduction of the population loss)", departures=[KAPPA]
)
def judge_landscape(res: Result, v: Judgement) -> Verdict:
    t = res.table("landscape")
    h1 = t[t["link"] == "h1"].sort_values("d")
    h2 = t[t["link"] == "h2"].sort_values("d")
    if h1.empty or len(h2) < 2:
        return v.failed(math.nan, "<= 4 se", 4.0, "missing h1 or h2 landscape rows")
    r1 = h1.iloc[0]
    z1 = abs(r1["mc"] - r1["phi"]) / r1["se"]
    lo, hi = h2.iloc[0], h2.iloc[-1]
    ratio = abs(hi["discrepancy"]) / abs(lo["discrepancy"]) if lo["discrepancy"] != 0 else math.inf
    return v.all_of(
        Check.at_most(f"h2 |MC - Φ| at d = {int(hi.d)} / at d = {int(lo.d)}", float(ratio), 0.4),
        Check.at_most(f"h1 |MC - Φ| / se at d = {int(r1.d)}", z1, 4),
        detail=f"h1 at d = {int(r1.d)}: MC {r1.mc:.4f} ± {r1.se:.4f} vs Φ {r1.phi:.4f} (|z| = {z1:.2f}); h2 "
        f"MC - Φ: {lo.discrepancy:.4f} ± {lo.se:.4f} at d = {int(lo.d)}, {hi.discrepancy:.4f} ± "
        f"{hi.se:.4f} at d = {int(hi.d)} (ratio {ratio:.3f}); exact fourth-cumulant correction "
        f"{lo.exact - lo.phi:.4f}, {hi.exact - hi.phi:.4f}",
    )


S_TIED = (
    "Tied online SGD (S = WW^T/sqrt(2d), B = 256, step 0.5 B/(d ln d)) reaches ρ >= 0.9 by n = 12 d^2 ln d for "
    "both h1 and h2 at every d in {48, 64, 96}: with the PSD parametrisation even the link with no linear "
    "Hermite component is learned."
)


@claims.add(
    "tied-learns", S_TIED, REF + ", tied weak and strong recovery (Sec. 5, Fig. 2)", departures=[KAPPA, LR_CONSTANT]
)
def judge_tied(res: Result, v: Judgement) -> Verdict:
    t = res.table("sgd")
    need = {"h1", "h2"}
    if t.empty or not need <= set(t["link"]) or t["d"].nunique() < 3:
        return v.failed(math.nan, ">= 0.9", 0.9, "needs h1 and h2 runs at three d")
    finite = bool(np.isfinite(t["rho_final"]).all())
    return v.all_of(
        Check.at_least("ρ_final", t["rho_final"], 0.9),
        Check.holds("ρ_final finite in every run", finite),
        Check.holds("every run finite", bool(t["finite"].all())),
        measured=float(t["rho_final"].min()) if finite else math.nan,
        detail="; ".join(
            f"{r.link} d = {r.d}: ρ = {r.rho_final:.3f} at n = {r.n_max / (r.d**2 * math.log(r.d)):.1f} d² ln d, test "
            f"MSE {r.test_mse_initial:.3g} → {r.test_mse_final:.3g}"
            for r in t.itertuples()
        ),
    )


S_SCALE = (
    "Across d in {48, 64, 96}, n_0.5/(d^2 ln d) (first sample count with ρ >= 0.5) varies by a factor <= 2 "
    "for h1 and <= 2.5 for h2: the Θ(d^2 log d) weak-recovery law (Corollary 3) within the room left for "
    "logarithmic corrections at small d."
)


@claims.add(
    "d2logd-scaling", S_SCALE, REF + ", Corollary 3: N_wr = Θ(d/α_d) = Θ(d² log d)", departures=[KAPPA, LR_CONSTANT]
)
def judge_scaling(res: Result, v: Judgement) -> Verdict:
    t = res.table("sgd")
    tol = {"h1": 2.0, "h2": 2.5}
    parts, checks, worst = [], [], 0.0
    for name, lim in tol.items():
        g = t[t["link"] == name]
        if g["d"].nunique() < 3 or not np.isfinite(g["n_half_scaled"]).all():
            return v.failed(math.nan, "<= 2 (h1), 2.5 (h2)", 2.0, f"{name}: needs three d that all reach ρ = 0.5")
        s = g["n_half_scaled"]
        r = float(s.max() / s.min())
        checks.append(Check.at_most(f"{name}: max/min of n_0.5/(d² ln d) over d", r, lim))
        worst = max(worst, r / lim)
        parts.append(
            f"{name}: n_0.5/(d² ln d) = {_fmt(s)} at d = {_fmt(g['d'])} (max/min {r:.2f}); initial "
            f"dρ/dn measured/predicted {_fmt(g['slope_measured'] / g['slope_predicted'])}"
        )
    # measured: the worst max/min as a fraction of its link's limit
    return v.all_of(*checks, measured=worst, tolerance=1.0, detail="; ".join(parts))


S_DIRECT = (
    "With the paper's direct-S initialisation and its Fig.-2 settings (d = 400, B = 512), direct S reaches "
    "ρ >= 0.5 for h1 only; for h2 and h3 its ρ stays below 0.1 over the tied model's weak-recovery horizon "
    "(the latest tied n_0.5), while tied W exceeds 0.5 for all three links (reconstructed)."
)
CPU_D = 96  # the cpu preset's d: the smallest at which the claim is judged (quick's d = 48 only measures)

CPU_COMPARE = [
    Departure.field_value(
        "compare_dims",
        [PAPER_D],
        "cpu preset: d = 96 (a run costs ~d⁴ ln d: ~2 h at d = 400 on one core). The tied n_0.5/(d² ln d) is "
        "d-independent (Corollary 3); the direct h2/h3 drift vanishes on the uninformative manifold and grows from the "
        "random initial overlap ρ(0) ~ √2/d, so small d makes the direct test harder: direct h3 ρ at the tied horizon "
        "(~9.4 d² ln d) measured 0.28 at d = 48, 0.12 at d = 64 (one side run each) and 0.035-0.074 at d = 96 (6 "
        "runs: run seeds 0, 1)",
        presets=["cpu"],
    ),
]


@claims.add(
    "direct-vs-tied",
    S_DIRECT,
    REF + ", tied vs direct parametrisation (Fig. 2)",
    decided_by="cpu",
    departures=[
        Departure.of(
            "initial direct S drawn as `direct_init` says (default: a symmetric Gaussian with its trace removed; "
            "card: the paper's exact initialisation)",
            "the paper starts direct S on its uninformative manifold t1 = 0, Ψ12 = Ω12 = 0 (App. E, Corollary "
            "7) without stating the draw; ours is on it up to the random overlap ρ(0) ~ √2/d. The outcome "
            "hinges on the trace: a PSD start (t1 = 1/2) learns h2 like the tied model, a trace-free one has "
            "zero initial drift for h2 and h3",
        ),
        KAPPA,
        *CPU_COMPARE,
    ],
)
def judge_direct(res: Result, v: Judgement) -> Verdict:
    t = res.table("compare")
    if t.empty:
        return v.undecided("needs the cpu preset (no tied-vs-direct run)")
    detail = "; ".join(
        f"{r.parametrisation} ({r.direct_init} start) {r.link} d = {r.d} seed {r.seed}: ρ = "
        f"{r.rho_at_horizon:.3f} at the tied "
        f"horizon {r.tied_horizon / (r.d**2 * math.log(r.d)):.2f} d² ln d, n_0.5 = "
        f"{r.n_half_scaled:.2f} d² ln d, ρ_final {r.rho_final:.3f}"
        f"{' (blew up later: q11 >= 1e6)' if r.diverged else ''}, t1(0) = "
        f"{r.t1_initial:.3f}"
        for r in t.itertuples()
    )
    tied = t[t["parametrisation"] == "tied"]
    direct = t[(t["parametrisation"] == "direct") & (t["direct_init"] == "traceless")]
    sized = bool((t["d"] >= CPU_D).all() and set(t["link"]) >= {"h1", "h2", "h3"} and len(direct))
    if not sized:
        return v.undecided(
            f"needs the cpu preset (d >= {CPU_D}, trace-free direct start, h1-h3); reduced measurement: " + detail,
            measured=float(direct.loc[direct["link"] != "h1", "rho_at_horizon"].abs().max()) if len(direct) else None,
        )
    d1 = direct[direct["link"] == "h1"]
    dn = direct[direct["link"] != "h1"]
    worst = float(dn["rho_at_horizon"].abs().max())
    below = bool((dn["rho_at_horizon"].abs() < 0.1).all())  # strict
    checks = [Check.holds("direct h2, h3 |ρ| at the tied horizon < 0.1", below)]
    # a set without runs holds vacuously (as before): the sizing test above asks for direct runs and h1-h3
    if len(tied):
        checks.append(Check.at_least("tied ρ at its horizon", tied["rho_at_horizon"], 0.5))
    if len(d1):
        checks.append(Check.at_least("direct h1 ρ_final", d1["rho_final"], 0.5))
    return v.all_of(*checks, measured=worst, tolerance=0.1, detail=detail)


S_UNTIED = (
    "In the untied model S = UV^T, m = Tr(S)/sqrt(d) moves on the fast time n α_d and ρ on the slow time "
    "n α_d / d: the ratio of their half-way sample counts grows linearly in d (fitted exponent 1 ± 0.25 over "
    "d in {200, 400, 800}); ρ's half-way time orders h1 < h2 < h3 at every d (Fig. 3)."
)


UNTIED_CPU_D = 128  # the cpu preset's largest untied d: the claim is judged from three d spanning 4x up to it
MOVE_MIN = 0.25  # m must relax by this much in the fast phase for its half-way time to be a measurement
UNTIED_DEPARTURES = [
    Departure.of(
        "Fig.-3 teacher read as the study's Wishart S* with the centred G* = (xᵀS*x − Tr S*)/√d, mean 0, Var 1 "
        "(the paper does not state it)",
        "Fig. 3 reads 'when E[σ*′(Z2)] = 0, weak recovery takes substantially more samples', which for h2 and h3 "
        "needs a teacher of mean 0 and variance 1. The student is the paper's: the uncentred G = xᵀUVᵀx/√d of eq. "
        "24, U, V entries N(0, 1/d) (Assumption 4.2: ‖U‖_F + ‖V‖_F = Θ(√d), bounded operator norm; the caption's "
        "'standard Gaussian' at variance 1 would give Var G ~ d², outside Theorem 3)",
    ),
    Departure.field_value(
        "untied_mean0",
        None,
        "V shifted along U so that m(0) = Tr S/√d = 1. The paper's draw gives m(0) = O(d^-1/2), and the fast flow's "
        "end m* is O(d^-1/2) too (0 as d → ∞: Φ is even in m for every link against a mean-zero teacher): m would "
        "have no move to time. With m(0) = 1 the fast phase (eq. 28) relaxes m to m*; the overlaps start as drawn",
    ),
    Departure.of(
        "half-way times: m's, half of its move from m(0) to its level at fast time nα_d ∈ [1.5, 3]; ρ's, the first "
        "n with |ρ| >= 0.5 (both interpolated between steps)",
        "the card does not define them; m's settled level is m* = O(d^-1/2), not 0, and later follows the slow "
        "drift, so its final value is no target; ρ of an even link may go to -1 (h2(-G) = h2(G))",
    ),
    Departure.field_value(
        "untied_dims",
        [200, 400, 800],
        "cpu preset: d = 32, 64, 128 (a run costs ~d⁴ ln d: ~65 s at d = 128, ~6x that at 200), step and "
        "horizon as the paper preset",
        presets=["cpu"],
    ),
    Departure.field_value(
        "untied_batch",
        4096,
        "a smaller B at the same per-sample rate α_d (the claim counts samples): at B = 4096 m's fast half-way time "
        "would fall inside the first step at d <= 128",
    ),
]
UNTIED_KNOWN_CPU = KnownFailure.on_every_seed(
    "seed 0 at the cpu preset (d = 32, 64, 128 to slow time τ = nα_d/d = 0.79): h1 follows the claim (exponent 0.92; "
    "m half-way at nα_d = 0.28-0.34, ρ at τ = 0.15-0.16 for every d), h2 is at its edge (1.23: τ½ = 0.24, 0.41, "
    "0.44) and h3 never reaches |ρ| = 0.5 (|ρ| 0.02, 0.36, 0.32 at the horizon), so it has no exponent; the order "
    "h1 < h2 < h3 holds. Seed 1: h1 1.05, h2 1.11, h3 |ρ| 0.39, 0.30 at d = 64, 128 and diverged at d = 32 (q11 "
    ">= 1e6: h3's heavy-tailed residual at the largest step). Cause: against the mean-zero, unit-variance "
    "teacher of Fig. 3, E[h2′(Z2)] = E[h3′(Z2)] = 0, "
    "so (eq. 48, Corollary 4) only h1 has the first-order escape that gives Θ(d² log d); h2 grows from ρ(0) ~ 1/d "
    "by a drift linear in q12 (τ½ ~ ln d), h3 by one quadratic in q12. The paper says so (Fig. 3: 'increasingly "
    "slow escape ... precise sample complexity left for future work'); 'linear in d for every link' is the card's "
    "reconstruction. The threshold and horizon are kept",
    presets=["cpu"],
)


@claims.add(
    "untied-timescales",
    S_UNTIED,
    REF + ", untied fast/slow separation (Theorem 3, Corollary 4, Fig. 3)",
    decided_by="cpu",
    known=UNTIED_KNOWN_CPU,
    departures=UNTIED_DEPARTURES,
)
def judge_untied(res: Result, v: Judgement) -> Verdict:
    t = res.table("untied")
    if t.empty:
        return v.undecided(f"needs the cpu preset (untied runs at d = 32, 64, {UNTIED_CPU_D}; the card's 200-800)")
    t = t.assign(ratio=t["n_half_rho"] / t["n_half_m"])
    detail = "; ".join(
        f"{r.link} d = {r.d}: m {r.m0:.2f} → {r.m_fast:.3f} (final {r.m_final:.2f}), half-way at nα = "
        f"{r.n_half_m * r.alpha:.3g}; |ρ| >= 0.5 at nα/d = {r.n_half_rho * r.alpha / r.d:.3g} (run to "
        f"{r.n_max * r.alpha / r.d:.2f}), ratio {r.ratio:.4g}, ρ_final {r.rho_final:.3f}"
        for r in t.sort_values(["link", "d"]).itertuples()
    )
    dims = sorted(t["d"].unique())
    if len(dims) < 3 or dims[-1] < UNTIED_CPU_D or dims[-1] < 4 * dims[0]:
        return v.undecided(
            f"needs the cpu preset (three d spanning 4x up to >= {UNTIED_CPU_D}); reduced measurement: " + detail
        )
    blown = t[t["diverged"]]
    t.loc[t["diverged"], "ratio"] = math.nan  # a diverged student has no half-way times: its link gets no exponent
    if ((t["m0"] - t["m_fast"]).abs() < MOVE_MIN)[~t["diverged"]].any():
        return v.undecided(
            f"m moves by less than {MOVE_MIN} in the fast phase, so its half-way time is noise (the paper's init: "
            "m(0) = O(d^-1/2), set untied_mean0); " + detail
        )
    slopes = {}
    for name, g in t.groupby("link"):
        g = g.sort_values("d")
        ok = np.isfinite(g["ratio"]).all() and (g["ratio"] > 0).all()
        slopes[name] = float(np.polyfit(np.log(g["d"]), np.log(g["ratio"]), 1)[0]) if ok else math.nan
    missing = [k for k, s in slopes.items() if not np.isfinite(s)]
    order = True
    for _, g in t.groupby("d"):  # a link that never reaches |ρ| = 0.5 by the horizon counts as slowest
        h = g.sort_values("link")["n_half_rho"].fillna(math.inf).to_numpy()
        order &= bool((np.diff(h) > 0).all())
    finite = [s for s in slopes.values() if np.isfinite(s)]
    measured = max(finite, key=lambda s: abs(s - 1)) if finite and not missing else math.nan
    # a link without an exponent fails its own check, not a NaN one: at the cpu preset it is the declared known failure
    exps = pd.Series({k: s for k, s in slopes.items() if np.isfinite(s)}, dtype=float)
    checks = [Check.at_most("|exponent of n½(ρ)/n½(m) in d - 1| per link", (exps - 1).abs(), 0.25)] if len(exps) else []
    return v.all_of(
        *checks,
        Check.holds("an exponent for every link (|ρ| reaches 0.5 at every d)", not missing),
        Check.holds("ρ's half-way order h1 < h2 < h3 at every d", order),
        measured=measured,
        tolerance=0.25,
        detail="exponents of n½(ρ)/n½(m) in d: "
        + ", ".join(f"{k} {s:.3f}" for k, s in slopes.items())
        + (f" ({', '.join(missing)}: |ρ| short of 0.5 at some d by the horizon)" if missing else "")
        + f"; ρ's half-way order h1 < h2 < h3 {'holds' if order else 'fails'} at every d; "
        + "".join(f"{r.link} at d = {r.d} diverged (q11 >= 1e6); " for r in blown.itertuples())
        + detail,
    )


# The moment-truncation claim, declared last (its module reads this one's names).
from theorylab.studies.attention_indexed_models.judges_moments import judge_truncation  # noqa: E402,F401
