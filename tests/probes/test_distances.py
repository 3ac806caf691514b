from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from theorylab.probes.distances import nearest_mse, paired_mse, spearman


def test_nearest_mse_matches_brute_force():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(37, 5, generator=g, dtype=torch.float64)
    r = torch.randn(53, 5, generator=g, dtype=torch.float64)
    brute = ((q[:, None, :] - r[None]) ** 2).mean(-1).min(-1).values
    torch.testing.assert_close(nearest_mse(q, r, chunk=8), brute)
    torch.testing.assert_close(nearest_mse(r[:4], r), torch.zeros(4, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(paired_mse(q, q + 1), torch.ones(37, dtype=torch.float64))


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=5, max_value=60), st.integers(min_value=0, max_value=10_000))
def test_spearman_matches_scipy(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = x + rng.standard_normal(n)
    rho, _ = spearman(x, y)
    assert abs(rho - spearmanr(x, y).statistic) < 1e-12


def test_spearman_permutation_p_value():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(200)
    _, p_strong = spearman(x, x + 0.5 * rng.standard_normal(200), permutations=999, rng=rng)
    _, p_null = spearman(x, rng.standard_normal(200), permutations=999, rng=rng)
    assert p_strong <= 0.002 and p_null > 0.01
