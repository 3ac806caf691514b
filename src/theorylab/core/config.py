"""Study configs: strict pydantic models, presets as documented deltas, and `--set` parsing.

Every study declares a subclass of :class:`StudyConfig`. Fields are typed, bounded and carry a
one-line description; unknown keys and out-of-range values are rejected before any work with one
line that names the field and the allowed range (:class:`ConfigError`).
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Iterator, Literal, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic.fields import FieldInfo

from theorylab.core.errors import ConfigError

__all__ = ["ConfigError", "Preset", "StudyConfig", "build_config", "parse_assignments"]


class StudyConfig(BaseModel):
    """Base class of every study config: frozen, no unknown keys, validated defaults.

    Validation is strict (no silent "1.5" -> 1 or true -> 1): a value must have the field's type.
    Tuple-typed fields also accept a list or a single scalar (``n=400`` means ``n=(400,)``) so
    that sweeps can put one value of a list-valued field on each grid point; NumPy scalars are
    taken as the Python numbers they hold.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, strict=True)
    # Retired field names and their successors (``{"mc_samples": "mc_n"}``): an old ``--set`` gets the new name.
    RENAMED: ClassVar[dict[str, str]] = {}

    def __getattribute__(self, name: str) -> Any:
        reads = _FIELD_READS.get()
        if reads is not None and name in type(self).model_fields:
            reads.add(name)
        return super().__getattribute__(name)

    @field_validator("*", mode="before")
    @classmethod
    def _normalise(cls, value: Any, info: Any) -> Any:
        annotation = _unwrap_optional(cls.model_fields[info.field_name].annotation)
        if _is_sequence(annotation):
            items = value if isinstance(value, (list, tuple)) else [value]
            return tuple(_plain(v) for v in items)
        return _plain(value)


_FIELD_READS: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("theorylab_field_reads", default=None)


@contextlib.contextmanager
def recording_field_reads() -> Iterator[set[str]]:
    """Collect the names of the config fields read (as ``cfg.<field>``, or through a config dict
    wrapped by :class:`ReadRecordingDict`) while the block runs: the runner uses it to warn about a
    ``--set`` value that the chosen preset never reads."""
    reads: set[str] = set()
    token = _FIELD_READS.set(reads)
    try:
        yield reads
    finally:
        _FIELD_READS.reset(token)


def note_field_reads(names: Iterable[str]) -> None:
    """Add fields read elsewhere (a job that ran in another process) to the block's recording, if any."""
    reads = _FIELD_READS.get()
    if reads is not None:
        reads.update(names)


class ReadRecordingDict(dict):
    """A config as a plain dict (``result.config``) that records the keys judges read."""

    def __getitem__(self, key: Any) -> Any:
        reads = _FIELD_READS.get()
        if reads is not None:
            reads.add(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        reads = _FIELD_READS.get()
        if reads is not None:
            reads.add(key)
        return super().get(key, default)


@dataclass(frozen=True)
class Preset:
    """A named delta from the config defaults; every overridden field carries its reason.

    ``gpu_minutes`` marks a preset that needs a GPU: its estimated wall time in minutes on one H100 (None: the preset
    runs on a CPU; ``quick`` in <= 60 s and ``cpu`` in <= 10 min on 2 cores). A claim decided only by such a preset
    says so at every other preset ("not decided: GPU (paper preset, est. 40 min on one H100)")."""

    name: str
    values: Mapping[str, Any] = field(default_factory=dict)
    reasons: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    gpu_minutes: float | None = None

    @classmethod
    def of(
        cls, name: str, description: str = "", *, gpu_minutes: float | None = None, **fields: tuple[Any, str]
    ) -> "Preset":
        """``Preset.of("paper", n_draws=(4000, "paper's Monte Carlo size"))``; ``gpu_minutes=40`` for a GPU preset."""
        if gpu_minutes is not None and not gpu_minutes > 0:
            raise ValueError(f"preset '{name}': gpu_minutes must be > 0 or None; got {gpu_minutes}")
        return cls(
            name=name,
            values={k: v for k, (v, _) in fields.items()},
            reasons={k: r for k, (_, r) in fields.items()},
            description=description,
            gpu_minutes=gpu_minutes,
        )

    @property
    def on_gpu(self) -> bool:
        return self.gpu_minutes is not None

    def device_words(self) -> str:
        """Where this preset runs, in words: ``"CPU"`` or ``"GPU (paper preset, est. 40 min on one H100)"``."""
        if self.gpu_minutes is None:
            return "CPU"
        return f"GPU ({self.name} preset, est. {self.gpu_minutes:g} min on one H100)"


def _plain(value: Any) -> Any:
    """NumPy scalars -> Python scalars (strict validation would reject np.int64 for int)."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def _is_sequence(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin in (tuple, list)


def _unwrap_optional(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def describe_allowed(info: FieldInfo) -> str:
    """Human description of a field's type and bounds, e.g. ``integer, 10 <= value <= 100000``."""
    annotation = _unwrap_optional(info.annotation)
    if typing.get_origin(annotation) is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(annotation))
    element = annotation
    prefix = ""
    metadata = list(info.metadata)
    if _is_sequence(annotation):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        element = args[0] if args else Any
        prefix = "comma-separated list of "
        metadata = []  # length bounds of the list are not the range of its elements
        if typing.get_origin(element) is typing.Annotated:
            element, *extra = typing.get_args(element)
            for item in extra:
                metadata.extend(item.metadata if isinstance(item, FieldInfo) else [item])
    type_name = {int: "integer", float: "number", bool: "true/false", str: "text"}.get(element, str(element))
    if typing.get_origin(element) is Literal:
        type_name = "one of " + ", ".join(repr(a) for a in typing.get_args(element))
    lower: list[str] = []  # e.g. "10 <="
    upper: list[str] = []  # e.g. "<= 100000"
    for meta in metadata:
        for attr, sym in (("ge", "<="), ("gt", "<")):
            bound = getattr(meta, attr, None)
            if bound is not None:
                lower.append(f"{bound} {sym}")
        for attr, sym in (("le", "<="), ("lt", "<")):
            bound = getattr(meta, attr, None)
            if bound is not None:
                upper.append(f"{sym} {bound}")
    rng = " ".join([*lower[-1:], "value", *upper[-1:]]) if (lower or upper) else ""
    return prefix + type_name + (f", {rng}" if rng else "")


def _format_validation_error(cls: type[StudyConfig], err: ValidationError, given: Mapping[str, Any]) -> str:
    first = err.errors()[0]
    loc = first.get("loc", ())
    if not loc:
        # A cross-field check (model validator): its message starts with the field it blames.
        msg = str(first.get("msg", "")).removeprefix("Value error, ")
        return f"invalid config: {msg}"
    name = str(loc[0])
    if first.get("type") == "extra_forbidden":
        return unknown_field_message(cls, name)
    info = cls.model_fields.get(name)
    value = given.get(name, first.get("input"))
    allowed = describe_allowed(info) if info is not None else ""
    msg = first.get("msg", "invalid value")
    return f"invalid value for '{name}': {value!r} ({msg}); allowed: {allowed}"


def unknown_field_message(cls: type[StudyConfig], name: str) -> str:
    renamed = getattr(cls, "RENAMED", {}).get(name)
    if renamed is not None:  # a retired spelling (docs/adding-a-study.md, the config vocabulary)
        return f"unknown config field '{name}': it is now '{renamed}' (same meaning and values)"
    valid = sorted(cls.model_fields)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown config field '{name}'{hint}; valid fields: {', '.join(valid)}"


def parse_value(cls: type[StudyConfig], name: str, text: str) -> Any:
    """Turn the text of ``--set name=text`` into a Python value for validation by pydantic.

    JSON is tried first (numbers, true/false, lists); tuple-typed fields also take ``a,b,c``.
    Anything else stays a string, and pydantic decides whether it fits.
    """
    if name not in cls.model_fields:
        raise ConfigError(unknown_field_message(cls, name))
    annotation = _unwrap_optional(cls.model_fields[name].annotation)
    if text.strip().lower() in ("none", "null") and annotation is not cls.model_fields[name].annotation:
        return None  # an optional field switched off: --set slow_k=none
    if _is_sequence(annotation) and not text.strip().startswith("["):
        return [_parse_scalar(part) for part in text.split(",") if part.strip() != ""]
    return _parse_scalar(text)


def _parse_scalar(text: str) -> Any:
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_assignments(cls: type[StudyConfig], items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Parse ``["key=value", ...]`` (from ``--set``) into a dict of raw values."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        key, text = item.split("=", 1)
        key = key.strip()
        out[key] = parse_value(cls, key, text)
    return out


def build_config(
    cls: type[StudyConfig],
    presets: Mapping[str, Preset],
    preset: str,
    overrides: Mapping[str, Any] | None = None,
) -> StudyConfig:
    """Defaults, then the preset's delta, then user overrides; all validated at once."""
    if preset not in presets:
        raise ConfigError(f"unknown preset '{preset}'; valid presets: {', '.join(sorted(presets))}")
    values: dict[str, Any] = dict(presets[preset].values)
    for key, value in (overrides or {}).items():
        if key not in cls.model_fields:
            raise ConfigError(unknown_field_message(cls, key))
        values[key] = value
    try:
        return cls(**values)
    except ValidationError as err:
        raise ConfigError(_format_validation_error(cls, err, values)) from None
