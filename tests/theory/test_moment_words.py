"""The moment ODE over words (paper eq. 11, truncation eq. 13) against the exact matrix flow it describes."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.theory.moment_words import (
    WordAlgebra,
    gamma_from_potential,
    integrate,
    matrix_flow,
    softmax2_potential,
)


def _psd(rng, d, norm):
    W = rng.standard_normal((d, d)) / np.sqrt(d)
    S = W @ W.T
    return S * norm / np.linalg.norm(S, 2)


def test_gamma_convention_app_d3():
    """App. D.3: Φ = 2 q11 + 2 q22 - 4 q12 gives Γ11 = 2, Γ12 = -2 (the off-diagonal halved)."""
    g = gamma_from_potential(lambda q: 2 * q[0, 0] + 2 * q[1, 1] - 4 * q[0, 1], np.eye(2))
    assert g == pytest.approx(np.array([[2.0, -2.0], [-2.0, 2.0]]), abs=1e-8)


def test_word_count_and_exact_moments():
    rng = np.random.default_rng(1)
    S, T = _psd(rng, 5, 0.7), _psd(rng, 5, 0.7)
    alg = WordAlgebra(4)
    assert len(alg) == 2**5 - 2
    mu = alg.moments([S, T])
    assert mu[alg.index[(0, 1, 1, 0)]] == pytest.approx(np.trace(S @ T @ T @ S) / 5)
    assert alg.q(mu) == pytest.approx(
        np.array([[np.trace(S @ S), np.trace(S @ T)], [np.trace(T @ S), np.trace(T @ T)]]) / 5
    )


def test_rhs_at_untruncated_order_is_the_matrix_derivative():
    """With every word kept (M above the longest word needed), eq. 11 is the exact d/dt of the traces."""
    rng = np.random.default_rng(2)
    d = 6
    S, T = _psd(rng, d, 0.6), _psd(rng, d, 0.6)
    g = np.array([[0.3, -0.7], [-0.7, 0.1]])
    dS = -(g[0, 0] * 2 * S @ S + g[0, 1] * (T @ S + S @ T)) - 0.5 * 0.4 * S
    alg = WordAlgebra(4)
    rhs = alg.rhs(alg.moments([S, T]), g, weight_decay=0.4)
    for w in [(0,), (0, 0), (0, 1), (0, 0, 1)]:  # words of length <= 3: their derivatives need length <= 4
        mats = {0: S, 1: T}
        want = 0.0
        for i, letter in enumerate(w):
            if letter == 0:
                P = np.eye(d)
                for j, c in enumerate(w):
                    P = P @ (dS if j == i else mats[c])
                want += np.trace(P) / d
        assert rhs[alg.index[w]] == pytest.approx(want, rel=1e-10, abs=1e-12), w


def test_truncations_approach_the_matrix_flow():
    """Small d, softmax potential: the truncation error at t = 1 falls with M and M = 10 is within 1e-4."""
    rng = np.random.default_rng(0)
    S, T = _psd(rng, 6, 0.5), _psd(rng, 6, 0.5)
    ts = np.linspace(0.0, 1.0, 5)
    ref = matrix_flow([S, T], softmax2_potential, ts)
    errs = []
    for M in (2, 4, 6, 10):
        alg = WordAlgebra(M)
        mu = integrate(alg, alg.moments([S, T]), softmax2_potential, ts)
        exact = np.array([alg.moments(m) for m in ref])
        errs.append(float(np.abs(mu[:, :6] - exact[:, :6]).max()))
    assert all(b < a for a, b in zip(errs, errs[1:])), errs
    assert errs[-1] < 1e-4 and errs[0] > 1e-3, errs


def test_softmax2_potential_matches_monte_carlo():
    """Φ = 2 E(σ(a1) - σ(a2))², (a1, a2) ~ N(0, 3q), against sampled Gaussian 2x2 forms and the row softmax."""
    rng = np.random.default_rng(3)
    q = np.array([[0.5, 0.2], [0.2, 0.4]])
    n = 400_000
    Lq = np.linalg.cholesky(q)
    # per k: G11, G22 ~ N(0, 2 q_kk), G12 = G21 ~ N(0, q_kk), correlated across k through q
    g11, g22, g12 = (Lq @ rng.standard_normal((2, n)) * s for s in (np.sqrt(2), np.sqrt(2), 1.0))

    def soft(a, b):
        return 1 / (1 + np.exp(b - a))

    loss = (soft(g11[0], g12[0]) - soft(g11[1], g12[1])) ** 2 + (soft(g12[0], g22[0]) - soft(g12[1], g22[1])) ** 2
    assert softmax2_potential(q) == pytest.approx(loss.mean(), abs=4 * loss.std() / np.sqrt(n))


def test_truncation_degree_must_carry_q():
    with pytest.raises(ValueError, match="M must be >= 2"):
        WordAlgebra(1)
