from __future__ import annotations

import pytest
import torch

import theorylab as tl
from theorylab.core.config import ConfigError


def test_all_studies_survives_importing_study_modules():
    import theorylab.studies.rmt_diffusion  # noqa: F401
    from theorylab.studies import rmt_diffusion

    assert callable(tl.all_studies) and "rmt-diffusion" in tl.all_studies()
    assert rmt_diffusion.claims


def test_python_api_round_trip(tmp_path):
    store = str(tmp_path / "store")
    assert "rmt-diffusion" in tl.all_studies()
    res = tl.run("toy", preset="quick", seed=2, store=store, n=400)
    assert res.config["n"] == 400 and res.tables["steps"].shape[0] == 3 and res.scalars["total_draws"] == 1200
    assert res.verdicts[0].passed is True
    assert tl.load(res.run_id, store=store).tables["steps"].equals(res.tables["steps"])
    (checked,) = tl.check("toy", seed=2, store=store)
    assert checked.reused is False  # check at default n is a different run
    again = tl.check(["toy"], seed=2, store=store)
    assert again[0].reused and again[0].verdicts[0].passed
    sweep = tl.sweep("toy", {"n": [100, 200]}, store=store)
    assert sorted(sweep.tables["steps"]["n"].unique()) == [100, 200]


def test_api_rejects_bad_values_before_work(tmp_path):
    with pytest.raises(ConfigError, match="'steps'"):
        tl.run("toy", store=str(tmp_path), steps=0)
    with pytest.raises(ConfigError, match="unknown config field"):
        tl.run("toy", store=str(tmp_path), stepz=3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_gpu_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no CUDA device"):
        tl.run("toy", store=str(tmp_path), device="cuda")
