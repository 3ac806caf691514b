"""d·MSE in chunks and the construction table (Amsel et al., arXiv 2407.16153) against exact values."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.data.nearest_points import d_mse, nearest_point_sets
from theorylab.nn.attention_constructions import full_rank_head
from theorylab.nn.toy_transformer import attention_only
from theorylab.probes import farthest_point_errors as fpe
from theorylab.probes.farthest_point_errors import chunked_dmse, construction_errors


def test_chunked_dmse_matches_one_pass_for_any_chunk():
    sets = nearest_point_sets(6, 5, 37, torch.Generator().manual_seed(0), dtype=torch.float64)
    model = attention_only(6, 2, 3, seed=1).double().requires_grad_(False)
    whole = float(d_mse(model(sets.sequence), sets.targets))
    for chunk in (1, 4, 10, 37, 1000):  # uneven last chunk: the mean is weighted by sets
        assert chunked_dmse(model, sets.sequence, sets.targets, chunk) == pytest.approx(whole, rel=1e-12)


def test_chunked_dmse_caps_the_score_tensor(monkeypatch):
    """The chunk shrinks to SCORE_BUDGET // (H T²) sets; the answer does not change."""
    sets = nearest_point_sets(4, 8, 20, torch.Generator().manual_seed(2), dtype=torch.float64)
    model = attention_only(4, 4, 1, seed=0).double().requires_grad_(False)
    seen = []
    real = model.forward
    monkeypatch.setattr(model, "forward", lambda x: seen.append(len(x)) or real(x))
    monkeypatch.setattr(fpe, "SCORE_BUDGET", 4 * 64 * 3)  # 3 sets of 4 heads x 8 x 8 scores
    value = chunked_dmse(model, sets.sequence, sets.targets, chunk=1000)
    assert seen == [3] * 6 + [2]
    assert value == pytest.approx(float(d_mse(real(sets.sequence), sets.targets)), rel=1e-12)


def test_zero_predictor_scores_one():
    sets = nearest_point_sets(5, 4, 8, torch.Generator().manual_seed(3), dtype=torch.float64)
    model = full_rank_head(5, dtype=torch.float64)
    model.set_head(0, 0, o=torch.zeros(5, 5, dtype=torch.float64))
    assert chunked_dmse(model, sets.sequence, sets.targets, 3) == pytest.approx(1.0, abs=1e-12)  # unit-norm targets


def test_construction_table_rows_and_their_values():
    g = torch.Generator().manual_seed(0)
    t = construction_errors(
        6, 4, 200, (2, 8), (3.0, 30.0, 300.0), (1, 8), g, [torch.Generator().manual_seed(i) for i in (1, 2)], chunk=64
    )
    assert list(t.columns) == ["kind", "param", "n_points", "split", "dmse", "d"] and (t["d"] == 6).all()
    hard = t[t["kind"] == "full_rank_hardmax"]
    assert hard["n_points"].tolist() == [2, 8] and (hard["param"] == math.inf).all() and hard["dmse"].max() < 1e-12
    soft = t[t["kind"] == "full_rank_softmax"]["dmse"].to_numpy()
    assert (soft[1:] < soft[:-1]).all() and soft[-1] < 0.05  # softmax -> hard-max as beta grows
    rank1 = t[t["kind"] == "random_rank1"]
    assert rank1[["param", "split"]].values.tolist() == [[1.0, "train"], [1.0, "test"], [8.0, "train"], [8.0, "test"]]
    assert rank1["dmse"].between(0.3, 1.5).all()  # rank-1 heads stay far from the target


def test_construction_table_is_reproducible_and_needs_one_generator_per_head_count():
    def table(seed):
        return construction_errors(
            4,
            4,
            100,
            (4,),
            (10.0, 100.0),
            (2,),
            torch.Generator().manual_seed(seed),
            [torch.Generator().manual_seed(9)],
            chunk=50,
        )

    assert table(0).equals(table(0)) and not table(0).equals(table(1))
    with pytest.raises(ValueError, match="one generator per rank-1 head count"):
        construction_errors(4, 4, 100, (4,), (10.0,), (2, 4), torch.Generator(), [torch.Generator()], chunk=50)
