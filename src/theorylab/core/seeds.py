"""Claims over seeds: a claim about a random training run is a statement about seeds, read as a rate.

``theorylab check --seeds 0-9`` runs (or reuses) every study at each seed and reports, per claim,
how many of the seeds that decided it passed ("k/n seeds"), with a 95 % Wilson score interval,
the outcome on each seed, the claim's departures and its known-failure declaration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from theorylab.core.errors import ConfigError
from theorylab.core.result import Result
from theorylab.core.study import OUTCOMES

MARKS = {
    "passed": "✓",
    "departed": "✓",
    "failed": "✗",
    "known": "x",
    "unexpected": "!",
    "undecided": "·",
    "error": "E",
    "not evaluated": "-",
    "no run": " ",
}
"""One character per seed in a claim's row: ✓ passed (as stated or with departures), ✗ failed unexplained,
x failed as declared (known), ! passed although declared to fail on every seed, · not decided, E judge error,
- run did not finish (diverged), blank: the study raised before it could be stored."""


def parse_seeds(text: str) -> list[int]:
    """``"0-9"``, ``"0,3,7"``, ``"0-4,10"`` -> the seeds in order (a repeated seed once); a bad spec is a
    :class:`ConfigError` naming the allowed form."""
    seeds: list[int] = []
    for part in str(text).replace(" ", "").split(","):
        lo, dash, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi) if dash else int(lo)
        except ValueError:
            raise ConfigError(
                f"invalid value for '--seeds': {text!r}; allowed: seeds >= 0 as 'A-B' or 'A,B,C' (e.g. 0-9)"
            ) from None
        if a < 0 or b < a:
            raise ConfigError(
                f"invalid value for '--seeds': {text!r}; allowed: seeds >= 0 as 'A-B' with A <= B, or 'A,B,C'"
            )
        seeds.extend(range(a, b + 1))
    return list(dict.fromkeys(seeds))


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a binomial rate k/n (95 % by default); ``(nan, nan)`` for n = 0.

    Wilson (1927), *J. Am. Stat. Assoc.* 22: 209-212: centre (k + z²/2)/(n + z²), half-width
    z sqrt(k(n-k)/n + z²/4)/(n + z²). Unlike the Wald interval it stays inside [0, 1] and is not
    empty at k = 0 or k = n (0/5 gives [0, 0.43], 5/5 gives [0.57, 1])."""
    if n <= 0:
        return math.nan, math.nan
    if not 0 <= k <= n:
        raise ValueError(f"k = {k} outside [0, n = {n}]")
    z2 = z * z
    centre = (k + z2 / 2) / (n + z2)
    half = z * math.sqrt(k * (n - k) / n + z2 / 4) / (n + z2)
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if k == 0 else lo), (1.0 if k == n else hi)  # exact at the edges (the formula rounds near them)


@dataclass
class ClaimRate:
    """One claim over seeds: the outcome on each seed and the pass rate among the seeds that decided it."""

    study: str
    claim: str
    statement: str = ""
    outcomes: dict[int, str] = field(default_factory=dict)  # seed -> outcome (OUTCOMES, "not evaluated", "no run")
    departures: list[str] = field(default_factory=list)
    known: str = ""
    failures: dict[int, str] = field(default_factory=dict)  # seed -> detail, of the seeds that did not pass

    def count(self, *outcomes: str) -> int:
        return sum(1 for o in self.outcomes.values() if o in outcomes)

    @property
    def passed(self) -> int:
        """Seeds that passed, as stated or with departures (a pass declared impossible counts apart)."""
        return self.count("passed", "departed")

    @property
    def decided(self) -> int:
        """Seeds whose run decided the claim (passed, failed, known, unexpected, error)."""
        return self.count("passed", "departed", "failed", "known", "unexpected", "error")

    @property
    def unexplained(self) -> list[int]:
        """Seeds whose outcome fails a check: an unexplained failure, a judge error, an unexpected pass, or a
        run that did not finish or raised."""
        return [
            s for s, o in self.outcomes.items() if o in ("failed", "error", "unexpected", "not evaluated", "no run")
        ]

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.passed, self.decided)

    @property
    def rate(self) -> str:
        """``"8/10"`` (passed of decided), or ``"not decided"``."""
        return f"{self.passed}/{self.decided}" if self.decided else "not decided"

    @property
    def first_failure(self) -> str:
        """``"seed 4: <detail>"`` of the first unexplained failure, else of the first known one ("" if none)."""
        ranked = sorted(self.failures, key=lambda s: (s not in self.unexplained, s))
        return f"seed {ranked[0]}: {self.failures[ranked[0]]}" if ranked else ""

    def marks(self, seeds: Iterable[int]) -> str:
        return "".join(MARKS[self.outcomes.get(s, "no run")] for s in seeds)

    def to_json(self, seeds: Iterable[int]) -> dict[str, Any]:
        lo, hi = self.interval
        return {
            "study": self.study,
            "claim": self.claim,
            "statement": self.statement,
            "seeds": {str(s): self.outcomes.get(s, "no run") for s in seeds},
            "passed": self.passed,
            "decided": self.decided,
            "rate": self.rate,
            "wilson95": None if math.isnan(lo) else [round(lo, 4), round(hi, 4)],
            "counts": {o: self.count(o) for o in OUTCOMES},
            "departures": self.departures,
            "known": self.known,
            "unexplained_seeds": self.unexplained,
            "first_failure": self.first_failure,
        }


def claim_rates(
    outcomes: Mapping[tuple[str, int], Any], claim_ids: Mapping[str, list[str]] | None = None
) -> list[ClaimRate]:
    """Per-claim rates from ``{(study, seed): Result or exception}`` (``check_seeds``' output). ``claim_ids``
    (study -> its claims in order) fills rows for studies whose every run raised; claims keep declaration order."""
    rates: dict[tuple[str, str], ClaimRate] = {}
    order: list[tuple[str, str]] = []

    def row(study: str, claim: str, statement: str = "") -> ClaimRate:
        key = (study, claim)
        if key not in rates:
            rates[key] = ClaimRate(study, claim, statement)
            order.append(key)
        return rates[key]

    studies = list(dict.fromkeys(study for study, _ in outcomes))
    for study in studies:
        for claim in (claim_ids or {}).get(study, []):
            row(study, claim)
    for (study, seed), outcome in outcomes.items():
        if not isinstance(outcome, Result) or outcome.status == "error":
            for claim in [k[1] for k in order if k[0] == study]:
                row(study, claim).outcomes[seed] = "no run"
            continue
        for v in outcome.verdicts:
            r = row(study, v.id, v.statement)
            r.statement = r.statement or v.statement
            label = v.outcome if not v.detail.startswith("not evaluated") else "not evaluated"
            r.outcomes[seed] = label
            for d in v.departures:
                if d not in r.departures:
                    r.departures.append(d)
            r.known = r.known or v.known
            if label in ("failed", "error", "unexpected", "known", "not evaluated"):
                r.failures[seed] = v.detail
    return [rates[k] for k in order]
