"""attention-sensitivity: the quick run, judges that fail on wrong results, the warmup path at toy size."""

from __future__ import annotations

import numpy as np
import pytest
from result_edits import edit_table as _edit
from result_edits import set_where

from theorylab.core import RunContext
from theorylab.studies import attention_sensitivity as sens


def test_quick_claims(sensitivity_quick):
    for v in sensitivity_quick.verdicts:
        if v.id.endswith("warmup-needed"):
            assert v.passed is None and "needs paper preset" in v.detail
        else:
            assert v.passed is True, f"{v.id}: {v.detail}"
    assert {"theta_landscape", "gain_vs_T", "deepnorm_update", "theta_training", "grad_profile"} <= {p.stem for p in sensitivity_quick.figures}


def test_judges_fail_on_wrong_results(sensitivity_quick):
    r = sensitivity_quick
    # a θ off by a factor τ (the temperature forgotten) on one row
    assert sens.judge_exact(_edit(r, "theta_rows", lambda f: set_where(f, lambda t: t.index == 7, "rel_error", 1e-6))).passed is False
    assert sens.judge_exact(_edit(r, "theta_rows", lambda f: f.assign(theta_dp=f["theta_exact"] - 5e-3))).passed is False
    assert sens.judge_closed(_edit(r, "closed_forms", lambda f: set_where(f, lambda t: t["case"] == "uniform", "error", 1 / 49))).passed is False
    # a gain that grows like √T, a gain over the bound, a control that does not grow (a blind measure)
    assert sens.judge_gain(_edit(r, "gain", lambda f: f.assign(gain=f["gain"] * np.sqrt(f["T"] / 16)))).passed is False
    assert sens.judge_gain(_edit(r, "gain", lambda f: f.assign(bound=f["gain"] * 0.9))).passed is False
    assert sens.judge_gain(_edit(r, "gain", lambda f: f.assign(gain_sequence_l2=f["gain"]))).passed is False
    # β ignored: every p gives the plain-post-LN growth, so the slope never crosses zero
    no_beta = _edit(r, "deepnorm", lambda f: f.assign(update_sgd=f["update_sgd"].where(f["variant"] != "deepnorm", 1e-3 * f["N"])))
    assert sens.judge_deepnorm(no_beta).passed is False
    flat = _edit(r, "deepnorm", lambda f: set_where(f, lambda t: t["variant"] == "post-LN", "update_sgd", 1e-2))
    assert sens.judge_deepnorm(flat).passed is False
    assert sens.judge_theta_training(_edit(r, "theta_training", lambda f: set_where(f, lambda t: t["step"] == 100, "mean", 0.5))).passed is False


def test_warmup_path_runs_and_is_judged(tmp_path):
    cfg = sens.AttentionSensitivityConfig(warmup=True, warmup_layers=2, warmup_width=16, warmup_heads=2, warmup_context=16, warmup_batch=2,
                                          warmup_steps=6, warmup_ramp=3)
    ctx = RunContext(0)
    runs = sens._warmup(cfg, ctx)
    assert set(runs["warmup"]) == {0, 3} and (runs["step"] < 0).sum() == 2

    class Res:
        def __init__(self, frame):
            self.frame = frame

        def table(self, name):
            return self.frame

    verdict = sens.judge_warmup(Res(runs))
    assert verdict.passed in (True, False) and "final loss" in verdict.detail
    diverged = runs.copy()
    diverged.loc[(diverged["step"] < 0) & (diverged["warmup"] == 0), "status"] = "diverged (NaN at step 3)"
    assert sens.judge_warmup(Res(diverged)).passed is True


def test_bad_config_fails_before_work():
    with pytest.raises(ValueError, match="lm_corpus"):
        sens.AttentionSensitivityConfig(lm_corpus="/no/such/file.txt")
    with pytest.raises(ValueError, match="warmup_ramp"):
        sens.AttentionSensitivityConfig(warmup_steps=10, warmup_ramp=10)
