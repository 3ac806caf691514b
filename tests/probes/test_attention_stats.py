"""Attention statistics on patterns with known answers."""

from __future__ import annotations

import math

import torch

from theorylab.data.nearest_points import nearest_point_sets
from theorylab.nn.attention_constructions import full_rank_head
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.attention_stats import argmax_hit_rate, attention_entropy, attention_patterns


def test_entropy_of_uniform_and_one_hot_rows():
    uniform = torch.full((2, 1, 3, 5), 0.2)
    one_hot = torch.nn.functional.one_hot(torch.tensor([[[1, 2, 0]]]), 5).float().expand(2, 1, 3, 5)
    ent = attention_entropy(torch.cat([uniform, one_hot], dim=1))
    torch.testing.assert_close(ent, torch.tensor([math.log(5), 0.0]))


def test_hit_rate_of_the_exact_head_is_one_and_of_a_wrong_head_zero():
    sets = nearest_point_sets(8, 6, 50, torch.Generator().manual_seed(0), dtype=torch.float64)
    patterns = attention_patterns(full_rank_head(8, 200.0, dtype=torch.float64), sets.sequence)
    assert set(patterns) == {0} and patterns[0].shape == (50, 1, 6, 6)
    assert float(argmax_hit_rate(patterns[0], sets.index)[0]) == 1.0
    self_pattern = torch.eye(6, dtype=torch.float64).expand(50, 1, 6, 6)
    assert float(argmax_hit_rate(self_pattern, sets.index)[0]) == 0.0


def test_patterns_for_every_layer():
    model = ToyTransformer(d_model=8, n_heads=2, n_layers=3, mlp_width=8)
    patterns = attention_patterns(model, torch.randn(2, 5, 8))
    assert sorted(patterns) == [0, 1, 2] and all(p.shape == (2, 2, 5, 5) for p in patterns.values())


def test_row_theta_brackets_the_exact_value():
    import numpy as np

    from theorylab.probes.attention_stats import row_theta
    from theorylab.theory.softmax import theta_exact

    scores = torch.randn(2, 3, 24, 24, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    causal = torch.ones(24, 24, dtype=torch.bool).triu(1)
    pattern = torch.softmax(scores.masked_fill(causal, float("-inf")), -1)
    t = row_theta(pattern, min_keys=16, exact_up_to=20)
    assert len(t) == 2 * 3 * 9 and set(t["keys"]) == set(range(16, 25))  # rows 15..23 have 16..24 keys
    for r in t.itertuples():
        p = pattern[r.batch, r.head, r.row]
        p = p[p > 0].numpy()
        exact = theta_exact(p)  # meet-in-the-middle for the long rows
        assert r.theta_lo <= exact + 1e-12 <= r.theta_hi + 1e-9 and r.greedy <= exact + 1e-12
        if r.exact:
            assert r.theta_lo == r.theta_hi == exact
    assert np.all(t["theta_hi"] <= 1 + 1e-12)
