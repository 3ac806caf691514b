"""monomial-networks: the quick run, judges that fail on wrong results, the paper path at toy size, bad config."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

import theorylab.studies.monomial_networks as mn  # registers the study without an entry point
from result_edits import edit_table as _edit
from theorylab.theory import polynomial_nets as pn

PAPER_ONLY = ("hessian-signatures", "non-gaussian-critical-values")


@pytest.fixture(scope="module")
def mn_quick(quick_run):
    return quick_run("monomial-networks")


def test_quick_claims(mn_quick):
    assert mn_quick.status == "done", mn_quick.message
    for v in mn_quick.verdicts:
        if v.id.endswith(PAPER_ONLY):
            assert v.passed is None and "needs paper preset" in v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"critical_landscape", "dimension_table", "metric_comparison"} <= {p.stem for p in mn_quick.figures}


def _passing_gd(res):
    """The Gaussian GD rows replaced by exact |S| = r critical values (what the card predicts)."""
    lam = res.table("teacher")["eigenvalue"].to_numpy()
    top = [p["loss"] for p in pn.critical_points(lam, res.config["r"]) if p["s"] == res.config["r"]]

    def fn(f):
        g = f["metric"] == "gaussian"
        f.loc[g, "loss"] = [top[i % 3] for i in range(int(g.sum()))]
        f.loc[g, "grad_norm"] = 1e-12
        f.loc[g, "negative"] = 0
        return f
    return _edit(res, "gd", fn)


def test_judges_fail_on_wrong_results(mn_quick):
    r, j = mn_quick, mn.judges
    # 1: one Monte Carlo mean 10 standard errors off; matrices missing
    assert j.judge_mc(_edit(r, "gaussian_mc", lambda f: f.assign(
        monte_carlo=f["monte_carlo"] + 10 * f["std_error"] * (f.index == 0)))).passed is False
    assert j.judge_mc(_edit(r, "gaussian_mc", lambda f: f.iloc[:10])).passed is False
    # 2: one gradient 1e-9; one loss off by 1e-10 relative; a point missing
    assert j.judge_critical(_edit(r, "critical", lambda f: f.assign(
        grad_norm=np.where(f.index == 5, 1e-9, f["grad_norm"])))).passed is False
    assert j.judge_critical(_edit(r, "critical", lambda f: f.assign(
        loss=f["loss"] * (1 + 1e-10 * (f.index == 7))))).passed is False
    assert j.judge_critical(_edit(r, "critical", lambda f: f.iloc[1:])).passed is False
    # 3: the global minimum with a negative eigenvalue, a missing zero mode, a zero left after projection
    g = lambda f: f["is_global"]  # noqa: E731
    for col, delta in (("negative", 1), ("zero", -1), ("reduced_zero", 1)):
        assert j.judge_minimum(_edit(r, "critical", lambda f, col=col, delta=delta: f.assign(
            **{col: f[col] + delta * g(f)}))).passed is False
    assert j.judge_minimum(_edit(r, "critical", lambda f: f[~g(f)])).passed is False
    # 4: the card's |S| = r prediction passes; an endpoint 1e-5 off, or not converged, fails
    ok = _passing_gd(r)
    assert j.judge_gd(ok).passed is True
    assert j.judge_gd(_edit(ok, "gd", lambda f: f.assign(loss=f["loss"] * (1 + 1e-5 * (f.index == 0))))).passed \
        is False
    assert j.judge_gd(_edit(ok, "gd", lambda f: f.assign(grad_norm=np.where(f.index == 1, 1e-7, f["grad_norm"])))
                      ).passed is False
    assert j.judge_gd(_edit(ok, "gd", lambda f: f.iloc[1:])).passed is False
    # ... an endpoint at a strict saddle (index 1), or at a loss between two family values, fails
    assert j.judge_gd(_edit(ok, "gd", lambda f: f.assign(negative=np.where(f.index == 2, 1, f["negative"])))
                      ).passed is False
    lam = r.table("teacher")["eigenvalue"].to_numpy()
    values = sorted(p["loss"] for p in pn.critical_points(lam, r.config["r"]))
    between = 0.5 * (values[0] + values[1])
    assert j.judge_gd(_edit(ok, "gd", lambda f: f.assign(loss=np.where(f.index == 3, between, f["loss"])))
                      ).passed is False
    # ... and the real run's dead-neuron endpoints (|S| < r) pass: they sit on the family with index 0
    assert j.judge_gd(r).passed is True
    # 5: a saddle step that raises the loss; one off the exact prediction by 1e-6
    low = lambda f: f["s"] < r.config["r"]  # noqa: E731
    assert j.judge_saddle(_edit(r, "critical", lambda f: f.assign(
        saddle_change=np.where(low(f) & (f.index == 0), 1e-6, f["saddle_change"])))).passed is False
    assert j.judge_saddle(_edit(r, "critical", lambda f: f.assign(
        saddle_change=f["saddle_change"] + 1e-6 * (f.index == 2)))).passed is False
    # 6: never decided without the transcribed formula
    assert j.judge_signatures(r).passed is None
    # 7: an AH exception measured at the expected (non-defective) dimension; a case missing
    assert j.judge_dimensions(_edit(r, "jacobian", lambda f: f.assign(
        rank=f["rank"] + ((f["d"] == 5) & (f["k"] == 3) & (f["r"] == 7))))).passed is False
    assert j.judge_dimensions(_edit(r, "jacobian", lambda f: f.iloc[1:])).passed is False
    # 8: enumeration off by 1e-10; the diagonal shift visible at 1e-9
    assert j.judge_rademacher(_edit(r, "rademacher", lambda f: f.assign(
        enumeration=f["enumeration"] + 1e-10 * (f.index == 3)))).passed is False
    assert j.judge_rademacher(_edit(r, "rademacher", lambda f: f.assign(
        loss_shifted=f["loss_shifted"] + 1e-9 * (f.index == 4)))).passed is False


def test_non_gaussian_judge_decides_at_paper_size(mn_quick):
    r, j = mn_quick, mn.judges
    res = copy.copy(r)
    res.config = dict(r.config, metric_teachers=50, metric_runs=200)

    def table(n_more):
        return pd.DataFrame(dict(teacher=range(50), gaussian_distinct=3, mixture_distinct=[4] * n_more + [3] * (
            50 - n_more), gaussian_converged=200, mixture_converged=200))
    assert j.judge_non_gaussian(_edit(res, "metric_counts", lambda f: table(15))).passed is True
    assert j.judge_non_gaussian(_edit(res, "metric_counts", lambda f: table(14))).passed is False
    assert j.judge_non_gaussian(r).passed is None


@pytest.mark.slow
def test_paper_path_at_toy_size(tmp_path):
    """The paper preset's code path (signature survey over d x r, Gaussian vs mixture counts) at toy size."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    res = execute("monomial-networks", "paper", 0, store=Store(tmp_path / "store"), device="cpu",
                  overrides=dict(d=4, signature_dims=(4, 5), signature_ranks=(1, 2), signature_teachers=2,
                                 metric_teachers=2, metric_runs=3, gd_runs=3, gd_steps=200, polish_steps=3,
                                 mc_n=2000, mc_matrices=3, ah_cases=((3, 3, 3), (4, 2, 2))))
    assert res.status == "done", res.message
    s = res.table("signatures")
    assert len(s) == 2 * (4 + 6) + 2 * (5 + 10) and (s["grad_norm"] < 1e-10).all()
    assert len(res.table("metric_gd")) == 2 * 2 * 3 and len(res.table("metric_counts")) == 2
    assert "not transcribed" in next(v for v in res.verdicts if v.id.endswith("hessian-signatures")).detail


def test_bad_config_fails_before_work():
    from theorylab.core.study import get_study

    st = get_study("monomial-networks")
    with pytest.raises(Exception, match="'r' must be < 'd'"):
        st.make_config("quick", r=6)
    with pytest.raises(Exception, match="signature_ranks"):
        st.make_config("quick", signature_ranks=(7,))
    with pytest.raises(Exception, match="gd_lr"):
        st.make_config("quick", gd_lr=-1.0)
    with pytest.raises(Exception, match="signature_dims"):
        st.make_config("quick", signature_dims=(10, 6))
