"""attention-diffusion-map: the quick run and judges that fail on wrong results."""

from __future__ import annotations

from result_edits import edit_table as _edit
from result_edits import set_where
from theorylab.studies import attention_diffusion_map as adm
from theorylab.theory.diffusion_map_checks import EPS


def test_quick_claims(adm_quick):
    for v in adm_quick.verdicts:
        assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"tied_identity", "entropy_production", "diffusion_coords", "magnetic_spectrum"} <= {
        p.stem for p in adm_quick.figures
    }


def test_judges_fail_on_wrong_results(adm_quick):
    r = adm_quick
    assert adm.judges.judge_row(_edit(r, "operators", lambda f: f.assign(row_sum_error=1e-9))).passed is False
    # the wrong bandwidth factor reproduces attention just as well: the check would be blind
    assert adm.judges.judge_tied(_edit(r, "tied", lambda f: f.assign(wrong_bandwidth_error=1e-14))).passed is False
    assert (
        adm.judges.judge_tied(_edit(r, "tied", lambda f: set_where(f, lambda t: t.index == 0, "error", 1e-6))).passed
        is False
    )
    assert adm.judges.judge_split(_edit(r, "operators", lambda f: f.assign(split_error=1e-3))).passed is False
    assert adm.judges.judge_equilibrium(_edit(r, "operators", lambda f: f.assign(sigma_symmetric=1e-6))).passed is False
    linear = _edit(r, "entropy", lambda f: f.assign(sigma=f["eta"] * 1e-2))  # σ ∝ η: wrong order
    assert adm.judges.judge_ness(linear).passed is False
    assert adm.judges.judge_ness(_edit(r, "operators", lambda f: f.assign(eig_imag_eta1=0.0))).passed is False
    assert adm.judges.judge_poe(_edit(r, "operators", lambda f: f.assign(poe_a_blind_error=0.3))).passed is False
    blind = _edit(r, "manifolds", lambda f: set_where(f, lambda t: t["measure"].str.contains("control"), "value", 0.97))
    assert adm.judges.judge_manifolds(blind).passed is False
    assert adm.judges.judge_magnetic(_edit(r, "magnetic", lambda f: f.assign(frustration=1e-6))).passed is False
    assert adm.judges.judge_magnetic(_edit(r, "magnetic", lambda f: f.assign(gauge_error=1e-3))).passed is False
    # not PSD
    assert (
        adm.judges.judge_magnetic(_edit(r, "magnetic", lambda f: f.assign(lam_min=-1e-9 * f["lam_max"]))).passed
        is False
    )


def test_identity_tolerances_scale_with_size_not_with_the_residual(adm_quick):
    """The identity tolerances are rounding bounds from n, d and the input norms: an error 1000x above
    float64 rounding fails, and the bound grows with n (two n-term sums), not with the residual."""
    r = adm_quick
    ops = r.table("operators")
    assert (ops["tol_rows"] == 2 * r.config["n"] * EPS).all()
    assert ops["tol_poe"].max() < 1e-10  # a rounding bound: orders of magnitude below any algebra error
    assert adm.judges.judge_poe(_edit(r, "operators", lambda f: f.assign(poe_formula_error=1e-10))).passed is False
    # products commute: exactly 0
    assert adm.judges.judge_poe(_edit(r, "operators", lambda f: f.assign(poe_asymmetry=1e-17))).passed is False
    assert (
        adm.judges.judge_row(_edit(r, "operators", lambda f: f.assign(pi_fixed_error=1e3 * f["tol_pi"]))).passed
        is False
    )
    assert (
        adm.judges.judge_equilibrium(_edit(r, "operators", lambda f: f.assign(eig_imag_symmetric=1e-9))).passed is False
    )
    assert (
        adm.judges.judge_equilibrium(_edit(r, "operators", lambda f: f.assign(detailed_balance=1e-14))).passed is False
    )
    assert adm.judges.judge_tied(_edit(r, "tied", lambda f: f.assign(error=1e-11))).passed is False
    # the bound grows like n: the same residuals at n = 2000 are judged against a 2000/300 larger sum tolerance
    big = _edit(r, "operators", lambda f: f.assign(tol_rows=2 * 2000 * EPS, row_sum_error=2 * 1000 * EPS))
    assert adm.judges.judge_row(big).passed is True
    assert adm.judges.judge_row(_edit(r, "operators", lambda f: f.assign(row_sum_error=2 * 1000 * EPS))).passed is False


def _claims():
    return {c.id.split("/", 1)[1]: c for c in adm.judges.claims}


def test_nan_rows_fail_naming_them_and_tolerance_departures_say_where_the_card_differs(adm_quick):
    """A NaN residual fails its claim naming the row (pandas' max would skip it); a residual judged
    differently by our rounding bound than by the card's fixed tolerance is a departure, and only then."""
    claim, r, nan = _claims(), adm_quick, float("nan")
    v = claim["bidivergence-split"].evaluate(
        _edit(r, "operators", lambda f: set_where(f, lambda t: t["draw"] == 2, "split_error", nan))
    )
    assert v.passed is False and "split_error" in v.detail and "draw = 2" in v.detail, v.detail
    v = claim["manifold-coordinates"].evaluate(
        _edit(r, "manifolds", lambda f: set_where(f, lambda t: t["measure"] == "canonical correlation 2", "value", nan))
    )
    assert v.passed is False and "canonical correlation 2" in v.detail, v.detail
    v = claim["ness-quadratic"].evaluate(
        _edit(r, "operators", lambda f: set_where(f, lambda t: t["draw"] == 1, "eig_imag_eta1", nan))
    )
    assert v.passed is False and "draw = 1" in v.detail, v.detail
    # the stored run: residuals far below both tolerances -> the claims as stated
    for cid in (
        "row-stochastic",
        "tied-qk-is-dmap",
        "bidivergence-split",
        "equilibrium-when-symmetric",
        "poe-symmetric",
    ):
        assert claim[cid].evaluate(r).outcome == "passed", cid
    # within our bound (~1e-11) but above the card's 1e-12: a pass with that departure
    v = claim["bidivergence-split"].evaluate(
        _edit(r, "operators", lambda f: f.assign(split_error=0.5 * f["tol_split"]))
    )
    assert v.outcome == "departed" and any("identity residual" in d and "card: 1e-12" in d for d in v.departures)
    # stricter than the card (exactly symmetric vs 1e-15): a failure the card would not see is said too
    v = claim["poe-symmetric"].evaluate(_edit(r, "operators", lambda f: f.assign(poe_asymmetry=1e-16)))
    assert v.passed is False and any(d.startswith("asymmetry 1.0e-16 above") for d in v.departures), v.departures
    assert any("N(0, 1/d)" in d for d in claim["magnetic-gauge"].evaluate(r).departures)
