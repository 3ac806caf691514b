"""Moment tensors of the polynomial-network data laws against Isserlis' formula, enumeration and Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.data.polynomial import (
    GaussianLaw,
    MixtureLaw,
    RademacherLaw,
    gaussian_moment_tensor,
    metric_loss,
    pair_partitions,
)


def test_pair_partitions_are_telephone_numbers():
    assert [len(pair_partitions(m)) for m in range(7)] == [1, 1, 2, 4, 10, 26, 76]


def test_standard_gaussian_fourth_moment_is_isserlis():
    d = 3
    I = np.eye(d)
    ref = np.einsum("ij,kl->ijkl", I, I) + np.einsum("ik,jl->ijkl", I, I) + np.einsum("il,jk->ijkl", I, I)
    assert np.allclose(GaussianLaw(d).moment(4), ref)
    assert np.allclose(GaussianLaw(d).moment(3), 0) and np.allclose(GaussianLaw(d).moment(2), I)


@pytest.mark.parametrize("order", [2, 3, 4])
def test_gaussian_moment_with_mean_matches_monte_carlo(order):
    rng = np.random.default_rng(order)
    d, n = 2, 400_000
    mean = np.array([0.7, -0.4])
    L = np.array([[1.0, 0.0], [0.5, 0.6]])
    x = mean + rng.standard_normal((n, d)) @ L.T
    T = gaussian_moment_tensor(mean, L @ L.T, order)
    letters = "abcd"[:order]
    prods = np.einsum(",".join("n" + c for c in letters) + "->n" + letters, *([x] * order))
    mc, se = prods.mean(0), prods.std(0) / np.sqrt(n)
    assert np.all(np.abs(mc - T) <= 5 * se + 1e-12)


def test_rademacher_moments_by_pairing_rule_and_sampling():
    d = 4
    M = RademacherLaw(d).moment(4)
    for idx in np.ndindex(*M.shape):
        counts = np.bincount(idx, minlength=d)
        assert M[idx] == (1.0 if np.all(counts % 2 == 0) else 0.0)
    x = RademacherLaw(d).sample(1000, np.random.default_rng(0))
    assert set(np.unique(x)) == {-1.0, 1.0}
    with pytest.raises(ValueError, match="d <= 20"):
        RademacherLaw(21)


def test_mixture_moment_matches_monte_carlo_and_is_not_gaussian():
    law = MixtureLaw(2, shift=1.2, scale=0.6)
    rng = np.random.default_rng(5)
    x = law.sample(200_000, rng)
    for order in (2, 4):
        letters = "abcd"[:order]
        prods = np.einsum(",".join("n" + c for c in letters) + "->n" + letters, *([x] * order))
        se = prods.std(0) / np.sqrt(len(x))
        assert np.all(np.abs(prods.mean(0) - law.moment(order)) <= 5 * se + 1e-12)
    # not Gaussian: its 4th moment differs from that of the Gaussian with the same covariance
    cov = law.moment(2)
    assert np.abs(law.moment(4) - gaussian_moment_tensor(np.zeros(2), cov, 4)).max() > 0.1
    with pytest.raises(ValueError, match="scale > 0"):
        MixtureLaw(2, scale=0.0)


def test_metric_loss_gaussian_and_rademacher_closed_forms():
    rng = np.random.default_rng(1)
    B = rng.standard_normal((5, 4, 4))
    B = B + B.transpose(0, 2, 1)
    g = metric_loss(B, GaussianLaw(4).moment(4))
    assert np.allclose(g, 2 * (B**2).sum((1, 2)) + np.trace(B, axis1=1, axis2=2) ** 2)
    pts, w = RademacherLaw(4).support()
    exact = np.array([w @ np.einsum("ni,ij,nj->n", pts, b, pts) ** 2 for b in B])
    assert np.allclose(metric_loss(B, RademacherLaw(4).moment(4)), exact)
    t = metric_loss(torch.tensor(B), torch.tensor(GaussianLaw(4).moment(4)))
    assert torch.allclose(t, torch.tensor(g))
