"""Helpers for claim tests: a stored Result with one table edited, the original left untouched."""

from __future__ import annotations

import copy
from typing import Any, Callable

import pandas as pd

from theorylab.core.result import Result


def edit_table(result: Result, table: str, fn: Callable[[pd.DataFrame], pd.DataFrame]) -> Result:
    """A shallow copy of ``result`` whose ``table`` is ``fn(copy of the table)``."""
    res = copy.copy(result)
    res.tables = dict(result.tables)
    res.tables[table] = fn(result.tables[table].copy())
    return res


def set_where(frame: pd.DataFrame, where: Callable[[pd.DataFrame], Any], column: str, value: Any) -> pd.DataFrame:
    """``frame`` with ``column`` set to ``value`` on the rows ``where(frame)`` selects."""
    frame.loc[where(frame), column] = value
    return frame


def assert_undecided(verdict: Any, pattern: str) -> None:
    """``verdict`` reads "not decided" with ``pattern`` in its reason. ``verdict`` may be a zero-argument callable
    that makes it: a judge returns ``v.undecided(...)``, while a table it reads with ``res.table(name, unless=...)``
    raises ``Undecided`` (the claim turns either into a "not decided" verdict)."""
    import re

    from theorylab.core.errors import Undecided

    if callable(verdict):
        try:
            verdict = verdict()
        except Undecided as why:
            assert re.search(pattern, str(why)), f"{pattern!r} not in {str(why)!r}"
            return
    assert verdict.passed is None and not verdict.error, verdict.detail
    assert re.search(pattern, verdict.detail), f"{pattern!r} not in {verdict.detail!r}"
