"""Representation-similarity probes against independent brute-force NumPy/SciPy references and their invariances."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.linalg import orthogonal_procrustes, sqrtm
from scipy.spatial.distance import pdist, squareform
from scipy.stats import pearsonr, spearmanr

from theorylab.probes.similarity import (
    compare_rdms,
    feature_kernel_drift,
    gaussian_w2,
    gaussian_w2_from_samples,
    gram_cka,
    hsic,
    kernel_drift,
    linear_cka,
    procrustes_distance,
    psd_sqrt,
    rbf_cka,
    rbf_gram,
    rdm,
    rsa,
    stochastic_shape_distance,
)

# --- brute-force references (explicit matrices and sums, no code shared with the module) -----------------------------


def _hsic_biased(K, L):
    n = len(K)
    H = np.eye(n) - np.ones((n, n)) / n
    return np.trace(K @ H @ L @ H) / (n - 1) ** 2


def _hsic_song(K, L):
    """Song et al. 2012's unbiased estimator, written as in the paper."""
    n = len(K)
    Kt, Lt = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    one = np.ones(n)
    return (
        np.trace(Kt @ Lt)
        + (one @ Kt @ one) * (one @ Lt @ one) / ((n - 1) * (n - 2))
        - 2 / (n - 2) * one @ Kt @ Lt @ one
    ) / (n * (n - 3))


def _hsic_u_statistic(K, L):
    """HSIC = E[k_ij l_ij] + E[k_ij] E[l_qr] - 2 E[k_ij l_iq], each expectation an average over distinct indices."""
    n = len(K)
    idx = np.arange(n)
    ne = idx[:, None] != idx[None, :]
    d3 = ne[:, :, None] & ne[:, None, :] & ne[None, :, :]
    d4 = d3[:, :, :, None] & ne[:, None, None, :] & ne[None, :, None, :] & ne[None, None, :, :]
    t1 = (K * L)[ne].mean()
    t2 = (K[:, :, None, None] * L[None, None, :, :])[d4].mean()
    t3 = (K[:, :, None] * L[:, None, :])[d3].mean()  # k_ij l_iq, i, j, q distinct
    return t1 + t2 - 2 * t3


def _cka(K, L, hsic_fn=_hsic_biased):
    return hsic_fn(K, L) / np.sqrt(hsic_fn(K, K) * hsic_fn(L, L))


def _rbf(X, fraction=1.0, sigma=None):
    d = pdist(X)
    s = fraction * np.median(d) if sigma is None else sigma
    return np.exp(-(squareform(d) ** 2) / (2 * s**2))


def _orthogonal(rng, d):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def _related(seed, n=40, p=6, q=9, noise=0.7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    Y = np.tanh(X @ rng.standard_normal((p, q))) + noise * rng.standard_normal((n, q))
    return X, Y


# --- HSIC and CKA ----------------------------------------------------------------------------------------------------


def test_hsic_matches_centering_matrices_and_song_estimator():
    X, Y = _related(0, n=9)
    K, L = X @ X.T, _rbf(Y)
    assert hsic(K, L) == pytest.approx(_hsic_biased(K, L), rel=1e-12)
    song = _hsic_song(K, L)
    assert hsic(K, L, unbiased=True) == pytest.approx(song, rel=1e-10)
    assert song == pytest.approx(_hsic_u_statistic(K, L), rel=1e-10)  # the reference itself, checked once more
    with pytest.raises(ValueError, match="at least 4"):
        hsic(K[:3, :3], L[:3, :3], unbiased=True)


@pytest.mark.parametrize("n, p, q", [(40, 6, 9), (12, 30, 25)])  # features fewer than / more than inputs
def test_linear_cka_matches_brute_force(n, p, q):
    rng = np.random.default_rng(n + p)
    X = rng.standard_normal((n, p))
    Y = X @ rng.standard_normal((p, q)) + rng.standard_normal((n, q)) + 3.0  # an offset: centring must remove it
    K, L = X @ X.T, Y @ Y.T
    assert linear_cka(X, Y) == pytest.approx(_cka(K, L), rel=1e-10)
    assert linear_cka(X, Y, debiased=True) == pytest.approx(_cka(K, L, _hsic_song), rel=1e-9)
    assert gram_cka(K, L) == pytest.approx(_cka(K, L), rel=1e-10)
    assert gram_cka(K, L, debiased=True) == pytest.approx(_cka(K, L, _hsic_song), rel=1e-9)
    assert linear_cka(torch.tensor(X), torch.tensor(Y)) == pytest.approx(linear_cka(X, Y), rel=1e-12)
    assert linear_cka(X, X) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("fraction", [1.0, 0.4])
def test_rbf_cka_matches_brute_force(fraction):
    X, Y = _related(1, n=31)  # 465 pairs, an odd count; X[:29] below has 406, even: NumPy's median averages two
    K, L = _rbf(X, fraction), _rbf(Y, fraction)
    np.testing.assert_allclose(rbf_gram(X, median_fraction=fraction).numpy(), K, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(rbf_gram(X[:29], median_fraction=fraction).numpy(), _rbf(X[:29], fraction), rtol=1e-10)
    assert rbf_cka(X, Y, median_fraction=fraction) == pytest.approx(_cka(K, L), rel=1e-10)
    assert rbf_cka(X, Y, median_fraction=fraction, debiased=True) == pytest.approx(_cka(K, L, _hsic_song), rel=1e-9)
    assert rbf_cka(X, Y, sigma=2.5) == pytest.approx(_cka(_rbf(X, sigma=2.5), _rbf(Y, sigma=2.5)), rel=1e-10)


def test_linear_cka_invariances_and_a_map_it_is_not_invariant_to():
    X, Y = _related(2)
    rng = np.random.default_rng(20)
    base = linear_cka(X, Y)
    assert linear_cka(X @ _orthogonal(rng, X.shape[1]), Y) == pytest.approx(base, rel=1e-10)
    assert linear_cka(X, Y @ _orthogonal(rng, Y.shape[1])) == pytest.approx(base, rel=1e-10)
    assert linear_cka(7.5 * X, 0.01 * Y) == pytest.approx(base, rel=1e-10)
    assert linear_cka(X - 4.0, Y + rng.standard_normal(Y.shape[1])) == pytest.approx(base, rel=1e-10)
    perm = rng.permutation(len(X))
    assert linear_cka(X[perm], Y[perm]) == pytest.approx(base, rel=1e-10)
    assert linear_cka(X[perm], Y) < base - 0.3  # a permutation of one side only breaks the pairing
    # An invertible but anisotropic map (stretch one direction 20x) changes linear CKA.
    A = np.diag(np.r_[20.0, np.ones(X.shape[1] - 1)]) @ _orthogonal(rng, X.shape[1])
    assert abs(np.linalg.det(A)) > 1e-6
    assert abs(linear_cka(X @ A, Y) - base) > 0.05


def test_rbf_cka_invariant_to_orthogonal_maps_and_isotropic_scaling_with_median_bandwidth():
    X, Y = _related(3)
    rng = np.random.default_rng(30)
    base = rbf_cka(X, Y, median_fraction=0.5)
    assert rbf_cka(X @ _orthogonal(rng, X.shape[1]), 3.0 * Y, median_fraction=0.5) == pytest.approx(base, rel=1e-10)
    assert rbf_cka(0.2 * X, Y @ _orthogonal(rng, Y.shape[1]), median_fraction=0.5) == pytest.approx(base, rel=1e-10)
    # A fixed bandwidth is not scale-invariant: the control that the invariance above is the median rule's doing.
    assert abs(rbf_cka(X, Y, sigma=1.0) - rbf_cka(10.0 * X, Y, sigma=1.0)) > 0.05


def test_debiased_cka_is_near_zero_for_independent_representations_where_biased_is_not():
    rng = np.random.default_rng(4)
    X, Y = rng.standard_normal((200, 50)), rng.standard_normal((200, 50))
    biased, debiased = linear_cka(X, Y), linear_cka(X, Y, debiased=True)
    assert biased > 0.15  # ~ pq / sqrt((n p + p^2)(n q + q^2)) = 0.2 here
    assert abs(debiased) < 0.02
    assert abs(rbf_cka(X, Y, debiased=True)) < 0.02 < rbf_cka(X, Y)


# --- the constant-representation policy ------------------------------------------------------------------------------


def test_constant_representation_raises_naming_the_input():
    X, Y = _related(5, n=20)
    const = np.full((20, 4), 3.0)
    for f in (
        linear_cka,
        rbf_cka,
        lambda a, b: linear_cka(a, b, debiased=True),
        lambda a, b: rbf_cka(a, b, debiased=True),
        procrustes_distance,
    ):
        with pytest.raises(ValueError, match="^X .*0/0"):
            f(const, Y)
        with pytest.raises(ValueError, match="^Y .*0/0"):
            f(X, np.zeros((20, 3)))
    with pytest.raises(ValueError, match="^F1 .*0/0"):
        feature_kernel_drift(X, const)
    with pytest.raises(ValueError, match="^F0 .*0/0"):
        feature_kernel_drift(np.zeros((20, 3)), X, center=False)
    assert feature_kernel_drift(const, X, center=False) > 0  # uncentred, a constant kernel is a kernel
    with pytest.raises(ValueError, match="^K .*0/0"):
        gram_cka(np.ones((20, 20)), Y @ Y.T)
    with pytest.raises(ValueError, match="^K1 .*0/0"):
        kernel_drift(Y @ Y.T, np.full((20, 20), 2.0))
    with pytest.raises(ValueError, match="^Y .*0/0"):
        procrustes_distance(X, const, kind="euclidean")  # scaled to unit norm: 0/0
    # Unscaled Euclidean Procrustes is defined: the distance to a point is that input's norm after centring.
    Xc = X - X.mean(0)
    assert procrustes_distance(X, const, kind="euclidean", scale=False) == pytest.approx(np.linalg.norm(Xc))
    # Debiased CKA sees only the off-diagonal: orthogonal equal-norm rows (one-hot) carry no structure for it.
    with pytest.raises(ValueError, match="^X .*unbiased HSIC"):
        linear_cka(np.eye(20), Y, debiased=True)


def test_constant_columns_are_harmless():
    X, Y = _related(6)
    padded = np.c_[X, np.full(len(X), 5.0), np.zeros(len(X))]
    assert linear_cka(padded, Y) == pytest.approx(linear_cka(X, Y), rel=1e-12)
    assert rbf_cka(padded, Y) == pytest.approx(rbf_cka(X, Y), rel=1e-12)
    assert linear_cka(padded, Y, debiased=True) == pytest.approx(linear_cka(X, Y, debiased=True), rel=1e-10)
    assert procrustes_distance(padded, Y) == pytest.approx(procrustes_distance(X, Y), rel=1e-10)


def test_mismatched_inputs_raise():
    X, Y = _related(7)
    with pytest.raises(ValueError, match="same inputs"):
        linear_cka(X, Y[:-1])
    with pytest.raises(ValueError, match="same inputs"):
        kernel_drift(X @ X.T, Y[:-1] @ Y[:-1].T)


# --- RSA -------------------------------------------------------------------------------------------------------------


def test_rdm_matches_scipy_pdist():
    X, _ = _related(8, n=15)
    np.testing.assert_allclose(rdm(X).numpy(), squareform(pdist(X, "correlation")), atol=1e-12)
    np.testing.assert_allclose(rdm(X, "euclidean").numpy(), squareform(pdist(X)), atol=1e-12)
    with pytest.raises(ValueError, match=r"rows \[3\]"):
        rdm(np.r_[X[:3], np.full((1, X.shape[1]), 2.0), X[3:]])


def test_rsa_matches_scipy_correlations_of_upper_triangles():
    X, Y = _related(9, n=25)
    iu = np.triu_indices(25, 1)
    dx, dy = squareform(pdist(X, "correlation"))[iu], squareform(pdist(Y, "correlation"))[iu]
    assert rsa(X, Y) == pytest.approx(spearmanr(dx, dy).statistic, rel=1e-10)
    assert rsa(X, Y, method="pearson") == pytest.approx(pearsonr(dx, dy).statistic, rel=1e-10)
    ex, ey = pdist(X), pdist(Y)
    assert rsa(X, Y, metric="euclidean") == pytest.approx(spearmanr(ex, ey).statistic, rel=1e-10)
    assert rsa(X, X) == pytest.approx(1.0)
    # Ties (a coarse categorical model RDM) get average ranks, as scipy does.
    model = squareform((np.arange(25)[:, None] // 5 != np.arange(25)[None, :] // 5).astype(float), checks=False)
    assert compare_rdms(squareform(model), squareform(ex)) == pytest.approx(spearmanr(model, ex).statistic, rel=1e-10)
    with pytest.raises(ValueError, match="^D1: all dissimilarities"):
        compare_rdms(1 - np.eye(25), squareform(ex))


# --- Procrustes shape distance ---------------------------------------------------------------------------------------


def test_procrustes_matches_scipy_orthogonal_procrustes():
    X, Y = _related(10, p=5, q=5)
    for scale in (False, True):
        a, b = X - X.mean(0), Y - Y.mean(0)
        if scale:
            a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
        R, _ = orthogonal_procrustes(b, a)  # argmin_R ||b R - a||_F
        brute = np.linalg.norm(b @ R - a)
        assert procrustes_distance(X, Y, kind="euclidean", scale=scale) == pytest.approx(brute, rel=1e-10)
    a, b = X - X.mean(0), Y - Y.mean(0)
    nuclear = np.linalg.svd(a.T @ b, compute_uv=False).sum()
    angle = np.arccos(nuclear / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert procrustes_distance(X, Y) == pytest.approx(angle, rel=1e-10)


def test_procrustes_zero_pads_the_narrower_input():
    X, Y = _related(11, p=3, q=7)
    a, b = X - X.mean(0), Y - Y.mean(0)
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    R, _ = orthogonal_procrustes(b, np.c_[a, np.zeros((len(a), 4))])
    assert procrustes_distance(X, Y, kind="euclidean") == pytest.approx(
        np.linalg.norm(b @ R - np.c_[a, np.zeros((len(a), 4))]), rel=1e-10
    )
    assert procrustes_distance(X, Y) == pytest.approx(
        procrustes_distance(np.c_[X, np.zeros((len(X), 9))], Y), rel=1e-10
    )
    wide = np.random.default_rng(12).standard_normal((len(X), 100))  # more features than inputs: reduced by QR
    assert procrustes_distance(X, wide) == pytest.approx(procrustes_distance(wide, X), rel=1e-10)


@pytest.mark.parametrize("kind", ["angular", "euclidean"])
def test_procrustes_is_a_metric_invariant_to_orthogonal_maps(kind):
    rng = np.random.default_rng(13)
    n, worst = 12, np.inf
    for _ in range(50):
        A, B, C = (rng.standard_normal((n, int(rng.integers(2, 6)))) * rng.uniform(0.1, 10) for _ in range(3))
        B = B + 0.5 * np.c_[A, np.zeros((n, 5))][:, : B.shape[1]]  # some triples correlated, so distances vary
        dab, dbc, dac = (procrustes_distance(u, v, kind=kind) for u, v in ((A, B), (B, C), (A, C)))
        assert dab == pytest.approx(procrustes_distance(B, A, kind=kind), rel=1e-10)
        worst = min(worst, dab + dbc - dac)
        assert procrustes_distance(A, A, kind=kind) < 1e-7
        assert procrustes_distance(A @ _orthogonal(rng, A.shape[1]) + 3.0, A, kind=kind) < 1e-7
        assert procrustes_distance(A @ _orthogonal(rng, A.shape[1]), B, kind=kind) == pytest.approx(dab, rel=1e-9)
    assert worst >= -1e-10


# --- Gaussian W2 -----------------------------------------------------------------------------------------------------


def _w2_scipy(m1, S1, m2, S2):
    r = sqrtm(S2)
    cross = np.real(sqrtm(r @ S1 @ r))
    return np.sqrt(max(np.sum((m1 - m2) ** 2) + np.trace(S1 + S2 - 2 * cross), 0.0))


def _psd(rng, d, rank=None):
    G = rng.standard_normal((d, rank or d))
    return G @ G.T / d


def test_gaussian_w2_matches_scipy_sqrtm_and_the_1d_closed_form():
    rng = np.random.default_rng(14)
    for d in (1, 3, 6):
        m1, m2 = rng.standard_normal(d), rng.standard_normal(d)
        S1, S2 = _psd(rng, d) + 0.1 * np.eye(d), _psd(rng, d) + 0.1 * np.eye(d)
        w = gaussian_w2(m1, S1, m2, S2)
        assert w == pytest.approx(_w2_scipy(m1, S1, m2, S2), rel=1e-8)
        assert gaussian_w2(m1, S1, m2, S2, squared=True) == pytest.approx(w**2, rel=1e-12)
    assert gaussian_w2(1.0, 4.0, -2.0, 0.25) == pytest.approx(np.sqrt(3.0**2 + (2.0 - 0.5) ** 2), rel=1e-12)
    # Commuting covariances: the Bures term is sum (sqrt(a_i) - sqrt(b_i))^2.
    a, b = np.array([1.0, 4.0, 9.0]), np.array([4.0, 1.0, 0.0])
    assert gaussian_w2(np.zeros(3), np.diag(a), np.zeros(3), np.diag(b), squared=True) == pytest.approx(
        np.sum((np.sqrt(a) - np.sqrt(b)) ** 2), rel=1e-12
    )


def test_gaussian_w2_is_a_metric_on_psd_covariances():
    rng = np.random.default_rng(15)
    d, worst = 4, np.inf
    for _ in range(50):
        g = [(rng.standard_normal(d), _psd(rng, d, rank=int(rng.integers(1, d + 1)))) for _ in range(3)]
        dab, dbc, dac = (gaussian_w2(*g[i], *g[j]) for i, j in ((0, 1), (1, 2), (0, 2)))
        assert dab == pytest.approx(gaussian_w2(*g[1], *g[0]), rel=1e-7, abs=1e-7)
        assert gaussian_w2(*g[0], *g[0]) == 0.0  # exact on every CPU: a Gaussian's distance to itself
        worst = min(worst, dab + dbc - dac)
    assert worst >= -1e-7  # W2 of singular covariances is sqrt-sensitive to rounding: ~sqrt(d eps) ||S||^1/2 = 4e-8


def test_gaussian_w2_from_samples_and_input_checks():
    rng = np.random.default_rng(16)
    A = rng.standard_normal((300, 3))
    B = rng.standard_normal((200, 3)) @ np.diag([2.0, 1.0, 0.5]) + 1.0
    brute = _w2_scipy(A.mean(0), np.cov(A.T), B.mean(0), np.cov(B.T))
    assert gaussian_w2_from_samples(A, B) == pytest.approx(brute, rel=1e-8)
    assert gaussian_w2_from_samples(A[:, :1], B[:, :1]) == pytest.approx(
        np.hypot(A[:, 0].mean() - B[:, 0].mean(), A[:, 0].std(ddof=1) - B[:, 0].std(ddof=1)), rel=1e-10
    )
    S = _psd(rng, 3)
    np.testing.assert_allclose(psd_sqrt(S).numpy() @ psd_sqrt(S).numpy(), S, atol=1e-12)
    with pytest.raises(ValueError, match="S2 is not positive semi-definite"):
        gaussian_w2(np.zeros(2), np.eye(2), np.zeros(2), np.diag([1.0, -0.5]))
    with pytest.raises(ValueError, match="S1 is not symmetric"):
        gaussian_w2(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]), np.zeros(2), np.eye(2))


# --- kernel drift ----------------------------------------------------------------------------------------------------


def test_kernel_drift_matches_brute_force_and_is_scale_invariant():
    X, Y = _related(17, n=30)
    K0, K1 = _rbf(X), X @ X.T + 0.3 * Y @ Y.T
    H = np.eye(30) - 1 / 30
    A, B = H @ K0 @ H, H @ K1 @ H
    assert kernel_drift(K0, K1) == pytest.approx(1 - np.sum(A * B) / (np.linalg.norm(A) * np.linalg.norm(B)), rel=1e-10)
    assert kernel_drift(K0, K1, center=False) == pytest.approx(
        1 - np.trace(K0 @ K1) / (np.linalg.norm(K0) * np.linalg.norm(K1)), rel=1e-10
    )
    assert kernel_drift(K0, K0) == pytest.approx(0.0, abs=1e-12)
    assert kernel_drift(K0, 40.0 * K0) == pytest.approx(0.0, abs=1e-12)
    assert kernel_drift(0.3 * K0, 5.0 * K1) == pytest.approx(kernel_drift(K0, K1), rel=1e-10)
    assert kernel_drift(K0, K1) == pytest.approx(1 - gram_cka(K0, K1), rel=1e-10)


def test_feature_kernel_drift_equals_kernel_drift_of_linear_kernels():
    X, Y = _related(18, n=30, p=4, q=40)  # q > n takes the Gram path, p < n the covariance path
    for center in (True, False):
        assert feature_kernel_drift(X, Y, center=center) == pytest.approx(
            kernel_drift(X @ X.T, Y @ Y.T, center=center), rel=1e-10
        )
    assert feature_kernel_drift(X, Y) == pytest.approx(1 - linear_cka(X, Y), rel=1e-10)
    assert feature_kernel_drift(X, 3.0 * X) == pytest.approx(0.0, abs=1e-12)


# --- stochastic shape distance ---------------------------------------------------------------------------------------


def _stochastic(rng, n=8, k=3, full=False):
    mu = rng.standard_normal((n, k))
    if full:
        return mu, np.stack([_psd(rng, k) + 0.05 * np.eye(k) for _ in range(n)])
    return mu, rng.uniform(0.05, 2.0, (n, k))


def test_stochastic_shape_distance_with_zero_covariances_is_procrustes_over_sqrt_n():
    rng = np.random.default_rng(20)
    mu_a, mu_b = rng.standard_normal((10, 3)), rng.standard_normal((10, 5)) + 4.0
    d = stochastic_shape_distance(mu_a, np.zeros((10, 3)), mu_b, np.zeros((10, 5, 5)))
    expected = procrustes_distance(mu_a, mu_b, kind="euclidean", scale=False) / np.sqrt(10)
    assert d == pytest.approx(expected, abs=1e-8)


@pytest.mark.parametrize("full", [False, True])
def test_stochastic_shape_distance_is_invariant_to_rotating_one_network(full):
    rng = np.random.default_rng(21)
    mu, var = _stochastic(rng, k=4, full=full)
    Q = _orthogonal(rng, 4)
    if full:  # means rotated (and shifted, which centring removes), covariances Q S Q^T
        rotated = np.stack([Q @ s @ Q.T for s in var])
    else:  # one isotropic variance per input: Q s I Q^T = s I stays diagonal
        var = rotated = np.repeat(var[:, :1], 4, axis=1)
    assert stochastic_shape_distance(mu, var, mu @ Q.T + 2.0, rotated) <= 1e-8
    assert stochastic_shape_distance(mu, var, mu, var) <= 1e-8


def test_stochastic_objective_at_a_fixed_map_is_the_mean_gaussian_w2():
    rng = np.random.default_rng(22)
    for full in (False, True):
        (mu_a, var_a), (mu_b, var_b) = _stochastic(rng, full=full), _stochastic(rng, full=full)
        S_a, S_b = (v if full else np.stack([np.diag(x) for x in v]) for v in (var_a, var_b))
        ca, cb = mu_a - mu_a.mean(0), mu_b - mu_b.mean(0)
        Q = _orthogonal(rng, 3)
        for R in (np.eye(3), Q):
            brute = np.mean([_w2_scipy(ca[i], S_a[i], R @ cb[i], R @ S_b[i] @ R.T) ** 2 for i in range(len(ca))])
            ours = np.mean(
                [gaussian_w2(ca[i], S_a[i], R @ cb[i], R @ S_b[i] @ R.T, squared=True) for i in range(len(ca))]
            )
            d = stochastic_shape_distance(mu_a, var_a, mu_b, var_b, rotation=R)
            assert d**2 == pytest.approx(brute, rel=1e-8)
            assert d**2 == pytest.approx(ours, rel=1e-8)


def test_stochastic_shape_distance_minimises_monotonically():
    rng = np.random.default_rng(23)
    for full in (False, True):
        (mu_a, var_a), (mu_b, var_b) = _stochastic(rng, full=full), _stochastic(rng, full=full)
        var_b = var_b * 3.0  # covariances matter as much as the means
        d, trace = stochastic_shape_distance(mu_a, var_a, mu_b, var_b, return_trace=True)
        assert d == pytest.approx(np.sqrt(trace[-1]), rel=1e-12)
        assert all(later <= earlier for earlier, later in zip(trace, trace[1:], strict=False))
        for R in [np.eye(3)] + [_orthogonal(rng, 3) for _ in range(5)]:
            assert d <= stochastic_shape_distance(mu_a, var_a, mu_b, var_b, rotation=R) + 1e-12
    with pytest.raises(ValueError, match="var_b holds negative variances"):
        stochastic_shape_distance(mu_a, np.ones((8, 3)), mu_b, -np.ones((8, 3)))
    with pytest.raises(ValueError, match="same inputs"):
        stochastic_shape_distance(mu_a, np.ones((8, 3)), mu_b[:5], np.ones((5, 3)))


def test_stochastic_shape_distance_is_a_metric():
    rng = np.random.default_rng(24)
    worst = np.inf
    for _ in range(10):
        reps = [_stochastic(rng, n=6, k=int(rng.integers(2, 4)), full=bool(rng.integers(2))) for _ in range(3)]
        dab, dbc, dac = (stochastic_shape_distance(*reps[i], *reps[j]) for i, j in ((0, 1), (1, 2), (0, 2)))
        assert dab == pytest.approx(stochastic_shape_distance(*reps[1], *reps[0]), rel=1e-9)
        assert stochastic_shape_distance(*reps[0], *reps[0]) <= 1e-8
        worst = min(worst, (dab + dbc - dac) / dac)
    assert worst >= -1e-6
