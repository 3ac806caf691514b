from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from theorylab.core.runner import execute, rejudge
from theorylab.core.store import Store
from theorylab.core.study import get_study

TESTS = Path(__file__).resolve().parents[1]


def test_run_writes_complete_directory_and_index(store):
    res = execute("toy", store=store, device="cpu")
    assert res.status == "done" and not res.reused
    path = store.run_path(res.run_id)
    for name in ("config.json", "meta.json", "scalars.json", "verdicts.json", "log.txt", "tables/steps.parquet"):
        assert (path / name).exists(), name
    row = store.row(res.run_id)
    assert row["status"] == "done" and row["n_passed"] == 1 and row["n_failed"] == 0
    assert json.loads((path / "config.json").read_text())["config"]["n"] == 1000
    assert list(store.tmp_dir.iterdir()) == []


def test_repeat_reuses_unless_forced(store):
    first = execute("toy", store=store)
    again = execute("toy", store=store)
    assert again.reused and again.run_id == first.run_id
    forced = execute("toy", store=store, force=True)
    assert not forced.reused and forced.run_id == first.run_id
    pd.testing.assert_frame_equal(forced.tables["steps"], first.tables["steps"])


def test_identity_depends_on_config_and_seed(store):
    ids = {execute("toy", seed=s, overrides={"n": n}, store=store).run_id for s in (0, 1) for n in (100, 200)}
    assert len(ids) == 4


def test_same_seed_identical_tables_other_seed_differs(tmp_path):
    a = execute("toy", seed=7, store=Store(tmp_path / "a"))
    b = execute("toy", seed=7, store=Store(tmp_path / "b"))
    c = execute("toy", seed=8, store=Store(tmp_path / "c"))
    pd.testing.assert_frame_equal(a.tables["steps"], b.tables["steps"])
    assert not a.tables["steps"]["mean"].equals(c.tables["steps"]["mean"])


def test_nan_marks_run_diverged_with_step(store):
    res = execute("toy", overrides={"nan_at": 1}, store=store)
    assert res.status == "diverged"
    assert "step 1" in res.message
    assert all(v.passed is None and v.detail.startswith("not evaluated") for v in res.verdicts)
    assert store.row(res.run_id)["status"] == "diverged"


def test_exception_leaves_no_run_and_marks_failed(store):
    with pytest.raises(RuntimeError, match="toy failure"):
        execute("toy", overrides={"fail": True}, store=store)
    assert list(store.runs_dir.iterdir()) == []
    assert list(store.tmp_dir.iterdir()) == []
    (row,) = store.rows()
    assert row["status"] == "failed" and "toy failure" in row["message"]


def test_ctrl_c_leaves_no_run_and_marks_interrupted(store):
    with pytest.raises(KeyboardInterrupt):
        execute("toy", overrides={"interrupt": True}, store=store)
    assert list(store.runs_dir.iterdir()) == [] and list(store.tmp_dir.iterdir()) == []
    (row,) = store.rows()
    assert row["status"] == "interrupted" and "KeyboardInterrupt" in row["message"]


def test_a_store_that_does_not_exist_is_not_created_when_only_read(tmp_path):
    from theorylab.core.config import ConfigError

    with pytest.raises(ConfigError, match="no store at"):
        Store(tmp_path / "no" / "such", create=False)
    assert not (tmp_path / "no").exists()
    Store(tmp_path / "made")
    assert Store(tmp_path / "made", create=False).rows() == []


def test_rejudge_from_stored_results(store):
    res = execute("toy", store=store)
    # Tamper with the stored table: the re-judged verdict must follow the stored data.
    path = store.run_path(res.run_id) / "tables" / "steps.parquet"
    frame = pd.read_parquet(path)
    frame["mean"] = 1.0
    frame.to_parquet(path, index=False)
    again = rejudge(get_study("toy"), store, res.run_id)
    assert again.verdicts[0].passed is False
    assert store.row(res.run_id)["n_failed"] == 1
    assert json.loads((store.run_path(res.run_id) / "verdicts.json").read_text())[0]["passed"] is False


def test_load_by_prefix(store):
    res = execute("toy", store=store)
    assert store.load(res.run_id[:6]).run_id == res.run_id


def _run_in_subprocess(store_root: Path, overrides: str) -> subprocess.Popen:
    code = (
        "import sys; sys.path.insert(0, %r); import toy_study; from theorylab.core.runner import execute; "
        "from theorylab.core.store import Store; execute('toy', overrides=%s, store=Store(%r))"
        % (str(TESTS), overrides, str(store_root))
    )
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_sigkill_mid_run_leaves_no_complete_run_and_rerun_completes(tmp_path):
    root = tmp_path / "store"
    store = Store(root)
    overrides = "{'steps': 40, 'step_sleep': 0.05}"
    proc = _run_in_subprocess(root, overrides)
    deadline = time.time() + 60
    while time.time() < deadline and not any(store.tmp_dir.iterdir()):
        time.sleep(0.05)
    time.sleep(0.3)  # well inside the 2 s run
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert [p for p in store.runs_dir.iterdir()] == []  # nothing that looks complete
    (row,) = store.rows()
    assert row["status"] == "running"  # the killed process could not say otherwise
    debris = [p.name for p in store.tmp_dir.iterdir()]
    assert len(debris) == 1 and debris[0].split(".")[2] == str(proc.pid)
    reopened = Store(root)  # opening a store removes the dead process's work folder
    assert list(reopened.tmp_dir.iterdir()) == []
    row = reopened.row(row["run_id"])
    assert row["status"] == "interrupted" and f"process {proc.pid}" in row["message"]
    res = execute("toy", overrides={"steps": 40, "step_sleep": 0.05}, store=reopened)
    assert res.status == "done" and not res.reused and res.run_id == row["run_id"]
    assert store.row(res.run_id)["status"] == "done"


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_opening_a_store_never_removes_a_live_run(tmp_path):
    root = tmp_path / "store"
    store = Store(root)
    proc = _run_in_subprocess(root, "{'steps': 40, 'step_sleep': 0.05}")
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not any(store.tmp_dir.iterdir()):
            time.sleep(0.05)
        live = [p.name for p in store.tmp_dir.iterdir()]
        assert len(live) == 1
        assert Store(root).clean_stale_workdirs() == []
        assert [p.name for p in store.tmp_dir.iterdir()] == live
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == 0 and list(store.tmp_dir.iterdir()) == [] and len(list(store.runs_dir.iterdir())) == 1


def _worker(args):
    root, seed = args
    sys.path.insert(0, str(TESTS))
    import toy_study  # noqa: F401

    return execute("toy", seed=seed, overrides={"steps": 5}, store=Store(root)).run_id


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_concurrent_runs_lose_nothing(tmp_path):
    root = tmp_path / "store"
    Store(root)
    seeds = [0, 1, 2, 3, 4, 5, 0, 1]  # two pairs of identical runs race each other
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        ids = pool.map(_worker, [(root, s) for s in seeds])
    store = Store(root)
    assert len(set(ids)) == 6
    assert sorted(p.name for p in store.runs_dir.iterdir()) == sorted(set(ids))
    rows = store.rows()
    assert len(rows) == 6 and all(r["status"] == "done" for r in rows)
    for run_id in set(ids):
        assert store.load(run_id).tables["steps"].shape == (5, 5)


def test_a_run_records_its_cpu_time_and_peak_memory(tmp_path):
    """meta.json carries the run's CPU seconds (all threads of the process) beside its wall time, and the
    process's peak resident memory: figures a busy machine distorts less than wall time."""
    import json

    res = execute("toy", store=Store(tmp_path / "runs"), device="cpu")
    meta = json.loads((res.path / "meta.json").read_text())
    assert meta["cpu_s"] >= 0 and meta["wall_s"] > 0
    assert 0.05 < meta["peak_rss_gb"] < 24  # an interpreter with torch loaded, well under the machine
