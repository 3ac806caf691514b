"""Run a study once: build the config, reuse or execute, write atomically, judge the claims."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Mapping

from theorylab.core.config import ConfigError, ReadRecordingDict, StudyConfig, recording_field_reads
from theorylab.core.context import Diverged, RunContext, resolve_device
from theorylab.core.cpu import heap_allocation, requested_policy, torch_threads
from theorylab.core.result import Result
from theorylab.core.store import Store, run_identity
from theorylab.core.study import Study, get_study


def library_version() -> str:
    from theorylab.core.version import package_version

    return package_version()


def judge(study: Study, result: Result) -> Result:
    """Evaluate every claim of ``study`` on ``result`` (which came from stored data)."""
    config = result.config
    result.config = ReadRecordingDict(config)  # judges' reads of the config count as reads
    try:
        result.verdicts = [claim.evaluate(result) for claim in study.claims]
    finally:
        result.config = config
    return result


def unread_overrides(result: Result, overrides: Mapping[str, Any]) -> list[str]:
    """The overridden fields that neither the run nor its judges read: a ``--set`` that had no
    effect with this preset (e.g. a paper-only part's size at quick). Empty for runs stored
    before reads were recorded."""
    if result.fields_read is None:
        return []
    return [key for key in overrides if key not in result.fields_read]


def _write_run(store: Store, workdir: Path, ctx: RunContext, meta: dict[str, Any], config: dict[str, Any]) -> None:
    (workdir / "tables").mkdir(exist_ok=True)
    for name, frame in ctx.tables.items():
        frame.to_parquet(workdir / "tables" / f"{name}.parquet", index=False)
    (workdir / "scalars.json").write_text(json.dumps(ctx.scalars, indent=2, default=str))
    (workdir / "config.json").write_text(json.dumps({"study": meta["study"], "preset": meta["preset"], "seed": meta[
        "seed"], "version": meta["version"], "config": config}, indent=2))
    (workdir / "log.txt").write_text("\n".join(ctx.log_lines) + ("\n" if ctx.log_lines else ""))
    (workdir / "meta.json").write_text(json.dumps(meta, indent=2))


def execute(
    slug: str,
    preset: str = "quick",
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    *,
    store: Store | None = None,
    force: bool = False,
    device: str = "auto",
    show_progress: bool = False,
) -> Result:
    """Run (or reuse) one study point and return its judged :class:`Result`.

    Config errors are raised as :class:`ConfigError` before any work. A NaN/inf detected by
    ``ctx.check_finite`` stores the run with status ``diverged``; any other exception leaves no
    run directory and marks the index row ``failed``.
    """
    study = get_study(slug)
    cfg = study.make_config(preset, **dict(overrides or {}))
    return execute_config(study, cfg, preset, seed, store=store, force=force, device=device,
                          show_progress=show_progress)


def execute_config(
    study: Study,
    cfg: StudyConfig,
    preset: str,
    seed: int,
    *,
    store: Store | None = None,
    force: bool = False,
    device: str = "auto",
    show_progress: bool = False,
) -> Result:
    if seed < 0:
        raise ConfigError(f"invalid value for 'seed': {seed}; allowed: integer >= 0")
    store = store or Store()
    torch_device = resolve_device(device)
    requested_policy()  # a bad $THEORYLAB_MALLOC fails here, before any work
    version = library_version()
    config = cfg.model_dump(mode="json")
    run_id, config_hash = run_identity(study.slug, config, seed, version)

    if store.has(run_id) and not force:
        result = store.load(run_id)
        result.reused = True
        return result

    store.mark_running(run_id, study.slug, preset, config_hash, seed, version)
    workdir = store.new_workdir(run_id)
    ctx = RunContext(seed, torch_device, workdir, show_progress=show_progress, label=study.slug)
    started = time.perf_counter()
    status, message = "done", ""
    if show_progress:
        ctx.say(f"run {run_id}: preset {preset}, seed {seed}, device {torch_device}")
    try:
        with recording_field_reads() as reads, heap_allocation(), torch_threads(study.cpu_threads,
                                                                                 torch_device.type):
            study.run(cfg, ctx)
    except Diverged as err:
        status, message = "diverged", str(err)
    except BaseException as err:
        store.discard(workdir)
        store.mark_failed(run_id, f"{type(err).__name__}: {err}")
        raise
    wall_s = time.perf_counter() - started
    meta = {
        "study": study.slug,
        "run_id": run_id,
        "preset": preset,
        "seed": seed,
        "status": status,
        "message": message,
        "wall_s": wall_s,
        "version": version,
        "device": str(torch_device),
        "figures": ctx.figures,
        "finished": time.time(),
        "pid": os.getpid(),
    }
    try:
        _write_run(store, workdir, ctx, meta, config)
        # Claims are judged from what was written, exactly as a later `check` will see it.
        with recording_field_reads() as judged:
            result = judge(study, Result.load(workdir))
        (workdir / "verdicts.json").write_text(json.dumps([v.to_dict() for v in result.verdicts], indent=2))
        meta["fields_read"] = sorted(reads | judged)
        (workdir / "meta.json").write_text(json.dumps(meta, indent=2))
        final = store.commit(workdir, run_id, replace=force)
    except BaseException:
        store.discard(workdir)
        store.mark_failed(run_id, "interrupted while writing")
        raise
    result = Result.load(final)
    store.mark_finished(result)
    return result


def rejudge(study: Study, store: Store, run_id: str) -> Result:
    """Re-evaluate the claims of a stored run without re-running it."""
    result = store.load(run_id)
    judge(study, result)
    assert result.path is not None
    store.write_json_atomic(result.path / "verdicts.json", [v.to_dict() for v in result.verdicts])
    store.mark_finished(result)
    return result


def check(slug: str, preset: str = "quick", seed: int = 0, *, store: Store | None = None, force: bool = False,
          device: str = "auto", show_progress: bool = False, overrides: Mapping[str, Any] | None = None) -> Result:
    """Run (or reuse) one study and judge its claims afresh from the stored results."""
    store = store or Store()
    result = execute(slug, preset, seed, overrides, store=store, force=force, device=device,
                     show_progress=show_progress)
    if result.reused:
        result = rejudge(get_study(slug), store, result.run_id)
        result.reused = True
    return result
