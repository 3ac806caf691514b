"""Run a study once: build the config, reuse or execute, write atomically, judge the claims."""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import json
import multiprocessing
import os
import pickle
import signal
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from theorylab.core.config import ConfigError, ReadRecordingDict, StudyConfig, recording_field_reads
from theorylab.core.context import Diverged, RunContext, resolve_device
from theorylab.core.cpu import (
    available_cores,
    cap_threads,
    heap_allocation,
    requested_cores,
    requested_policy,
    run_threads,
    torch_threads,
)
from theorylab.core.errors import RemoteError, WorkerDied
from theorylab.core.executors import JobExecutor
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
    (workdir / "config.json").write_text(
        json.dumps(
            {
                "study": meta["study"],
                "preset": meta["preset"],
                "seed": meta["seed"],
                "version": meta["version"],
                "config": config,
            },
            indent=2,
        )
    )
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
    executor: JobExecutor | None = None,
) -> Result:
    """Run (or reuse) one study point and return its judged :class:`Result`.

    Config errors are raised as :class:`ConfigError` before any work. A NaN/inf detected by
    ``ctx.check_finite`` stores the run with status ``diverged``; any other exception leaves no
    run directory and marks the index row ``failed``.
    """
    study = get_study(slug)
    cfg = study.make_config(preset, **dict(overrides or {}))
    return execute_config(
        study,
        cfg,
        preset,
        seed,
        store=store,
        force=force,
        device=device,
        show_progress=show_progress,
        executor=executor,
    )


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
    executor: JobExecutor | None = None,
) -> Result:
    """:func:`execute` on a validated config; ``executor`` runs the study's ``ctx.map`` jobs (default: here)."""
    if seed < 0:
        raise ConfigError(f"invalid value for 'seed': {seed}; allowed: integer >= 0")
    store = store or Store()
    torch_device = resolve_device(device)
    requested_policy()  # a bad $THEORYLAB_MALLOC or $THEORYLAB_CORES fails here, before any work
    requested_cores()
    version = library_version()
    config = cfg.model_dump(mode="json")
    run_id, config_hash = run_identity(study.slug, config, seed, version)

    if store.has(run_id) and not force:
        result = store.load(run_id)
        result.reused = True
        return result

    check_memory(study, cfg, preset, torch_device.type)
    store.mark_running(run_id, study.slug, preset, config_hash, seed, version)
    workdir = store.new_workdir(run_id)
    ctx = RunContext(seed, torch_device, workdir, show_progress=show_progress, label=study.slug)
    if executor is not None:
        ctx.executor = executor
    started, cpu_started = time.perf_counter(), time.process_time()
    status, message = "done", ""
    if show_progress:
        ctx.say(f"run {run_id}: preset {preset}, seed {seed}, device {torch_device}")
    import torch

    threads, shared = run_threads(study.cpu_threads, torch_device.type)
    if shared:
        ctx.log(shared)
        if show_progress:
            ctx.say(shared)
    try:
        with recording_field_reads() as reads, heap_allocation(), torch_threads(threads, torch_device.type):
            threads_used = torch.get_num_threads() if torch_device.type == "cpu" else None
            study.run(cfg, ctx)
    except Diverged as err:
        status, message = "diverged", str(err)
    except (KeyboardInterrupt, SystemExit) as err:  # Ctrl-C, or a worker told to stop: not the study's fault
        store.discard(workdir)
        store.mark_failed(
            run_id,
            f"interrupted ({type(err).__name__}) after {time.perf_counter() - started:.1f} s",
            status="interrupted",
        )
        raise
    except BaseException as err:
        store.discard(workdir)
        store.mark_failed(run_id, f"{type(err).__name__}: {err}")
        raise
    wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    meta = {
        "study": study.slug,
        "run_id": run_id,
        "preset": preset,
        "seed": seed,
        "status": status,
        "message": message,
        "wall_s": wall_s,
        # CPU seconds of every thread of this process (a busy machine stretches wall_s, much less this), and the
        # process's peak resident memory so far (the run's own peak when it ran in a fresh worker process)
        "cpu_s": cpu_s,
        "peak_rss_gb": _peak_rss_gb(),
        "threads": threads_used,  # torch's intra-op threads (fewer than the cores where others kept some busy)
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
    except BaseException as err:
        store.discard(workdir)
        interrupted = isinstance(err, (KeyboardInterrupt, SystemExit))
        store.mark_failed(
            run_id,
            f"{'interrupted' if interrupted else type(err).__name__} while writing",
            status="interrupted" if interrupted else "failed",
        )
        raise
    result = Result.load(final)
    store.mark_finished(result)
    return result


def _peak_rss_gb() -> float | None:
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return round(kib / 2**20, 3)


def check_memory(
    study: Study, cfg: StudyConfig, preset: str, device_type: str = "cpu", available: int | None = None
) -> float | None:
    """The study's peak-memory estimate for ``cfg`` in bytes (None when it declares none); a :class:`ConfigError`,
    before any work, when a CPU run's estimate exceeds the available memory (``available``, default the machine's
    :func:`~theorylab.core.cpu.available_memory`), naming what it needs and the ``--set`` that brings it down."""
    if study.memory is None:
        return None
    need, hint = study.memory(cfg)
    if device_type != "cpu":
        return float(need)  # GPU memory is the device's to report; host memory is not the limit there
    from theorylab.core.cpu import available_memory

    have = available if available is not None else available_memory()
    if have is not None and need > have:
        raise ConfigError(
            f"the {preset} preset of {study.slug} needs about {need / 2**30:.1f} GiB at its peak; this "
            f"machine has {have / 2**30:.1f} GiB available: {hint}"
        )
    return float(need)


def rejudge(study: Study, store: Store, run_id: str) -> Result:
    """Re-evaluate the claims of a stored run without re-running it."""
    result = store.load(run_id)
    judge(study, result)
    assert result.path is not None
    store.write_json_atomic(result.path / "verdicts.json", [v.to_dict() for v in result.verdicts])
    store.mark_finished(result)
    return result


def check(
    slug: str,
    preset: str = "quick",
    seed: int = 0,
    *,
    store: Store | None = None,
    force: bool = False,
    device: str = "auto",
    show_progress: bool = False,
    overrides: Mapping[str, Any] | None = None,
) -> Result:
    """Run (or reuse) one study and judge its claims afresh from the stored results."""
    store = store or Store()
    result = execute(
        slug, preset, seed, overrides, store=store, force=force, device=device, show_progress=show_progress
    )
    if result.reused:
        result = rejudge(get_study(slug), store, result.run_id)
        result.reused = True
    return result


Outcome = Result | BaseException  # what one study of a check gave: its judged result, or the error it raised


def check_workers(workers: int | str, n_studies: int, device: str = "auto") -> tuple[int, int]:
    """``(processes, torch threads each)`` for a check of ``n_studies`` studies. ``"auto"``: one process per core (at
    most 8 and at most one per study), the cores shared out as threads, so a 2-core box runs two studies at a time
    on one thread each; one process on a GPU (the studies would share its memory) or for a single study."""
    cores = available_cores()
    if workers == "auto":
        on_gpu = device not in ("cpu", "auto") or (device == "auto" and resolve_device("auto").type != "cpu")
        workers = 1 if on_gpu or n_studies <= 1 else min(cores, 8, n_studies)
    if not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"invalid value for 'workers': {workers!r}; allowed: 'auto' or an integer >= 1")
    return workers, max(1, cores // workers)


def _check_in_worker(
    module: str,
    slug: str,
    preset: str,
    seed: int,
    store_root: str,
    force: bool,
    device: str,
    overrides: dict[str, Any] | None,
    threads: int,
) -> Result:
    """A parallel check's worker (a spawned process; top level so that it can be imported there)."""
    cap_threads(threads)
    if module:
        importlib.import_module(module)  # registers a study defined outside theorylab.studies
    try:
        return check(slug, preset, seed, store=Store(store_root), force=force, device=device, overrides=overrides)
    except Exception as err:
        try:  # an error that cannot cross back would break the whole pool: send its name and text instead
            pickle.loads(pickle.dumps(err))
        except Exception:  # noqa: BLE001
            raise RemoteError(type(err).__name__, str(err)) from None
        raise


_BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def _worker_thread_env(threads: int):
    """Processes started in the block inherit ``threads`` as their BLAS/OpenMP thread count (read at their start)."""
    before = {k: os.environ.get(k) for k in _BLAS_THREAD_VARS}
    os.environ.update({k: str(threads) for k in _BLAS_THREAD_VARS})
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def expected_seconds(store: Store, slug: str, preset: str) -> float:
    """The last finished run's wall time of ``slug`` at ``preset`` in ``store``, else the time recorded with the
    package (:func:`theorylab.core.inventory.recorded_times`), else inf (unknown ones start first)."""
    from theorylab.core.inventory import recorded_times

    for row in store.rows(slug):
        if row.get("preset") == preset and row.get("status") == "done" and row.get("wall_s"):
            return float(row["wall_s"])
    recorded = recorded_times().get("times", {}).get(slug, {}).get(preset)
    return float(recorded) if recorded else float("inf")


def check_many(
    slugs: Sequence[str],
    preset: str = "quick",
    seed: int = 0,
    *,
    store: Store | None = None,
    force: bool = False,
    device: str = "auto",
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    workers: int | str = 1,
    show_progress: bool = False,
    on_start: Callable[[str, int], None] | None = None,
    on_done: Callable[[str, Outcome, int], None] | None = None,
) -> list[Outcome]:
    """:func:`check` every study of ``slugs`` at one seed; one outcome per slug, in ``slugs``' order (a study that
    raises gives its exception, and the others go on). ``workers`` > 1 (or ``"auto"``, see :func:`check_workers`)
    runs studies side by side in spawned processes, longest first by the store's last wall times, each process on
    its share of the cores; the runs, run ids and verdicts are those of one-at-a-time checks, their numbers equal up
    to the rounding a different thread count gives. ``on_start(slug, k)`` is called as the k-th study starts,
    ``on_done(slug, outcome, k)`` as the k-th study finishes. From a script, ``workers`` > 1 needs the usual
    ``if __name__ == "__main__":`` guard (the workers are spawned), and a study must be importable by its module
    name (not defined in ``__main__`` or a notebook cell). :func:`check_seeds` runs several seeds."""
    slugs = list(dict.fromkeys(slugs))  # a slug named twice is one study (never the same run twice at once)
    outcomes = check_runs(
        [Job(slug, preset, seed) for slug in slugs],
        store=store,
        force=force,
        device=device,
        overrides=overrides,
        workers=workers,
        show_progress=show_progress,
        on_start=None if on_start is None else lambda job, k: on_start(job.slug, k),
        on_done=None if on_done is None else lambda job, out, k: on_done(job.slug, out, k),
    )
    return [outcomes[Job(slug, preset, seed)] for slug in slugs]


class Job(NamedTuple):
    """One run of a check: a study at a preset and a seed."""

    slug: str
    preset: str
    seed: int


def check_seeds(
    slugs: Sequence[str],
    seeds: Sequence[int],
    preset: str = "quick",
    *,
    store: Store | None = None,
    force: bool = False,
    device: str = "auto",
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    workers: int | str = 1,
    show_progress: bool = False,
    on_start: Callable[[str, int, int], None] | None = None,
    on_done: Callable[[str, int, Outcome, int], None] | None = None,
) -> dict[tuple[str, int], Outcome]:
    """:func:`check` every (study, seed) of ``slugs`` x ``seeds``: ``{(slug, seed): outcome}`` (a run that raises
    gives its exception, and the others go on). Side by side as :func:`check_many` (longest study first, a study's
    seeds in order); finished runs are reused from the store, so an interrupted call resumes where it stopped.
    ``on_start(slug, seed, k)`` / ``on_done(slug, seed, outcome, k)`` as the k-th run starts / finishes. Runs at
    several presets: :func:`check_runs`."""
    slugs = list(dict.fromkeys(slugs))
    seeds = list(dict.fromkeys(int(s) for s in seeds))
    outcomes = check_runs(
        [Job(slug, preset, seed) for slug in slugs for seed in seeds],
        store=store,
        force=force,
        device=device,
        overrides=overrides,
        workers=workers,
        show_progress=show_progress,
        on_start=None if on_start is None else lambda job, k: on_start(job.slug, job.seed, k),
        on_done=None if on_done is None else lambda job, out, k: on_done(job.slug, job.seed, out, k),
    )
    return {(job.slug, job.seed): out for job, out in outcomes.items()}


def check_runs(
    jobs: Sequence[Job],
    *,
    store: Store | None = None,
    force: bool = False,
    device: str = "auto",
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    workers: int | str = 1,
    show_progress: bool = False,
    on_start: Callable[[Job, int], None] | None = None,
    on_done: Callable[[Job, Outcome, int], None] | None = None,
) -> dict[Job, Outcome]:
    """:func:`check` every :class:`Job` (study, preset, seed): ``{job: outcome}`` in ``jobs``' order (a run that
    raises gives its exception, and the others go on). ``workers`` > 1 runs them side by side in one pool, longest
    first by the store's last wall times (else the recorded ones), so that runs of different presets share the
    cores: ``check --preset cpu`` queues every study's cpu preset and its other CPU presets (cpu-depth, lm, ...)
    together, and no core waits for a preset's last run. Finished runs are reused from the store, so an
    interrupted call resumes where it stopped. ``overrides`` are per study; ``on_start(job, k)`` /
    ``on_done(job, outcome, k)`` as the k-th run starts / finishes."""
    store = store or Store()
    overrides = overrides or {}
    jobs = list(dict.fromkeys(Job(*job) for job in jobs))  # the same run named twice is one run (never two at once)
    for job in jobs:
        if job.seed < 0:
            raise ConfigError(f"invalid value for 'seed': {job.seed}; allowed: integer >= 0")
    n_proc, threads = check_workers(workers, len(jobs), device)
    outcomes: dict[Job, Outcome] = {}

    def finished(job: Job, outcome: Outcome) -> None:
        outcomes[job] = outcome
        if on_done is not None:
            on_done(job, outcome, len(outcomes))

    if n_proc == 1:
        for k, job in enumerate(jobs, 1):
            if on_start is not None:
                on_start(job, k)
            try:
                outcome: Outcome = check(
                    job.slug,
                    job.preset,
                    job.seed,
                    store=store,
                    force=force,
                    device=device,
                    show_progress=show_progress,
                    overrides=overrides.get(job.slug),
                )
            except KeyboardInterrupt:
                raise
            except Exception as err:  # noqa: BLE001 - one study's error never stops the others
                outcome = err
            finished(job, outcome)
        return {job: outcomes[job] for job in jobs}
    expected = {job: expected_seconds(store, job.slug, job.preset) for job in jobs}
    order = sorted(jobs, key=lambda job: -expected[job])  # longest first: the shortest tail (stable: seeds in order)
    spawn = multiprocessing.get_context("spawn")  # never fork a process whose torch already started its threads
    waiting = list(order)
    running: dict[cf.Future, Job] = {}
    # A worker that dies (a signal: the out-of-memory killer, ``kill``) breaks the whole pool, and every study
    # running in it fails with it. Those studies are run again one at a time, each alone in its own process, so
    # that a second death names the study that dies and the others finish; then a fresh pool takes the rest.
    suspects: list[Job] = []
    broken = False

    def new_pool() -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(max_workers=n_proc, mp_context=spawn)

    def args(job: Job) -> tuple:
        module = get_study(job.slug).module
        return (
            _check_in_worker,
            "" if module.startswith("theorylab.") else module,
            job.slug,
            job.preset,
            job.seed,
            str(store.root),
            force,
            device,
            dict(overrides.get(job.slug) or {}),
            threads,
        )

    def submit_next() -> None:
        nonlocal broken
        job = waiting.pop(0)
        try:
            future = pool.submit(*args(job))
        except cf.process.BrokenProcessPool:  # the pool broke under a running study: this one waits for the next
            waiting.insert(0, job)
            broken = True
            return
        except Exception as err:  # noqa: BLE001 - this study's outcome, the others go on
            finished(job, err)
            return
        running[future] = job
        if on_start is not None:
            on_start(job, len(outcomes) + len(running))

    def run_alone(job: Job) -> Outcome:
        if on_start is not None:
            on_start(job, len(outcomes) + 1)
        with cf.ProcessPoolExecutor(max_workers=1, mp_context=spawn) as solo:
            future = solo.submit(*args(job))
            processes = list(getattr(solo, "_processes", {}).values())  # started by the submit
            try:
                return future.result()
            except cf.process.BrokenProcessPool:
                for process in processes:
                    process.join(timeout=10)  # reaped, so that its exit code reads
                deadline = time.monotonic() + 5
                while any(p.exitcode is None for p in processes) and time.monotonic() < deadline:
                    # the pool's own thread may be reaping it at the same moment (this join then sees no exit code
                    # yet): it shows once that thread has stored it
                    time.sleep(0.01)
                codes = [p.exitcode for p in processes if p.exitcode is not None]
                return WorkerDied(job.slug, job.seed, codes[0] if codes else None, job.preset)
            except Exception as err:  # noqa: BLE001
                return err

    pool = new_pool()
    interrupted = False
    with _worker_thread_env(threads):  # the workers (started at the first submit) give BLAS the same share
        try:
            while waiting or running or suspects:
                if (suspects or broken) and not running:
                    pool.shutdown(wait=True, cancel_futures=True)
                    for job in suspects:
                        finished(job, run_alone(job))
                    suspects.clear()
                    pool, broken = new_pool(), False
                # one study per worker in flight and none queued ahead, so that after Ctrl-C no further study starts
                while waiting and len(running) < n_proc and not (suspects or broken):
                    submit_next()
                if not running:
                    continue
                done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for fut in done:
                    job = running.pop(fut)
                    try:
                        outcome = fut.result()
                    except cf.process.BrokenProcessPool:
                        suspects.append(job)
                        continue
                    except Exception as err:  # noqa: BLE001
                        outcome = err
                    finished(job, outcome)
        except BaseException:
            # Ctrl-C (or an error from a callback): a terminal's SIGINT reaches the workers too; one sent to this
            # process alone is passed on, so every running study is discarded as an interrupted run is
            interrupted = True
            processes = list(getattr(pool, "_processes", {}).values())
            for process in processes:
                if process.is_alive():
                    os.kill(process.pid, signal.SIGINT)
            for process in processes:
                process.join(timeout=60)
                if process.is_alive():
                    process.terminate()
            raise
        finally:
            pool.shutdown(wait=not interrupted, cancel_futures=True)
    return {job: outcomes[job] for job in jobs}
