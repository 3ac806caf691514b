"""Where a run's independent jobs execute: in the run's own process, or as Ray tasks on a cluster.

A study whose paper preset is a grid of independent trainings (attention-rank's depths x heads x widths,
mean-field-width's widths x dimensions) builds one picklable item per grid job, with every random stream it needs
already drawn from the run's named streams, and hands a top-level function and the items to
:meth:`RunContext.map <theorylab.core.context.RunContext.map>`. The run then merges the jobs' outputs in item
order, records its tables and is judged as always, so the tables and verdicts do not depend on where the jobs ran.

    theorylab run attention-rank --preset paper --executor ray                  # a local Ray with every core
    theorylab run attention-rank --preset paper --executor ray --address auto   # the cluster this node joined

The executor is not part of a run's identity: an inline and a Ray run of one config are the same run.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from theorylab.core.config import note_field_reads
from theorylab.core.errors import ConfigError

EXECUTORS = ("inline", "ray")


@contextmanager
def ray_session(address: str | None, workers: int | None) -> Iterator[Any]:
    """Ray, connected to ``address`` or started locally with ``workers`` CPUs (default: all), for the block; a
    session this call started is shut down after it (one already running is left alone)."""
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray executor needs Ray: pip install 'theorylab[ray]'") from None
    started_here = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            # A local cluster: workers must import what this process imports (tests, user studies).
            env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
        started_here = True
    try:
        yield ray
    finally:
        if started_here:
            ray.shutdown()


class JobExecutor:
    """Runs ``fn(item, progress)`` for every item and returns the results in item order. This one runs them
    here, one after another, each with the run's progress reporter."""

    name = "inline"

    def map(
        self, fn: Callable[[Any, Any], Any], items: Sequence[Any], progress: Callable | None, description: str
    ) -> list[Any]:
        wrap = progress if progress is not None else (lambda xs, _d: xs)
        return [fn(item, progress) for item in wrap(list(items), description)]


def _ray_job(fn: Callable[[Any, Any], Any], item: Any, threads: int) -> tuple[Any, list[str]]:
    """A Ray task: ``fn(item, None)`` and the config fields it read (so ``--set`` warnings stay right)."""
    from theorylab.core.config import recording_field_reads
    from theorylab.core.cpu import cap_threads

    cap_threads(threads)  # the task's share, which a study's own thread pin cannot exceed
    with recording_field_reads() as reads:
        out = fn(item, None)
    return out, sorted(reads)


def _earliest_failure(ray: Any, failure: BaseException, failed_at: int, pending: list, index: dict) -> BaseException:
    """Inline stops at the first failing item in item order; so does a Ray map. Given the failure of item
    ``failed_at``, the later jobs stop, the earlier ones are awaited, and the earliest failure among them (else
    ``failure``) is returned: the same error and message as inline, whichever job happened to fail first."""
    earlier = sorted((ref for ref in pending if index[ref] < failed_at), key=index.get)
    for ref in pending:
        if index[ref] > failed_at:
            ray.cancel(ref)  # not force: killing workers mid-task races with the next map
    try:
        for ref in earlier:
            try:
                ray.get(ref)
            except ray.exceptions.RayTaskError as before:
                return before  # the jobs between it and failed_at finish on their own (cancelling a task that
                # is completing crashes Ray 2.60's driver: "Tried to complete task that was not pending")
        return failure
    except BaseException:  # Ctrl-C while they finish: stop those still running
        _, running = ray.wait(earlier, num_returns=len(earlier), timeout=0)
        for ref in running:
            ray.cancel(ref)
        raise


class RayExecutor(JobExecutor):
    """One Ray task per item (``fn(item, None)``: no progress bars inside tasks), on a local Ray or the cluster at
    ``address``; each task asks for ``cpus`` CPUs (and one GPU when the run is on CUDA) and uses as many threads."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, cpus: int = 1, gpu: bool = False):
        if cpus < 1:
            raise ConfigError(f"invalid value for 'cpus': {cpus}; allowed: >= 1")
        self.address, self.workers, self.cpus, self.gpu = address, workers, cpus, gpu

    def map(
        self, fn: Callable[[Any, Any], Any], items: Sequence[Any], progress: Callable | None, description: str
    ) -> list[Any]:
        items = list(items)
        with ray_session(self.address, self.workers) as ray:
            remote = ray.remote(num_cpus=self.cpus, num_gpus=1 if self.gpu else 0, max_retries=0)(_ray_job)
            fn_ref = ray.put(fn)
            refs = [remote.remote(fn_ref, item, self.cpus) for item in items]
            index = {ref: i for i, ref in enumerate(refs)}
            results: list[Any] = [None] * len(items)
            pending = list(refs)
            current = -1  # the item whose result is being read

            def finished() -> Iterator[int]:
                nonlocal pending, current
                while pending:
                    done, pending = ray.wait(pending, num_returns=1)
                    for ref in done:
                        current = index[ref]
                        results[current], reads = ray.get(ref)  # a task's error is raised here
                        note_field_reads(reads)
                        yield current

            try:
                for _ in (
                    progress(finished(), f"{description} (ray)", total=len(items))
                    if progress is not None
                    else finished()
                ):
                    pass
            except ray.exceptions.RayTaskError as first_seen:
                failure = _earliest_failure(ray, first_seen, current, pending, index)
                cause = getattr(failure, "cause", None)
                if isinstance(cause, BaseException):
                    raise cause from None  # the job's own error (as inline), not Ray's wrapper with its traceback
                raise failure from None
            except BaseException:
                for ref in pending:  # Ctrl-C or a lost cluster: the other jobs stop too, even on a shared cluster
                    ray.cancel(ref)
                raise
        return results


def make_executor(name: str, address: str | None = None, workers: int | None = None, gpu: bool = False) -> JobExecutor:
    """The executor called ``name`` ('inline' or 'ray'); an unknown name or an address without Ray is a user error."""
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor '{name}'; allowed: {', '.join(EXECUTORS)}")
    if name == "inline":
        if address:
            raise ConfigError("--address names a Ray cluster: use it with --executor ray")
        return JobExecutor()
    if workers is not None and workers < 1:
        raise ConfigError(f"invalid value for 'workers': {workers}; allowed: >= 1")
    return RayExecutor(address, workers, gpu=gpu)
