"""geometric-memorization: the quick run, judges that fail on wrong results, and the paper path at toy size."""

from __future__ import annotations

import pandas as pd
import pytest

import theorylab.studies.geometric_memorization as gm  # registers the study without an entry point
from result_edits import edit_table as _edit

PAPER_ONLY = ("transfer", "params-per-fact", "two-hop-tradeoff")


@pytest.fixture(scope="module")
def gm_quick(quick_run):
    return quick_run("geometric-memorization")


def test_quick_claims(gm_quick):
    assert gm_quick.status == "done", gm_quick.message
    for v in gm_quick.verdicts:
        if v.id.endswith(PAPER_ONLY):
            assert v.passed is None and "needs" in v.detail and "reduced measurement" in v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"construction_margin", "capacity_curves", "superposition_scatter", "transfer_curve"} <= {
        p.stem for p in gm_quick.figures
    }


def test_judges_fail_on_wrong_results(gm_quick):
    r, j = gm_quick, gm.judges
    # one wrong fact, a margin of 1 (a leaked/rescaled readout), a missed grid point, a miscounted parameter
    assert j.judge_exact(_edit(r, "construction", lambda f: f.assign(accuracy=f["accuracy"] - 1e-5))).passed is False
    assert j.judge_exact(_edit(r, "construction", lambda f: f.assign(min_margin=1.0))).passed is False
    assert j.judge_exact(_edit(r, "construction", lambda f: f.iloc[:-1])).passed is False
    assert (
        j.judge_exact(_edit(r, "construction", lambda f: f.assign(nonzero_params=f["nonzero_params"] + 1))).passed
        is False
    )
    # a construction that leaks dimensions recalls everything with one bit fewer
    assert j.judge_tight(_edit(r, "tight", lambda f: f.assign(accuracy=1.0, min_margin=2.0))).passed is False
    assert j.judge_tight(_edit(r, "tight", lambda f: f.assign(accuracy=f["recall_bound"] + 0.01))).passed is False
    assert j.judge_tight(_edit(r, "tight", lambda f: f.assign(k=f["k"] + 1))).passed is False  # no collision forced
    # CoT: a wrong two-hop answer, or queries missing
    assert j.judge_cot(_edit(r, "cot", lambda f: f.assign(accuracy=0.999))).passed is False
    assert j.judge_cot(_edit(r, "cot", lambda f: f.assign(n_queries=f["n_queries"] - 1))).passed is False
    # gradient descent short of 100%
    assert j.judge_gd(_edit(r, "training", lambda f: f.assign(accuracy=0.998))).passed is False
    # embeddings not explained by their attributes, or a control that is explained too (leak)
    assert j.judge_sup(_edit(r, "training", lambda f: f.assign(r2=0.3))).passed is False
    assert j.judge_sup(_edit(r, "training", lambda f: f.assign(r2_control=0.2))).passed is False


def test_paper_only_judges_decide_on_paper_tables(gm_quick):
    r, j = gm_quick, gm.judges
    cfg = dict(r.config)
    # transfer at d = 4 R log N with half the budget
    t = _edit(r, "transfer", lambda f: f.assign(multiplier=4, steps=cfg["steps"] // 2))
    good = _edit(t, "transfer", lambda f: f.assign(accuracy=f["mlp"].map({"trained": 0.95, "random": 0.5})))
    assert j.judge_transfer(good).passed is True
    close = _edit(t, "transfer", lambda f: f.assign(accuracy=f["mlp"].map({"trained": 0.95, "random": 0.85})))
    assert j.judge_transfer(close).passed is False
    low = _edit(t, "transfer", lambda f: f.assign(accuracy=f["mlp"].map({"trained": 0.8, "random": 0.1})))
    assert j.judge_transfer(low).passed is False
    # parameters per fact at N = 2^16 with a linear baseline
    big = _edit(r, "training", lambda f: f.assign(n=65536, r=1, d=16, mlp_params=2 * 16 * 64 + 80, accuracy=1.0))
    base = pd.DataFrame(
        dict(
            n=[1024, 4096, 16384],
            r=1,
            d=16,
            mlp_width=[64, 256, 1024],
            accuracy=1.0,
            mlp_params=[2 * 16 * w + w + 16 for w in (64, 256, 1024)],
        )
    )
    ok = _edit(big, "assoc", lambda f: base)
    assert j.judge_params(ok).passed is True
    flat = _edit(big, "assoc", lambda f: base.assign(mlp_params=[2000, 2100, 2200]))
    assert j.judge_params(flat).passed is False
    fat = _edit(ok, "training", lambda f: f.assign(mlp_params=10_000))
    assert j.judge_params(fat).passed is False
    # two-hop: no-CoT needs twice the width, or not
    rows = pd.DataFrame(
        dict(
            n=8192,
            r=2,
            d=[13, 26, 52, 13, 26, 52],
            mode=["cot"] * 3 + ["no-cot"] * 3,
            n_layers=[1] * 3 + [2] * 3,
            accuracy=[0.5, 1, 1, 0.1, 0.4, 1.0],
        )
    )
    assert j.judge_twohop(_edit(r, "twohop", lambda f: rows)).passed is True
    same = rows.assign(accuracy=[0.5, 1, 1, 0.1, 1.0, 1.0])
    assert j.judge_twohop(_edit(r, "twohop", lambda f: same)).passed is False
    never = rows.assign(accuracy=[0.5, 0.9, 0.9, 0.1, 0.4, 1.0])
    assert j.judge_twohop(_edit(r, "twohop", lambda f: never)).passed is False


def test_cpu_preset_decides_two_hop_with_its_departures(gm_quick):
    from theorylab.core.study import get_study

    r, j = gm_quick, gm.judges
    cpu = get_study("geometric-memorization").make_config("cpu").model_dump()
    assert cpu["twohop_n_entities"] == (256,) and cpu["twohop_dims"][0] == 4 and cpu["steps"] == 1500
    # the cpu sweep's shape: CoT stops at its first 100%, no-CoT once it failed at d >= 2 d_min(CoT)
    right = pd.DataFrame(
        dict(
            n=256,
            r=2,
            d=[4, 4, 8],
            mode=["cot", "no-cot", "no-cot"],
            n_layers=[1, 2, 2],
            accuracy=[1.0, 0.49, 0.93],
            seconds=1.0,
        )
    )
    v = j.judge_twohop(_edit(r, "twohop", lambda f: right))
    assert v.passed is True and "without inf" in v.detail and "no-cot d = 8: 0.9300" in v.detail, v.detail
    edge = right.assign(accuracy=[1.0, 0.49, 1.0])  # no-CoT solves at exactly 2 d_min(CoT): ratio 2 passes
    assert j.judge_twohop(_edit(r, "twohop", lambda f: edge)).passed is True
    wrong = right.iloc[:2].assign(accuracy=[1.0, 1.0])  # no-CoT solves at d_min(CoT): ratio 1
    assert j.judge_twohop(_edit(r, "twohop", lambda f: wrong)).passed is False
    short = right.iloc[:2]  # no-CoT never tried at 2 d_min(CoT): not enough sweep to decide
    assert j.judge_twohop(_edit(r, "twohop", lambda f: short)).passed is False
    hop = next(c for c in j.claims if c.id == "geometric-memorization/two-hop-tradeoff")
    said = hop.declare(hop.judge(_edit(r, "twohop", lambda f: right)), cpu, "cpu").departures
    assert len(said) == 2 and said[0].startswith("twohop_n_entities (256) (card (8192))"), said
    assert hop.declare(hop.judge(r), cpu, "quick").departures == ()
    assert hop.decided_by == "cpu"


def test_paper_path_at_toy_size(tmp_path):
    """The paper preset's code path (several N, R, d, seeds; transfer at 4x; baseline; two-hop) at toy size."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    res = execute(
        "geometric-memorization",
        "paper",
        0,
        store=Store(tmp_path / "store"),
        device="cpu",
        overrides=dict(
            construction_n_entities=(16, 40),
            construction_relations=(1, 2),
            cot_n_entities=16,
            cot_relations=2,
            train_n_entities=(16, 32),
            train_relations=(1, 2),
            width_multipliers=(1, 4),
            seeds=2,
            steps=20,
            evaluate_every=10,
            train_chunk=24,
            chunk=32,
            transfer_steps=10,
            assoc_n_entities=(16, 32),
            assoc_widths=(4, 8),
            twohop_n_entities=(16,),
            twohop_dims=(4, 8),
        ),
    )
    assert res.status == "done", res.message
    t = res.table("training")
    assert len(t) == 2 * 2 * 2 * 2 and set(t["d"]) == {4, 8, 5, 10, 16, 20, 32, 40}
    assert set(res.table("transfer")["mlp"]) == {"trained", "random"} and len(res.table("transfer")) == 2 * 2 * 2 * 2
    hop = res.table("twohop")  # each sweep stops once the verdict is fixed (at most 2 dims each here)
    assert 2 <= len(hop) <= 4 and set(hop["mode"]) == {"cot", "no-cot"} and (hop["seconds"] > 0).all()
    cot = hop[hop["mode"] == "cot"]
    assert (cot["accuracy"].iloc[:-1] < 1).all()
    assert len(res.table("assoc")) >= 2
    assert [v.id.split("/")[-1] for v in res.verdicts][:3] == [
        "construction-exact",
        "construction-tight",
        "cot-two-hop-exact",
    ]
    assert all(v.passed is not False for v in res.verdicts[:3])


def test_bad_config_fails_before_work():
    from theorylab.core.study import get_study

    st = get_study("geometric-memorization")
    with pytest.raises(Exception, match="construction_n_entities"):
        st.make_config("quick", construction_n_entities=(1,))
    with pytest.raises(Exception, match="twohop_dims"):
        st.make_config("quick", twohop_n_entities=(64,))
    with pytest.raises(Exception, match="transfer_multiplier"):
        st.make_config("quick", transfer_multiplier=4)
    with pytest.raises(Exception, match="assoc_widths"):
        st.make_config("quick", assoc_widths=(8, 4))
    with pytest.raises(Exception, match="train_relations"):
        st.make_config("quick", train_relations=(0,))


def test_nan_accuracy_fails_naming_its_row_and_the_step_departure_is_per_preset(gm_quick):
    gd = next(c for c in gm.judges.claims if c.id == "geometric-memorization/gd-log-dim")
    v = gd.evaluate(_edit(gm_quick, "training", lambda f: f.assign(accuracy=float("nan"))))
    assert v.passed is False and "n = 256" in v.detail, v.detail
    said = gd.evaluate(gm_quick).departures
    assert len(said) == 1 and said[0].startswith("steps 500 (card 1500)"), said
    assert gd.declare(gd.judge(gm_quick), {**gm_quick.config, "steps": 1500}, "quick").departures == ()
    assert gd.declare(gd.judge(gm_quick), {**gm_quick.config, "steps": 20_000}, "paper").departures == ()
    tight = next(c for c in gm.judges.claims if c.id == "geometric-memorization/construction-tight")
    v = tight.evaluate(_edit(gm_quick, "tight", lambda f: f.assign(accuracy=f["accuracy"].where(f["n"] != 2048))))
    assert v.passed is False and "n = 2048" in v.detail, v.detail
