from __future__ import annotations

import pandas as pd
import pytest

from theorylab.core.config import ConfigError
from theorylab.core.store import Store
from theorylab.core.study import get_study
from theorylab.core.sweep import parse_grid, run_sweep

GRID = {"n": [100, 200], "scale": [1.0, 2.0]}


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["n", "scale", "step"]).reset_index(drop=True)


def test_parse_grid_product_and_errors():
    study = get_study("toy")
    assert parse_grid(study, ["n=100,200", "scale=0.5"]) == {"n": [100, 200], "scale": [0.5]}
    with pytest.raises(ConfigError, match="unknown config field 'm'"):
        parse_grid(study, ["m=1,2"])
    with pytest.raises(ConfigError, match="key=v1,v2"):
        parse_grid(study, ["n"])


def test_bad_point_fails_before_any_work(store):
    with pytest.raises(ConfigError, match="'n'"):
        run_sweep("toy", {"n": [100, 5]}, store=store)
    assert store.rows() == []


def test_inline_sweep_tidy_table(store):
    res = run_sweep("toy", GRID, store=store)
    steps = res.tables["steps"]
    assert len(steps) == 4 * 3
    assert {"n", "scale", "run_id", "step", "mean"} <= set(steps.columns)
    assert set(zip(res.points["n"], res.points["scale"])) == {(100, 1.0), (100, 2.0), (200, 1.0), (200, 2.0)}
    assert len(res.tables["verdicts"]) == 4 and res.tables["verdicts"]["passed"].all()
    assert (res.path / "steps.parquet").exists()


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_process_and_ray_match_inline(tmp_path):
    inline = run_sweep("toy", GRID, store=Store(tmp_path / "inline"))
    process = run_sweep("toy", GRID, executor="process", workers=2, store=Store(tmp_path / "process"))
    pd.testing.assert_frame_equal(_sorted(inline.tables["steps"]), _sorted(process.tables["steps"]))
    ray = pytest.importorskip("ray")
    assert ray is not None
    viaray = run_sweep("toy", GRID, executor="ray", workers=2, store=Store(tmp_path / "ray"))
    pd.testing.assert_frame_equal(_sorted(inline.tables["steps"]), _sorted(viaray.tables["steps"]))
    assert viaray.n_ran == 4


def test_interrupted_sweep_resumes_only_missing_points(store):
    seen = []

    def stop_after_two(point, run_id, status):
        seen.append(run_id)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep("toy", GRID, store=store, on_point=stop_after_two)
    assert len([p for p in store.runs_dir.iterdir()]) == 2
    ran = []
    res = run_sweep("toy", GRID, store=store, on_point=lambda p, r, s: ran.append(r))
    assert res.n_ran == 2 and res.n_reused == 2
    assert not set(ran) & set(seen)
    again = run_sweep("toy", GRID, store=store)
    assert again.n_ran == 0 and again.n_reused == 4


def test_swept_and_set_conflict(store):
    with pytest.raises(ConfigError, match="both set and swept"):
        run_sweep("toy", {"n": [100]}, overrides={"n": 200}, store=store)
