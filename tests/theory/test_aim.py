"""theory.aim against independent references: brute-force Isserlis sums, eigenvalue cumulants, Monte Carlo, closed
forms of the Gaussian reduction, and a finite step of the population flow for the weak-recovery slope."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from theorylab.theory import aim


def _isserlis_brute(C, mats, d):
    """Mean and covariance of x_i^T S x_j / sqrt(d) by summing Wick pairings over every coordinate."""
    L = len(C)
    E = lambda i, a, j, b: C[i][j] * (a == b)  # noqa: E731  E[x_ia x_jb]
    idx = [(k, i, j) for k in range(len(mats)) for i in range(L) for j in range(L)]
    mean = np.array([sum(mats[k][a, b] * E(i, a, j, b) for a in range(d) for b in range(d)) for k, i, j in idx])
    cov = np.zeros((len(idx), len(idx)))
    for u, (k, i, j) in enumerate(idx):
        for v, (l, i2, j2) in enumerate(idx):
            cov[u, v] = sum(
                mats[k][a, b]
                * mats[l][a2, b2]
                * (E(i, a, i2, a2) * E(j, b, j2, b2) + E(i, a, j2, b2) * E(j, b, i2, a2))
                for a, b, a2, b2 in itertools.product(range(d), repeat=4)
            )
    return mean / math.sqrt(d), cov / d


def test_bilinear_moments_match_brute_force_wick_sums():
    rng = np.random.default_rng(0)
    d = 3
    C = np.array([[1.0, 0.4], [0.4, 1.5]])
    mats = [rng.standard_normal((d, d)), rng.standard_normal((d, d))]  # non-symmetric on purpose
    mean, cov = aim.bilinear_moments(C, mats)
    bm, bc = _isserlis_brute(C, mats, d)
    assert np.allclose(mean.reshape(-1), bm) and np.allclose(cov.reshape(8, 8), bc)


def test_kurtosis_and_cumulants_match_eigenvalue_chi_square_sums():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((7, 7))
    S = A + A.T
    lam = np.linalg.eigvalsh(S)  # x^T S x = Σ λ_i χ²_1: κ_k = 2^(k-1) (k-1)! Σ λ^k
    assert aim.excess_kurtosis(S) == pytest.approx(48 * np.sum(lam**4) / (2 * np.sum(lam**2)) ** 2, rel=1e-12)
    for k in (2, 3, 4):
        assert aim.quadratic_form_cumulant([S] * k) == pytest.approx(
            2 ** (k - 1) * math.factorial(k - 1) * np.sum(lam**k), rel=1e-10
        )
    B = rng.standard_normal((7, 7))
    B = B + B.T
    assert aim.quadratic_form_cumulant([S, B]) == pytest.approx(2 * np.trace(S @ B), rel=1e-12)
    with pytest.raises(ValueError):
        aim.quadratic_form_cumulant([S])


def test_exact_h2_loss_matches_monte_carlo_at_small_d():
    rng = np.random.default_rng(2)
    d, n = 6, 2_000_000
    W, V = rng.standard_normal((d, d)), rng.standard_normal((d, d))
    S, T = W @ W.T / (2 * d), V @ V.T / (2 * d)
    x = rng.standard_normal((n, d))
    g = (np.einsum("na,ab,nb->n", x, S, x) - np.trace(S)) / math.sqrt(d)
    gs = (np.einsum("na,ab,nb->n", x, T, x) - np.trace(T)) / math.sqrt(d)
    loss = 0.5 * ((g * g - gs * gs) / math.sqrt(2)) ** 2
    se = loss.std() / math.sqrt(n)
    exact = aim.exact_loss_h2(S, T)
    assert abs(loss.mean() - exact) <= 5 * se
    _, q = aim.overlaps([S, T])
    gauss = aim.gaussian_loss(q[0, 0], q[0, 1], q[1, 1], "h2")
    assert abs(loss.mean() - gauss) > 5 * se  # at d = 6 the non-Gaussian part is resolved


def test_gaussian_loss_closed_forms_and_gradient():
    q11, q12, q22 = np.array([0.5, 0.8]), np.array([0.25, -0.1]), np.array([0.5, 0.5])
    assert np.allclose(aim.gaussian_loss(q11, q12, q22, "h1"), q11 + q22 - 2 * q12)
    a, b, c = 2 * q11, 2 * q22, 2 * q12
    assert np.allclose(aim.gaussian_loss(q11, q12, q22, "h2"), (3 * a * a + 3 * b * b - 2 * a * b - 4 * c * c) / 4)
    d11, d12 = aim.gaussian_loss_grad(q11, q12, q22, "h2")
    assert np.allclose(d11, (6 * a - 2 * b) / 2, atol=1e-6) and np.allclose(d12, -4 * c, atol=1e-6)
    rng = np.random.default_rng(3)  # h3 by Monte Carlo
    z = rng.standard_normal((1_000_000, 2))
    gs = math.sqrt(b[0]) * z[:, 0]
    g = c[0] / math.sqrt(b[0]) * z[:, 0] + math.sqrt(a[0] - c[0] ** 2 / b[0]) * z[:, 1]
    h3 = lambda u: (u**3 - 3 * u) / math.sqrt(6)  # noqa: E731
    mc = 0.5 * (h3(g) - h3(gs)) ** 2
    assert abs(mc.mean() - aim.gaussian_loss(q11[0], q12[0], q22[0], "h3")) < 5 * mc.std() / 1000
    with pytest.raises(ValueError, match="h9"):
        aim.gaussian_loss(0.5, 0.1, 0.5, "h9")


def test_overlap_algebra():
    rng = np.random.default_rng(4)
    A = rng.standard_normal((5, 5))
    S = A + A.T
    T = 2 * S + 3 * np.eye(5)  # same traceless part up to scale: ρ = 1
    t, q = aim.overlaps([S, T])
    assert t[1] == pytest.approx(2 * t[0] + 3) and aim.rho(t, q) == pytest.approx(1.0)
    p = aim.structural(t, q)
    assert p[0, 0] == pytest.approx(np.sum((S - np.trace(S) / 5 * np.eye(5)) ** 2) / 5)


@pytest.mark.parametrize("param,link", [("tied", "h1"), ("tied", "h2"), ("direct", "h1"), ("direct", "h2")])
def test_initial_slope_matches_a_small_step_of_the_population_flow(param, link):
    """dρ/dn at ρ ≈ 0 against one small Euler step of the exact population gradient (chain rule through q)."""
    rng = np.random.default_rng(5)
    d, alpha, kappa, eps = 300, 1.0, 0.5, 1e-3
    V = rng.standard_normal((d, d)) / math.sqrt(d)
    T = V @ V.T / 2
    W = rng.standard_normal((d, d)) / math.sqrt(d)
    S = kappa * W @ W.T  # a PSD start (for direct too, so that h2 has a drift)
    (t1, t2), q = aim.overlaps([S, T])
    p11, p12 = aim.gaussian_loss_grad(q[0, 0], q[0, 1], q[1, 1], link)
    grad = 2 / d * p11 * S + 1 / d * p12 * T
    if param == "tied":
        W2 = W - eps * alpha * 2 * kappa * grad @ W
        S2 = kappa * W2 @ W2.T
    else:
        S2 = S - eps * alpha * grad
    t, q2 = aim.overlaps([S2, T])
    measured = (aim.rho(t, q2) - aim.rho(np.array([t1, t2]), q)) / eps
    pred = aim.initial_rho_slope(t1, q[0, 0], q[0, 1], t2, q[1, 1], link, alpha, d, param, kappa)
    assert measured == pytest.approx(pred, rel=0.15)


def test_trace_free_direct_start_has_no_drift_for_even_links():
    pred = aim.initial_rho_slope(0.0, 0.25, 0.0, 0.5, 0.5, "h2", 1.0, 100, "direct")
    lin = aim.initial_rho_slope(0.0, 0.25, 0.0, 0.5, 0.5, "h1", 1.0, 100, "direct")
    assert abs(pred) < 1e-8 and lin > 0


def test_words_and_trace_moments():
    assert len(aim.words(8)) == 510 and aim.words(2) == [(1,), (2,), (1, 1), (1, 2), (2, 1), (2, 2)]
    rng = np.random.default_rng(6)
    A, B = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    m = aim.trace_moments([A, B], 3)
    assert m[(1, 2, 2)] == pytest.approx(np.trace(A @ B @ B) / 4) and len(m) == 14
