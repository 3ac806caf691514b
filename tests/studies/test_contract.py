"""The study contract, over every registered built-in study (scikit-learn's parametrize_with_checks idea)."""

from __future__ import annotations

import inspect

import pytest

from theorylab.core.runner import judge
from theorylab.core.store import Store
from theorylab.core.study import all_studies
from theorylab.testing import CHECKS, StudyUnderCheck

BUILTIN = sorted(slug for slug, s in all_studies().items() if s.module.startswith("theorylab.studies"))


def test_registry_has_builtin_studies():
    assert "rmt-diffusion" in BUILTIN


@pytest.mark.parametrize("slug", BUILTIN)
def test_declaration(slug):
    study = all_studies()[slug]
    assert {"quick", "paper"} <= set(study.presets)
    assert study.claims, "a study states at least one claim"
    for field, info in study.config.model_fields.items():
        assert info.description, f"{slug}.{field} has no one-line description"
    for claim in study.claims:
        assert claim.id.startswith(slug + "/") and claim.statement and claim.reference
        # every judge is typed one way: (res: Result, v: Judgement) -> Verdict (annotations as written)
        hints = inspect.signature(claim.judge.__wrapped__, eval_str=False)
        written = [str(p.annotation).rsplit(".", 1)[-1] for p in hints.parameters.values()]
        assert written == ["Result", "Judgement"], f"{claim.id}: judge parameters typed {written}"
        assert str(hints.return_annotation).rsplit(".", 1)[-1] == "Verdict", f"{claim.id}: judge return type"
    study.make_config("paper")  # the paper preset validates
    # the public contract suite's checks that need no run (theorylab.testing: what a plugin author runs)
    for name in ("registry", "presets", "config"):
        CHECKS[name](StudyUnderCheck(study))


@pytest.mark.slow
@pytest.mark.parametrize("slug", BUILTIN)
def test_quick_preset_runs_and_passes(slug, quick_run):
    result = quick_run(slug)
    assert result.status == "done", result.message
    # every declared claim gets exactly one verdict, under its own id, in declaration order
    assert [v.id for v in result.verdicts] == [c.id for c in all_studies()[slug].claims]
    for v in result.verdicts:
        # A claim the quick preset is too small for says so (and what it measured); it never fails
        # unexplained, never errors, and never fakes a pass. A failure declared as known (with its cause and,
        # for some seeds, its measured rate) is allowed: it is a result, not a defect.
        undecided_ok = v.outcome == "undecided" and (
            "needs paper preset" in v.detail or v.detail.startswith(("report only", "not decided:"))
        )
        assert v.outcome in ("passed", "departed", "known") or undecided_ok, f"{v.id}: {v.label}: {v.detail}"
    # A claim quick leaves undecided declares the preset that decides it (theorylab claims lists it), and says so.
    claims = {c.id: c for c in all_studies()[slug].claims}
    for v in result.verdicts:
        if v.outcome == "undecided" and not v.detail.startswith("report only"):  # a report decides nothing anywhere
            assert claims[v.id].decided_by != "quick", f"{v.id} is not decided at quick yet declares decided_by='quick'"
            assert claims[v.id].decided_on.split(" ")[0] in v.detail or claims[v.id].decided_by in v.detail, v.detail
    assert any(v.passed for v in result.verdicts), "the quick preset decides at least one claim"
    # The 60-s budget is measured by benchmarks/quick_presets.py on an idle machine, not asserted
    # here: a timed test fails on a loaded machine whatever the code does.
    # Claims are judged from stored data: re-judging the loaded run gives the same verdicts.
    assert [
        v.passed for v in judge(all_studies()[slug], Store(result.path.parents[1]).load(result.run_id)).verdicts
    ] == [v.passed for v in result.verdicts]


@pytest.mark.slow
@pytest.mark.parametrize("slug", BUILTIN)
def test_claims_cannot_pass_on_nan_or_empty_tables(slug, quick_run):
    # theorylab.testing's "claims-can-fail" on the shared quick run: every claim that passed is re-judged on the run
    # with its numbers NaN and with its tables emptied, and must not pass (a judge that ignores what it reads
    # cannot fail). It found three that passed on empty tables (generative-leap/leap-values,
    # mean-field-width/init-gap-monte-carlo, multi-index-estimators/population-matrices).
    CHECKS["claims-can-fail"](StudyUnderCheck(all_studies()[slug], result=quick_run(slug)))
