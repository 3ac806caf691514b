"""distributional-similarity: the quick run, judges that fail on wrong results, and the paper path at toy size."""

from __future__ import annotations

import numpy as np
import pytest

from result_edits import edit_table as _edit
from result_edits import set_where
from theorylab.studies import distributional_similarity as ds


@pytest.fixture(scope="module")
def ds_quick(quick_run):
    return quick_run("distributional-similarity")


def test_quick_claims(ds_quick):
    for v in ds_quick.verdicts:
        if v.id.endswith("fragments-recur"):
            assert v.passed is None and "reduced measurement" in v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"fingerprints", "nmi_matrix", "invariance", "noise_sweep"} <= {p.stem for p in ds_quick.figures}


def test_judges_fail_on_wrong_results(ds_quick):
    r, j = ds_quick, ds.judges
    # a self term off by rounding-plus (e.g. BC instead of BC² in I_11)
    assert j.judge_identity(_edit(r, "identity", lambda f: f.assign(vi=f["vi"] + 1e-6))).passed is False
    # a joint term that adds information: NMI(a, b) no longer 0
    wrong = _edit(r, "synthetic", lambda f: set_where(f, lambda t: t["quantity"] == "NMI(a, b)", "measured", 0.01))
    assert j.judge_discrete(wrong).passed is False
    # a fingerprint that moves under the reparametrisation; or a CKA that does not (no negative control)
    assert j.judge_reparam(_edit(r, "reparam", lambda f: f.assign(bc_max_diff=1e-6))).passed is False
    assert j.judge_reparam(_edit(r, "reparam", lambda f: f.assign(cka=0.99))).passed is False
    # more noise, more information
    rise = _edit(r, "noise", lambda f: f.assign(I=np.where((f["c"] == 4.0) & (f["channel"] == "all"), 50.0, f["I"])))
    assert j.judge_noise(rise).passed is False
    # runs that share no more than shuffled probes do; saturated runs are invalid, not passed
    assert j.judge_share(_edit(r, "pairs", lambda f: f.assign(nmi_shuffled=f["nmi"] - 0.1))).passed is False
    sat = j.judge_share(_edit(r, "pairs", lambda f: f.assign(I_a=8.0)))
    assert sat.passed is None and "saturated" in sat.detail
    # a "distance" that breaks the triangle inequality, or is not zero on a rotated copy
    broken = _edit(r, "distances", lambda f: set_where(f, lambda t: (t["method"] == "closed form") & (t["a"] == "0")
                                                       & (t["b"] == "1"), "d", 100.0))
    assert j.judge_metric(broken).passed is False
    rotated = _edit(r, "distances", lambda f: set_where(f, lambda t: t["b"] == "0 rotated", "d", 1e-6))
    assert j.judge_metric(rotated).passed is False


def test_fragment_share_counts_recurring_dimensions():
    import pandas as pd

    # run 0's z0 matches a dimension of both other runs; its z1 only of one: with 3 runs half of the others is 1
    rows = [(0, "z0", 1, "z3", 0.9), (0, "z0", 2, "z1", 0.85), (0, "z1", 1, "z2", 0.5), (0, "z1", 2, "z0", 0.79)]
    t = pd.DataFrame(rows, columns=["run_a", "dim_a", "run_b", "dim_b", "nmi"])
    share, active = ds.judges.fragment_share(t, runs=3)
    assert active == 2 and share == 0.5


def test_paper_path_at_toy_size(tmp_path):
    """The paper preset's code path (shapes2d, more runs, the fragments judged) at toy size."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    res = execute("distributional-similarity", "paper", 0, store=Store(tmp_path / "store"), device="cpu",
                  overrides=dict(shapes_size=8, shapes_train=256, probes=40, runs=3, steps=5, width=16,
                                 latent_dim=3, batch=32, cell_repeats=2, shape_iters=2))
    assert {v.id.split("/")[-1] for v in res.verdicts} >= {"identity", "metric-axioms", "fragments-recur"}
    assert res.table("probe_labels")["label"].nunique() >= 2  # shapes sorted by their shape factor


def test_bad_config_fails_before_work():
    from theorylab.core.study import get_study

    with pytest.raises(Exception, match="noise_scales"):
        get_study("distributional-similarity").make_config("quick", noise_scales=(1.5, 2.0))
    with pytest.raises(Exception, match="local_images"):
        get_study("distributional-similarity").make_config("quick", local_images="/no/such/file.npz")
