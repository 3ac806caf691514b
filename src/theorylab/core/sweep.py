"""Sweeps: a product grid over config fields, fanned out to inline, process or Ray executors.

Each grid point is an ordinary run with its own identity, so a sweep is resumable for free:
points already in the store are skipped, only the missing ones run. The result is one tidy
DataFrame per study table with the grid values as columns (plus ``run_id``), and a ``verdicts``
table with one row per point and claim.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import importlib
import itertools
import multiprocessing
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

import pandas as pd

from theorylab.core.config import ConfigError, parse_value
from theorylab.core.cpu import cap_threads
from theorylab.core.executors import ray_session
from theorylab.core.runner import execute_config, library_version
from theorylab.core.store import Store, canonical_json, run_identity
from theorylab.core.study import Study, get_study

Executor = Literal["inline", "process", "ray"]
EXECUTORS: tuple[str, ...] = ("inline", "process", "ray")


@dataclass
class SweepResult:
    sweep_id: str
    study: str
    points: pd.DataFrame  # one row per grid point: grid values, run_id, status, ran/reused
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    path: Path | None = None

    @property
    def n_ran(self) -> int:
        return int(self.points["ran"].sum())

    @property
    def n_reused(self) -> int:
        return int((~self.points["ran"]).sum())


def parse_grid(study: Study, items: Sequence[str]) -> dict[str, list[Any]]:
    """``["n=100,200", "sigma2=0.1,1"]`` -> ``{"n": [100, 200], "sigma2": [0.1, 1]}``."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--grid expects key=v1,v2,..., got {item!r}")
        key, text = item.split("=", 1)
        key = key.strip()
        values = [parse_value(study.config, key, part) for part in text.split(",") if part.strip()]
        if not values:
            raise ConfigError(f"--grid {key}= has no values")
        if key in grid:
            raise ConfigError(f"--grid names '{key}' twice")
        grid[key] = [v[0] if isinstance(v, list) and len(v) == 1 else v for v in values]
    return grid


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def _run_point(
    module: str,
    slug: str,
    preset: str,
    seed: int,
    overrides: dict[str, Any],
    store_root: str,
    device: str,
    threads: int,
) -> tuple[str, str]:
    """Worker entry point (top level so that processes and Ray can import it)."""
    if threads > 0:
        cap_threads(threads)  # this point's share of the cores, which a study's own pin cannot exceed
    if module:
        importlib.import_module(module)  # registers studies defined outside theorylab.studies
    study = get_study(slug)
    cfg = study.make_config(preset, **overrides)
    result = execute_config(study, cfg, preset, seed, store=Store(store_root), device=device)
    return result.run_id, result.status


def run_sweep(
    slug: str,
    grid: Mapping[str, Sequence[Any]],
    *,
    preset: str = "quick",
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    executor: str = "inline",
    address: str | None = None,
    workers: int | None = None,
    store: Store | None = None,
    device: str = "cpu",
    on_point: Callable[[dict[str, Any], str, str], None] | None = None,
) -> SweepResult:
    """Run every point of ``grid`` (a product over fields) that the store does not have yet."""
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor '{executor}'; allowed: {', '.join(EXECUTORS)}")
    study = get_study(slug)
    store = store or Store()
    overrides = dict(overrides or {})
    for key in grid:
        if key in overrides:
            raise ConfigError(f"'{key}' is both set and swept")
    points = grid_points(grid)
    version = library_version()
    # Validate every point before any work, and compute its identity.
    plan = []
    for point in points:
        cfg = study.make_config(preset, **overrides, **point)
        run_id, _ = run_identity(study.slug, cfg.model_dump(mode="json"), seed, version)
        plan.append((point, run_id, store.has(run_id)))
    todo = [(point, run_id) for point, run_id, done in plan if not done]
    workers = workers or max(1, min(len(todo), os.cpu_count() or 1))
    threads = max(1, (os.cpu_count() or 1) // workers) if executor != "inline" else 0
    module = study.module if not study.module.startswith("theorylab.") else ""
    args = [(module, slug, preset, seed, {**overrides, **point}, str(store.root), device, threads) for point, _ in todo]

    if todo:
        if executor == "inline":
            for (point, _), a in zip(todo, args):
                run_id, status = _run_point(*a)
                if on_point:
                    on_point(point, run_id, status)
        elif executor == "process":
            ctx = multiprocessing.get_context("spawn")
            with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                futures = {pool.submit(_run_point, *a): point for (point, _), a in zip(todo, args)}
                for fut in cf.as_completed(futures):
                    run_id, status = fut.result()
                    if on_point:
                        on_point(futures[fut], run_id, status)
        else:
            for point, run_id, status in _ray_map(args, [p for p, _ in todo], address, workers):
                if on_point:
                    on_point(point, run_id, status)

    ran = {run_id for _, run_id in todo}
    rows = []
    for point, run_id, _ in plan:
        rows.append({**point, "run_id": run_id, "ran": run_id in ran})
    points_frame = pd.DataFrame(rows)
    sweep_id = hashlib.sha256(
        canonical_json([slug, preset, seed, overrides, {k: list(v) for k, v in grid.items()}, version]).encode()
    ).hexdigest()[:12]
    return collect(study, store, plan, points_frame, sweep_id)


def collect(
    study: Study, store: Store, plan: list[tuple[dict[str, Any], str, bool]], points: pd.DataFrame, sweep_id: str
) -> SweepResult:
    """Load every point's result and concatenate its tables with the grid values as columns."""
    per_table: dict[str, list[pd.DataFrame]] = {}
    verdict_rows = []
    statuses = []
    for point, run_id, _ in plan:
        result = store.load(run_id)
        statuses.append(result.status)
        grid_cols = {k: _cell(v) for k, v in point.items()}
        for name, frame in result.tables.items():
            frame = frame.copy()
            for key, value in reversed(list(grid_cols.items())):
                column = key if key not in frame.columns else f"grid_{key}"
                frame.insert(0, column, [value] * len(frame))
            frame["run_id"] = run_id
            per_table.setdefault(name, []).append(frame)
        for v in result.verdicts:
            verdict_rows.append(
                {
                    **grid_cols,
                    "run_id": run_id,
                    "claim": v.id,
                    "passed": v.passed,
                    "outcome": v.outcome,
                    "measured": _cell(v.measured),
                    "expected": _cell(v.expected),
                    "detail": v.detail,
                    "departures": "; ".join(v.departures),
                    "known": v.known,
                }
            )
    points = points.assign(status=statuses)
    tables = {name: pd.concat(frames, ignore_index=True) for name, frames in per_table.items()}
    tables["verdicts"] = pd.DataFrame(verdict_rows)
    tables["points"] = points
    folder = store.sweeps_dir / sweep_id
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        tmp = folder / f".{name}.{uuid.uuid4().hex[:8]}.parquet"
        _stringify_mixed(frame).to_parquet(tmp, index=False)
        os.replace(tmp, folder / f"{name}.parquet")
    return SweepResult(sweep_id=sweep_id, study=study.slug, points=points, tables=tables, path=folder)


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return value[0] if len(value) == 1 else str(list(value))
    return value


def _stringify_mixed(frame: pd.DataFrame) -> pd.DataFrame:
    """Parquet needs one type per column; measured/expected may mix numbers and text."""
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype == object:
            kinds = {type(v) for v in frame[col] if v is not None}
            if len(kinds) > 1:
                frame[col] = frame[col].map(lambda v: None if v is None else str(v))
    return frame


def _ray_map(args: list[tuple[Any, ...]], points: list[dict[str, Any]], address: str | None, workers: int):
    with ray_session(address, workers) as ray:
        remote = ray.remote(num_cpus=1, max_retries=0)(_run_point)
        refs = {remote.remote(*a): point for a, point in zip(args, points)}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                run_id, status = ray.get(ref)
                yield refs[ref], run_id, status
