"""Nearest/farthest-point sets against a brute-force loop."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.data.nearest_points import d_mse, nearest_point_sets, sphere_points


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(2, 12), n=st.integers(2, 20))
def test_farthest_point_targets_match_brute_force(seed, d, n):
    sets = nearest_point_sets(d, n, 3, torch.Generator().manual_seed(seed), dtype=torch.float64)
    for b in range(3):
        for i in range(n):
            dots = [float(sets.points[b, i] @ sets.points[b, j]) for j in range(n)]
            j_star = min(range(n), key=dots.__getitem__)
            assert int(sets.index[b, i]) == j_star
            assert torch.equal(sets.targets[b, i], sets.points[b, j_star])
    assert torch.equal(sets.sequence, sets.points) and sets.query_positions == slice(0, n)


def test_separate_queries_target_the_nearest_point():
    sets = nearest_point_sets(
        5, 9, 4, torch.Generator().manual_seed(1), mode="separate_nearest", n_queries=3, dtype=torch.float64
    )
    assert sets.queries.shape == (4, 3, 5) and sets.sequence.shape == (4, 12, 5)
    dist = torch.cdist(sets.queries, sets.points)  # nearest in Euclidean distance = largest inner product on the sphere
    assert torch.equal(sets.index, dist.argmin(-1))
    assert sets.query_positions == slice(9, 12)


def test_points_are_unit_and_reproducible():
    a = sphere_points(10, 7, 6, torch.Generator().manual_seed(3))
    b = sphere_points(10, 7, 6, torch.Generator().manual_seed(3))
    assert torch.equal(a, b)
    torch.testing.assert_close(a.norm(dim=-1), torch.ones(10, 7))


def test_zero_predictor_scores_exactly_one():
    sets = nearest_point_sets(16, 8, 50, torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(d_mse(torch.zeros_like(sets.targets), sets.targets)) == pytest.approx(1.0, abs=1e-12)


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_queries"):
        nearest_point_sets(4, 5, 2, torch.Generator(), n_queries=3)
    with pytest.raises(ValueError, match="mode"):
        nearest_point_sets(4, 5, 2, torch.Generator(), mode="sideways")
