"""Attention statistics on patterns with known answers."""

from __future__ import annotations

import math

import torch

from theorylab.data.nearest_points import nearest_point_sets
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.attention_stats import argmax_hit_rate, attention_entropy, attention_patterns
from theorylab.theory.attention_constructions import full_rank_head


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
