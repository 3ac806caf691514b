"""RunContext.map: a study's independent grid jobs run here or as Ray tasks, with the same tables and verdicts."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from theorylab.core.errors import ConfigError
from theorylab.core.executors import JobExecutor, RayExecutor, make_executor, ray_session
from theorylab.core.runner import execute
from theorylab.core.store import Store


def _fails_late_first(item: int, progress) -> int:
    """Item 0 fails after a second, item 1 at once: a map must still raise item 0's error, as inline does."""
    import time

    if item == 0:
        time.sleep(1.0)
    raise ValueError(f"item {item} fails")


def test_executor_choice_is_checked_before_any_work():
    assert isinstance(make_executor("inline"), JobExecutor) and make_executor("ray").name == "ray"
    with pytest.raises(ConfigError, match="unknown executor 'dask'; allowed: inline, ray"):
        make_executor("dask")
    with pytest.raises(ConfigError, match="--address names a Ray cluster"):
        make_executor("inline", address="auto")
    with pytest.raises(ConfigError, match="'workers'"):
        make_executor("ray", workers=0)


def test_inline_map_keeps_order_and_hands_jobs_the_progress_reporter():
    seen = []

    def progress(items, description):
        seen.append(description)
        return items

    out = JobExecutor().map(lambda item, p: (item * 2, p is progress), [3, 1, 2], progress, "jobs")
    assert out == [(6, True), (2, True), (4, True)] and seen == ["jobs"]


@pytest.mark.slow  # a local Ray cluster starts (~10-20 s)
def test_ray_grid_run_equals_the_inline_run_and_a_failing_job_fails_the_run(tmp_path):
    pytest.importorskip("ray")
    from theorylab.train.batched import AdamWSchedule
    from theorylab.train.farthest_point import job_grid, train_job_grid

    inline = execute("toy-grid", store=Store(tmp_path / "inline"))
    grid_args = dict(
        architecture="attention",
        d=4,
        seeds=2,
        init_seed=lambda job, s: 10 * s + job.heads,
        data_generator=lambda n, s: torch.Generator().manual_seed(100 + s),
        eval_generator=lambda n: torch.Generator().manual_seed(n),
        eval_sets=64,
        probe_sets=16,
        batch=8,
        steps=3,
        optim=AdamWSchedule(lr=1e-2),
        eval_chunk=32,
    )
    grids = job_grid(
        4,
        4,
        depths=(1,),
        heads=(1, 2, 4),
        widths=(1,),
        lengths=(4, 6),
        length_ranks=(2,),
        length_depth=1,
        length_width=1,
    )
    here = train_job_grid(grids, **grid_args)
    tiny = dict(
        dims=(8, 12),
        ks=(3, 4),
        widths=(8, 16),
        seeds=2,
        m_ref=128,
        steps=3,
        checkpoints=(0.0, 1.0),
        reduction_particles=0,
        concordance_particles=8,
        init_mc_n=1 << 12,
    )  # mean-field-width: 4 settings
    mf_inline = execute("mean-field-width", overrides=tiny, store=Store(tmp_path / "inline"), device="cpu")
    with ray_session(None, 2):  # one local cluster for every map below (each map leaves it running)
        ray = RayExecutor(workers=2)
        remote = execute("toy-grid", store=Store(tmp_path / "ray"), executor=ray)
        there = train_job_grid(grids, **grid_args, map_jobs=lambda fn, items, d: ray.map(fn, items, None, d))
        mf_ray = execute("mean-field-width", overrides=tiny, store=Store(tmp_path / "ray"), device="cpu", executor=ray)
        diverged = execute("toy-grid", overrides={"diverge_scale": 4.0}, store=Store(tmp_path / "ray"), executor=ray)
        # several jobs fail: the earliest in item order is raised (as inline), not the first to finish
        with pytest.raises(ValueError, match="item 0 fails"):
            ray.map(_fails_late_first, [0, 1], None, "order")
        # last: a failing job cancels the other jobs of its map
        with pytest.raises(RuntimeError, match="toy-grid job at scale 2.0 raises") as raised:
            execute("toy-grid", overrides={"fail_scale": 2.0}, store=Store(tmp_path / "fail"), executor=ray)
    assert type(raised.value) is RuntimeError  # the job's own error, as inline, not Ray's wrapper
    here_diverged = execute("toy-grid", overrides={"diverge_scale": 4.0}, store=Store(tmp_path / "inline"))
    assert (
        (diverged.status, diverged.message)
        == (here_diverged.status, here_diverged.message)
        == ("diverged", "toy-grid variance at scale 4.0 is not finite at step 0")
    )
    assert remote.scalars["jobs_in_run_process"] == 0 and inline.scalars["jobs_in_run_process"] == 8
    assert remote.run_id == inline.run_id  # the executor is not part of the run's identity
    pd.testing.assert_frame_equal(remote.table("jobs"), inline.table("jobs"))
    assert [(v.id, v.passed, v.measured) for v in remote.verdicts] == [
        (v.id, v.passed, v.measured) for v in inline.verdicts
    ]
    assert inline.scalars["processes"] == 1 and inline.passed
    for a, b in zip(here, there):  # attention-rank's grid: trained, loss curves, heads
        pd.testing.assert_frame_equal(a, b)
    assert set(mf_ray.tables) == set(mf_inline.tables) and len(mf_inline.table("loss")["d"].unique()) == 2
    for name in mf_inline.tables:  # every table merged from the four settings, in setting order
        pd.testing.assert_frame_equal(mf_ray.table(name), mf_inline.table(name))
    assert mf_ray.fields_read == mf_inline.fields_read  # reads inside Ray tasks count (no false --set warnings)
    assert [(v.id, v.passed, v.measured) for v in mf_ray.verdicts] == [
        (v.id, v.passed, v.measured) for v in mf_inline.verdicts
    ]
    runs = tmp_path / "fail" / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # the failed run left nothing behind
