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
