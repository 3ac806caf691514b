"""The Result of one run, as loaded from (or about to be written to) a run directory."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from theorylab.core.study import Verdict


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

    def table(self, name: str) -> pd.DataFrame:
        if name not in self.tables:
            raise KeyError(f"table '{name}'")
        return self.tables[name]

    def scalar(self, name: str) -> Any:
        if name not in self.scalars:
            raise KeyError(f"scalar '{name}'")
        return self.scalars[name]

    def verdict(self, claim_id: str) -> Verdict:
        for v in self.verdicts:
            if v.id == claim_id:
                return v
        raise KeyError(claim_id)

    @property
    def passed(self) -> bool:
        """True when no claim failed (undecided claims do not fail a run)."""
        return self.status == "done" and all(v.passed is not False for v in self.verdicts)

    def counts(self) -> dict[str, int]:
        return {
            "passed": sum(v.passed is True for v in self.verdicts),
            "failed": sum(v.passed is False for v in self.verdicts),
            "undecided": sum(v.passed is None for v in self.verdicts),
        }

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object of a run."""
        base = self.path
        return {
            "study": self.study,
            "run_id": self.run_id,
            "preset": self.preset,
            "status": self.status,
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
        verdicts = [Verdict.from_dict(v) for v in json.loads(verdicts_file.read_text())] if verdicts_file.exists() else []
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
        )
