"""Static HTML report of the store: an index of studies with verdicts, a page per run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from theorylab.core.store import Store
from theorylab.core.study import all_studies


def _env() -> Environment:
    env = Environment(loader=PackageLoader("theorylab.core", "templates"), autoescape=select_autoescape(["html"]))
    env.filters["fmt"] = _fmt
    return env


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return "" if value is None else str(value)


def write_report(store: Store, out: Path | None = None) -> Path:
    """Write ``index.html`` and ``runs/<run_id>.html`` under ``out`` (default ``<store>/report``)."""
    out = Path(out) if out is not None else store.root / "report"
    (out / "runs").mkdir(parents=True, exist_ok=True)
    env = _env()
    studies = all_studies()
    complete = [row for row in store.rows() if store.has(row["run_id"])]
    by_study: dict[str, list[dict[str, Any]]] = {}
    for row in complete:
        by_study.setdefault(row["study"], []).append(row)

    for row in complete:
        result = store.load(row["run_id"])
        study = studies.get(result.study)
        claims_ref = {c.id: c.reference for c in study.claims} if study else {}
        figures = [os.path.relpath(p, out / "runs") for p in result.figures if p.suffix == ".png"]
        tables = {name: frame.head(50).to_html(index=False, float_format=lambda x: f"{x:.4g}", border=0, classes="data") for name, frame in result.tables.items()}
        page = env.get_template("run.html").render(
            result=result,
            title=study.title if study else result.study,
            paper=study.paper if study else "",
            references=claims_ref,
            figures=figures,
            tables=tables,
            table_rows={name: len(frame) for name, frame in result.tables.items()},
            config_json=json.dumps(result.config, indent=2),
            scalars_json=json.dumps(result.scalars, indent=2, default=str),
        )
        (out / "runs" / f"{result.run_id}.html").write_text(page)

    index_rows = []
    for slug, study in studies.items():
        runs = by_study.get(slug, [])
        index_rows.append({"slug": slug, "title": study.title, "paper": study.paper, "claims": len(study.claims), "runs": runs})
    (out / "index.html").write_text(env.get_template("index.html").render(studies=index_rows, root=str(store.root)))
    (out / "style.css").write_text(env.get_template("style.css").render())
    return out / "index.html"
