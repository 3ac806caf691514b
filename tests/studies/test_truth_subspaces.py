"""truth-subspaces: the quick run, judges that fail on wrong results, the paper path at toy size, bad input."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import theorylab.studies.truth_subspaces as ts  # registers the study without an entry point
from offline_models import tiny_gpt2_and_counterfact
from result_edits import edit_table as _edit
from result_edits import set_where

QUICK = ("bayes-closed-form", "memorise-first", "plateau", "truth-later", "final-state", "norm-carries-truth")
PAPER_ONLY = ("no-layernorm", "rho-ordering", "own-lm-cooccurrence")


@pytest.fixture(scope="module")
def ts_quick(quick_run):
    return quick_run("truth-subspaces")


@pytest.fixture(scope="module")
def ts_paper_toy(tmp_path_factory):
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    return execute(
        "truth-subspaces",
        "paper",
        0,
        store=Store(tmp_path_factory.mktemp("ts") / "store"),
        device="cpu",
        overrides=dict(
            n_entities=(8,),
            d_model=16,
            n_layers=(1, 2),
            seeds=2,
            steps=60,
            evaluate_at=(30, 60),
            test_n=400,
            histogram_n=100,
            bayes_n=2000,
            lm_steps=10,
            lm_d_model=32,
            lm_n_layers=2,
            lm_n_heads=2,
            lm_n_subjects=10,
            lm_n_attributes=10,
            lm_batch=16,
            lm_test_n=200,
        ),
    )


def _by_id(res):
    return {v.id.split("/")[-1]: v for v in res.verdicts}


def test_quick_claims(ts_quick):
    v = _by_id(ts_quick)
    for claim in QUICK:
        assert v[claim].passed is True, f"{claim}: {v[claim].detail}"
    for claim in PAPER_ONLY:
        assert v[claim].passed is None and (
            "needs paper preset" in v[claim].detail
            or "needs the cpu preset" in v[claim].detail
            or "needs cpu preset" in v[claim].detail
        )
    assert "reduced measurement" in v["rho-ordering"].detail
    assert "needs cpu preset (own LM" in v["own-lm-cooccurrence"].detail
    assert {"two_phase", "probe_sites_heatmap", "rho_sweep", "norm_by_context"} <= {p.stem for p in ts_quick.figures}


def _curve(res, **cols):
    return _edit(res, "curve", lambda f: f.assign(**cols))


def _probe(res, site, value, step=None):
    def edit(f):
        last = f["step"].max() if step is None else step
        return set_where(
            f,
            lambda t: (t["site"] == site) & (t["metric"] == "probe") & ((t["step"] >= last) if step is None else True),
            "value",
            value,
        )

    return _edit(res, "probes", edit)


def test_judges_fail_on_wrong_results(ts_quick):
    r, j = ts_quick, ts.judges
    # a generator without the truth correlation: the Bayes loss would sit at L_mem
    assert j.judge_bayes(_edit(r, "bayes", lambda f: f.assign(closed_form=f["closed_form"] + 0.02))).passed is False
    # memorisation that never reaches 0.9, or only late
    assert j.judge_memorise(_curve(r, mem_acc=0.5)).passed is False
    late = _edit(r, "curve", lambda f: f.assign(mem_acc=np.where(f["step"] < 500, 0.1, 1.0)))
    assert j.judge_memorise(late).passed is False
    # no plateau: the loss falls straight to the Bayes level
    assert j.judge_plateau(_curve(r, loss_y2=0.43)).passed is False
    # truth decodable from the start (no two phases), or never
    early = _edit(
        r, "probes", lambda f: set_where(f, lambda t: (t["site"] == "y/post") & (t["metric"] == "probe"), "value", 0.99)
    )
    assert j.judge_later(early).passed is False
    never = _edit(
        r, "probes", lambda f: set_where(f, lambda t: (t["site"] == "y/post") & (t["metric"] == "probe"), "value", 0.6)
    )
    assert j.judge_later(never).passed is False
    # a weak final probe, a loss above L_Bayes + 0.08, or no true/false split
    assert j.judge_final(_probe(r, "y/post", 0.93)).passed is False
    assert j.judge_final(_curve(r, loss_y2=0.52)).passed is False
    assert j.judge_final(_curve(r, loss_y2_false=1.0, loss_y2_true=0.5)).passed is False
    # the pre-norm residual already linearly decodable
    assert j.judge_norm(_probe(r, "y/pre", 0.9)).passed is False


def _claim(cid):
    return next(c for c in ts.judges.claims if c.id == f"truth-subspaces/{cid}")


def test_nan_fails_the_claim_naming_it(ts_quick):
    """A NaN in a judged quantity fails the claim (pandas' min/max, Python's min would skip it)."""
    r = ts_quick
    nan_probe = _probe(r, "y/post", math.nan)
    for cid in ("final-state", "norm-carries-truth"):
        v = _claim(cid).evaluate(nan_probe)
        assert v.passed is False and "NaN" in v.detail, (cid, v.detail)
    v = _claim("final-state").evaluate(_curve(r, loss_y2_false=math.nan))
    assert v.passed is False and "loss_false_end" in v.detail and "seed = 0" in v.detail
    # a NaN loss inside the plateau window: the closest distance is NaN, never the next finite point
    window = _edit(r, "curve", lambda f: set_where(f, lambda t: t["step"] == 200, "loss_y2", math.nan))
    assert _claim("plateau").evaluate(window).passed is False
    v = _claim("bayes-closed-form").evaluate(
        _edit(r, "bayes", lambda f: set_where(f, lambda t: t["predictor"] == "memorise", "empirical", math.nan))
    )
    assert v.passed is False and "memorise" in v.detail
    # and the right tables still pass
    for cid in ("bayes-closed-form", "plateau", "final-state", "norm-carries-truth"):
        assert _claim(cid).evaluate(r).passed is True, cid


def _declared(cid, passed=True, preset="quick", **overrides):
    from theorylab.core.study import Verdict, get_study

    c = _claim(cid)
    config = get_study("truth-subspaces").make_config(preset, **overrides).model_dump(mode="json")
    return c.declare(Verdict(c.id, c.statement, 0.0, 0.0, 0.0, passed), config, preset)


def test_departures_and_known_failures_are_declared():
    """The quick recipe (lr 2e-3, embedding decay 0.3) and the 1e6-sequence Bayes check are departures that go away
    with the card's values; the paper preset keeps the card's lr but not its plain Adam; plateau is known on 1/10."""
    trained = (
        "memorise-first",
        "plateau",
        "truth-later",
        "final-state",
        "norm-carries-truth",
        "no-layernorm",
        "rho-ordering",
    )
    for cid in trained:
        v = _declared(cid)
        assert v.outcome == "departed" and len(v.departures) == 2, (cid, v.departures)
        assert v.departures[0].startswith("lr 0.002 (card 0.001)") and "weight_decay 0.3 (card 0)" in v.departures[1]
        assert _declared(cid, lr=1e-3, weight_decay=0.0).outcome == "passed"
        paper = _declared(cid, preset="paper")
        assert [d.split(" (")[0] for d in paper.departures] == ["weight_decay 0.3"], paper.departures
    assert _declared("bayes-closed-form").departures[0].startswith("bayes_n 1000000 (card 200000)")
    assert _declared("bayes-closed-form", bayes_n=200_000).outcome == "passed"
    assert _declared("own-lm-cooccurrence").outcome == "passed"  # the card's width 256
    lm = _declared("own-lm-cooccurrence", preset="cpu")
    assert lm.outcome == "departed" and [d.split(" (")[0] for d in lm.departures] == ["lm_d_model 64"], lm.departures
    known = _declared("plateau", passed=False)
    assert known.outcome == "known" and "1/10 seeds (3)" in known.known
    assert _declared("truth-later", passed=False).outcome == "failed"


def test_cpu_preset_decides_no_layernorm_and_own_lm():
    """The cpu preset is quick plus the no-LayerNorm ablation and a width-64 own LM of 1000 steps; no-layernorm and
    own-lm-cooccurrence are decided there, the ρ sweep on a GPU."""
    from theorylab.core.study import all_studies

    s = all_studies()["truth-subspaces"]
    cfg = s.make_config("cpu")
    assert cfg.final_norms == ("layer", "none")
    assert cfg.lm_steps == ts.judges.LM_STEPS and cfg.lm_n_layers == 4 and cfg.lm_d_model == 64
    assert cfg.steps == s.make_config("quick").steps  # the toy runs are quick's
    assert s.presets["paper"].gpu_minutes and not s.presets["cpu"].gpu_minutes
    by = {c.id.split("/")[-1]: c.decided_by for c in s.claims}
    assert by["no-layernorm"] == by["own-lm-cooccurrence"] == "cpu" and by["rho-ordering"] == "paper"


def test_paper_path_at_toy_size(ts_paper_toy):
    res = ts_paper_toy
    c = res.table("curve")
    assert set(c["n"]) == {8} and set(c["n_layers"]) == {1, 2} and set(c["final_norm"]) == {"layer", "none"}
    assert set(np.round(c["rho"], 3)) == {0.5, 0.9, 0.99, 0.999} and set(c["seed"]) == {0, 1}
    sites = set(res.table("probes")["site"])
    assert {"y/pre", "y/post", "x2/pre", "x2/post", "y/L0", "x2/L0"} <= sites
    assert set(res.table("own_lm")["metric"]) == {"logp_last_all_true", "logp_last_one_false", "probe_mean_residual"}
    v = _by_id(res)
    assert v["no-layernorm"].passed is not None
    lm = v["own-lm-cooccurrence"]  # 10 own-LM steps < 1000: the reduced measurement, never a verdict
    assert lm.passed is None and "needs cpu preset" in lm.detail and "reduced measurement: 10 steps" in lm.detail
    assert v["rho-ordering"].passed is None and "needs paper preset" in v["rho-ordering"].detail  # 60 < 1e5 steps
    assert all(np.isfinite(res.table("curve")[k]).all() for k in ("loss_y2", "mem_acc"))


def _paper_steps(res):
    out = copy.copy(res)
    out.config = {**res.config, "steps": 100_000, "lm_steps": 1000}
    return out


def _set_t_truth(res, by_rho: dict[float, int]):
    """Probe y/post reaches 0.9 exactly at the given step for each ρ (base N and layers, final LayerNorm)."""

    def edit(f):
        f = f.copy()
        sel = (f["site"] == "y/post") & (f["metric"] == "probe") & (f["final_norm"] == "layer")
        for rho, t in by_rho.items():
            rows = sel & np.isclose(f["rho"], rho)
            f.loc[rows, "value"] = np.where(f.loc[rows, "step"] >= t, 0.95, 0.6)
        return f

    return _edit(res, "probes", edit)


@pytest.mark.slow
def test_paper_judges_decide_and_fail(ts_paper_toy):
    r, j = _paper_steps(ts_paper_toy), ts.judges
    ordered = _set_t_truth(r, {0.5: 10, 0.9: 30, 0.99: 30, 0.999: 60})
    v = j.judge_rho(ordered)
    assert (
        v.passed is True
        and "probes at ρ = 0.99, 0.999 fit and scored on test sequences drawn at ρ = 0.9" in (v.departures[0])
    )
    assert j.judge_rho(_set_t_truth(r, {0.5: 60, 0.9: 30, 0.99: 30, 0.999: 60})).passed is False
    assert j.judge_rho(_set_t_truth(r, {0.5: 10, 0.9: 30, 0.99: 30, 0.999: 10**9})).passed is False
    # no-LN: a decodable no-LN run, or one whose loss falls well below L_mem, fails
    noln = _edit(
        r,
        "probes",
        lambda f: set_where(f, lambda t: (t["final_norm"] == "none") & (t["metric"] == "probe"), "value", 0.55),
    )
    noln = _edit(noln, "curve", lambda f: set_where(f, lambda t: t["final_norm"] == "none", "loss_y2", 5.0))
    assert j.judge_noln(noln).passed is True
    bad = _edit(
        noln,
        "probes",
        lambda f: set_where(f, lambda t: (t["final_norm"] == "none") & (t["site"] == "x2/pre"), "value", 0.9),
    )
    assert j.judge_noln(bad).passed is False
    low = _edit(noln, "curve", lambda f: set_where(f, lambda t: t["final_norm"] == "none", "loss_y2", 0.1))
    assert j.judge_noln(low).passed is False
    # own LM: no drop after a false fact, or a weak probe
    good = _edit(r, "own_lm", lambda f: f.assign(value=[-0.1, -2.0, 0.97]))
    assert j.judge_lm(good).passed is True
    assert j.judge_lm(_edit(r, "own_lm", lambda f: f.assign(value=[-0.1, -0.3, 0.97]))).passed is False
    assert j.judge_lm(_edit(r, "own_lm", lambda f: f.assign(value=[-0.1, -2.0, 0.7]))).passed is False
    assert j.judge_lm(_edit(r, "own_lm", lambda f: f.assign(value=[-0.1, math.nan, 0.97]))).passed is False
    short = copy.copy(good)
    short.config = {**good.config, "lm_steps": 999}  # below the cpu preset's own LM: undecided, even if it would pass
    v = j.judge_lm(short)
    assert v.passed is None and "needs cpu preset" in v.detail and "reduced measurement: 999 steps" in v.detail


def test_bad_config_fails_before_work(tmp_path):
    from theorylab.core.study import get_study

    st = get_study("truth-subspaces")
    with pytest.raises(Exception, match="evaluate_at"):
        st.make_config("quick", evaluate_at=(100, 50, 2000))
    with pytest.raises(Exception, match="rhos"):
        st.make_config("quick", rhos=(1.5,))
    with pytest.raises(Exception, match="final_norms"):
        st.make_config("quick", final_norms=("none",))
    with pytest.raises(Exception, match="local_model_path.*does not exist.*never downloads"):
        st.make_config("quick", local_model_path=tmp_path / "absent-model", counterfact_path=tmp_path / "cf.json")
    with pytest.raises(Exception, match="give both or neither"):
        st.make_config("quick", local_model_path=tmp_path)
    assert math.isclose(st.make_config("quick").rhos[0], 0.9)


def test_local_weights_path_runs_in_the_study(tmp_path):
    """The study's optional pretrained-LM path, wired end to end on a tiny offline GPT-2 (the measurement itself is
    tested in tests/probes/test_counterfact.py): a 'pretrained' table with both contexts and a probe score."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    model_dir, cf = tiny_gpt2_and_counterfact(tmp_path)
    res = execute(
        "truth-subspaces",
        "quick",
        0,
        store=Store(tmp_path / "store"),
        device="cpu",
        overrides=dict(
            n_entities=(8,),
            d_model=16,
            steps=20,
            evaluate_at=(10, 20),
            test_n=400,
            histogram_n=100,
            bayes_n=2000,
            local_model_path=model_dir,
            counterfact_path=cf,
            counterfact_prompts=3,
        ),
    )
    table = res.table("pretrained")
    assert len(table) == 6 and set(table["context"]) == {"all_true", "one_false"}
    assert np.isfinite(table["logp"]).all() and 0.0 <= res.scalars["pretrained_probe"] <= 1.0
