"""Declaring a study's claims next to their judges.

A study writes its slug and paper reference once::

    claims = Claims("thermalizer", "Pedersen et al. 2025")

    @claims.add("energetic-stats", "E_therm(m)/E_true(m) is in [0.85, 1.15] for m = 1..6.")
    def judge_spectrum(res, v):
        r = res.table("spectrum").set_index("mode").loc[1:6, "ratio"]
        return v.judged(r.between(0.85, 1.15).all(), measured=float(r.min()), expected="in [0.85, 1.15]")

The judge receives a :class:`Judgement` ``v`` that already knows the claim's id and statement, so
a verdict can never carry another claim's id or a stale copy of the statement. The decorated name
stays callable as ``judge_spectrum(result) -> Verdict`` (tests feed it wrong results), and
``study(..., claims=claims)`` registers them in declaration order.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

from theorylab.core.study import Claim, Verdict

if TYPE_CHECKING:
    from theorylab.core.result import Result


@dataclass(frozen=True)
class Judgement:
    """The verdict constructors of one claim (id and statement filled in)."""

    id: str
    statement: str

    def judged(self, ok: Any, measured: Any, expected: Any, tolerance: Any = None, detail: str = "") -> Verdict:
        """Passed when ``ok`` is true, failed when false (numpy booleans accepted); ``ok=None`` is
        not decided (prefer :meth:`undecided`, which says why)."""
        return Verdict(self.id, self.statement, measured, expected, tolerance, None if ok is None else bool(ok), detail)

    def passed(self, measured: Any, expected: Any, tolerance: Any = None, detail: str = "") -> Verdict:
        return self.judged(True, measured, expected, tolerance, detail)

    def failed(self, measured: Any, expected: Any, tolerance: Any = None, detail: str = "") -> Verdict:
        return self.judged(False, measured, expected, tolerance, detail)

    def undecided(self, reason: str, measured: Any = None, expected: Any = None, tolerance: Any = None) -> Verdict:
        """Not decided on this run; ``reason`` says why and what would decide it (e.g. the preset).
        A reason that already starts with "not decided", "needs " or "report only" is kept as is."""
        detail = reason if reason.startswith(("not decided", "needs ", "report only")) else f"not decided: {reason}"
        return Verdict(self.id, self.statement, measured, expected, tolerance, None, detail)


class Claims:
    """The ordered claims of one study, each declared with :meth:`add` on its judge."""

    def __init__(self, slug: str, reference: str = ""):
        self.slug = slug
        self.reference = reference
        self._claims: list[Claim] = []

    def add(self, claim_id: str, statement: str, reference: str | None = None) -> Callable[[Callable[..., Verdict]],
        Callable[["Result"], Verdict]]:
        """Decorator declaring the claim ``<slug>/<claim_id>`` judged by ``judge(result, v)``.

        ``reference`` is what the claim is checked against (the paper's section, "ours: ..."); it
        defaults to the study's reference given to :class:`Claims`.
        """
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

            self._claims.append(Claim(full, statement, self.reference if reference is None else reference, bound))
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
