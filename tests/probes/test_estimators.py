"""Monte Carlo estimators with standard errors: against NumPy and against their own sampling spread."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.probes.estimators import RunningMoments, slope_through_origin, variance_with_se


def test_running_moments_match_numpy_over_batches():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 3, 4)) * 2 + 1
    acc = RunningMoments()
    for part in np.array_split(x, 7):
        acc.add(part)
    assert acc.count == 1000
    np.testing.assert_allclose(acc.mean, x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(acc.se, x.std(0, ddof=1) / np.sqrt(1000), rtol=1e-9)


def test_variance_with_se_matches_numpy_and_the_gaussian_spread():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40_000, 2)) * np.array([1.0, 3.0])
    var, se = variance_with_se(x)
    np.testing.assert_allclose(var, x.var(0, ddof=1), rtol=1e-12)
    # for Gaussian draws Var[s^2] = 2 sigma^4 / b: the fourth-moment SE must agree
    np.testing.assert_allclose(se, np.sqrt(2 / 40_000) * np.array([1.0, 9.0]), rtol=0.03)


def test_total_variance_of_vector_draws_is_the_trace():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5000, 3, 6)) * np.linspace(0.5, 2, 6)
    total, se = variance_with_se(x, event_dims=1)
    assert total.shape == (3,) and se.shape == (3,)
    np.testing.assert_allclose(total, x.var(0, ddof=1).sum(-1), rtol=1e-10)
    dev = ((x - x.mean(0)) ** 2).sum(-1)
    np.testing.assert_allclose(se, dev.std(0, ddof=1) / np.sqrt(5000), rtol=1e-12)


def test_slope_through_origin_against_lstsq_and_its_spread():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(500, 2, generator=g, dtype=torch.float64)
    y = torch.tensor([0.7, -1.5], dtype=torch.float64) * x + 0.3 * torch.randn(500, 2, generator=g, dtype=torch.float64)
    m, se = slope_through_origin(x, y)
    for k in range(2):
        ref = np.linalg.lstsq(x[:, k : k + 1].numpy(), y[:, k].numpy(), rcond=None)[0][0]
        assert float(m[k]) == pytest.approx(ref, rel=1e-12)
    # the stated SE is the spread of the slope over independent replications
    reps = []
    for _ in range(400):
        xr = torch.randn(500, generator=g, dtype=torch.float64)
        reps.append(
            float(slope_through_origin(xr, 0.7 * xr + 0.3 * torch.randn(500, generator=g, dtype=torch.float64))[0])
        )
    assert np.std(reps) == pytest.approx(float(se[0]), rel=0.15)
    # pooled over two axes
    m2, _ = slope_through_origin(x[None].expand(3, -1, -1), y[None].expand(3, -1, -1), (0, 1))
    assert torch.allclose(m2, m, rtol=1e-12)
