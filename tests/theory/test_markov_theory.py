"""Chain laws against closed forms, Monte Carlo and brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from theorylab.data.markov import lazy_chain, mask_tokens, mixed_random_chain, sample_chain, zipf_chain
from theorylab.theory.markov import (
    bayes_masked_loss,
    correlation_length,
    entropy_rate,
    indicator_autocorrelation,
    lazy_lambda,
    masked_posterior,
    stationary,
    unigram_entropy,
)


def test_stationary_matches_power_iteration():
    p = zipf_chain(9, seed=2)
    power = np.full(9, 1 / 9)
    for _ in range(3000):
        power = power @ p
    assert np.allclose(stationary(p), power, atol=1e-12)
    pi = np.array([0.1, 0.2, 0.3, 0.4])
    assert np.allclose(stationary(lazy_chain(4, 0.8, pi)), pi, atol=1e-12)


def test_entropies_closed_forms():
    assert np.isclose(unigram_entropy(np.full(8, 1 / 8)), np.log(8))
    assert unigram_entropy(np.array([1.0, 0.0])) == 0.0
    # i.i.d. chain: H_cond = H(pi); lazy uniform chain: closed form
    pi = np.array([0.5, 0.25, 0.25])
    assert np.isclose(entropy_rate(np.tile(pi, (3, 1))), unigram_entropy(pi))
    lam, v = 0.5, 4
    stay, move = lam + (1 - lam) / v, (1 - lam) / v
    assert np.isclose(entropy_rate(lazy_chain(v, lam)), -(stay * np.log(stay) + (v - 1) * move * np.log(move)))
    # Monte Carlo: mean -ln P(x_t -> x_{t+1}) along a long sample
    p = zipf_chain(6, seed=0)
    x = sample_chain(p, 200, 500, torch.Generator().manual_seed(0)).numpy()
    mc = -np.log(p[x[:, :-1], x[:, 1:]]).mean()
    assert abs(mc - entropy_rate(p)) < 0.01


def test_correlation_length_of_lazy_chains_is_exact():
    for xi in (1.0, 2.0, 4.0, 7.0):
        lam = lazy_lambda(xi)
        assert np.isclose(correlation_length(lazy_chain(16, lam)), xi, rtol=1e-10)
    assert correlation_length(np.full((3, 3), 1 / 3)) == 0.0
    assert correlation_length(np.eye(2)) == float("inf")


def test_indicator_autocorrelation_lazy_closed_form_and_monte_carlo():
    lam = 0.7
    lags = np.arange(0, 6)
    assert np.allclose(indicator_autocorrelation(lazy_chain(8, lam), lags), lam**lags, atol=1e-12)
    pi = np.array([0.4, 0.3, 0.2, 0.1])
    assert np.allclose(indicator_autocorrelation(lazy_chain(4, lam, pi), lags), lam**lags, atol=1e-12)
    # a chain with a richer spectrum: Monte Carlo estimate over a stationary sample
    p = mixed_random_chain(5, 0.5, seed=1)
    x = sample_chain(p, 400, 400, torch.Generator().manual_seed(3)).numpy()
    theory = indicator_autocorrelation(p, [1, 2, 3])
    for k, th in zip([1, 2, 3], theory):
        corrs = []
        for a in range(5):
            ind = (x == a).astype(float)
            u, w = ind[:, :-k].ravel(), ind[:, k:].ravel()
            corrs.append(np.corrcoef(u, w)[0, 1])
        assert abs(np.mean(corrs) - th) < 0.02


def _brute_posterior(p, pi, tokens, mask):
    v, length = p.shape[0], len(tokens)
    post = np.zeros((length, v))
    hidden = np.flatnonzero(mask)
    for fill in itertools.product(range(v), repeat=len(hidden)):
        x = np.array(tokens)
        x[hidden] = fill
        w = pi[x[0]] * np.prod(p[x[:-1], x[1:]])
        post[np.arange(length), x] += w
    return post / post.sum(1, keepdims=True)


def test_forward_backward_equals_brute_force_enumeration():
    rng = np.random.default_rng(0)
    for seed in range(3):
        p = zipf_chain(3, seed=seed)
        pi0 = rng.dirichlet(np.ones(3))
        tokens = rng.integers(0, 3, size=(6, 5))
        mask = rng.random((6, 5)) < 0.5
        mask[0] = True  # everything hidden: the marginals of the chain from pi0
        mask[1] = False
        mask[1, [0, 4]] = True  # hidden at both ends
        got = masked_posterior(p, tokens, mask, pi=pi0)
        for i in range(6):
            assert np.allclose(got[i], _brute_posterior(p, pi0, tokens[i], mask[i]), atol=1e-12)
    # all hidden with the stationary start: each position's law is pi
    p = zipf_chain(3, seed=9)
    allm = masked_posterior(p, np.zeros((1, 5), int), np.ones((1, 5), bool))
    assert np.allclose(allm[0], stationary(p)[None], atol=1e-12)


def test_bayes_loss_is_the_mean_log_posterior_and_beats_the_unigram():
    p = lazy_chain(6, lazy_lambda(2.0))
    x = sample_chain(p, 300, 20, torch.Generator().manual_seed(0))
    _, m = mask_tokens(x, 0.15, 6, torch.Generator().manual_seed(1))
    loss = bayes_masked_loss(p, x.numpy(), m.numpy())
    post = masked_posterior(p, x.numpy(), m.numpy())
    true = post[np.arange(300)[:, None], np.arange(20)[None], x.numpy()]
    assert np.isclose(loss, -np.log(true[m.numpy()]).mean())
    assert loss < np.log(6) - 0.3
    # i.i.d. chain: the neighbours carry nothing, the loss is the cross-entropy of pi
    q = lazy_chain(6, 0.0)
    assert np.isclose(bayes_masked_loss(q, x.numpy(), m.numpy()), np.log(6))
    with pytest.raises(ValueError, match="no masked"):
        bayes_masked_loss(p, x.numpy(), np.zeros_like(m.numpy()))


def test_bad_chains_fail_early():
    with pytest.raises(ValueError, match="row-stochastic"):
        entropy_rate(np.ones((2, 2)))
    with pytest.raises(ValueError, match="square"):
        stationary(np.ones((2, 3)))
