"""self-refining-surrogate: config errors, the quick run's claims, judges fed wrong results, toy-size runs of the
quick and paper (Kolmogorov, U-Net with anchor) code paths."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from result_edits import edit_table as _edit
from result_edits import set_where
from theorylab.studies import self_refining_surrogate as sns
from theorylab.studies.self_refining_surrogate.config import SelfRefiningSurrogateConfig

TOY = dict(gauss_chains=100, gauss_steps=100, train_trajectories=4, train_horizon=40, test_trajectories=3, horizon=20,
           baseline_horizon=10, spectrum_window=10, pairs=12, calibration_pairs=100, levels=50, low_levels=10,
           width=16, blocks=1, steps=10, batch=16, refine_levels=(5, 10, 15))


@pytest.fixture(scope="module")
def sns_quick(quick_run):
    return quick_run("self-refining-surrogate")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    return execute("self-refining-surrogate", "quick", 0, TOY, store=Store(tmp_path_factory.mktemp("s") / "store"),
                   device="cpu")


@pytest.mark.parametrize("bad, field", [(dict(variant="down_left"), "variant"), (dict(low_levels=2000), "low_levels"),
                                        (dict(refine_levels=(0, 100)), "refine_levels"),
                                        (dict(spectrum_window=700), "spectrum_window"),
                                        (dict(baseline_horizon=700), "baseline_horizon"), (dict(steps=0), "steps"),
                                        (dict(low_share=1.5), "low_share")])
def test_config_errors_name_the_field(bad, field):
    with pytest.raises(ValidationError, match=field):
        SelfRefiningSurrogateConfig(**bad)


@pytest.mark.slow
def test_toy_run_end_to_end(toy):
    assert {"gauss", "calibration", "one_step", "no_op", "rollouts", "spectrum", "sns_levels"} <= set(toy.tables)
    assert set(toy.table("rollouts")["rollout"]) == {"plain", "sns", "acdm", "thermo"}
    ids = {v.id.split("/")[-1]: v for v in toy.verdicts}
    assert ids["gauss-tradeoff"].passed is not None and not ids["kf-correlation"].passed
    assert ids["kf-correlation"].detail.startswith("needs paper preset")
    for v in toy.verdicts:  # every quick claim is judged (not errored) even at toy size
        assert not v.error, f"{v.id}: {v.detail}"


def test_quick_claims(sns_quick):
    for v in sns_quick.verdicts:
        if v.id.endswith(("kf-correlation", "qg-long")):
            assert v.passed is None and v.detail.startswith("needs paper preset"), v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"tradeoff", "corr_decay", "one_step", "spectrum"} <= {p.stem for p in sns_quick.figures}


def test_judges_fail_on_wrong_results(sns_quick):
    r, j = sns_quick, sns.judges
    # a non-monotone trade-off, or a Monte Carlo chain off its closed form
    assert j.judge_tradeoff(_edit(r, "gauss", lambda f: set_where(f, lambda t: (t["delta"] == 0.04) & (
        t["level"] == 400), "mse", 0.2))).passed is False
    assert j.judge_tradeoff(_edit(r, "gauss", lambda f: set_where(f, lambda t: (t["delta"] == 0.04) & (
        t["level"] == 50), "mc_variance", 2.95))).passed is False
    # a chain that does not diverge below c*, or a V_100 off by 20%
    assert j.judge_critical(_edit(r, "gauss", lambda f: set_where(f, lambda t: (t["delta"] == 0.08) & (
        t["level"] == 50), "mc_max_variance", 30.0))).passed is False
    assert j.judge_critical(_edit(r, "gauss", lambda f: set_where(f, lambda t: (t["delta"] == 0.08) & (
        t["level"] == 100), "mc_variance", 29.0))).passed is False
    # a head that guesses, or that calls clean pairs noisy
    assert j.judge_classifier(_edit(r, "calibration", lambda f: f.assign(predicted=f["level"].sample(
        frac=1, random_state=0).to_numpy()))).passed is False
    assert j.judge_classifier(_edit(r, "calibration", lambda f: f.assign(clean=40))).passed is False
    # conditioning that does not help (thermo as good as SNS), or a refinement that adds error
    assert j.judge_conditioning(_edit(r, "one_step", lambda f: f.assign(mse_thermo=f["mse_sns"] * 1.2))).passed is False
    assert j.judge_conditioning(_edit(r, "one_step", lambda f: f.assign(mse_sns=f["mse_input"] * 1.01,
                                                                        mse_thermo=f["mse_input"] * 2))).passed is False
    assert j.judge_noop(_edit(r, "no_op", lambda f: f.assign(relative_change=0.05))).passed is False
    # an emulator that does not drift; an SNS rollout that leaves the attractor
    assert j.judge_stabilizes(_edit(r, "rollouts", lambda f: set_where(f, lambda t: t["rollout"] == "plain",
                                                                       "off_attractor", math.inf))).passed is False
    assert j.judge_stabilizes(_edit(r, "rollouts", lambda f: set_where(f, lambda t: t["rollout"] == "sns",
                                                                       "off_attractor", 90.0))).passed is False
    assert j.judge_short(_edit(r, "rollouts", lambda f: set_where(f, lambda t: t["rollout"] == "thermo",
                                                                  "corr_time_0.8", 1000.0))).passed is False
    assert j.judge_spectrum(_edit(r, "spectrum", lambda f: set_where(f, lambda t: t["mode"] == 3, "ratio",
                                                                     1.3))).passed is False
    assert j.judge_spectrum(_edit(r, "spectrum", lambda f: set_where(f, lambda t: t["mode"].between(1, 6), "ratio",
                                                                     1.15))).passed is False


class _Tables:
    """The part of a Result the Kolmogorov judge reads."""

    def __init__(self, tables):
        self.tables = tables

    def table(self, name, unless=None):
        return self.tables[name]


def _with_kf(sns_time=50.0, sns_sim=0.1):
    import pandas as pd

    rows = [dict(rollout=k, trajectory=i, corr_time_0_8=t, spectral_similarity=s, calls_per_step=c,
                 off_attractor=math.inf, horizon=10_000)
            for k, t, s, c in (("plain", 20.0, 0.5, 0), ("sns", sns_time, sns_sim, 12), ("acdm", 40.0, 0.3, 12),
                               ("thermo", 10.0, 0.2, 60)) for i in range(8)]
    return _Tables({"kolmogorov": pd.DataFrame(rows)})


def test_kf_judge_passes_right_and_fails_wrong():
    assert sns.judges.judge_kf(_with_kf()).passed is True
    assert sns.judges.judge_kf(_with_kf(sns_time=30.0)).passed is False  # below acdm
    assert sns.judges.judge_kf(_with_kf(sns_sim=0.25)).passed is False  # spectrum worse than thermo


def _with_qg(sns_done=10, acdm_done=4, acdm_calls=12.0, horizon=50_000):
    import pandas as pd

    rows = [dict(rollout=k, trajectory=i, completed=i < done, calls_per_step=c, horizon=horizon)
            for k, done, c in (("plain", 0, 0.0), ("sns", sns_done, 12.0), ("acdm", acdm_done, acdm_calls))
            for i in range(10)]
    return _Tables({"qg": pd.DataFrame(rows)})


def test_qg_judge_passes_right_and_fails_wrong():
    assert sns.judges.judge_qg(_with_qg()).passed is True
    assert sns.judges.judge_qg(_with_qg(acdm_done=10, acdm_calls=20.0)).passed is True  # acdm costs more
    assert sns.judges.judge_qg(_with_qg(sns_done=8)).passed is False  # SNS below 90%
    assert sns.judges.judge_qg(_with_qg(acdm_done=10, acdm_calls=12.0)).passed is False  # acdm as good and as cheap
    assert "reduced" in sns.judges.judge_qg(_with_qg(horizon=1000)).detail


@pytest.mark.slow
def test_paper_path_runs_at_toy_size(tmp_path):
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    small = dict(TOY, kolmogorov=True, kolmogorov_solve_n=32, kolmogorov_store_n=16, kolmogorov_nu=1e-2,
                 kolmogorov_dt=5e-3, kolmogorov_spinup=50, kolmogorov_train_trajectories=3,
                 kolmogorov_train_horizon=12, kolmogorov_test_trajectories=2, kolmogorov_horizon=8,
                 kolmogorov_width=8, kolmogorov_levels=1, kolmogorov_emulator_steps=3, kolmogorov_steps=3,
                 kolmogorov_batch=4)
    res = execute("self-refining-surrogate", "quick", 0, small, store=Store(tmp_path / "store"), device="cpu")
    t = res.table("kolmogorov")
    assert set(t["rollout"]) == {"plain", "sns", "acdm", "thermo"} and len(t) == 8
    assert np.all(t.loc[t["rollout"] != "plain", "calls_per_step"] >= 1)
    v = sns.judges.judge_kf(res)
    assert v.passed in (True, False) and "corr_time" in v.detail  # judged, not skipped


@pytest.mark.slow
def test_qg_path_runs_at_toy_size(tmp_path):
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    # in bf16: the autocast path of the rollouts (U-Net emulator and SNS model) runs end to end too
    small = dict(TOY, precision="bf16", qg=True, qg_solve_n=16, qg_store_n=8, qg_spinup=20, qg_train_trajectories=2,
                 qg_train_horizon=10, qg_test_trajectories=2, qg_horizon=6, qg_width=8, kolmogorov_levels=1,
                 qg_emulator_steps=3, qg_steps=3, kolmogorov_batch=4)
    res = execute("self-refining-surrogate", "quick", 0, small, store=Store(tmp_path / "store"), device="cpu")
    t = res.table("qg")
    assert set(t["rollout"]) == {"plain", "sns", "acdm"} and len(t) == 6
    assert np.all(t.loc[t["rollout"] != "plain", "calls_per_step"] >= 1)
    v = sns.judges.judge_qg(res)
    assert v.passed in (True, False) and "completed" in v.detail  # judged, not skipped
