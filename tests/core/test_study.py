"""Claim evaluation: a judge that raises is an error (counted as failed), never "not decided"."""

from __future__ import annotations

import pandas as pd

from theorylab.core.errors import Undecided
from theorylab.core.result import Result
from theorylab.core.study import Claim, Verdict


def _result(**tables) -> Result:
    return Result(study="x", run_id="r", preset="quick", seed=0, status="done", config={}, tables=tables)


def _claim(judge) -> Claim:
    return Claim("x/c", "a claim", "ref", judge)


def test_judge_keyerror_is_an_error_verdict():
    v = _claim(lambda r: Verdict("x/c", "a claim", 1, 1, 0, bool(r.table("steps")["maen"].max() < 1))).evaluate(
        _result(steps=pd.DataFrame({"mean": [0.0]}))
    )
    assert v.passed is False and v.error and v.outcome == "error" and v.label == "ERROR"
    assert v.detail.startswith("judge raised KeyError") and "maen" in v.detail


def test_missing_table_is_an_error_unless_the_judge_says_why():
    plain = _claim(lambda r: Verdict("x/c", "a claim", 1, 1, 0, r.table("lm") is not None)).evaluate(_result())
    assert plain.error and "table 'lm'" in plain.detail
    explained = _claim(
        lambda r: Verdict(
            "x/c", "a claim", 1, 1, 0, r.table("lm", unless="this config does not train the LM (lm=false)") is not None
        )
    )
    v = explained.evaluate(_result())
    assert v.passed is None and not v.error and v.detail == "not decided: this config does not train the LM (lm=false)"


def test_undecided_raised_in_a_judge_is_not_decided():
    def judge(r):
        raise Undecided("needs paper preset")

    v = _claim(judge).evaluate(_result())
    assert v.passed is None and v.outcome == "undecided" and "needs paper preset" in v.detail


def test_any_exception_in_a_judge_fails_the_run():
    res = _result()
    res.verdicts = [_claim(lambda r: 1 / 0).evaluate(res)]
    assert res.verdicts[0].error and "ZeroDivisionError" in res.verdicts[0].detail
    assert (
        res.counts()
        == {"passed": 0, "departed": 0, "failed": 0, "known": 0, "unexpected": 0, "undecided": 0, "error": 1}
        and not res.passed
    )


def test_verdict_of_another_claim_or_not_a_verdict_is_an_error():
    wrong_id = _claim(lambda r: Verdict("x/other", "a claim", 1, 1, 0, True)).evaluate(_result())
    assert wrong_id.error and "x/other" in wrong_id.detail
    not_verdict = _claim(lambda r: True).evaluate(_result())
    assert not_verdict.error and "bool" in not_verdict.detail


def test_error_survives_a_round_trip():
    v = Verdict("x/c", "s", None, None, None, False, "judge raised KeyError", error=True)
    assert Verdict.from_dict(v.to_dict()) == v
    old = {k: val for k, val in v.to_dict().items() if k != "error"}  # a verdicts.json from before
    assert Verdict.from_dict(old).error is False
