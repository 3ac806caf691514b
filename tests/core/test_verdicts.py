"""Verdicts say exactly what was shown: comparisons stated once, NaN never passes, departures and known failures
travel with the verdict and decide its outcome."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from theorylab.core.claims import Claims
from theorylab.core.declared import Departure, KnownFailure
from theorylab.core.result import Result


def _result(config=None, preset="quick", seed=0, **tables) -> Result:
    return Result(study="demo", run_id="r", preset=preset, seed=seed, status="done", config=config or {}, tables=tables)


def _one(judge, **declared):
    claims = Claims("demo")
    claims.add("c", "a claim", **declared)(judge)
    return claims[0]


# --- NaN never passes ------------------------------------------------------------------------------------
def test_judged_fails_on_a_nan_comparison_and_on_a_nan_measurement():
    nan = float("nan")
    assert bool(nan) is True  # why judged() must look: Python would call NaN true
    v = _one(lambda res, v: v.judged(nan, 1.0, ">= 0")).evaluate(_result())
    assert v.passed is False and "NaN" in v.detail
    v = _one(lambda res, v: v.judged(np.float64(nan), 1.0, ">= 0")).evaluate(_result())
    assert v.passed is False
    v = _one(lambda res, v: v.judged(True, nan, ">= 0")).evaluate(_result())
    assert v.passed is False and "measured value is NaN" in v.detail
    # a failure with a NaN measurement stays a failure, an undecided one undecided
    assert _one(lambda res, v: v.judged(False, nan, "x")).evaluate(_result()).passed is False
    assert _one(lambda res, v: v.judged(None, nan, "x")).evaluate(_result()).passed is None


@pytest.mark.parametrize(
    "helper, args", [("at_least", (0.5,)), ("at_most", (0.5,)), ("within", (0.0, 1.0)), ("close", (0.5,))]
)
def test_every_comparison_helper_fails_on_nan(helper, args):
    series = pd.Series([0.5, float("nan"), 0.5], index=["d = 8", "d = 16", "d = 32"])
    v = _one(lambda res, v: getattr(v, helper)(series, *args, name="overlap")).evaluate(_result())
    assert v.passed is False and "overlap is NaN at d = 16" in v.detail
    v = _one(lambda res, v: getattr(v, helper)(float("nan"), *args)).evaluate(_result())
    assert v.passed is False


def test_reading_a_judged_column_with_a_nan_row_fails_the_claim_naming_the_row():
    frame = pd.DataFrame({"d": [8, 16, 32], "K": [2, 2, 2], "overlap": [0.9, np.nan, 0.95]})

    def judge(res, v):
        col = v.column(res.table("t"), "overlap")
        return v.at_least(col.min(), 0.5)  # pandas' min alone would skip the NaN row and pass

    v = _one(judge).evaluate(_result(t=frame))
    assert v.passed is False and not v.error
    assert "column 'overlap' is NaN at 1 row: (d = 16, K = 2)" in v.detail
    assert _one(judge).evaluate(_result(t=frame.fillna(0.7))).passed is True


def test_comparisons_state_the_bound_once_and_report_the_worst_value():
    s = pd.Series([0.9, 0.6, 0.8], index=["a", "b", "c"])
    v = _one(lambda res, v: v.at_least(s, 0.7, name="overlap")).evaluate(_result())
    assert (v.passed, v.measured, v.expected) == (False, 0.6, ">= 0.7") and "worst overlap 0.6 at b of 3" in v.detail
    assert _one(lambda res, v: v.at_least(s, 0.6)).evaluate(_result()).passed is True  # the bound is inclusive
    v = _one(lambda res, v: v.at_most([0.1, 0.3, 0.2], 0.25)).evaluate(_result())
    assert (v.passed, v.measured, v.expected) == (False, 0.3, "<= 0.25")
    v = _one(lambda res, v: v.within(s, 0.7, 1.0)).evaluate(_result())
    assert (v.passed, v.measured, v.expected) == (False, 0.6, "in [0.7, 1]")
    v = _one(lambda res, v: v.within(1.05, 0.7, 1.0)).evaluate(_result())
    assert (v.passed, v.measured) == (False, 1.05)
    v = _one(lambda res, v: v.close(1.02, 1.0, rtol=0.01)).evaluate(_result())
    assert (v.passed, v.tolerance) == (False, "rtol 0.01")
    assert _one(lambda res, v: v.close(1.02, 1.0, rtol=0.01, atol=0.015)).evaluate(_result()).passed is True
    # a second condition, stated with the comparison, can fail it (and a NaN one does)
    assert _one(lambda res, v: v.at_least(0.9, 0.5, also=False)).evaluate(_result()).passed is False
    assert _one(lambda res, v: v.at_least(0.9, 0.5, also=float("nan"))).evaluate(_result()).passed is False
    assert _one(lambda res, v: v.at_least([], 0.5)).evaluate(_result()).passed is False  # nothing to judge
    with pytest.raises(ValueError, match="empty band"):
        _one(lambda res, v: v.within(0.5, 1.0, 0.0)).judge(_result())


# --- departures ------------------------------------------------------------------------------------------
def test_a_field_departure_applies_only_when_the_run_differs_from_the_card():
    claim = _one(
        lambda res, v: v.at_least(1.0, 0.5),
        departures=[
            Departure.field_value("lr", 1e-3, "the card's rate did not train at quick size"),
            "sign features (card: Gaussian)",
        ],
    )
    v = claim.evaluate(_result({"lr": 2e-3}))
    assert v.departures == (
        "lr 0.002 (card 0.001): the card's rate did not train at quick size",
        "sign features (card: Gaussian)",
    )
    assert v.outcome == "departed" and v.label == "passed with departures" and v.passed is True
    v = claim.evaluate(_result({"lr": 1e-3}))  # the user set the card's value back: only the fixed departure
    assert v.departures == ("sign features (card: Gaussian)",)
    # tuples and lists of the same values are the same value
    d = Departure.field_value("dims", (8, 16))
    assert not d.applies({"dims": [8, 16]}, "quick") and d.applies({"dims": [8]}, "quick")


def test_a_departure_limited_to_presets_and_one_added_by_the_judge():
    claim = _one(
        lambda res, v: v.at_least(1.0, 0.5, departures=["horizon 50 steps (card 1000)"]),
        departures=[Departure.of("3 seeds (card 10)", presets=["quick"])],
    )
    assert claim.evaluate(_result(preset="quick")).departures == ("3 seeds (card 10)", "horizon 50 steps (card 1000)")
    assert claim.evaluate(_result(preset="paper")).departures == ("horizon 50 steps (card 1000)",)
    # a failure with departures is a failure; an undecided claim carries them too (its reduced measurement)
    failing = _one(lambda res, v: v.at_least(0.1, 0.5), departures=["x"]).evaluate(_result())
    assert failing.outcome == "failed" and failing.departures == ("x",)
    assert _one(lambda res, v: v.undecided("needs paper preset"), departures=["x"]).evaluate(_result()).departures == (
        "x",
    )


def test_departures_and_known_failures_survive_the_store_round_trip():
    from theorylab.core.study import Verdict

    v = _one(lambda res, v: v.at_least(0.1, 0.5), departures=["x"], known=KnownFailure.on_every_seed("why")).evaluate(
        _result()
    )
    back = Verdict.from_dict(v.to_dict())
    assert back == v and back.outcome == "known" and v.to_dict()["label"] == "failed (known)"


# --- known failures --------------------------------------------------------------------------------------
def test_known_failure_on_every_seed_is_strict():
    known = KnownFailure.on_every_seed("the quick model is too small")
    failing = _one(lambda res, v: v.at_least(0.1, 0.5), known=known).evaluate(_result())
    assert failing.outcome == "known" and failing.passed is False and failing.label == "failed (known)"
    assert failing.known == "known failure on every seed: the quick model is too small" and failing.known_strict
    passing = _one(lambda res, v: v.at_least(0.9, 0.5), known=known).evaluate(_result())
    assert passing.outcome == "unexpected" and passing.label == "PASSED UNEXPECTEDLY"
    res = _result()
    res.verdicts = [failing]
    assert res.passed and not res.ok(strict=True)  # --strict counts a known failure
    res.verdicts = [passing]
    assert not res.passed  # an unexpected pass fails the run, so the declaration gets revisited


def test_known_failure_on_some_seeds_reads_as_its_rate_and_its_passes_are_passes():
    known = KnownFailure.on_some_seeds(3, 10, [1, 4, 5], "heavy-tailed escape times")
    failing = _one(lambda res, v: v.at_least(0.1, 0.5), known=known).evaluate(_result())
    assert failing.outcome == "known" and failing.label == "failed (known, 3/10 seeds)"
    assert "3/10 seeds (1, 4, 5): heavy-tailed" in failing.known and not failing.known_strict
    assert _one(lambda res, v: v.at_least(0.9, 0.5), known=known).evaluate(_result()).outcome == "passed"
    with pytest.raises(ValueError, match="one seed per failure"):
        KnownFailure.on_some_seeds(3, 10, [1, 4], "x")
    # limited to a preset: at another preset the failure is unexplained
    at_quick = KnownFailure.on_every_seed("too small at quick", presets=["quick"])
    claim = _one(lambda res, v: v.at_least(0.1, 0.5), known=at_quick)
    assert claim.evaluate(_result(preset="quick")).outcome == "known"
    assert claim.evaluate(_result(preset="paper")).outcome == "failed"


def test_a_nan_failure_is_never_excused_by_a_known_failure():
    known = KnownFailure.on_every_seed("the claim fails for a reason we understand")
    frame = pd.DataFrame({"d": [8, 16], "x": [0.1, np.nan]})
    for judge in (
        lambda res, v: v.at_least(res.table("t")["x"], 0.5),
        lambda res, v: v.at_least(v.column(res.table("t"), "x").min(), 0.5),
        lambda res, v: v.judged(float("nan"), 0.1, ">= 0.5"),
    ):
        verdict = _one(judge, known=known).evaluate(_result(t=frame))
        assert verdict.outcome == "failed" and verdict.nan and verdict.known, verdict
    assert _one(lambda res, v: v.at_least(0.1, 0.5), known=known).evaluate(_result()).outcome == "known"


def test_a_declaration_must_be_data_of_the_right_kind():
    claims = Claims("demo")
    with pytest.raises(TypeError, match="KnownFailure"):
        claims.add("c", "x", known="it fails")
    with pytest.raises(ValueError, match="text"):
        Departure.of("")
    assert math.isnan(float("nan"))


def test_tolerance_departures_name_only_the_rows_where_our_bound_and_the_cards_disagree():
    import pandas as pd

    from theorylab.core.declared import tolerance_departures

    residual = pd.Series([1e-14, 3e-12, 5e-13])
    assert tolerance_departures([(residual, 1e-11, 1e-11, "residual")]) == []  # same outcome against both
    # passes within our larger bound only on row 1: a departure, with its numbers
    (said,) = tolerance_departures([(residual, 1e-11, 1e-12, "residual")], "the rounding bound")
    assert said == "residual 3.0e-12 within the rounding bound 1.0e-11 (card: 1e-12)"
    # fails against our smaller per-row bound where the card's tolerance passes
    (said,) = tolerance_departures([(residual, pd.Series([1e-13, 1e-13, 1e-13]), 1e-12, "gap")])
    assert said == "gap 5.0e-13 above our bound 1.0e-13 (card: 1e-12)"
