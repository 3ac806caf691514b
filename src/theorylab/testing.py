"""The study contract as a suite a plugin author runs in their own tests (scikit-learn's ``check_estimator``).

::

    from theorylab.testing import check_study

    def test_my_study_keeps_the_contract():
        check_study("my-study")          # raises StudyCheckError listing every check that failed

Each check is a function ``(StudyUnderCheck) -> None`` that raises ``AssertionError`` with one line saying what is
wrong; :func:`study_checks` yields them by name, for ``pytest.mark.parametrize``. The checks:

- ``registry``: the slug resolves; title, paper, claims present; claim ids unique and prefixed by the slug; every
  claim states itself, cites a reference, and names a deciding preset the study has.
- ``presets``: ``quick`` and ``paper`` exist, each preset has a description, every preset validates.
- ``config``: every field is described; an unknown key, a value of the wrong type and a value outside a field's
  bounds each fail with one ``ConfigError`` line that names the field.
- ``quick-run``: the quick preset runs; every claim gets exactly one verdict, in order; each is passed (as stated
  or with departures), a declared known failure, or "not decided" with a reason; never a judge error; at least
  one claim is decided.
- ``rejudge``: judging the stored run again gives the same verdicts (claims read only stored results).
- ``claims-can-fail``: every claim that passed is fed the same run with its numbers (table columns and scalars)
  replaced by NaN, and with its tables emptied: it must not pass on either (a claim that passes whatever it reads
  cannot fail).
- ``quick-budget``: the quick run's CPU time fits the budget of 60 s on 2 cores (at most 120 CPU-seconds); a
  wall time over 60 s on this machine is a warning (a loaded machine stretches wall time, not CPU time).
"""

from __future__ import annotations

import copy
import math
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from theorylab.core.errors import ConfigError
from theorylab.core.result import Result
from theorylab.core.study import Study, get_study

QUICK_BUDGET_S = 60.0  # the quick preset's wall budget on 2 CPU cores (DESIGN: "quick means quick")
QUICK_CORES = 2


class StudyCheckError(AssertionError):
    """One or more contract checks failed; the message lists each, one line apiece."""


@dataclass
class StudyUnderCheck:
    """The study being checked, and its quick run: ``result`` when given (a run made elsewhere, not timed), else
    made once, on first use, in ``store_root`` (a fresh temporary store by default)."""

    study: Study
    seed: int = 0
    device: str = "cpu"
    store_root: Path | None = None
    result: Result | None = field(default=None, repr=False)
    cpu_s: float = math.nan
    wall_s: float = math.nan

    def quick(self) -> Result:
        if self.result is None:
            from theorylab.core.runner import check
            from theorylab.core.store import Store

            root = self.store_root or Path(tempfile.mkdtemp(prefix="theorylab-check-"))
            cpu0, wall0 = time.process_time(), time.perf_counter()
            self.result = check(self.study.slug, "quick", self.seed, store=Store(root), device=self.device)
            if not self.result.reused:  # a run reused from the caller's store was not timed here
                self.cpu_s, self.wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
        return self.result


def _registry(s: StudyUnderCheck) -> None:
    st = s.study
    assert st.title and st.paper, f"{st.slug}: title and paper must be given to @study"
    assert st.claims, f"{st.slug}: a study states at least one claim"
    ids = [c.id for c in st.claims]
    assert len(set(ids)) == len(ids), f"{st.slug}: claim ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}"
    for c in st.claims:
        assert c.id.startswith(st.slug + "/"), f"claim id '{c.id}' must start with '{st.slug}/'"
        assert c.statement.strip(), f"{c.id}: no statement"
        assert c.reference.strip(), f"{c.id}: no reference"
        assert c.decided_by in st.presets, f"{c.id}: decided_by '{c.decided_by}' is not a preset of {st.slug}"


def _presets(s: StudyUnderCheck) -> None:
    st = s.study
    missing = {"quick", "paper"} - set(st.presets)
    assert not missing, f"{st.slug}: missing presets {sorted(missing)}"
    for name, preset in st.presets.items():
        assert preset.description.strip(), f"{st.slug}: preset '{name}' has no description"
        try:
            st.make_config(name)
        except ConfigError as err:
            raise AssertionError(f"{st.slug}: preset '{name}' does not validate: {err}") from None


def _one_config_error(st: Study, overrides: dict[str, Any], field_name: str, what: str) -> None:
    try:
        st.make_config("quick", **overrides)
    except ConfigError as err:
        text = str(err)
        assert "\n" not in text.strip(), f"{st.slug}: {what} gives a multi-line error: {text!r}"
        assert field_name in text, f"{st.slug}: {what} does not name '{field_name}': {text!r}"
        return
    except Exception as err:  # noqa: BLE001 - anything but a ConfigError is a traceback for a user mistake
        raise AssertionError(f"{st.slug}: {what} raises {type(err).__name__}, not ConfigError: {err}") from None
    raise AssertionError(f"{st.slug}: {what} is accepted")


def _bounded_number(st: Study) -> tuple[str, Any] | None:
    """A numeric field with a bound, and a value just outside it (None when the config has none)."""
    for name, info in st.config.model_fields.items():
        if info.annotation not in (int, float):
            continue
        for bound in info.metadata:
            for attr, outside in (
                ("gt", lambda b: b),
                ("ge", lambda b: b - 1),
                ("lt", lambda b: b),
                ("le", lambda b: b + 1),
            ):
                value = getattr(bound, attr, None)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return name, outside(value)
    return None


def _config(s: StudyUnderCheck) -> None:
    st = s.study
    for name, info in st.config.model_fields.items():
        assert info.description, f"{st.slug}.{name} has no one-line description"
    _one_config_error(st, {"no_such_field_xyz": 1}, "no_such_field_xyz", "an unknown key")
    numeric = [n for n, i in st.config.model_fields.items() if i.annotation in (int, float)]
    if numeric:
        _one_config_error(st, {numeric[0]: "not-a-number"}, numeric[0], f"a string for '{numeric[0]}'")
    bounded = _bounded_number(st)
    if bounded is not None:
        name, value = bounded
        _one_config_error(st, {name: value}, name, f"'{name}' = {value} (outside its bound)")


ALLOWED = ("passed", "departed", "known")


def _quick_run(s: StudyUnderCheck) -> None:
    st, res = s.study, s.quick()
    assert res.status == "done", f"{st.slug}: quick run {res.status}: {res.message}"
    assert [v.id for v in res.verdicts] == [c.id for c in st.claims], (
        f"{st.slug}: verdict ids {[v.id for v in res.verdicts]} are not the claims in order"
    )
    bad = [
        f"{v.id}: {v.label}: {v.detail}"
        for v in res.verdicts
        if not (
            v.outcome in ALLOWED
            or (v.outcome == "undecided" and v.detail.strip() and not v.detail.startswith("not evaluated"))
        )
    ]
    assert not bad, f"{st.slug}: quick verdicts outside the contract: " + " | ".join(bad)
    assert any(v.passed is not None for v in res.verdicts), f"{st.slug}: the quick preset decides no claim"


def _rejudge(s: StudyUnderCheck) -> None:
    from theorylab.core.runner import judge

    res = s.quick()
    again = judge(s.study, copy.copy(res))
    assert [(v.id, v.passed) for v in again.verdicts] == [(v.id, v.passed) for v in res.verdicts], (
        f"{s.study.slug}: re-judging the stored run changes verdicts"
    )


def _nan_numbers(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return math.nan
    if isinstance(value, dict):
        return {k: _nan_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_nan_numbers(v) for v in value)
    return value


def _nan_table(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in out.columns:
        if pd.api.types.is_numeric_dtype(out[col]) or pd.api.types.is_bool_dtype(out[col]):
            out[col] = math.nan  # counts and flags too: a judge that reads only those would still pass
    return out


def corrupted(result: Result, how: str) -> Result:
    """``result`` with every numeric or boolean table column and every numeric scalar NaN (``how="nan"``), or with
    every table emptied and the scalars NaN (``how="empty"``); the original is left untouched."""
    res = copy.copy(result)
    res.scalars = _nan_numbers(dict(result.scalars))
    if how == "nan":
        res.tables = {k: _nan_table(t) for k, t in result.tables.items()}
    elif how == "empty":
        res.tables = {k: t.iloc[0:0].copy() for k, t in result.tables.items()}
    else:
        raise ValueError(f"how must be 'nan' or 'empty', got {how!r}")
    return res


def _claims_can_fail(s: StudyUnderCheck) -> None:
    res = s.quick()
    passing = {v.id for v in res.verdicts if v.passed is True}
    cannot_fail = []
    for how in ("nan", "empty"):
        wrong = corrupted(res, how)
        for claim in s.study.claims:
            # NumPy's "mean of empty slice" / "invalid value" warnings are what these tables are made to provoke
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                verdict = claim.evaluate(wrong)
            if claim.id in passing and verdict.passed is True:
                cannot_fail.append(f"{claim.id} passes on {how} tables")
    assert not cannot_fail, f"{s.study.slug}: claims that pass whatever they read: " + " | ".join(cannot_fail)


def _quick_budget(s: StudyUnderCheck) -> None:
    s.quick()
    if math.isnan(s.cpu_s):  # reused from a store given by the caller: nothing was timed here
        return
    limit = QUICK_BUDGET_S * QUICK_CORES
    assert s.cpu_s <= limit, (
        f"{s.study.slug}: the quick run took {s.cpu_s:.0f} CPU-s, more than {limit:.0f} "
        f"(60 s on 2 cores): it cannot fit the quick budget however its work is split"
    )
    if s.wall_s > QUICK_BUDGET_S:
        warnings.warn(
            f"{s.study.slug}: quick run took {s.wall_s:.0f} s wall here ({s.cpu_s:.0f} CPU-s); the "
            f"budget is {QUICK_BUDGET_S:.0f} s on 2 idle cores",
            RuntimeWarning,
            stacklevel=2,
        )


CHECKS: dict[str, Callable[[StudyUnderCheck], None]] = {
    "registry": _registry,
    "presets": _presets,
    "config": _config,
    "quick-run": _quick_run,
    "rejudge": _rejudge,
    "claims-can-fail": _claims_can_fail,
    "quick-budget": _quick_budget,
}


def study_checks(
    slug: str,
    *,
    seed: int = 0,
    device: str = "cpu",
    store: str | Path | None = None,
) -> Iterator[tuple[str, Callable[[], None]]]:
    """``(name, check)`` pairs for ``slug``, sharing one quick run: for ``pytest.mark.parametrize``."""
    subject = StudyUnderCheck(
        get_study(slug), seed=seed, device=device, store_root=Path(store) if store is not None else None
    )
    for name, fn in CHECKS.items():
        yield name, (lambda fn=fn: fn(subject))


def check_study(
    slug: str, *, seed: int = 0, device: str = "cpu", store: str | Path | None = None, skip: tuple[str, ...] = ()
) -> dict[str, str]:
    """Run every contract check on ``slug``; returns ``{check: "ok" | "skipped"}``, or raises
    :class:`StudyCheckError` listing every failed check. ``store``: where the quick run goes (a fresh temporary
    store by default); ``skip``: names of checks not to run (e.g. ``("quick-budget",)`` on a slow machine)."""
    unknown = set(skip) - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown checks {sorted(unknown)}; known: {', '.join(CHECKS)}")
    outcome: dict[str, str] = {}
    failures: list[str] = []
    for name, check in study_checks(slug, seed=seed, device=device, store=store):
        if name in skip:
            outcome[name] = "skipped"
            continue
        try:
            check()
            outcome[name] = "ok"
        except AssertionError as err:
            outcome[name] = "failed"
            failures.append(f"[{name}] {err}")
    if failures:
        raise StudyCheckError(f"{slug}: {len(failures)} contract check(s) failed:\n" + "\n".join(failures))
    return outcome


__all__ = ["CHECKS", "StudyCheckError", "StudyUnderCheck", "check_study", "corrupted", "study_checks"]
