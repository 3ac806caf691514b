"""What a claim declares about how it is judged: its departures from the stated form, its known failure.

A claim is judged in the form its card (or its paper) states it. Two declarations say where our
reproduction is not that:

- A :class:`Departure` is a changed recipe, size, definition or threshold. It travels with every
  verdict of the claim (JSON, ``show``, the stored verdicts, the report) and a pass with one counts
  as "passed with departures", never as "passed as stated". A departure tied to a config field
  (``Departure.field("lr", card=1e-3, why=...)``) applies only when the run's value differs from
  the card's, so a user who sets the card's value back gets the claim as stated.
- A :class:`KnownFailure` is pytest's xfail: the stated claim fails in our reproduction and we
  understand why. ``KnownFailure.every_seed(cause)`` is the strict form (a pass reads "passed
  unexpectedly" and fails the check, so the declaration gets revisited);
  ``KnownFailure.some_seeds(failed, of, seeds, cause)`` carries the measured rate (its failures read
  "failed (known, k/n seeds)", its passes are passes). A declared failure keeps ``check`` at exit 0
  unless ``--strict``. Never declare one to hide a bug.

Both are plain data (this module imports nothing heavy).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_fmt(v) for v in value) + ")"
    return str(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


# The departure every verdict of a run in bf16 autocast carries (core.precision: "auto" picks bf16 by hardware).
BF16_DEPARTURE = (
    "bf16 autocast (card: fp32): on the passes the study's precision field names, chosen for speed where the hardware "
    "has bf16 units"
)


@dataclass(frozen=True)
class Departure:
    """One difference between the claim as judged and the claim as stated.

    ``text`` is short (``"sign features (card: Gaussian)"``); ``why`` is the reason. With ``field``,
    the departure is the config field's value against the card's (``card``), and applies only when
    they differ; ``presets`` limits it to runs of those presets.
    """

    text: str = ""
    why: str = ""
    field: str | None = None
    card: Any = None
    presets: tuple[str, ...] | None = None

    @classmethod
    def of(cls, text: str, why: str = "", presets: Sequence[str] | None = None) -> "Departure":
        """A departure that always applies (a definition or recipe that no config field sets back)."""
        if not text:
            raise ValueError("a departure needs its text")
        return cls(text=text, why=why, presets=tuple(presets) if presets is not None else None)

    @classmethod
    def field_value(cls, field: str, card: Any, why: str = "", presets: Sequence[str] | None = None) -> "Departure":
        """A departure whenever the run's ``field`` differs from the card's value ``card``."""
        return cls(field=field, card=card, why=why, presets=tuple(presets) if presets is not None else None)

    def applies(self, config: Mapping[str, Any], preset: str) -> bool:
        if self.presets is not None and preset not in self.presets:
            return False
        if self.field is None:
            return True
        return self.field in config and not _same(config[self.field], self.card)

    def describe(self, config: Mapping[str, Any]) -> str:
        """The departure in words for this run: ``"lr 0.002 (card 0.001): why"``."""
        head = self.text or f"{self.field} {_fmt(config.get(self.field))} (card {_fmt(self.card)})"
        return f"{head}: {self.why}" if self.why else head


@dataclass(frozen=True)
class KnownFailure:
    """The stated claim fails in our reproduction, for a reason we understand (pytest's xfail).

    ``every_seed`` True is the strict form; otherwise ``failed``/``of`` is the measured rate and
    ``seeds`` the failing seeds of that measurement. ``presets`` limits the declaration to runs of
    those presets (a claim that fails at a reduced size and holds at the paper's).
    """

    cause: str
    every_seed: bool = True
    failed: int | None = None
    of: int | None = None
    seeds: tuple[int, ...] = ()
    presets: tuple[str, ...] | None = None

    @classmethod
    def on_every_seed(cls, cause: str, presets: Sequence[str] | None = None) -> "KnownFailure":
        """Fails on every seed: a pass is flagged "passed unexpectedly" and fails the check."""
        return cls(cause=cause, every_seed=True, presets=tuple(presets) if presets is not None else None)

    @classmethod
    def on_some_seeds(
        cls, failed: int, of: int, seeds: Sequence[int], cause: str, presets: Sequence[str] | None = None
    ) -> "KnownFailure":
        """Fails on ``failed`` of ``of`` seeds measured (``seeds``: the failing ones); its passes are passes."""
        if not 0 < failed <= of or len(seeds) != failed:
            raise ValueError(
                f"a known failure on some seeds needs 0 < failed <= of and one seed per failure; got "
                f"{failed}/{of} with seeds {list(seeds)}"
            )
        return cls(
            cause=cause,
            every_seed=False,
            failed=failed,
            of=of,
            seeds=tuple(int(s) for s in seeds),
            presets=tuple(presets) if presets is not None else None,
        )

    def applies(self, preset: str) -> bool:
        return self.presets is None or preset in self.presets

    @property
    def rate(self) -> str:
        """``"every seed"`` or ``"3/10 seeds (1, 4, 5)"``."""
        if self.every_seed:
            return "every seed"
        return f"{self.failed}/{self.of} seeds ({', '.join(map(str, self.seeds))})"

    def describe(self) -> str:
        return f"known failure on {self.rate}: {self.cause}"


def tolerance_departures(checks: Sequence[tuple[Any, Any, float, str]], bound_name: str = "our bound") -> list[str]:
    """A run's departures from a card's fixed tolerances, where a claim is judged against our own bound (e.g. a
    float64 rounding bound that scales with the problem). ``checks`` holds ``(residual, our bound, the card's
    tolerance, what)``: residuals a pandas Series read through ``v.column`` (no NaN), the bound a Series on the same
    index or one number. Where every residual gets the same outcome against both, the claim is judged as stated and
    nothing is returned; a residual that passes only within our (larger) bound, or fails only against our (smaller)
    one, is a departure, said with its numbers."""
    import pandas as pd

    out = []
    for residual, bound, card, what in checks:
        bound = bound if isinstance(bound, pd.Series) else pd.Series(bound, index=residual.index)
        ours, stated = residual <= bound, residual <= card
        differ = ours != stated
        if differ.any():
            side = "within" if bool(ours[differ].any()) else "above"
            out.append(
                f"{what} {float(residual[differ].max()):.1e} {side} {bound_name} "
                f"{float(bound[differ].max()):.1e} (card: {card:g})"
            )
    return out
