"""Chains with a set spectrum, the vectorised sampler and masked corruption against exact laws."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.data.markov import (
    lazy_chain,
    mask_tokens,
    mixed_random_chain,
    sample_chain,
    stationary_distribution,
    zipf_chain,
)


def test_zipf_chain_is_the_advertised_mixture():
    p = zipf_chain(10, s=1.0, mix=0.5, seed=3)
    assert p.shape == (10, 10) and np.allclose(p.sum(1), 1) and (p > 0).all()
    assert np.array_equal(p, zipf_chain(10, s=1.0, mix=0.5, seed=3))
    pi0 = 1 / np.arange(1, 11)
    pi0 /= pi0.sum()
    r = np.random.default_rng(3).dirichlet(np.full(10, 0.5), size=10)
    assert np.allclose(p, 0.5 * pi0[None] + 0.5 * r / r.sum(1, keepdims=True), atol=1e-14)
    zipf2 = np.arange(1, 7) ** -2.0
    assert np.allclose(zipf_chain(6, s=2.0, mix=1.0, seed=0)[2], zipf2 / zipf2.sum())
    with pytest.raises(ValueError, match="mix"):
        zipf_chain(5, mix=1.5)


def test_lazy_chain_spectrum_and_powers_are_closed_form():
    lam, v = 0.6, 7
    pi = np.arange(1.0, v + 1)
    pi /= pi.sum()
    p = lazy_chain(v, lam, pi)
    eig = np.sort(np.linalg.eigvals(p).real)
    assert np.allclose(eig, [lam] * (v - 1) + [1.0], atol=1e-12)
    for k in (1, 3, 8):
        closed = lam**k * np.eye(v) + (1 - lam**k) * np.outer(np.ones(v), pi)
        assert np.allclose(np.linalg.matrix_power(p, k), closed, atol=1e-13)
    assert np.allclose(stationary_distribution(p), pi)
    assert np.allclose(lazy_chain(4, 0.3), 0.3 * np.eye(4) + 0.7 / 4)
    with pytest.raises(ValueError, match="lam"):
        lazy_chain(4, 1.0)


def test_mixed_random_chain_shifts_the_random_spectrum_by_lam():
    r = mixed_random_chain(8, 0.0, seed=5)
    p = mixed_random_chain(8, 0.4, seed=5)
    assert np.allclose(p, 0.4 * np.eye(8) + 0.6 * r) and np.allclose(p.sum(1), 1)
    er = np.sort_complex(np.linalg.eigvals(r))
    ep = np.sort_complex(np.linalg.eigvals(p))
    assert np.allclose(ep, np.sort_complex(0.4 + 0.6 * er), atol=1e-12)


def test_sampler_matches_the_chain_and_the_start_law():
    p = zipf_chain(5, seed=1)
    g = torch.Generator().manual_seed(0)
    x = sample_chain(p, 4000, 30, g).numpy()
    assert x.shape == (4000, 30) and x.dtype == np.int64 and x.min() >= 0 and x.max() < 5
    pi = stationary_distribution(p)
    # first token ~ pi (stationary start), every position too
    assert np.abs(np.bincount(x[:, 0], minlength=5) / 4000 - pi).max() < 0.03
    assert np.abs(np.bincount(x[:, -1], minlength=5) / 4000 - pi).max() < 0.03
    counts = np.zeros((5, 5))
    np.add.at(counts, (x[:, :-1].ravel(), x[:, 1:].ravel()), 1)
    assert np.abs(counts / counts.sum(1, keepdims=True) - p).max() < 0.02
    # a given start law is honoured
    y = sample_chain(p, 500, 3, torch.Generator().manual_seed(1), start=np.eye(5)[2])
    assert (y[:, 0] == 2).all()
    # seeded
    assert torch.equal(
        sample_chain(p, 10, 8, torch.Generator().manual_seed(4)),
        sample_chain(p, 10, 8, torch.Generator().manual_seed(4)),
    )


def test_sampler_lazy_chain_holds_with_probability_lam_plus():
    lam, v = 0.7, 6
    x = sample_chain(lazy_chain(v, lam), 2000, 50, torch.Generator().manual_seed(2)).numpy()
    stay = (x[:, 1:] == x[:, :-1]).mean()
    assert abs(stay - (lam + (1 - lam) / v)) < 0.01


def test_sampler_rejects_bad_input():
    with pytest.raises(ValueError, match="row-stochastic"):
        sample_chain(np.ones((3, 3)), 2, 2, torch.Generator())
    with pytest.raises(ValueError, match="square"):
        sample_chain(np.ones((3, 2)) / 2, 2, 2, torch.Generator())
    with pytest.raises(ValueError, match="start"):
        sample_chain(lazy_chain(3, 0.5), 2, 2, torch.Generator(), start=np.ones(2) / 2)


def test_mask_tokens_rate_and_ids():
    x = torch.randint(0, 9, (300, 64), generator=torch.Generator().manual_seed(0))
    y, m = mask_tokens(x, 0.15, 9, torch.Generator().manual_seed(1))
    assert m.dtype == torch.bool and y.shape == x.shape
    assert (y[m] == 9).all() and torch.equal(y[~m], x[~m])
    assert abs(m.float().mean().item() - 0.15) < 0.01
    assert not mask_tokens(x, 0.0, 9, torch.Generator())[1].any()
    with pytest.raises(ValueError, match="rate"):
        mask_tokens(x, 1.5, 9, torch.Generator())


def test_empirical_autocorrelation_matches_numpy_corrcoef_and_theory():
    from theorylab.data.markov import indicator_autocorrelation_empirical

    lam = 0.6
    x = sample_chain(lazy_chain(4, lam), 500, 40, torch.Generator().manual_seed(0)).numpy()
    got = indicator_autocorrelation_empirical(x, 4, [1, 2, 3])
    ref = [
        np.mean([np.corrcoef((x[:, :-k] == a).ravel(), (x[:, k:] == a).ravel())[0, 1] for a in range(4)])
        for k in (1, 2, 3)
    ]
    assert np.allclose(got, ref, atol=1e-12)
    assert np.allclose(got, lam ** np.arange(1, 4), atol=0.02)
    with pytest.raises(ValueError, match="lags"):
        indicator_autocorrelation_empirical(x, 4, [40])
