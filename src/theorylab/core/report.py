"""Static HTML report of the store.

``index.html`` opens with totals (claims passed as stated / passed with departures / known
failures / failed / passed unexpectedly / not decided / error, over all studies and per study
family, counted on each study's latest complete run), then one row per study: its latest run
(preset, seed, when), a verdict badge coloured by the worst outcome and a thumbnail of the run's
first figure. ``runs/<run_id>.html`` is a page per complete run (claims with their departures and
known-failure declarations, figures, config, scalars, tables), laid out to fit a 1400-px window
without horizontal scrolling. Where the store holds one config of a study at several seeds,
``seeds/<study>-<preset>-<hash>.html`` is its claim x seed grid with each claim's pass rate and
95 % Wilson interval (``theorylab check --seeds`` fills the store with such runs).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from theorylab.core.result import Result
from theorylab.core.seeds import MARKS, claim_rates
from theorylab.core.store import Store
from theorylab.core.study import OUTCOME_WORDS, OUTCOMES, all_studies, counted

NO_FAMILY = "other"


def _env() -> Environment:
    env = Environment(loader=PackageLoader("theorylab.core", "templates"), autoescape=select_autoescape(["html"]))
    env.filters["fmt"] = _fmt
    env.filters["when"] = _when
    env.filters["secs"] = _secs
    return env


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return "" if value is None else str(value)


def _compact(value: Any) -> str:
    """A config or scalar value on one (wrappable) line: numbers as ``fmt``, the rest as compact JSON."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _fmt(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "), default=str)


def _when(stamp: Any) -> str:
    if not stamp:
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(stamp)))


def _secs(seconds: Any) -> str:
    """A wall time in words: ``"12 ms"``, ``"4.2 s"``, ``"3 min 7 s"``, ``"1 h 02 min"``."""
    if seconds is None:
        return ""
    s = float(seconds)
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.3g} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60)} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def badge(status: str, counts: dict[str, int]) -> dict[str, str]:
    """The verdict badge of a run: ``text`` ("8/9 passed"), ``tone`` (the worst outcome: ``bad``
    for an unexplained failure, an unexpected pass, an errored claim or a run that did not finish,
    ``known`` for a declared known failure, ``undecided`` for a claim not decided, ``good`` when every
    claim passed, ``none`` without claims) and ``detail`` in words."""
    total = sum(counts.get(k, 0) for k in OUTCOMES)
    passed = counts.get("passed", 0) + counts.get("departed", 0)
    parts = [
        counted(counts[k], k)
        for k in ("departed", "known", "failed", "unexpected", "error", "undecided")
        if counts.get(k)
    ]
    text = f"{passed}/{total} passed" if total else "no claims"
    if status != "done":
        tone, text = "bad", f"{status} · {text}"
    elif counts.get("failed") or counts.get("error") or counts.get("unexpected"):
        tone = "bad"
    elif counts.get("known"):
        tone = "known"
    elif counts.get("undecided"):
        tone = "undecided"
    elif total:
        tone = "good"
    else:
        tone = "none"
    return {
        "text": text,
        "tone": tone,
        "detail": ", ".join(parts) if parts else ("all passed as stated" if tone == "good" else ""),
    }


def write_report(store: Store, out: Path | None = None) -> Path:
    """Write ``index.html``, ``style.css`` and ``runs/<run_id>.html`` under ``out`` (default ``<store>/report``)."""
    out = Path(out) if out is not None else store.root / "report"
    (out / "runs").mkdir(parents=True, exist_ok=True)
    env = _env()
    studies = all_studies()
    rows = store.rows()  # newest first
    complete = [row for row in rows if store.has(row["run_id"])]

    results: dict[str, Result] = {}
    for row in complete:
        result = store.load(row["run_id"])
        results[row["run_id"]] = result
        _write_run_page(env, out, result, studies.get(result.study))

    # One row per study: every registered study, and any study of the store no longer registered.
    slugs = list(studies) + sorted({r["study"] for r in rows} - set(studies))
    entries = [_index_entry(slug, studies.get(slug), rows, complete, results, out) for slug in slugs]
    entries.sort(key=lambda e: (e["latest"] is None, e["slug"]))
    grids = _write_seed_pages(env, out, complete, results, studies)
    for entry in entries:
        entry["seed_grids"] = [g for g in grids if g["study"] == entry["slug"]]
    (out / "index.html").write_text(
        env.get_template("index.html").render(
            studies=entries,
            totals=_totals(entries),
            families=_family_totals(entries),
            words=OUTCOME_WORDS,
            outcomes=OUTCOMES,
            grids=grids,
            root=str(store.root),
            generated=_when(time.time()),
            n_runs=len(complete),
        )
    )
    (out / "style.css").write_text(env.get_template("style.css").render())
    return out / "index.html"


def _write_run_page(env: Environment, out: Path, result: Result, study: Any) -> None:
    claims_ref = {c.id: c.reference for c in study.claims} if study else {}
    figures = [{"src": os.path.relpath(p, out / "runs"), "name": p.stem} for p in result.figures if p.suffix == ".png"]
    tables = {
        name: frame.head(50).to_html(index=False, float_format=lambda x: f"{x:.4g}", border=0, classes="data")
        for name, frame in result.tables.items()
    }
    page = env.get_template("run.html").render(
        result=result,
        title=study.title if study else result.study,
        paper=study.paper if study else "",
        family=(study.family if study else "") or NO_FAMILY,
        references=claims_ref,
        badge=badge(result.status, result.counts()),
        counts=result.counts(),
        figures=figures,
        tables=tables,
        table_rows={name: len(frame) for name, frame in result.tables.items()},
        outcomes=OUTCOMES,
        words=OUTCOME_WORDS,
        config_items=[(key, _compact(value)) for key, value in result.config.items()],
        scalar_items=[(key, _compact(value)) for key, value in result.scalars.items()],
        config_json=json.dumps(result.config, indent=2),
        scalars_json=json.dumps(result.scalars, indent=2, default=str),
    )
    (out / "runs" / f"{result.run_id}.html").write_text(page)


def _write_seed_pages(
    env: Environment, out: Path, complete: list[dict[str, Any]], results: dict[str, Result], studies: Any
) -> list[dict[str, Any]]:
    """One page per (study, preset, config) the store holds at two or more seeds: the claim x seed grid, each
    claim's rate (passed of decided) and 95 % Wilson interval; returns the pages' summaries for the index."""
    groups: dict[tuple[str, str, str], dict[int, Result]] = {}
    for row in sorted(complete, key=lambda r: r.get("finished") or 0):  # the newest run of a seed wins
        result = results[row["run_id"]]
        key = (result.study, result.preset, row.get("config_hash") or "")
        groups.setdefault(key, {})[result.seed] = result
    (out / "seeds").mkdir(exist_ok=True)
    grids = []
    for (slug, preset, config_hash), by_seed in sorted(groups.items()):
        if len(by_seed) < 2:
            continue
        seeds = sorted(by_seed)
        study = studies.get(slug)
        rates = claim_rates(
            {(slug, s): by_seed[s] for s in seeds}, {slug: [c.id for c in study.claims]} if study else None
        )
        name = f"{slug}-{preset}-{config_hash[:8] or 'config'}.html"
        rows = [
            {
                "claim": r.claim,
                "statement": r.statement,
                "rate": r.rate,
                "interval": r.interval,
                "cells": [
                    {
                        "seed": s,
                        "outcome": r.outcomes.get(s, "no run"),
                        "mark": MARKS[r.outcomes.get(s, "no run")],
                        "run_id": by_seed[s].run_id,
                    }
                    for s in seeds
                ],
                "departures": r.departures,
                "known": r.known,
                "unexplained": r.unexplained,
                "first_failure": r.first_failure,
            }
            for r in rates
        ]
        summary = {
            "study": slug,
            "preset": preset,
            "config_hash": config_hash,
            "href": f"seeds/{name}",
            "seeds": seeds,
            "n_claims": len(rates),
            "unexplained": sum(1 for r in rates if r.unexplained),
            "known": sum(1 for r in rates if r.count("known")),
            "every_seed": sum(1 for r in rates if r.decided and r.passed == r.decided),
        }
        (out / "seeds" / name).write_text(
            env.get_template("seeds.html").render(
                grid=summary,
                rows=rows,
                seeds=seeds,
                title=study.title if study else slug,
                paper=study.paper if study else "",
                marks=MARKS,
            )
        )
        grids.append(summary)
    return grids


def _index_entry(
    slug: str,
    study: Any,
    rows: list[dict[str, Any]],
    complete: list[dict[str, Any]],
    results: dict[str, Result],
    out: Path,
) -> dict[str, Any]:
    runs = [r for r in complete if r["study"] == slug]  # newest first
    latest_row = runs[0] if runs else None
    # A newer attempt that never completed (it raised, or was killed) is said next to the latest run.
    attempts = [r for r in rows if r["study"] == slug and r["status"] != "running"]
    failed_after = attempts[0] if attempts and attempts[0]["run_id"] not in {r["run_id"] for r in runs} else None
    entry: dict[str, Any] = {
        "slug": slug,
        "title": study.title if study else slug,
        "paper": study.paper if study else "(study not registered)",
        "family": (study.family if study else "") or NO_FAMILY,
        "claims": len(study.claims) if study else None,
        "latest": None,
        "earlier": runs[1:],
        "failed_after": failed_after,
    }
    if latest_row is not None:
        result = results[latest_row["run_id"]]
        counts = result.counts()
        pngs = [p for p in result.figures if p.suffix == ".png"]
        entry["latest"] = {
            "run_id": result.run_id,
            "preset": result.preset,
            "seed": result.seed,
            "status": result.status,
            "wall_s": result.wall_s,
            "finished": latest_row.get("finished"),
            "counts": counts,
            "badge": badge(result.status, counts),
            "thumb": os.path.relpath(pngs[0], out) if pngs else None,
            "n_figures": len(pngs),
        }
    return entry


def _blank() -> dict[str, Any]:
    return {"studies": 0, "run": 0, **{k: 0 for k in OUTCOMES}}


def _add(total: dict[str, Any], entry: dict[str, Any]) -> None:
    total["studies"] += 1
    if entry["latest"] is not None:
        total["run"] += 1
        for k in OUTCOMES:
            total[k] += entry["latest"]["counts"][k]


def _totals(entries: list[dict[str, Any]]) -> dict[str, Any]:
    total = _blank()
    for entry in entries:
        _add(total, entry)
    total["claims"] = sum(total[k] for k in OUTCOMES)
    total["runs_failed"] = sum(1 for e in entries if e["failed_after"] is not None and e["latest"] is None)
    return total


def _family_totals(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Totals per family (families with a run first, then by name), with each outcome's share in %."""
    by_family: dict[str, dict[str, Any]] = {}
    for entry in entries:
        _add(by_family.setdefault(entry["family"], {"family": entry["family"], **_blank()}), entry)
    families = sorted(by_family.values(), key=lambda f: (f["run"] == 0, f["family"] == NO_FAMILY, f["family"]))
    for fam in families:
        fam["claims"] = sum(fam[k] for k in OUTCOMES)
        fam["share"] = {k: (100.0 * fam[k] / fam["claims"] if fam["claims"] else 0.0) for k in OUTCOMES}
    return families
