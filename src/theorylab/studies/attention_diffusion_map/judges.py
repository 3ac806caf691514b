"""attention-diffusion-map: its claims, judged from a run's tables, scalars and config."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import Check, Claims, Judgement, Result, Verdict
from theorylab.core.declared import tolerance_departures

REF = "arXiv 2604.09560"


def _tolerance_departures(checks: list[tuple[pd.Series, pd.Series | float, float, str]]) -> list[str]:
    return tolerance_departures(checks, "the float64 rounding bound")


def _cols(v, t: pd.DataFrame, *names: str) -> list[pd.Series]:
    """The judged columns, each checked for NaN rows (a NaN fails the claim naming its row)."""
    return [v.column(t, n) for n in names]


IDENTITY = "Identity check (a code check of our operators, not evidence for the paper): "


claims = Claims("attention-diffusion-map")


S_ROW = (
    IDENTITY + "every attention operator P is row-stochastic (rows sum to 1 within 2nε, two n-term float64 sums; "
    "entries > 0); its stationary law π is >= 0, "
    "sums to 1 within 2nε and satisfies πP = π within the eigensolver's backward error nε‖P‖_F‖π‖₂ + nε·max π."
)


@claims.add("row-stochastic", S_ROW, REF + ", attention as a Markov operator")
def judge_row(res: Result, v: Judgement) -> Verdict:
    t = res.table("operators")
    rows, pis, fixed, tol_rows, tol_pi, min_entry, pi_min = _cols(
        v, t, "row_sum_error", "pi_sum_error", "pi_fixed_error", "tol_rows", "tol_pi", "min_entry", "pi_min"
    )
    ratios = pd.concat([rows / tol_rows, pis / tol_rows, fixed / tol_pi])
    worst = float(ratios.max())
    smallest = float(min_entry.min())
    detail = (
        f"{len(t)} operators: row sums {t['row_sum_error'].max():.1e} (tolerance 2nε = "
        f"{t['tol_rows'].min():.1e}), min entry {t['min_entry'].min():.1e}, "
        f"π sum {t['pi_sum_error'].max():.1e}, |πP − π| {t['pi_fixed_error'].max():.1e} (tolerance >= "
        f"{t['tol_pi'].min():.1e}); worst residual/tolerance {worst:.2g}"
    )
    return v.all_of(
        Check.at_most("residual/tolerance", worst, 1.0),
        Check.holds("every entry of P > 0", smallest > 0),
        Check.at_least("smallest π entry", float(pi_min.min()), 0),
        detail=detail,
        departures=_tolerance_departures(
            [(rows, tol_rows, 1e-12, "row sum"), (pis, tol_rows, 1e-12, "π sum"), (fixed, tol_pi, 1e-12, "|πP − π|")]
        ),
    )


S_TIED = (
    IDENTITY + "tied QK (M = βI): on a sphere P equals the Gaussian random walk with ε = 2√d/β, and for unequal "
    "norms P = rownorm(K_gauss diag(w)), w_j = exp(β|x_j|²/(2√d)), "
    "to a relative 8dε·β·max‖x‖²/√d + 4nε (the exponents' and the normalisers' float64 rounding); the wrong "
    "bandwidth √d/β misses by > 1e-3."
)


@claims.add("tied-qk-is-dmap", S_TIED, REF + ", tied QK = diffusion map (Coifman-Lafon normalisation)")
def judge_tied(res: Result, v: Judgement) -> Verdict:
    t = res.table("tied").set_index("case")
    err, tol, _, wrong_col = _cols(v, t, "error", "tolerance", "plain_random_walk_error", "wrong_bandwidth_error")
    worst = float((err / tol).max())
    sphere_plain = float(
        t.loc["sphere (equal norms)", "plain_random_walk_error"] / t.loc["sphere (equal norms)", "tolerance"]
    )
    wrong = float(wrong_col.min())
    detail = (
        f"max relative error {t['error'].max():.1e} (tolerance {t['tolerance'].min():.1e}); sphere vs plain "
        f"random walk {t.loc['sphere (equal norms)', 'plain_random_walk_error']:.1e}; "
        f"wrong bandwidth {wrong:.2g}; unequal norms vs plain random walk "
        f"{t['plain_random_walk_error'].max():.2g} (the weights matter)"
    )
    return v.all_of(
        Check.at_most("error/tolerance", worst, 1.0),
        Check.at_most("sphere vs plain random walk error/tolerance", sphere_plain, 1.0),
        Check.holds("wrong-bandwidth error > 1e-3", wrong > 1e-3),
        detail=detail,
        departures=_tolerance_departures([(err, tol, 1e-12, "relative error")]),
    )


S_SPLIT = (
    IDENTITY + "bidivergence split (our form): s_ij = −B_ij + ½s_ii + ½s_jj + a_ij with B_ij = ½(x_i − "
    "x_j)ᵀS(x_i − x_j)/√d, and its row-softmax reproduces P, "
    "both within the float64 rounding of the scores (8r and 16r + 2nε, r = d²ε·max‖x‖²·‖M‖_F/√d)."
)


@claims.add("bidivergence-split", S_SPLIT, REF + ", bidivergence decomposition (our form)")
def judge_split(res: Result, v: Judgement) -> Verdict:
    t = res.table("operators")
    split, tol_split, soft, tol_soft = _cols(
        v, t, "split_error", "tol_split", "split_softmax_error", "tol_split_softmax"
    )
    worst = float(max((split / tol_split).max(), (soft / tol_soft).max()))
    return v.at_most(
        worst,
        1,
        expected="residual/tolerance <= 1",
        tolerance=1.0,
        detail=(
            f"identity {t['split_error'].max():.1e} (tolerance {t['tol_split'].min():.1e}), softmax "
            f"{t['split_softmax_error'].max():.1e} (tolerance {t['tol_split_softmax'].min():.1e}) over {len(t)} draws"
        ),
        departures=_tolerance_departures(
            [(split, tol_split, 1e-12, "identity residual"), (soft, tol_soft, 1e-12, "softmax residual")]
        ),
    )


S_EQ = (
    IDENTITY + "with A = 0 the chain is reversible: detailed balance max|π_iP_ij − π_jP_ji| and σ within the "
    "float64 error of π (eigensolver backward error "
    "nε‖P‖_F‖π‖₂ + nε·max π, times max P; σ is second order in it), and by Bauer-Fike the eigenvalues of P are "
    "real (|Im| <= nε‖P‖_F·sqrt(π_max/π_min)), "
    "in [−1, 1], with the top one equal to 1, to that tolerance."
)


@claims.add("equilibrium-when-symmetric", S_EQ, REF + ", detailed balance for symmetric M")
def judge_equilibrium(res: Result, v: Judgement) -> Verdict:
    t = res.table("operators")
    db, tol_db, sigma, tol_sigma, imag, tol_eig, max_abs, top = _cols(
        v,
        t,
        "detailed_balance",
        "tol_detailed_balance",
        "sigma_symmetric",
        "tol_sigma",
        "eig_imag_symmetric",
        "tol_eig",
        "eig_max_abs",
        "eig_top",
    )
    ratios = {
        "detailed balance": (db / tol_db).max(),
        "σ": (sigma.abs() / tol_sigma).max(),
        "|Im λ|": (imag / tol_eig).max(),
        "max|λ| − 1": ((max_abs - 1).clip(lower=0) / tol_eig).max(),
        "|top λ − 1|": ((top - 1).abs() / tol_eig).max(),
    }
    worst = float(max(ratios.values()))
    detail = (
        f"detailed balance {t['detailed_balance'].max():.1e} (tolerance >= "
        f"{t['tol_detailed_balance'].min():.1e}); σ {t['sigma_symmetric'].abs().max():.1e}; "
        f"|Im λ| {t['eig_imag_symmetric'].max():.1e}; max|λ| {t['eig_max_abs'].max():.12f}; top λ − 1 "
        f"{(t['eig_top'] - 1).abs().max():.1e} "
        f"(eigenvalue tolerance >= {t['tol_eig'].min():.1e}); residual/tolerance: "
        + ", ".join(f"{k} {r:.2g}" for k, r in ratios.items())
    )
    return v.at_most(
        worst,
        1,
        expected="residual/tolerance <= 1",
        tolerance=1.0,
        detail=detail,
        departures=_tolerance_departures(
            [
                (db, tol_db, 1e-14, "detailed balance"),
                (sigma.abs(), tol_sigma, 1e-12, "σ"),
                (imag, tol_eig, 1e-10, "|Im λ|"),
            ]
        ),
    )


S_NESS = (
    "With M = S + ηA₀ (‖A₀‖_F = ‖S‖_F): σ(η) > 0 for η > 0, its log-log slope over η in [1e-3, 1e-1] is in [1.9, 2.1], "
    "and at η = 1 P has a non-real eigenvalue pair (|Im| >= 1e-3)."
)


@claims.add("ness-quadratic", S_NESS, REF + ", skew part drives a NESS")
def judge_ness(res: Result, v: Judgement) -> Verdict:
    t = res.table("entropy")
    slopes = [
        float(np.polyfit(np.log(g["eta"]), np.log(g["sigma"]), 1)[0])
        for _, g in t.groupby("draw")
        if (g["sigma"] > 0).all()
    ]
    v.column(t, "sigma")
    imag = float(v.column(res.table("operators"), "eig_imag_eta1").min())
    detail = (
        f"slopes {', '.join(f'{s:.3f}' for s in slopes)}; min σ {t['sigma'].min():.2e}; smallest max|Im λ| at η = 1: "
        f"{imag:.2e}"
    )
    if not slopes:  # no draw has σ > 0 at every η (or there is none): nothing to fit, never a pass
        return v.failed(None, "[1.9, 2.1]", 0.1, f"no draw with σ(η) > 0 at every η to fit a slope to; {detail}")
    return v.all_of(
        Check.within("log-log slope of σ(η) per draw", np.array(slopes), 1.9, 2.1),
        Check.holds("σ(η) > 0 at every η of every draw", bool((t["sigma"] > 0).all())),
        Check.holds("a slope fitted for every draw", len(slopes) == t["draw"].nunique()),
        Check.at_least("smallest max|Im λ| at η = 1", imag, 1e-3),
        measured=float(np.median(slopes)),
        tolerance=0.1,
        detail=detail,
    )


S_POE = (
    IDENTITY + "P ⊙ Pᵀ is exactly symmetric (IEEE products commute) and equals D_Z⁻¹ exp(2XSXᵀ/√d) D_Z⁻¹ to a "
    "relative 8r + 8nε "
    "(r = d²ε·max‖x‖²·‖M‖_F/√d, the float64 rounding of one score; nε from the softmax normalisers); exp(s + sᵀ) "
    "does not change when A is replaced (within 8r)."
)


@claims.add("poe-symmetric", S_POE, REF + ", product-of-experts symmetrisation (our form)")
def judge_poe(res: Result, v: Judgement) -> Verdict:
    t = res.table("operators")
    formula, tol_poe, blind, tol_blind, asym = _cols(
        v, t, "poe_formula_error", "tol_poe", "poe_a_blind_error", "tol_poe_blind", "poe_asymmetry"
    )
    worst = float(max((formula / tol_poe).max(), (blind / tol_blind).max()))
    detail = (
        f"asymmetry {t['poe_asymmetry'].max():.1e}; formula {t['poe_formula_error'].max():.1e} (tolerance "
        f"{t['tol_poe'].min():.1e}); "
        f"A-blindness {t['poe_a_blind_error'].max():.1e} (tolerance {t['tol_poe_blind'].min():.1e}); worst "
        f"residual/tolerance {worst:.2g}"
    )
    return v.all_of(
        Check.at_most("residual/tolerance", worst, 1.0),
        Check.holds("P ⊙ Pᵀ exactly symmetric (max asymmetry == 0)", asym.max() == 0),
        detail=detail,
        departures=_tolerance_departures(
            [
                (asym, 0.0, 1e-15, "asymmetry"),
                (formula, tol_poe, 1e-12, "formula residual"),
                (blind, tol_blind, 1e-12, "A-blindness residual"),
            ]
        ),
    )


S_MAN = (
    "Tied-QK attention with the per-key norm correction at the prescribed ε recovers intrinsic coordinates: both "
    "canonical correlations of (φ₁, φ₂) with (cos θ, sin θ) on the circle >= 0.98, "
    "|Spearman(φ₁, t)| >= 0.95 on the Swiss roll; at 16x that ε the Swiss-roll Spearman drops below 0.5 (the test "
    "is sensitive to the bandwidth)."
)


@claims.add("manifold-coordinates", S_MAN, REF + ", diffusion coordinates from attention")
def judge_manifolds(res: Result, v: Judgement) -> Verdict:
    t = res.table("manifolds").set_index("measure")["value"]
    cc = min(
        v.finite(t["canonical correlation 1"], "canonical correlation 1"),
        v.finite(t["canonical correlation 2"], "canonical correlation 2"),
    )
    roll = v.finite(t["|spearman(phi1, t)|"], "Swiss-roll |Spearman|")
    control = v.finite(t[[m for m in t.index if "control" in m][0]], "control |Spearman|")
    raw = t[[m for m in t.index if "without" in m][0]]
    detail = (
        f"circle canonical correlations >= {cc:.4f}; Swiss roll |ρ| = {roll:.3f}; control at 16ε |ρ| = {control:.3f}; "
        f"without the norm correction |ρ| = {raw:.3f} (report)"
    )
    return v.all_of(
        Check.at_least("circle canonical correlations (min)", cc, 0.98),
        Check.at_least("Swiss-roll |Spearman(φ₁, t)|", roll, 0.95),
        Check.holds("control |Spearman| at 16ε < 0.5", control < 0.5),
        measured=float(min(cc, roll)),
        detail=detail,
    )


S_MAG = (
    "Partly an identity check (a code check, not evidence for the paper): the magnetic Laplacian is Hermitian to "
    "the rounding of its symmetric kernel and antisymmetric phases, "
    "λ_min >= −4(n+4)ε·λ_max (eigvalsh is backward stable), at η = 0 it is the graph Laplacian of K_s, and "
    "pure-gauge phases leave its spectrum unchanged, both to 4(n+4)ε relative; "
    "measured: generic skew phases (η = 0.1) give λ_min >= 1e-3·λ_max (frustration)."
)


@claims.add(
    "magnetic-gauge",
    S_MAG,
    REF + ", magnetic Laplacian (our form)",
    departures=[
        "S and A₀ entries N(0, 1/d) (card: N(0, 1)): with unit-variance entries K_s = exp(x_iᵀSx_j/√d) is nearly "
        "one-hot"
    ],
)
def judge_magnetic(res: Result, v: Judgement) -> Verdict:
    t = res.table("magnetic")
    herm, tol_herm, eta0, gauge, tol_spec, lam_min, lam_max, frustration = _cols(
        v,
        t,
        "hermitian_error",
        "tol_hermitian",
        "eta0_error",
        "gauge_error",
        "tol_spectrum",
        "lam_min",
        "lam_max",
        "frustration",
    )
    exact = float(
        max(
            (herm / tol_herm).max(),
            (eta0 / tol_spec).max(),
            (gauge / tol_spec).max(),
            (-lam_min / (tol_spec * lam_max)).max(),
        )
    )
    detail = (
        f"Hermitian {t['hermitian_error'].max():.1e} (tolerance >= {t['tol_hermitian'].min():.1e}); η = 0 vs "
        f"graph Laplacian {t['eta0_error'].max():.1e}; "
        f"gauge {t['gauge_error'].max():.1e} (tolerance {t['tol_spectrum'].min():.1e}); identity "
        f"residual/tolerance {exact:.2g}; "
        f"λ_min/λ_max at η = {res.config.get('magnetic_skew', 0.1)}: min {t['frustration'].min():.2e}"
    )
    return v.all_of(
        Check.at_least("λ_min/λ_max (frustration, min over draws)", float(frustration.min()), 1e-3),
        Check.at_most("identity residual/tolerance", exact, 1.0),
        detail=detail,
        departures=_tolerance_departures(
            [
                (herm, tol_herm, 1e-12, "relative Hermitian error"),
                (eta0, tol_spec, 1e-12, "η = 0 residual"),
                (gauge, tol_spec, 1e-10, "gauge residual"),
                (-lam_min / lam_max, tol_spec, 1e-10, "−λ_min/λ_max"),
            ]
        ),
    )
