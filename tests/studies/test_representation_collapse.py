"""representation-collapse: the quick run, judges that fail on wrong results, and the paper path at toy size."""

from __future__ import annotations

import numpy as np
import pytest

from result_edits import edit_table as _edit
from result_edits import set_where
from theorylab.studies import representation_collapse as rc


@pytest.fixture(scope="module")
def rc_quick(quick_run):
    return quick_run("representation-collapse")


def test_quick_claims(rc_quick):
    for v in rc_quick.verdicts:
        if v.id.endswith(("collapse-grows-with-length", "collapse-predicts-failure")):
            assert v.passed is None and "recall" in v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"dilution", "count_gap"} <= {p.stem for p in rc_quick.figures}


def test_judges_fail_on_wrong_results(rc_quick):
    r, j = rc_quick, rc.judges
    # an edit whose effect does not dilute (S flat in L), or a control that dilutes like the model
    flat = _edit(r, "edit", lambda f: set_where(f, lambda t: t["variant"] == "model", "sensitivity", 0.3))
    assert j.judge_dilution(flat).passed is False
    control = _edit(r, "edit", lambda f: f.assign(sensitivity=np.where(
        f["variant"] == "model", f["sensitivity"], 10.0 / f["L"])))
    assert j.judge_dilution(control).passed is False
    # an attention output that moves more than B(L) (e.g. a broken normalisation)
    broken = _edit(r, "bound", lambda f: f.assign(change=np.where(f["L"] == 4096, f["bound"] * 1.01, f["change"])))
    assert j.judge_bound(broken).passed is False
    # a count gap decaying as 1/L, or one whose tail is right but whose segments flatten
    linear = _edit(r, "count", lambda f: f.assign(gap=np.where(f["dtype"] == "float64", 1.0 / f["L"], f["gap"])))
    assert j.judge_count(linear).passed is False
    bent = _edit(r, "count", lambda f: f.assign(gap=np.where(
        f["dtype"] == "float64", np.where(f["L"] <= 64, 1.0 / f["L"] ** 2.5, 1.0 / f["L"] ** 2), f["gap"])))
    assert j.judge_count(bent).passed is False
    # bfloat16 states that stay apart at L = 4096, or a float32 gap of zero at a short length
    apart = _edit(r, "count", lambda f: set_where(f, lambda t: (t["dtype"] == "bfloat16") & (t["L"] == 4096),
                                                   "identical", False))
    assert j.judge_precision(apart).passed is False
    # two of three models apart (one straddle is tolerated, two are not)
    two = _edit(r, "count", lambda f: set_where(f, lambda t: (t["dtype"] == "bfloat16") & (t["L"] == 4096)
                                                 & (t["model"] >= 1), "identical", False))
    assert j.judge_precision(two).passed is False
    zero32 = _edit(r, "count", lambda f: set_where(f, lambda t: (t["dtype"] == "float32") & (t["L"] == 256),
                                                    "gap", 0.0))
    assert j.judge_precision(zero32).passed is False
    # a calibration that leaves anisotropy in (iid states read as collapsed)
    assert j.judge_cosine(_edit(r, "cosine_sanity", lambda f: f.assign(C=[0.1, 0.99]))).passed is False
    assert j.judge_cosine(_edit(r, "cosine_sanity", lambda f: f.assign(C=[0.0, 0.5]))).passed is False


def test_paper_path_at_toy_size(tmp_path):
    """The recall models of claims 6-7, trained and read at toy size: the judges decide (either way)."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    res = execute("representation-collapse", "quick", 0, store=Store(tmp_path / "store"), device="cpu",
                  overrides=dict(models=1, lengths=(16, 64, 256), recall=True, recall_models=2, recall_d_model=16,
                                 recall_n_layers=1, recall_pairs=2, recall_train_length=16, recall_steps=3,
                                 recall_batch=4, recall_lengths=(16, 32, 64), recall_eval_batch=4))
    by_id = {v.id.split("/")[-1]: v for v in res.verdicts}
    for cid in ("collapse-grows-with-length", "collapse-predicts-failure"):
        assert by_id[cid].passed is not None, by_id[cid].detail
    t = res.table("recall")
    assert set(t["L"]) == {16, 32, 64} and t["model"].nunique() == 2 and t["accuracy"].between(0, 1).all()
    assert {"collapse_vs_accuracy", "erank_vs_length"} <= {p.stem for p in res.figures}


def test_bad_config_fails_before_work():
    from theorylab.core.study import get_study

    with pytest.raises(Exception, match="lengths"):
        get_study("representation-collapse").make_config("quick", lengths=(64, 16, 256))
    with pytest.raises(Exception, match="slope_from"):
        get_study("representation-collapse").make_config("quick", slope_from=4096)
