"""The study contract: claims, verdicts, the Study declaration and the registry keyed by slug."""

from __future__ import annotations

import difflib
import importlib
import math
import sys
import warnings
from dataclasses import asdict, dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from theorylab.core.config import ConfigError, Preset, StudyConfig
from theorylab.core.declared import BF16_DEPARTURE, Departure, KnownFailure
from theorylab.core.errors import JudgedNaN, Undecided

if TYPE_CHECKING:
    from theorylab.core.context import RunContext
    from theorylab.core.result import Result


OUTCOMES = ("passed", "departed", "failed", "known", "unexpected", "undecided", "error")
"""The buckets a verdict is counted in, disjoint: passed as stated, passed with departures, failed (unexplained),
failed as declared (a known failure), passed although declared to fail on every seed, not decided, judge error."""

OUTCOME_WORDS = {
    "passed": "passed as stated",
    "departed": "passed with departures",
    "failed": "failed",
    "known": "known failures",
    "unexpected": "passed unexpectedly",
    "undecided": "not decided",
    "error": "judge errors",
}

BAD_OUTCOMES = frozenset({"failed", "unexpected", "error"})


def counted(n: int, outcome: str) -> str:
    """``"2 known failures"``, ``"1 known failure"``: a count of one outcome in words."""
    words = OUTCOME_WORDS[outcome]
    if n == 1 and words.endswith("s") and outcome in ("known", "error"):
        words = words[:-1]
    return f"{n} {words}"


"""The outcomes that fail a run or a check (``--strict`` adds ``known``)."""


@dataclass(frozen=True)
class Verdict:
    """The judgement of one claim on one run.

    ``passed`` is True/False when the run could decide the claim, None when it could not (for
    example "needs paper preset", or the run diverged). ``measured``/``expected``/``tolerance``
    are numbers or short strings; ``detail`` says how they were compared. ``error`` marks a judge
    that raised: such a verdict counts as failed (``passed`` is False) and ``detail`` holds the
    exception, so a misspelt column can never pass for an undecided claim.

    ``departures`` are the ways this verdict's claim was judged other than as stated (declared on
    the claim, or added by the judge for this run); ``known`` is the claim's known-failure
    declaration in words ("" when none applies) and ``known_strict`` whether it says "every seed". ``nan``
    marks a failure because a judged value was NaN: never a pass, and never excused by a known-failure
    declaration (a NaN is a broken measurement, not the failure that was declared).
    """

    id: str
    statement: str
    measured: Any
    expected: Any
    tolerance: Any
    passed: bool | None
    detail: str = ""
    error: bool = False
    departures: tuple[str, ...] = ()
    known: str = ""
    known_strict: bool = False
    nan: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = {k: _jsonable(v) for k, v in asdict(self).items()}
        data["outcome"], data["label"] = self.outcome, self.label
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Verdict":
        return cls(
            **{k: data.get(k) for k in ("id", "statement", "measured", "expected", "tolerance", "passed", "detail")},
            error=bool(data.get("error", False)),
            departures=tuple(data.get("departures") or ()),
            known=data.get("known") or "",
            known_strict=bool(data.get("known_strict", False)),
            nan=bool(data.get("nan", False)),
        )

    @property
    def outcome(self) -> str:
        """The bucket this verdict is counted in (one of :data:`OUTCOMES`)."""
        if self.error:
            return "error"
        if self.passed is None:
            return "undecided"
        if self.passed:
            if self.known and self.known_strict:
                return "unexpected"
            return "departed" if self.departures else "passed"
        return "known" if self.known and not self.nan else "failed"

    @property
    def label(self) -> str:
        """The verdict in a word or three, as the tables print it."""
        outcome = self.outcome
        if outcome == "known":
            rate = "" if self.known_strict else self.known.removeprefix("known failure on ").split(" (", 1)[0]
            return f"failed (known{', ' + rate if rate else ''})"
        return {
            "passed": "passed",
            "departed": "passed with departures",
            "failed": "FAILED",
            "unexpected": "PASSED UNEXPECTEDLY",
            "undecided": "not decided",
            "error": "ERROR",
        }[outcome]

    @classmethod
    def maker(cls, slug: str | None) -> Callable[..., "Verdict"]:
        """A study's verdict constructor: ``make(claim_id, statement, measured, expected, tolerance,
        passed, detail)`` with ids prefixed ``"slug/"`` (``slug=None``: ids are given whole) and
        ``passed`` coerced to bool, or None when undecided (numpy booleans included)."""

        def make(
            claim_id: str, statement: str, measured: Any, expected: Any, tolerance: Any, passed: Any, detail: str
        ) -> "Verdict":
            full = claim_id if slug is None else f"{slug}/{claim_id}"
            return cls(full, statement, measured, expected, tolerance, None if passed is None else bool(passed), detail)

        return make


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@dataclass(frozen=True)
class Claim:
    """One claim of a paper: an id, a plain-words statement, the reference, and its judge; with the
    departures from the stated form it is judged under and its known failure, if any
    (:mod:`theorylab.core.declared`)."""

    id: str
    statement: str
    reference: str
    judge: Callable[["Result"], Verdict]
    departures: tuple[Departure, ...] = ()
    known: KnownFailure | None = None
    # the smallest preset of the study whose run decides this claim ("quick", "cpu", "paper", ...), and where that
    # preset runs in words (filled by :func:`study` from the preset: "CPU", "GPU (paper preset, est. ...)")
    decided_by: str = "quick"
    decided_on: str = "CPU"

    def evaluate(self, result: "Result") -> Verdict:
        verdict = self._evaluate(result)
        preset = getattr(result, "preset", "")
        if (
            verdict.passed is None
            and not verdict.error
            and preset
            and preset != self.decided_by
            and result.status == "done"
        ):
            # Say what decides it: a GPU-only claim reads "not decided: GPU (paper preset, est. N min on one H100)".
            where = self.decided_on if self.decided_on != "CPU" else f"decided by the {self.decided_by} preset on a CPU"
            why = verdict.detail.removeprefix("not decided: ").removeprefix("not decided")
            verdict = replace(verdict, detail=f"not decided: {where}" + (f"; {why.lstrip(': ')}" if why else ""))
        return verdict

    def _evaluate(self, result: "Result") -> Verdict:
        if result.status != "done":
            return Verdict(self.id, self.statement, None, None, None, None, f"not evaluated: run {result.status}")
        try:
            verdict = self.judge(result)
        except Undecided as why:
            # The judge says, in words, that this config does not run the part the claim needs.
            verdict = Verdict(self.id, self.statement, None, None, None, None, f"not decided: {why}")
        except JudgedNaN as nan:
            # A judged quantity is NaN: the claim fails, naming where (never a pass, never "not decided").
            verdict = Verdict(self.id, self.statement, None, None, None, False, f"failed: {nan}", nan=True)
        except Exception as err:  # noqa: BLE001 - a judge that raises is a failure, reported whole
            return Verdict(
                self.id,
                self.statement,
                None,
                None,
                None,
                False,
                f"judge raised {type(err).__name__}: {err}",
                error=True,
            )
        if not isinstance(verdict, Verdict):
            return Verdict(
                self.id,
                self.statement,
                None,
                None,
                None,
                False,
                f"judge returned {type(verdict).__name__}, not a Verdict",
                error=True,
            )
        if verdict.id != self.id:
            return Verdict(
                self.id,
                self.statement,
                verdict.measured,
                verdict.expected,
                verdict.tolerance,
                False,
                f"judge returned the verdict of '{verdict.id}' for claim '{self.id}'",
                error=True,
            )
        return self.declare(verdict, getattr(result, "config", None) or {}, getattr(result, "preset", ""))

    def declare(self, verdict: Verdict, config: Mapping[str, Any], preset: str) -> Verdict:
        """``verdict`` with this claim's departures (those that apply to ``config`` at ``preset``) ahead of the
        judge's own, and its known failure if it applies at ``preset``."""
        declared = tuple(d.describe(config) for d in self.departures if d.applies(config, preset))
        if config.get("precision") == "bf16":  # the run's arithmetic is part of what was shown
            declared += (BF16_DEPARTURE,)
        departures = tuple(dict.fromkeys(declared + tuple(verdict.departures)))
        known = self.known if self.known is not None and self.known.applies(preset) else None
        return replace(
            verdict,
            departures=departures,
            known=known.describe() if known else "",
            known_strict=bool(known and known.every_seed),
        )


@dataclass(frozen=True)
class Study:
    """A registered study: config class, presets, the run function and the claims."""

    slug: str
    title: str
    paper: str
    config: type[StudyConfig]
    presets: Mapping[str, Preset]
    run: Callable[[StudyConfig, "RunContext"], None]
    claims: tuple[Claim, ...]
    module: str = ""
    family: str = ""
    # card claims not implemented yet: id -> why
    not_built: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # torch intra-op threads for a CPU run (None: unchanged); applied by the runner (core.cpu.torch_threads)
    cpu_threads: int | None = None
    # cfg -> (estimated peak bytes of a run, the --set that brings it down); checked by the runner before any work
    memory: Callable[[Any], tuple[float, str]] | None = None

    @property
    def cpu_presets(self) -> list[str]:
        """The presets ``check --preset cpu`` runs: ``cpu`` where the study has one, then each other preset that
        decides a claim on a CPU (``cpu-depth``, ``lm``, ``mst-cpu``, ...) in claim order; never quick."""
        names = ["cpu"] if "cpu" in self.presets else []
        for claim in self.claims:
            preset = self.presets.get(claim.decided_by)
            if preset is not None and not preset.on_gpu and claim.decided_by not in (*names, "quick"):
                names.append(claim.decided_by)
        return names

    def make_config(self, preset: str = "quick", **overrides: Any) -> StudyConfig:
        from theorylab.core.config import build_config

        return build_config(self.config, self.presets, preset, overrides)


class Registry:
    """An immutable-by-convention mapping slug -> Study; duplicates and bad lookups are errors."""

    def __init__(self) -> None:
        self._studies: dict[str, Study] = {}

    def add(self, study: Study) -> Study:
        existing = self._studies.get(study.slug)
        if existing is not None and existing.module != study.module:
            raise ValueError(f"study slug '{study.slug}' is registered twice ({existing.module}, {study.module})")
        self._studies[study.slug] = study
        return study

    def get(self, slug: str) -> Study:
        if slug not in self._studies:
            _load_one(slug)  # one study's run need not import every other study (seconds of torch/HF imports)
        if slug not in self._studies:
            load_studies()
        if slug in self._studies:
            return self._studies[slug]
        valid = sorted(self._studies)
        close = difflib.get_close_matches(slug, valid, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfigError(f"unknown study '{slug}'{hint}; valid studies: {', '.join(valid)}")

    def all(self) -> Mapping[str, Study]:
        load_studies()
        return MappingProxyType(dict(sorted(self._studies.items())))


REGISTRY = Registry()


ENTRY_POINT_GROUP = "theorylab.studies"
_loaded = False


def load_studies() -> None:
    """Import every module registered in the ``theorylab.studies`` entry-point group (once).

    Built-in studies register there in ``pyproject.toml``, and so does a user's own package::

        [project.entry-points."theorylab.studies"]
        my-study = "my_package.my_study"

    Importing a module runs its ``@study`` decorator. A source tree that was never installed has no
    entry points: then the built-in package is imported directly. A plugin that fails to import is
    a warning naming it; the other studies still load.
    """
    global _loaded
    if _loaded:
        return
    _loaded = True
    from importlib.metadata import entry_points

    found = list(entry_points(group=ENTRY_POINT_GROUP))
    for package_name in _builtin_packages():
        if any(ep.value.startswith(package_name + ".") for ep in found):
            continue  # installed: its entry points below import it
        import pkgutil

        package = importlib.import_module(package_name)
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package_name}.{module.name}")
    own = tuple(p + "." for p in _builtin_packages())
    for ep in found:
        try:
            ep.load()
        except Exception as err:  # noqa: BLE001 - one broken plugin must not hide every other study
            if ep.value.startswith(own):
                raise
            warnings.warn(
                f"study plugin '{ep.name}' ({ep.value}) failed to import: {type(err).__name__}: {err}",
                RuntimeWarning,
                stacklevel=2,
            )


def _builtin_packages() -> tuple[str, ...]:
    """The packages of built-in studies, as the library's face declares them (``BUILTIN_STUDY_PACKAGES`` in the
    top-level package): imported directly from a source tree with no installed entry points. ``core`` names no
    study package itself."""
    face = sys.modules.get(__name__.split(".")[0])
    return tuple(getattr(face, "BUILTIN_STUDY_PACKAGES", ()))


def _load_one(slug: str) -> None:
    """Import the entry point named ``slug`` alone, if there is one; a failure is left to :func:`load_studies`."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP, name=slug):
        try:
            ep.load()
        except Exception:  # noqa: BLE001 - load_studies reports it (or warns for a third-party plugin)
            return


def study(
    slug: str,
    *,
    title: str,
    paper: str,
    config: type[StudyConfig],
    presets: Mapping[str, Preset],
    claims: Iterable[Claim],
    family: str = "",
    not_built: Mapping[str, str] | None = None,
    cpu_threads: int | None = None,
    memory: Callable[[Any], tuple[float, str]] | None = None,
) -> Callable[[Callable[[Any, "RunContext"], None]], Study]:
    """Decorator registering ``run(cfg, ctx)`` as the study ``slug``.

    Presets must include ``quick`` and ``paper`` and may only name existing config fields.
    ``not_built`` lists the card's claims that are not implemented yet (id -> a short reason), so
    ``theorylab list`` and the README table say what is missing instead of counting only what is.
    ``cpu_threads`` pins torch's intra-op threads for CPU runs (e.g. 1 for a study of tiny ops; the runner restores
    the count afterwards). ``memory(cfg)`` estimates a run's peak memory in bytes and names the ``--set`` that
    brings it down; a run whose estimate exceeds the machine's available memory stops before any work, saying both.
    """
    if cpu_threads is not None and cpu_threads < 1:
        raise ValueError(f"study '{slug}': cpu_threads must be >= 1 or None; got {cpu_threads}")
    for required in ("quick", "paper"):
        if required not in presets:
            raise ValueError(f"study '{slug}' must declare a '{required}' preset")
    for preset in presets.values():
        for key in preset.values:
            if key not in config.model_fields:
                raise ValueError(f"preset '{preset.name}' of '{slug}' sets unknown field '{key}'")
            if key not in preset.reasons or not preset.reasons[key]:
                raise ValueError(f"preset '{preset.name}' of '{slug}' gives no reason for '{key}'")
    claims = tuple(claims)  # a Claims declaration or a list of Claim
    for c in claims:
        if c.decided_by not in presets:
            raise ValueError(
                f"claim '{c.id}' of '{slug}' is decided by preset '{c.decided_by}', which it does not "
                f"declare; presets: {', '.join(presets)}"
            )
    claims = tuple(replace(c, decided_on=presets[c.decided_by].device_words()) for c in claims)
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"study '{slug}' has duplicate claim ids")

    def decorate(fn: Callable[[Any, "RunContext"], None]) -> Study:
        return REGISTRY.add(
            Study(
                slug=slug,
                title=title,
                paper=paper,
                config=config,
                presets=MappingProxyType(dict(presets)),
                run=fn,
                claims=tuple(claims),
                module=fn.__module__,
                family=family,
                not_built=MappingProxyType(dict(not_built or {})),
                cpu_threads=cpu_threads,
                memory=memory,
            )
        )

    return decorate


def get_study(slug: str) -> Study:
    return REGISTRY.get(slug)


def all_studies() -> Mapping[str, Study]:
    return REGISTRY.all()
