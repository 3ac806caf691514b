"""The claims helper: ids and statements come from the declaration, never from the judge."""

from __future__ import annotations

import pytest

from theorylab.core.claims import Claims
from theorylab.core.study import Verdict


class _Done:
    status = "done"


def test_judgements_carry_the_declared_id_and_statement():
    claims = Claims("demo", "exact")

    @claims.add("small", "x is below 1")
    def judge(res, v):
        return v.judged(res.x < 1, res.x, "< 1", 1.0, f"x = {res.x}")

    res = _Done()
    res.x = 0.5
    verdict = judge(res)
    assert isinstance(verdict, Verdict)
    assert (verdict.id, verdict.statement, verdict.passed, verdict.measured) == (
        "demo/small",
        "x is below 1",
        True,
        0.5,
    )
    res.x = 2.0
    assert judge(res).passed is False
    assert claims.ids() == ["demo/small"] and claims[0].reference == "exact"
    assert claims[0].evaluate(res).passed is False  # the registered Claim runs the same judge


def test_undecided_and_explicit_outcomes():
    claims = Claims("demo")
    claims.add("u", "undecided", reference="ours")(
        lambda res, v: v.undecided("this config does not run X", measured=3.0)
    )
    claims.add("p", "passes")(lambda res, v: v.passed(1.0, 1.0))
    claims.add("f", "fails")(lambda res, v: v.failed(2.0, 1.0))
    u, p, f = (c.evaluate(_Done()) for c in claims)
    assert u.passed is None and u.detail == "not decided: this config does not run X" and u.measured == 3.0
    assert p.passed is True and f.passed is False
    assert claims[0].reference == "ours"


def test_bad_declarations_fail_at_import():
    claims = Claims("demo")
    claims.add("a", "first")(lambda res, v: v.passed(1, 1))
    with pytest.raises(ValueError, match="declared twice"):
        claims.add("a", "again")
    with pytest.raises(ValueError, match="short id"):
        claims.add("demo/b", "slug repeated")


def test_a_judge_that_raises_is_an_error_verdict():
    claims = Claims("demo")
    claims.add("k", "reads a column")(lambda res, v: v.passed(res.table["missing"], 1))
    verdict = claims[0].evaluate(_Done())
    assert verdict.error and verdict.passed is False and "AttributeError" in verdict.detail


def _judgement():
    from theorylab.core.claims import Judgement

    return Judgement("s/c", "two conditions")


def test_all_of_passes_only_when_every_check_holds_and_states_each_bound_once():
    import numpy as np
    import pandas as pd

    from theorylab.core.claims import Check

    v = _judgement()
    ok = v.all_of(Check.at_least("mean λ", 0.88, 0.7), Check.at_most("mean r", 1.3, 2.0), detail="5 runs")
    assert ok.passed is True and ok.measured == 0.88 and ok.tolerance == 0.7
    assert ok.expected == "mean λ >= 0.7; mean r <= 2" and ok.detail == "5 runs"
    bad = v.all_of(Check.at_least("mean λ", 0.88, 0.7), Check.at_most("mean r", 2.31, 2.0), detail="5 runs")
    assert bad.passed is False and bad.measured == 0.88  # the headline stays the first check's value
    assert bad.detail == "short: mean r = 2.31 (need <= 2); 5 runs"
    # every entry of a Series must hold; the worst one is named by its label
    series = pd.Series([0.9, 0.4, 0.8], index=["d=8", "d=16", "d=32"])
    worst = v.all_of(Check.within("ratio", series, 0.5, 1.5), Check.holds("ordering h1 < h2", True))
    assert (
        worst.passed is False
        and worst.measured == 0.4
        and "ratio = 0.4 at d=16 of 3 (need in [0.5, 1.5])" in (worst.detail)
    )
    assert v.all_of(Check.within("ratio", np.array([0.6, 1.2]), 0.5, 1.5)).passed is True
    assert v.all_of(Check.at_least("gain", 0.3, 0.1), Check.holds("monotone", False)).detail == "short: not monotone"


@pytest.mark.parametrize(
    "checks",
    [
        lambda C: (C.at_least("a", float("nan"), 0.1), C.at_most("b", 1.0, 2.0)),
        lambda C: (C.at_least("a", 0.5, 0.1), C.at_most("b", [1.0, float("nan")], 2.0)),
        lambda C: (C.at_least("a", 0.5, 0.1), C.holds("ordered", float("nan"))),
        lambda C: (C.at_least("a", [], 0.1),),
    ],
)
def test_all_of_fails_on_nan_or_empty_and_marks_it(checks):
    from theorylab.core.claims import Check

    verdict = _judgement().all_of(*checks(Check))
    assert verdict.passed is False and verdict.nan is True


def test_check_rejects_an_empty_band_and_all_of_needs_a_check():
    from theorylab.core.claims import Check

    with pytest.raises(ValueError, match="empty band"):
        Check.within("x", 1.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="at least one check"):
        _judgement().all_of()
