"""theorylab.testing.check_study: the contract suite a plugin author runs passes a good study and catches bad ones."""

from __future__ import annotations

import pandas as pd
import pytest
from pydantic import Field

from test_examples import SLUG as EXAMPLE  # importing it registers the template study
from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.testing import CHECKS, StudyCheckError, check_study, corrupted, study_checks


def test_the_template_study_passes_every_check(tmp_path):
    outcome = check_study(EXAMPLE, store=tmp_path / "store")
    assert outcome == dict.fromkeys(CHECKS, "ok")


def test_skip_and_unknown_check_names(tmp_path):
    outcome = check_study(EXAMPLE, store=tmp_path / "store", skip=("quick-budget",))
    assert outcome["quick-budget"] == "skipped"
    with pytest.raises(ValueError, match="unknown checks"):
        check_study(EXAMPLE, skip=("no-such-check",))


def test_checks_share_one_run_and_are_named_for_parametrize(tmp_path):
    names = [name for name, _ in study_checks(EXAMPLE, store=tmp_path / "store")]
    assert names == list(CHECKS)


class _Cfg(StudyConfig):
    n: int = Field(8, ge=1, le=1000, description="rows of the table")


_always = Claims("always-passes", "a test")


@_always.add("blind", "A claim whose judge ignores what it reads.")
def _judge_blind(res, v) -> Verdict:
    return v.judged(True, 1.0, 1.0, 0.0, "passes whatever the table says")


@_always.add("reads", "A claim that reads the table: mean of x within 0.5 of 0.")
def _judge_reads(res, v) -> Verdict:
    return v.at_most(abs(float(v.column(res.table("t"), "x").mean())), 0.5)


@study(
    "always-passes",
    title="test: a claim that cannot fail",
    paper="a test",
    config=_Cfg,
    presets={"quick": Preset.of("quick", "a table of zeros"), "paper": Preset.of("paper", "the same")},
    claims=_always,
)
def _run(cfg: _Cfg, ctx: RunContext) -> None:
    ctx.table("t", pd.DataFrame({"x": [0.0] * cfg.n}))


def test_a_claim_that_cannot_fail_is_caught(tmp_path):
    with pytest.raises(StudyCheckError) as err:
        check_study("always-passes", store=tmp_path / "store")
    text = str(err.value)
    assert "[claims-can-fail]" in text and "always-passes/blind passes on nan tables" in text
    assert "always-passes/reads" not in text  # a NaN mean fails the reading claim: only the blind one is named
    assert "[registry]" not in text and "[quick-run]" not in text


def test_corrupted_leaves_the_original_alone(tmp_path):
    from theorylab.core.runner import check
    from theorylab.core.store import Store

    res = check("always-passes", store=Store(tmp_path / "store"), device="cpu")
    nan, empty = corrupted(res, "nan"), corrupted(res, "empty")
    assert nan.tables["t"]["x"].isna().all() and empty.tables["t"].empty
    assert (res.tables["t"]["x"] == 0).all()
    with pytest.raises(ValueError, match="'nan' or 'empty'"):
        corrupted(res, "zeros")


def test_a_bad_preset_and_an_undescribed_field_are_caught():
    class Bad(StudyConfig):
        n: int = Field(8, ge=1, description="rows")
        m: int = Field(3, ge=1)  # no description

    claims = Claims("bad-declaration", "a test")

    @claims.add("c", "A claim.")
    def _c(res, v) -> Verdict:
        return v.at_most(0.0, 1.0)

    @study(
        "bad-declaration",
        title="test: bad declaration",
        paper="a test",
        config=Bad,
        presets={"quick": Preset.of("quick", "fine"), "paper": Preset.of("paper", "invalid", n=(0, "too small"))},
        claims=claims,
    )
    def _r(cfg, ctx) -> None:
        ctx.table("t", pd.DataFrame({"x": [0.0]}))

    with pytest.raises(StudyCheckError) as err:
        check_study("bad-declaration", skip=("quick-run", "rejudge", "claims-can-fail", "quick-budget"))
    text = str(err.value)
    assert "[presets]" in text and "'paper' does not validate" in text
    assert "[config]" in text and "bad-declaration.m has no one-line description" in text
