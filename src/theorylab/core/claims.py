"""Declaring a study's claims next to their judges.

A study writes its slug and paper reference once::

    claims = Claims("thermalizer", "Pedersen et al. 2025")

    @claims.add("energetic-stats", "E_therm(m)/E_true(m) is in [0.85, 1.15] for m = 1..6.")
    def judge_spectrum(res, v):
        r = res.table("spectrum").set_index("mode").loc[1:6, "ratio"]
        return v.within(r, 0.85, 1.15, name="E_therm/E_true")

The judge receives a :class:`Judgement` ``v`` that already knows the claim's id and statement, so
a verdict can never carry another claim's id or a stale copy of the statement. The decorated name
stays callable as ``judge_spectrum(result) -> Verdict`` (tests feed it wrong results), and
``study(..., claims=claims)`` registers them in declaration order.

The comparison helpers (:meth:`Judgement.at_least`, :meth:`~Judgement.at_most`,
:meth:`~Judgement.within`, :meth:`~Judgement.close`) state the comparison once: the verdict's
``expected`` and ``tolerance`` are written from the same bound the test uses, a NaN fails (naming
the row of a table column), and the measured value is the worst one. :meth:`Judgement.column`
reads a judged column and fails the claim on a NaN row instead of letting pandas skip it. A claim with several
conditions states each once as a :class:`Check` and passes them to :meth:`Judgement.all_of`::

    return v.all_of(Check.at_least("mean λ̄₁", lam, 0.7), Check.at_most("mean r", r, 2.0), detail=...)

``claims.add(..., departures=[...], known=...)`` declares how the claim is judged other than as
stated and whether it is a known failure (:mod:`theorylab.core.declared`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from theorylab.core.declared import Departure, KnownFailure
from theorylab.core.errors import JudgedNaN
from theorylab.core.study import Claim, Verdict

if TYPE_CHECKING:
    from theorylab.core.result import Result


def _is_nan(value: Any) -> bool:
    try:
        return isinstance(value, (float, np.floating)) and math.isnan(value)
    except TypeError:
        return False


def _num(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    return str(value)


def _row_name(index: Any, frame: Any = None) -> str:
    """A table row in words: its key columns (the non-float ones) when the frame has them, else its index."""
    if frame is not None and hasattr(frame, "columns"):
        keys = [c for c in frame.columns if not np.issubdtype(np.asarray(frame[c]).dtype, np.floating)][:4]
        if keys:
            return "(" + ", ".join(f"{k} = {frame[k].loc[index]}" for k in keys) + ")"
    return f"row {index}"


def _values(x: Any) -> tuple[np.ndarray, list[str] | None]:
    """``x`` as a float array, and the names of its entries when it is a labelled pandas Series."""
    labels = None
    if hasattr(x, "index") and hasattr(x, "to_numpy"):
        labels = [str(i) for i in x.index]
        x = x.to_numpy()
    arr = np.atleast_1d(np.asarray(x, dtype=float))
    return arr.ravel(), labels


@dataclass(frozen=True)
class Check:
    """One condition of a compound claim, stated once: ``name``'s ``value`` against ``bound``.

    Build it with :meth:`at_least`, :meth:`at_most`, :meth:`within` or :meth:`holds` and pass several to
    :meth:`Judgement.all_of`, which writes the verdict's ``expected`` from the same bounds the test uses. A value
    may be a number, an array or a pandas Series (every entry must satisfy the bound; the worst one is reported);
    a NaN never satisfies it."""

    name: str
    value: Any
    op: str  # ">=", "<=", "in" or "is" (a boolean condition)
    bound: Any = None

    @classmethod
    def at_least(cls, name: str, value: Any, bound: float) -> "Check":
        return cls(name, value, ">=", bound)

    @classmethod
    def at_most(cls, name: str, value: Any, bound: float) -> "Check":
        return cls(name, value, "<=", bound)

    @classmethod
    def within(cls, name: str, value: Any, lo: float, hi: float) -> "Check":
        if not lo <= hi:
            raise ValueError(f"{name}: empty band [{lo}, {hi}]")
        return cls(name, value, "in", (lo, hi))

    @classmethod
    def holds(cls, name: str, condition: Any) -> "Check":
        """A condition that is not a numeric bound (an ordering, a set relation); NaN or None fails it."""
        return cls(name, condition, "is")

    def _gaps(self) -> tuple[np.ndarray, list[str] | None]:
        if self.op == "is":
            flag = self.value is not None and not _is_nan(self.value) and bool(self.value)
            return np.array([0.0 if flag else 1.0]), None
        values, labels = _values(self.value)
        if self.op == ">=":
            gaps = self.bound - values
        elif self.op == "<=":
            gaps = values - self.bound
        else:
            gaps = np.maximum(self.bound[0] - values, values - self.bound[1])
        return np.where(np.isnan(values), np.inf, gaps), labels

    @property
    def nan(self) -> bool:
        if self.op == "is":
            return self.value is None or _is_nan(self.value)
        values, _ = _values(self.value)
        return values.size == 0 or bool(np.isnan(values).any())

    @property
    def ok(self) -> bool:
        gaps, _ = self._gaps()
        return gaps.size > 0 and bool(np.all(gaps <= 0))

    @property
    def worst(self) -> Any:
        """The value with the largest excess over the bound (the value itself for a single number or a condition)."""
        if self.op == "is":
            return self.value if self.value is None or _is_nan(self.value) else bool(self.value)
        values, _ = _values(self.value)
        if values.size == 0:
            return math.nan
        gaps, _ = self._gaps()
        return float(values[int(np.argmax(gaps))])

    @property
    def expected(self) -> str:
        if self.op == "is":
            return self.name
        bound = f"[{_num(self.bound[0])}, {_num(self.bound[1])}]" if self.op == "in" else _num(self.bound)
        return f"{self.name} {self.op} {bound}"

    def describe(self) -> str:
        """``"mean r = 2.31 (need <= 2)"``, with the entry that is worst when the value has several."""
        if self.op == "is":
            return f"not {self.name}" if not self.nan else f"{self.name}: undetermined (NaN)"
        values, labels = _values(self.value)
        if values.size == 0:
            return f"{self.name}: no values"
        gaps, _ = self._gaps()
        i = int(np.argmax(gaps))
        where = "" if values.size == 1 else f" at {labels[i] if labels else f'entry {i}'} of {values.size}"
        return f"{self.name} = {_num(float(values[i]))}{where} (need {self.expected[len(self.name) + 1 :]})"


@dataclass(frozen=True)
class Judgement:
    """The verdict constructors of one claim (id and statement filled in)."""

    id: str
    statement: str

    # --- plain outcomes --------------------------------------------------------------------
    def judged(
        self,
        ok: Any,
        measured: Any,
        expected: Any,
        tolerance: Any = None,
        detail: str = "",
        departures: Sequence[str] = (),
    ) -> Verdict:
        """Passed when ``ok`` is true, failed when false (numpy booleans accepted); ``ok=None`` is
        not decided (prefer :meth:`undecided`, which says why). A NaN ``ok``, or a pass whose
        measured value is NaN, fails: ``bool(nan)`` is true, and a NaN never passes.
        ``departures`` are this run's ways of judging the claim other than as stated."""
        nan = False
        if ok is not None and _is_nan(ok):
            ok, nan, detail = False, True, f"the comparison is NaN; {detail}" if detail else "the comparison is NaN"
        elif ok is not None and bool(ok) and _is_nan(measured):
            ok, nan = False, True
            detail = f"the measured value is NaN; {detail}" if detail else "the measured value is NaN"
        return self._verdict(None if ok is None else bool(ok), measured, expected, tolerance, detail, departures, nan)

    def passed(
        self, measured: Any, expected: Any, tolerance: Any = None, detail: str = "", departures: Sequence[str] = ()
    ) -> Verdict:
        return self.judged(True, measured, expected, tolerance, detail, departures)

    def failed(
        self, measured: Any, expected: Any, tolerance: Any = None, detail: str = "", departures: Sequence[str] = ()
    ) -> Verdict:
        return self.judged(False, measured, expected, tolerance, detail, departures)

    def undecided(
        self,
        reason: str,
        measured: Any = None,
        expected: Any = None,
        tolerance: Any = None,
        departures: Sequence[str] = (),
    ) -> Verdict:
        """Not decided on this run; ``reason`` says why and what would decide it (e.g. the preset).
        A reason that already starts with "not decided", "needs " or "report only" is kept as is."""
        detail = reason if reason.startswith(("not decided", "needs ", "report only")) else f"not decided: {reason}"
        return self._verdict(None, measured, expected, tolerance, detail, departures)

    def _nan_failure(
        self, measured: Any, expected: Any, tolerance: Any, detail: str, departures: Sequence[str]
    ) -> Verdict:
        """A failure because a judged value is NaN, marked as such (the detail says which)."""
        return self._verdict(False, measured, expected, tolerance, detail, departures, nan=True)

    def _verdict(
        self,
        passed: bool | None,
        measured: Any,
        expected: Any,
        tolerance: Any,
        detail: str,
        departures: Sequence[str],
        nan: bool = False,
    ) -> Verdict:
        """This claim's verdict (its id and statement filled in): the one place a :class:`Verdict` is built."""
        parts = dict(departures=tuple(departures), nan=nan)
        return Verdict(self.id, self.statement, measured, expected, tolerance, passed, detail, **parts)

    # --- comparisons stated once -----------------------------------------------------------
    def _compare(
        self,
        x: Any,
        excess: Callable[[np.ndarray], np.ndarray],
        expected: str,
        tolerance: Any,
        name: str,
        detail: str,
        departures: Sequence[str],
        also: Any,
    ) -> Verdict:
        """The verdict of ``excess(values) <= 0`` for every value of ``x`` (a number, an array or a pandas
        Series): measured is the value with the largest excess; a NaN value fails naming its entry."""
        values, labels = _values(x)
        if values.size == 0:
            return self.failed(math.nan, expected, tolerance, f"no {name} values to judge", departures)
        nan = np.flatnonzero(np.isnan(values))
        if nan.size:
            where = ", ".join(labels[i] if labels else f"entry {i}" for i in nan[:5]) if values.size > 1 else ""
            said = f"{name} is NaN{' at ' + where if where else ''}" + (f"; {detail}" if detail else "")
            return self._nan_failure(math.nan, expected, tolerance, said, departures)
        gaps = excess(values)
        worst = int(np.nanargmax(np.where(np.isnan(gaps), np.inf, gaps)))
        measured = float(values[worst])
        ok = bool(np.all(gaps <= 0)) and (also is None or (not _is_nan(also) and bool(also)))
        said = (
            f"{name} = {_num(measured)}"
            if values.size == 1
            else (
                f"worst {name} {_num(measured)}"
                + (f" at {labels[worst]}" if labels else f" (entry {worst})")
                + f" of {values.size}"
            )
        )
        return self.judged(ok, measured, expected, tolerance, f"{said}; {detail}" if detail else said, departures)

    def at_least(
        self,
        x: Any,
        bound: float,
        *,
        name: str = "measured",
        tolerance: Any = None,
        detail: str = "",
        expected: str | None = None,
        departures: Sequence[str] = (),
        also: Any = None,
    ) -> Verdict:
        """Passed when every value of ``x`` is ``>= bound`` (and ``also``, a second condition, holds)."""
        return self._compare(
            x, lambda v: bound - v, expected or f">= {_num(bound)}", tolerance, name, detail, departures, also
        )

    def at_most(
        self,
        x: Any,
        bound: float,
        *,
        name: str = "measured",
        tolerance: Any = None,
        detail: str = "",
        expected: str | None = None,
        departures: Sequence[str] = (),
        also: Any = None,
    ) -> Verdict:
        """Passed when every value of ``x`` is ``<= bound`` (and ``also`` holds)."""
        return self._compare(
            x, lambda v: v - bound, expected or f"<= {_num(bound)}", tolerance, name, detail, departures, also
        )

    def within(
        self,
        x: Any,
        lo: float,
        hi: float,
        *,
        name: str = "measured",
        tolerance: Any = None,
        detail: str = "",
        expected: str | None = None,
        departures: Sequence[str] = (),
        also: Any = None,
    ) -> Verdict:
        """Passed when every value of ``x`` lies in ``[lo, hi]`` (and ``also`` holds)."""
        if not lo <= hi:
            raise ValueError(f"{self.id}: empty band [{lo}, {hi}]")
        return self._compare(
            x,
            lambda v: np.maximum(lo - v, v - hi),
            expected or f"in [{_num(lo)}, {_num(hi)}]",
            tolerance,
            name,
            detail,
            departures,
            also,
        )

    def close(
        self,
        x: Any,
        reference: float,
        *,
        rtol: float = 0.0,
        atol: float = 0.0,
        name: str = "measured",
        detail: str = "",
        expected: str | None = None,
        departures: Sequence[str] = (),
        also: Any = None,
    ) -> Verdict:
        """Passed when every value of ``x`` is within ``atol + rtol |reference|`` of ``reference``."""
        if _is_nan(reference):
            return self.failed(math.nan, "a finite reference", None, f"the reference for {name} is NaN", departures)
        allowed = atol + rtol * abs(reference)
        tol = " + ".join(f"{word} {_num(t)}" for word, t in (("rtol", rtol), ("atol", atol)) if t)
        return self._compare(
            x,
            lambda v: np.abs(v - reference) - allowed,
            expected or _num(reference),
            tol or 0.0,
            name,
            detail,
            departures,
            also,
        )

    def all_of(
        self,
        *checks: Check,
        detail: str = "",
        departures: Sequence[str] = (),
        measured: Any = None,
        tolerance: Any = None,
    ) -> Verdict:
        """Passed when every :class:`Check` holds: a claim with several conditions, each stated once. The
        verdict's ``expected`` joins the checks' bounds; ``measured`` (default: the first check's worst value)
        and ``tolerance`` (default: its bound) are the headline number. A failed or NaN check is named at the
        head of the detail; a NaN fails the claim, marked as such."""
        if not checks:
            raise ValueError(f"{self.id}: all_of needs at least one check")
        head = checks[0]
        measured = head.worst if measured is None else measured
        tolerance = (head.bound if head.op != "is" else None) if tolerance is None else tolerance
        expected = "; ".join(c.expected for c in checks)
        failing = [c for c in checks if not c.ok]
        said = "; ".join(c.describe() for c in failing)
        text = "; ".join(t for t in (f"short: {said}" if said else "", detail) if t)
        if any(c.nan for c in checks):
            return self._nan_failure(measured, expected, tolerance, text, departures)
        return self.judged(not failing, measured, expected, tolerance, text, departures)

    # --- reading judged values -------------------------------------------------------------
    def column(self, frame: Any, col: str, *, name: str | None = None) -> Any:
        """``frame[col]``, after checking it holds no NaN: a NaN row raises :class:`JudgedNaN` naming the row,
        and the claim fails (pandas' ``min``/``max``/``mean`` would skip it silently)."""
        series = frame[col]
        bad = series.index[series.isna().to_numpy()]
        if len(bad):
            rows = ", ".join(_row_name(i, frame) for i in list(bad)[:5]) + (" ..." if len(bad) > 5 else "")
            raise JudgedNaN(f"column '{name or col}' is NaN at {len(bad)} row{'s' if len(bad) > 1 else ''}: {rows}")
        return series

    def finite(self, value: Any, name: str) -> float:
        """``value`` as a float, or :class:`JudgedNaN` when it is NaN (the claim fails naming ``name``)."""
        out = float(value)
        if math.isnan(out):
            raise JudgedNaN(f"{name} is NaN")
        return out


class Claims:
    """The ordered claims of one study, each declared with :meth:`add` on its judge."""

    def __init__(self, slug: str, reference: str = ""):
        self.slug = slug
        self.reference = reference
        self._claims: list[Claim] = []

    def add(
        self,
        claim_id: str,
        statement: str,
        reference: str | None = None,
        *,
        departures: Iterable[Departure | str] = (),
        known: KnownFailure | None = None,
        decided_by: str = "quick",
    ) -> Callable[[Callable[..., Verdict]], Callable[["Result"], Verdict]]:
        """Decorator declaring the claim ``<slug>/<claim_id>`` judged by ``judge(result, v)``.

        ``reference`` is what the claim is checked against (the paper's section, "ours: ..."); it
        defaults to the study's reference given to :class:`Claims`. ``departures`` (a
        :class:`Departure`, or a string for one that always applies) and ``known`` (a
        :class:`KnownFailure`) travel with every verdict of the claim. ``decided_by`` names the smallest preset
        whose run decides the claim (``"cpu"``: the study's <= 10 min CPU preset; ``"paper"``: a GPU preset when it
        declares ``gpu_minutes``); a run at a smaller preset says, in its "not decided", which preset decides it.
        """
        declared = tuple(d if isinstance(d, Departure) else Departure.of(d) for d in departures)
        if known is not None and not isinstance(known, KnownFailure):
            raise TypeError(f"known failure of '{claim_id}' must be a KnownFailure, not {type(known).__name__}")
        full = f"{self.slug}/{claim_id}"
        if "/" in claim_id or not claim_id:
            raise ValueError(f"claim id '{claim_id}' of '{self.slug}': give the short id, without the slug")
        if any(c.id == full for c in self._claims):
            raise ValueError(f"claim '{full}' is declared twice")
        judgement = Judgement(full, statement)

        def decorate(judge: Callable[..., Verdict]) -> Callable[["Result"], Verdict]:
            @functools.wraps(judge)
            def bound(result: "Result") -> Verdict:
                return judge(result, judgement)

            self._claims.append(
                Claim(
                    full,
                    statement,
                    self.reference if reference is None else reference,
                    bound,
                    declared,
                    known,
                    decided_by,
                )
            )
            return bound

        return decorate

    def ids(self) -> list[str]:
        return [c.id for c in self._claims]

    def __iter__(self) -> Iterator[Claim]:
        return iter(self._claims)

    def __len__(self) -> int:
        return len(self._claims)

    def __getitem__(self, index: int) -> Claim:
        return self._claims[index]
