"""mpnn-algorithms: the quick run, and judges that fail on wrong results."""

from __future__ import annotations

import pytest
from result_edits import edit_table as _edit
from result_edits import set_where

from theorylab.studies import mpnn_algorithms as mpnn


def test_quick_claims(mpnn_quick):
    for v in mpnn_quick.verdicts:
        if v.id.endswith("mst-minimax"):
            assert v.passed is None and "needs paper preset" in v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"error_vs_n", "learned_f", "knapsack_vs_items", "wl_pair"} <= {p.stem for p in mpnn_quick.figures}
    sizes = mpnn_quick.table("size_generalization")
    assert set(sizes["n"]) == {16, 64, 256, 1024} and set(sizes["aggr"]) == {"min", "sum", "mean"}


def _min_reg(t):
    return (t["aggr"] == "min") & (t["eta"] == 1e-3)


def test_judges_fail_on_wrong_results(mpnn_quick):
    r = mpnn_quick
    assert mpnn.judge_reference(_edit(r, "references", lambda f: set_where(f, lambda t: t.index == 3, "error", 1e-6))).passed is False
    # one seed off by 2% at n = 1024, or an error that grows tenfold with n (below 1e-2 but not flat)
    big = _edit(r, "size_generalization", lambda f: set_where(f, lambda t: _min_reg(t) & (t["n"] == 1024) & (t["seed"] == 1), "mean_rel_error", 2e-2))
    assert mpnn.judge_size(big).passed is False
    growing = _edit(r, "size_generalization", lambda f: f.assign(mean_rel_error=f["mean_rel_error"].where(~_min_reg(f), 1e-4 * f["n"] / 16 * 1.5)))
    assert mpnn.judge_size(growing).passed is False
    assert mpnn.judge_learned_f(_edit(r, "learned_function", lambda f: set_where(f, lambda t: t["eta"] == 1e-3, "max_rel_error", 0.05))).passed is False
    # a "sum" model that secretly takes the min would score like the min model
    assert mpnn.judge_aggregation(_edit(r, "size_generalization", lambda f: set_where(f, lambda t: t["aggr"] == "sum", "mean_rel_error", 1e-5))).passed is False
    assert mpnn.judge_l1(_edit(r, "learned_function", lambda f: set_where(f, lambda t: t["eta"] == 1e-3, "l1", 300.0))).passed is False
    # node ids leaking in would make the node MPNN tell the graphs apart
    assert mpnn.judge_wl(_edit(r, "wl_pair", lambda f: set_where(f, lambda t: t["variant"] == "node MPNN", "embedding_gap", 0.3))).passed is False
    assert mpnn.judge_wl(_edit(r, "wl_pair", lambda f: set_where(f, lambda t: t["variant"].str.startswith("pair"), "embedding_gap", 0.0))).passed is False
    assert mpnn.judge_knapsack(_edit(r, "knapsack", lambda f: set_where(f, lambda t: t["seed"] == 2, "rel_error", 0.05))).passed is False


def test_bad_config_fails_before_work():
    from theorylab.core.study import all_studies

    with pytest.raises(ValueError, match="knap_items"):
        all_studies()["mpnn-algorithms"].make_config("quick", knap_items=0)
    with pytest.raises(ValueError, match="regulariser"):
        all_studies()["mpnn-algorithms"].make_config("quick", regulariser="l2")
