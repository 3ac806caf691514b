"""Training grids on the farthest-point task: the grid, the models, the per-seed measurements and summaries."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from theorylab.core.errors import Diverged
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.train import farthest_point
from theorylab.train.batched import AdamWSchedule
from theorylab.train.farthest_point import (
    AttentionJob,
    build_attention_model,
    grid_summary,
    job_grid,
    seed_summary,
    train_job_grid,
)


def test_job_grid_lists_each_configuration_once_with_its_grids():
    grids = job_grid(
        16,
        8,
        depths=(1,),
        heads=(1, 4),
        widths=(1, 2),
        lengths=(4, 8),
        length_ranks=(16, 4),
        length_depth=1,
        length_width=1,
    )
    assert list(grids) == [
        AttentionJob(1, 1, 16, 1, 8),
        AttentionJob(1, 1, 16, 2, 8),
        AttentionJob(1, 4, 4, 1, 8),
        AttentionJob(1, 4, 4, 2, 8),
        AttentionJob(1, 1, 16, 1, 4),
        AttentionJob(1, 4, 4, 1, 4),
    ]
    assert grids[AttentionJob(1, 1, 16, 1, 8)] == {"heads", "length"} and grids[AttentionJob(1, 4, 4, 1, 4)] == {
        "length"
    }
    assert AttentionJob(3, 4, 16, 64, 16).name == "L3-H4-r16-w64-N16"


def test_built_models_have_the_jobs_heads_ranks_and_depth():
    job = AttentionJob(depth=2, heads=4, rank=2, width=3, n_points=5)
    lone = build_attention_model("attention", 8, AttentionJob(1, 4, 2, 3, 5), seed=0)
    attn = lone.blocks[0].attn
    assert len(lone.blocks) == 1 and attn.cfg.n_heads == 12 and tuple(attn.W_Q.shape) == (12, 2, 8)
    assert tuple(attn.W_V.shape)[1] == 8 and lone.cfg.scale == 1.0  # full-rank values, no 1/sqrt(r) in the scores
    enc = build_attention_model("encoder", 8, job, seed=0, ff_width=16, norm="layer")
    assert (
        isinstance(enc, ToyTransformer)
        and len(enc.blocks) == 2
        and enc.cfg.value_dim == 2
        and enc.cfg.norm_position == "post"
    )
    same = build_attention_model("encoder", 8, job, seed=0, ff_width=16, norm="layer")
    assert all(torch.equal(a, b) for a, b in zip(enc.parameters(), same.parameters()))  # the seed fixes the init


def test_summaries_against_hand_computed_min_and_median():
    rows = [
        dict(grids="heads", depth=1, heads=h, rank=16 // h, width=1, total_heads=h, n_points=8, seed=s, dmse=v)
        for h, vals in ((1, (0.1, 0.3, np.nan)), (4, (0.5, 0.7, 0.6)))
        for s, v in enumerate(vals)
    ]
    rows.append(dict(grids="length", depth=1, heads=4, rank=4, width=1, total_heads=4, n_points=4, seed=0, dmse=0.2))
    s = seed_summary(pd.DataFrame(rows))
    one = s[(s["grids"] == "heads") & (s["heads"] == 1)].iloc[0]
    assert (one["dmse_min"], one["dmse_median"], one["seeds"]) == (
        0.1,
        pytest.approx(0.2),
        2,
    )  # the NaN (diverged) seed is left out
    four = grid_summary(pd.DataFrame(rows), "heads", heads=4).iloc[0]
    assert (four["dmse_min"], four["dmse_median"], four["seeds"]) == (0.5, 0.6, 3)
    assert grid_summary(pd.DataFrame(rows), "length")["n_points"].tolist() == [4]
    assert grid_summary(pd.DataFrame(rows), "heads", n_points=16).empty


def _grid(**kw):
    grids = job_grid(
        4, 4, depths=(1,), heads=(1, 4), widths=(1,), lengths=(), length_ranks=(), length_depth=1, length_width=1
    )
    args = dict(
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
    return train_job_grid(grids, **{**args, **kw})


def test_grid_training_tables_and_reproducibility():
    trained, curves, heads = _grid()
    assert len(trained) == 4 and set(trained["seed"]) == {0, 1} and (trained["grids"] == "heads").all()
    assert (
        trained["dmse"].notna().all()
        and (trained["diverged_step"] == -1).all()
        and (trained["architecture"] == "attention").all()
    )
    assert (
        trained["argmax_hit_best_head"].between(0, 1).all()
        and trained["entropy_mean"].between(0, np.log(4) + 1e-9).all()
    )
    assert len(heads) == 2 * (1 + 4) and set(curves["job"]) == {"L1-H1-r4-w1-N4", "L1-H4-r1-w1-N4"}
    again, _, _ = _grid()
    pd.testing.assert_frame_equal(trained, again)
    other, _, _ = _grid(init_seed=lambda job, s: 77 + s)
    assert not np.allclose(other["dmse"], trained["dmse"])


def test_training_lowers_the_loss_of_the_full_rank_head():
    grids = {AttentionJob(1, 1, 4, 1, 4): {"heads"}}
    trained, curves, _ = train_job_grid(
        grids,
        architecture="attention",
        d=4,
        seeds=1,
        init_seed=lambda job, s: 0,
        data_generator=lambda n, s: torch.Generator().manual_seed(1),
        eval_generator=lambda n: torch.Generator().manual_seed(2),
        eval_sets=256,
        probe_sets=16,
        batch=64,
        steps=150,
        optim=AdamWSchedule(lr=3e-2),
        eval_chunk=256,
    )
    assert float(trained["dmse"].iloc[0]) < 0.5 * float(curves["loss"].iloc[0])


def test_every_seed_diverging_raises_with_the_step(monkeypatch):
    real = farthest_point.nearest_point_sets

    def poisoned(d, n, batch, generator, **kw):
        sets = real(d, n, batch, generator, **kw)
        return dataclasses.replace(sets, points=sets.points * float("nan")) if batch == 8 else sets

    monkeypatch.setattr(farthest_point, "nearest_point_sets", poisoned)
    with pytest.raises(Diverged, match="every seed of L1-H1-r4-w1-N4.*step 0"):
        _grid()
