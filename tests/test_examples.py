"""The template study in examples/ runs through the normal machinery, and its judge can fail.

Copy this file with ``examples/minimal_study.py`` when adding a study: one quick run judged from
the store, a judge fed a deliberately wrong table, and the template's size kept small.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from result_edits import edit_table
from theorylab.core.runner import check
from theorylab.core.store import Store
from theorylab.core.study import all_studies

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "minimal_study.py"
SLUG = "example-least-squares"


def _load_example():
    """Import the example by path (it is not in theorylab.studies); importing registers it."""
    name = "theorylab_example_minimal_study"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before exec: pydantic resolves the config's annotations there
        spec.loader.exec_module(module)
    return sys.modules[name]


example = _load_example()


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    return check(SLUG, "quick", 0, store=Store(tmp_path_factory.mktemp("example") / "store"), device="cpu")


def test_example_is_registered_but_not_builtin():
    assert not all_studies()[SLUG].module.startswith("theorylab.studies")
    all_studies()[SLUG].make_config("paper")  # the paper preset validates too


def test_quick_preset_runs_and_passes(quick):
    assert quick.status == "done", quick.message
    (verdict,) = quick.verdicts
    assert verdict.id == f"{SLUG}/risk-matches-theory"
    assert verdict.passed is True, verdict.detail
    assert [p.name for p in quick.figures] == ["risk_vs_n.png"]


def test_judge_fails_on_a_wrong_table(quick):
    # A risk 10% too high at n = 40 is many standard errors off: the claim must fail.
    wrong = edit_table(
        quick, "risk", lambda t: t.assign(risk_mean=t["risk_mean"].where(t["n"] != 40, t["risk_mean"] * 1.1))
    )
    verdict = example.judge_risk(wrong)
    assert verdict.passed is False and not verdict.error, verdict.detail
    assert verdict.measured > 4.0
    # Standard errors too large to decide anything: not decided, never a pass.
    noisy = edit_table(quick, "risk", lambda t: t.assign(risk_se=t["risk_se"] * 20))
    assert example.judge_risk(noisy).passed is None


def test_example_stays_short():
    assert len(EXAMPLE.read_text().splitlines()) <= 140  # 120 before ruff format laid it out (issue 47)
