"""attention-diffusion-map: the quick run and judges that fail on wrong results."""

from __future__ import annotations

from result_edits import edit_table as _edit
from result_edits import set_where

from theorylab.studies import attention_diffusion_map as adm


def test_quick_claims(adm_quick):
    for v in adm_quick.verdicts:
        assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"tied_identity", "entropy_production", "diffusion_coords", "magnetic_spectrum"} <= {p.stem for p in adm_quick.figures}


def test_judges_fail_on_wrong_results(adm_quick):
    r = adm_quick
    assert adm.judge_row(_edit(r, "operators", lambda f: f.assign(row_sum_error=1e-9))).passed is False
    # the wrong bandwidth factor reproduces attention just as well: the check would be blind
    assert adm.judge_tied(_edit(r, "tied", lambda f: f.assign(wrong_bandwidth_error=1e-14))).passed is False
    assert adm.judge_tied(_edit(r, "tied", lambda f: set_where(f, lambda t: t.index == 0, "error", 1e-6))).passed is False
    assert adm.judge_split(_edit(r, "operators", lambda f: f.assign(split_error=1e-3))).passed is False
    assert adm.judge_equilibrium(_edit(r, "operators", lambda f: f.assign(sigma_symmetric=1e-6))).passed is False
    linear = _edit(r, "entropy", lambda f: f.assign(sigma=f["eta"] * 1e-2))  # σ ∝ η: wrong order
    assert adm.judge_ness(linear).passed is False
    assert adm.judge_ness(_edit(r, "operators", lambda f: f.assign(eig_imag_eta1=0.0))).passed is False
    assert adm.judge_poe(_edit(r, "operators", lambda f: f.assign(poe_a_blind_error=0.3))).passed is False
    blind = _edit(r, "manifolds", lambda f: set_where(f, lambda t: t["measure"].str.contains("control"), "value", 0.97))
    assert adm.judge_manifolds(blind).passed is False
    assert adm.judge_magnetic(_edit(r, "magnetic", lambda f: f.assign(frustration=1e-6))).passed is False
    assert adm.judge_magnetic(_edit(r, "magnetic", lambda f: f.assign(gauge_error=1e-3))).passed is False
