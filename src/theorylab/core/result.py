"""The Result of one run, as loaded from (or about to be written to) a run directory."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from theorylab.core.errors import Undecided
from theorylab.core.study import BAD_OUTCOMES, OUTCOMES, Verdict


@dataclass
class Result:
    """What a run produced: ``tables`` (DataFrames), ``scalars``, ``verdicts``, ``figures``.

    ``config`` is the full config as a dict; ``status`` is ``done``, ``diverged`` or ``failed``.
    """

    study: str
    run_id: str
    preset: str
    seed: int
    status: str
    config: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    scalars: dict[str, Any] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    wall_s: float = 0.0
    path: Path | None = None
    message: str = ""
    version: str = ""
    reused: bool = False
    fields_read: list[str] | None = None  # config fields the run and its judges read (None: not recorded)

    def table(self, name: str, *, unless: str | None = None) -> pd.DataFrame:
        """The table ``name``. A judge passes ``unless="<why this config has none>"`` where the
        config may legitimately skip the part that makes it: its absence is then "not decided"
        with that reason. Without ``unless`` a missing table is an error (the judge fails)."""
        if name not in self.tables:
            if unless is not None:
                raise Undecided(unless)
            raise KeyError(f"table '{name}'")
        return self.tables[name]

    def scalar(self, name: str, *, unless: str | None = None) -> Any:
        """The scalar ``name``; ``unless`` as for :meth:`table`."""
        if name not in self.scalars:
            if unless is not None:
                raise Undecided(unless)
            raise KeyError(f"scalar '{name}'")
        return self.scalars[name]

    def verdict(self, claim_id: str) -> Verdict:
        for v in self.verdicts:
            if v.id == claim_id:
                return v
        raise KeyError(claim_id)

    @property
    def passed(self) -> bool:
        """True when the run completed and no claim failed unexplained, errored or passed although declared
        to fail on every seed (undecided claims and declared known failures do not fail a run; a diverged
        run fails). :meth:`ok` with ``strict=True`` also counts known failures."""
        return self.ok()

    def ok(self, strict: bool = False) -> bool:
        """:attr:`passed`; ``strict``: a known failure fails the run too (``--strict``)."""
        bad = BAD_OUTCOMES | ({"known"} if strict else set())
        return self.status == "done" and not any(v.outcome in bad for v in self.verdicts)

    @classmethod
    def error(cls, study: str, preset: str, seed: int, message: str) -> "Result":
        """The stand-in result of a study that raised before it could be stored (``check`` goes on)."""
        return cls(study=study, run_id="", preset=preset, seed=seed, status="error", config={}, message=message)

    def counts(self) -> dict[str, int]:
        """Verdicts by outcome (:data:`~theorylab.core.study.OUTCOMES`): ``passed`` (as stated), ``departed``
        (passed with departures), ``failed``, ``known`` (declared known failures), ``unexpected`` (passed
        although declared to fail on every seed), ``undecided``, ``error`` (a judge that raised)."""
        buckets = dict.fromkeys(OUTCOMES, 0)
        for v in self.verdicts:
            buckets[v.outcome] += 1
        return buckets

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object of a run."""
        base = self.path
        return {
            "study": self.study,
            "run_id": self.run_id,
            "preset": self.preset,
            "seed": self.seed,
            "status": self.status,
            "message": self.message,
            "counts": self.counts(),
            "wall_s": round(self.wall_s, 3),
            "verdicts": [v.to_dict() for v in self.verdicts],
            "tables": {name: str(base / "tables" / f"{name}.parquet") if base else None for name in self.tables},
            "figures": [str(p) for p in self.figures],
        }

    @classmethod
    def load(cls, path: Path) -> "Result":
        """Read a complete run directory."""
        path = Path(path)
        meta = json.loads((path / "meta.json").read_text())
        config = json.loads((path / "config.json").read_text())
        scalars = json.loads((path / "scalars.json").read_text())
        verdicts_file = path / "verdicts.json"
        verdicts = (
            [Verdict.from_dict(v) for v in json.loads(verdicts_file.read_text())] if verdicts_file.exists() else []
        )
        tables = {p.stem: pd.read_parquet(p) for p in sorted((path / "tables").glob("*.parquet"))}
        figures = [path / rel for rel in meta.get("figures", [])]
        return cls(
            study=meta["study"],
            run_id=meta["run_id"],
            preset=meta["preset"],
            seed=meta["seed"],
            status=meta["status"],
            config=config["config"],
            tables=tables,
            scalars=scalars,
            verdicts=verdicts,
            figures=figures,
            wall_s=meta.get("wall_s", 0.0),
            path=path,
            message=meta.get("message", ""),
            version=meta.get("version", ""),
            fields_read=meta.get("fields_read"),
        )
