"""Information between Gaussian-valued channels (Murphy, Dillavou & Bassett 2025) against brute force,
quadrature, discrete ground truth, reparametrisation invariance and Monte Carlo mutual information."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.integrate import quad
from scipy.special import logsumexp
from scipy.stats import norm

from theorylab.theory.info import (
    bhattacharyya,
    bhattacharyya_coefficient,
    bhattacharyya_distance,
    fingerprint,
    information_terms,
    kl_divergence,
    kl_information,
    kt_information,
    nmi_vi,
)


def random_channel(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(0.0, 1.5, (n, k)), rng.uniform(0.2, 2.0, (n, k))


def test_bc_matches_full_matrix_double_loop():
    rng = np.random.default_rng(0)
    mu, var = random_channel(rng, 6, 3)
    brute = np.empty((6, 6))
    for i in range(6):
        for j in range(6):
            si, sj = np.diag(var[i]), np.diag(var[j])
            sbar = (si + sj) / 2
            dmu = mu[i] - mu[j]
            d = dmu @ np.linalg.inv(sbar) @ dmu / 8 + 0.5 * np.log(
                np.linalg.det(sbar) / np.sqrt(np.linalg.det(si) * np.linalg.det(sj))
            )
            brute[i, j] = np.exp(-d)
    bc = bhattacharyya_coefficient(mu, var)
    assert bc.dtype == torch.float64 and bc.shape == (6, 6)
    np.testing.assert_allclose(bc.numpy(), brute, rtol=1e-12, atol=0)
    assert torch.equal(torch.diagonal(bc), torch.ones(6, dtype=torch.float64))
    assert torch.equal(bhattacharyya(mu, var), bc) and torch.equal(fingerprint(mu, var), bc)
    np.testing.assert_allclose(bhattacharyya_distance(mu, var).numpy(), -np.log(brute), atol=1e-12)


@pytest.mark.parametrize("m1,s1,m2,s2", [(0.0, 1.0, 1.0, 1.0), (-0.5, 0.4, 1.2, 2.5), (3.0, 1.7, 2.9, 0.3)])
def test_bc_and_kl_1d_match_quadrature(m1, s1, m2, s2):
    integral, _ = quad(
        lambda u: math.sqrt(norm.pdf(u, m1, s1) * norm.pdf(u, m2, s2)), -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12
    )
    bc = bhattacharyya_coefficient([[m1], [m2]], [[s1**2], [s2**2]])
    assert float(bc[0, 1]) == pytest.approx(integral, rel=1e-9)
    assert float(bc[1, 0]) == pytest.approx(integral, rel=1e-9)
    # KL(p_0 || p_1) = ∫ p_0 log(p_0 / p_1); the matrix is not symmetric, row = first argument.
    kl01, _ = quad(
        lambda u: norm.pdf(u, m1, s1) * (norm.logpdf(u, m1, s1) - norm.logpdf(u, m2, s2)),
        -np.inf,
        np.inf,
        epsabs=1e-13,
        epsrel=1e-12,
    )
    kl = kl_divergence([[m1], [m2]], [[s1**2], [s2**2]])
    assert float(kl[0, 1]) == pytest.approx(kl01, rel=1e-8)


def test_channel_against_itself_has_nmi_one_and_vi_zero():
    rng = np.random.default_rng(1)
    bc = fingerprint(*random_channel(rng, 30, 4))
    nmi, vi = nmi_vi(bc, bc)
    assert nmi == pytest.approx(1.0, abs=1e-9)
    assert vi == pytest.approx(0.0, abs=1e-9)


def test_discrete_partitions_give_exact_entropies():
    # With BC_ij = 1 when x_i, x_j share a value and exp(-100^2/8) = e^-1250 ~ 0 otherwise, row i of
    # the kernel averages to n(value of x_i)/N, so I = -mean_i log2 p(value_i) = H(partition) exactly;
    # BC**2 is the same 0/1 matrix so I11 = I, and BC_a * BC_b indicates a shared (a, b) pair, so
    # I12 = H(a, b). Hence NMI = I(a;b)/sqrt(H(a)H(b)) and VI = 2H(a,b) - H(a) - H(b). With 20 probes
    # per (a, b) cell: H(a) = 2, H(a, b) = 4 (independent) -> NMI 0, VI 4; and a mod 2 is a function of a:
    # H(a mod 2) = 1, H(a, a mod 2) = H(a) = 2 -> NMI = (2 + 1 - 2)/sqrt(2 * 1) = 1/sqrt(2), VI = 4 - 3 = 1.
    a, b = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    a, b = np.repeat(a.ravel(), 20), np.repeat(b.ravel(), 20)
    assert len(a) == 320

    def channel(values):
        return fingerprint(100.0 * values[:, None].astype(float), np.ones((len(values), 1)))

    bc_a, bc_b, bc_par = channel(a), channel(b), channel(a % 2)
    assert kt_information(bc_a) == pytest.approx(2.0, abs=1e-6)
    assert kt_information(bc_par) == pytest.approx(1.0, abs=1e-6)
    nmi, vi = nmi_vi(bc_a, bc_b)
    assert nmi == pytest.approx(0.0, abs=1e-6) and vi == pytest.approx(4.0, abs=1e-6)
    nmi, vi = nmi_vi(bc_a, bc_par)
    assert nmi == pytest.approx(1 / math.sqrt(2), abs=1e-6) and vi == pytest.approx(1.0, abs=1e-6)
    terms = information_terms(bc_a, bc_par)
    assert terms["I12"] == pytest.approx(2.0, abs=1e-6) and terms["I22"] == pytest.approx(1.0, abs=1e-6)


def test_permutation_and_affine_reparametrisation_leave_everything_unchanged():
    rng = np.random.default_rng(2)
    n, k = 25, 5
    mu1, var1 = random_channel(rng, n, k)
    mu2, var2 = random_channel(rng, n, 3)
    perm = rng.permutation(k)
    s = rng.uniform(0.3, 4.0, k) * rng.choice([-1.0, 1.0], k)
    t = rng.normal(0.0, 10.0, k)
    mu1r, var1r = (s * mu1 + t)[:, perm], (s**2 * var1)[:, perm]  # sigma -> |s| sigma
    bc1, bc1r, bc2 = fingerprint(mu1, var1), fingerprint(mu1r, var1r), fingerprint(mu2, var2)
    torch.testing.assert_close(bc1r, bc1, rtol=0, atol=1e-9)
    assert kt_information(bc1r) == pytest.approx(kt_information(bc1), abs=1e-9)
    np.testing.assert_allclose(nmi_vi(bc1r, bc2), nmi_vi(bc1, bc2), rtol=0, atol=1e-9)
    assert 0.0 < nmi_vi(bc1, bc2)[0] < 1.0  # a generic pair is neither independent nor identical


def test_information_decreases_as_noise_grows_and_is_at_most_log2_n():
    rng = np.random.default_rng(3)
    n = 40
    mu, var = random_channel(rng, n, 2)
    infos = [kt_information(fingerprint(mu, c**2 * var)) for c in (1.0, 1.5, 2.0, 4.0)]
    assert all(later < earlier for earlier, later in zip(infos, infos[1:]))
    assert all(0.0 <= i <= math.log2(n) for i in infos)
    assert kt_information(fingerprint(1e3 * mu, var)) == pytest.approx(math.log2(n), abs=1e-9)


def test_bhattacharyya_and_kl_estimates_bracket_monte_carlo_mutual_information():
    # Kolchinsky & Tracey (Entropy 2017, Sec. 4): the pairwise estimate with the Chernoff-1/2
    # (Bhattacharyya) distance lower-bounds I(U; X) and the one with KL upper-bounds it.
    rng = np.random.default_rng(4)
    mu = np.array([0.0, 1.0, 2.0, 3.5, 5.0, 5.5, 7.0, 9.0])
    var = rng.uniform(0.3, 2.0, 8)
    m = 60_000
    x = rng.integers(0, 8, m)
    u = rng.normal(mu[x], np.sqrt(var[x]))
    log_p = norm.logpdf(u[:, None], mu[None, :], np.sqrt(var)[None, :])  # log p(u_s | x = j), (m, 8)
    ratio = (log_p[np.arange(m), x] - (logsumexp(log_p, axis=1) - math.log(8))) / math.log(2)
    i_mc, se = ratio.mean(), ratio.std() / math.sqrt(m)
    assert se < 0.01
    i_bc = kt_information(fingerprint(mu[:, None], var[:, None]))
    i_kl = kl_information(mu[:, None], var[:, None])
    assert i_bc <= i_mc + 4 * se
    assert i_mc <= i_kl + 4 * se


def test_kt_information_accepts_log_kernel():
    rng = np.random.default_rng(5)
    mu, var = random_channel(rng, 12, 2)
    assert kt_information(bhattacharyya_distance(mu, var).neg(), log=True) == pytest.approx(
        kt_information(fingerprint(mu, var)), abs=1e-12
    )


@pytest.mark.parametrize(
    "mu,var,match",
    [
        (np.zeros(4), np.ones(4), "2-d"),
        (np.zeros((4, 2)), np.ones((4, 3)), "must equal"),
        (np.zeros((4, 2)), np.r_[np.ones((3, 2)), [[1.0, 0.0]]], "> 0"),
        (np.zeros((4, 2)), -np.ones((4, 2)), "> 0"),
    ],
)
def test_invalid_channels_raise(mu, var, match):
    with pytest.raises(ValueError, match=match):
        fingerprint(mu, var)


def test_invalid_fingerprints_raise():
    with pytest.raises(ValueError, match="square"):
        kt_information(torch.ones(3, 4))
    with pytest.raises(ValueError, match="probe set"):
        nmi_vi(torch.eye(3), torch.eye(4))
    with pytest.raises(ValueError, match=">= 0"):
        kt_information(-torch.eye(3))


def test_channel_matches_nmi_vi_and_information():
    from theorylab.theory.info import Channel, bhattacharyya_coefficient, kt_information, nmi_vi

    g = torch.Generator().manual_seed(3)
    mu1, mu2 = (torch.randn(40, k, generator=g, dtype=torch.float64) for k in (3, 2))
    var1, var2 = (torch.rand(40, k, generator=g, dtype=torch.float64) + 0.1 for k in (3, 2))
    a, b = Channel(mu1, var1), Channel(mu2, var2)
    bc1, bc2 = bhattacharyya_coefficient(mu1, var1), bhattacharyya_coefficient(mu2, var2)
    assert a.I == pytest.approx(kt_information(bc1), abs=1e-12)
    assert a.nmi_vi(b) == pytest.approx(nmi_vi(bc1, bc2), abs=1e-12)
    with pytest.raises(ValueError, match="probe set"):
        a.nmi_vi(Channel(mu2[:10], var2[:10]))
