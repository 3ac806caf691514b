"""The claims inventory: every claim, the preset that decides it, that preset's measured time, the latest verdict
per preset in a store, and its declared departures (``theorylab claims``).

A claim's deciding preset is declared on the claim (``claims.add(..., decided_by="cpu")``): ``quick`` (<= 60 s on
2 CPU cores), the study's ``cpu`` preset (<= 10 min on 2 CPU cores) or a GPU preset (one that declares
``gpu_minutes``, its estimated minutes on one H100). Measured wall times come from the store's newest finished run
of that preset, else from the times recorded with the package (``preset_times.json``, written from a store by
``benchmarks/record_preset_times.py``), with the CPU they were measured on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Iterable, Mapping, Sequence

from theorylab.core.store import Store, run_identity
from theorylab.core.study import Study

TIMES_FILE = "preset_times.json"


def recorded_times() -> dict[str, Any]:
    """The preset wall times recorded with the package: ``{"cpu": "...", "date": "...", "times": {slug: {preset:
    seconds}}}`` (empty when none were recorded)."""
    try:
        text = resources.files("theorylab.core").joinpath(TIMES_FILE).read_text()
    except (FileNotFoundError, OSError):
        return {}
    return json.loads(text)


@dataclass
class ClaimEntry:
    """One claim in the inventory."""

    id: str
    study: str
    statement: str
    decided_by: str
    device: str  # "CPU" or "GPU"
    gpu_minutes: float | None
    time_s: float | None  # the deciding preset's measured wall time (None: not measured; a GPU preset: none on CPU)
    time_source: str  # "store", "recorded (<cpu>, <date>)" or ""
    departures: list[str] = field(default_factory=list)  # declared for the deciding preset's config
    known: str = ""
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)  # preset -> the newest finished run's verdict

    @property
    def decided(self) -> bool:
        """Whether a stored run of the deciding preset (or a bigger one) decided this claim."""
        return any(v["outcome"] != "undecided" for v in self.verdicts.values())

    def time_words(self) -> str:
        if self.device == "GPU":
            return f"GPU, est. {self.gpu_minutes:g} min on one H100"
        if self.time_s is None:
            return "not measured"
        return f"{self.time_s:.0f} s" + ("" if self.time_source == "store" else " (recorded)")

    def to_json(self) -> dict[str, Any]:
        data = {
            k: getattr(self, k)
            for k in (
                "id",
                "study",
                "statement",
                "decided_by",
                "device",
                "gpu_minutes",
                "time_s",
                "time_source",
                "departures",
                "known",
                "verdicts",
            )
        }
        data["decided"] = self.decided
        return data


def preset_hashes(study: Study) -> dict[str, str]:
    """``{preset: config hash}`` of every preset of ``study`` that validates: the hash a run of exactly that preset
    (no ``--set``) is stored under."""
    hashes = {}
    for name in study.presets:
        try:
            hashes[name] = run_identity(study.slug, study.make_config(name).model_dump(mode="json"), 0, "")[1]
        except Exception:  # noqa: BLE001 - a preset that does not validate has no runs to find
            continue
    return hashes


def _latest_done(
    store: Store, slug: str, seed: int | None = None, hashes: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """``{preset: newest finished index row}`` of ``slug`` in ``store`` (of that ``seed`` when given). With
    ``hashes``, only a run of the preset's own config counts: one with ``--set`` overrides, or of an older version
    of the preset, is stored under the preset's name but is not its verdict."""
    latest: dict[str, dict[str, Any]] = {}
    for row in store.rows(slug):  # newest first
        if row.get("status") != "done" or row["preset"] in latest or seed not in (None, row["seed"]):
            continue
        if hashes is not None and hashes.get(row["preset"]) != row["config_hash"]:
            continue
        latest[row["preset"]] = row
    return latest


def inventory(
    studies: Mapping[str, Study] | Iterable[Study],
    store: Store | Sequence[Store] | None = None,
    rejudge: bool = True,
    seed: int | None = None,
) -> list[ClaimEntry]:
    """Every claim of ``studies`` as a :class:`ClaimEntry`, in registry and declaration order, with the newest
    finished run of each preset's own config in ``store`` (of ``seed`` when given: a wall time is then that run's;
    several stores: the first that has a run of a preset gives it). ``rejudge``
    re-evaluates stored runs with the current declarations (as ``theorylab check`` does on reuse); otherwise the
    stored verdicts are read as they were written."""
    from theorylab.core.runner import judge

    if isinstance(studies, Mapping):
        studies = studies.values()
    stores = [store] if isinstance(store, Store) else list(store or [])
    recorded = recorded_times()
    rec_times = recorded.get("times", {})
    rec_where = ", ".join(str(recorded[k]) for k in ("cpu", "date") if recorded.get(k))
    entries: list[ClaimEntry] = []
    for study in studies:
        rows: dict[str, dict[str, Any]] = {}
        home: dict[str, Store] = {}
        hashes = preset_hashes(study)
        for one in stores:
            for preset, row in _latest_done(one, study.slug, seed, hashes).items():
                if preset not in rows:
                    rows[preset], home[preset] = row, one
        verdicts: dict[str, dict[str, dict[str, Any]]] = {}
        for preset, row in rows.items():
            try:
                result = home[preset].load(row["run_id"])
                if rejudge:
                    result = judge(study, result)
            except Exception:  # noqa: BLE001 - a run stored by an older version may not load; skip it
                continue
            for v in result.verdicts:
                verdicts.setdefault(v.id, {})[preset] = {
                    "outcome": v.outcome,
                    "label": v.label,
                    "measured": _plain(v.measured),
                    "expected": _plain(v.expected),
                    "detail": v.detail,
                    "seed": row["seed"],
                    "run_id": row["run_id"],
                }
        for claim in study.claims:
            preset = study.presets[claim.decided_by]
            try:
                config = study.make_config(claim.decided_by).model_dump()
            except Exception:  # noqa: BLE001 - a preset that does not validate shows no departures here
                config = {}
            departures = [d.describe(config) for d in claim.departures if d.applies(config, claim.decided_by)]
            known = claim.known.describe() if claim.known is not None and claim.known.applies(claim.decided_by) else ""
            time_s, source = None, ""
            if not preset.on_gpu:
                if claim.decided_by in rows and rows[claim.decided_by].get("wall_s"):
                    time_s, source = float(rows[claim.decided_by]["wall_s"]), "store"
                elif claim.decided_by in rec_times.get(study.slug, {}):
                    time_s = float(rec_times[study.slug][claim.decided_by])
                    source = f"recorded ({rec_where})" if rec_where else "recorded"
            entries.append(
                ClaimEntry(
                    id=claim.id,
                    study=study.slug,
                    statement=claim.statement,
                    decided_by=claim.decided_by,
                    device="GPU" if preset.on_gpu else "CPU",
                    gpu_minutes=preset.gpu_minutes,
                    time_s=time_s,
                    time_source=source,
                    departures=departures,
                    known=known,
                    verdicts=verdicts.get(claim.id, {}),
                )
            )
    return entries


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def summary(entries: Iterable[ClaimEntry]) -> dict[str, int]:
    """Counts for the README: claims in all, decided by each tier (quick / cpu / GPU), and decided by a stored run."""
    entries = list(entries)
    out = {"claims": len(entries), "quick": 0, "cpu": 0, "gpu": 0, "decided_in_store": 0}
    for e in entries:
        tier = "gpu" if e.device == "GPU" else ("quick" if e.decided_by == "quick" else "cpu")
        out[tier] += 1
        out["decided_in_store"] += e.decided
    return out
