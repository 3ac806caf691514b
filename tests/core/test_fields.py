"""core/fields.py: each type holds its one bound, and a field narrows it in place."""

from __future__ import annotations

import typing
from typing import Annotated

import pytest
from pydantic import BaseModel, Field, ValidationError

from theorylab.core import fields
from theorylab.core.config import describe_allowed


def _bounds(alias) -> tuple[float | None, float | None, bool, bool]:
    """(lower, upper, lower strict, upper strict) of a fields.py type."""
    lo = hi = None
    lo_strict = hi_strict = False
    for meta in typing.get_args(alias)[1].metadata:
        if getattr(meta, "ge", None) is not None:
            lo = meta.ge
        if getattr(meta, "gt", None) is not None:
            lo, lo_strict = meta.gt, True
        if getattr(meta, "le", None) is not None:
            hi = meta.le
        if getattr(meta, "lt", None) is not None:
            hi, hi_strict = meta.lt, True
    return lo, hi, lo_strict, hi_strict


NUMERIC = [name for name in fields.__all__ if typing.get_args(getattr(fields, name))[0] in (int, float)]


@pytest.mark.parametrize("name", NUMERIC)
def test_each_type_accepts_its_ends_and_rejects_one_step_past(name):
    alias = getattr(fields, name)
    base = typing.get_args(alias)[0]
    model = type("M", (BaseModel,), {"__annotations__": {"x": alias}})
    lo, hi, lo_strict, hi_strict = _bounds(alias)
    assert lo is not None and hi is not None, f"{name} needs both bounds"
    step = 1 if base is int else 1e-9 * max(1.0, abs(hi))
    inside_lo = lo + step if lo_strict else lo
    inside_hi = hi - step if hi_strict else hi
    assert model(x=inside_lo).x == inside_lo and model(x=inside_hi).x == inside_hi
    for outside in (lo if lo_strict else lo - step, hi if hi_strict else hi + step):
        with pytest.raises(ValidationError):
            model(x=outside)


def test_a_field_narrowing_wins_over_the_type_bound():
    # In ``x: Draws = Field(5, ge=20)`` the type's ge=1 is applied last and silently wins; the
    # Annotated form puts the narrowing last, so it holds. Both ways of widening are covered too.
    class M(BaseModel):
        draws: Annotated[fields.Draws, Field(ge=20)] = 50
        steps: Annotated[fields.Steps, Field(ge=0)] = 0  # 0 = off

    with pytest.raises(ValidationError):
        M(draws=19)
    assert M(draws=20).draws == 20 and M(steps=0).steps == 0
    assert describe_allowed(M.model_fields["draws"]) == "integer, 20 <= value <= 1000000"
    assert describe_allowed(M.model_fields["steps"]) == "integer, 0 <= value <= 10000000"


def test_describe_allowed_reads_tuple_element_bounds():
    class M(BaseModel):
        dims: tuple[Annotated[fields.Dim, Field(ge=4)], ...] = (8,)

    assert describe_allowed(M.model_fields["dims"]) == "comma-separated list of integer, 4 <= value <= 100000"
