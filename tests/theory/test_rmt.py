"""theorylab.theory.rmt against independent computations: brentq roots, limits, and Monte Carlo
over explicitly sampled data sets (not the Wishart sampler the study uses)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from theorylab.theory import rmt

LAM = 1.0 / np.arange(1, 201)


def _brentq_kappa(s2: float, lam: np.ndarray, n: float) -> float:
    g = lambda k: k * (1 - rmt.df1(k, lam) / n) - s2  # noqa: E731
    lo = max(s2, rmt.kappa0(lam, n) * (1 + 1e-12)) if s2 > 0 else rmt.kappa0(lam, n)
    return brentq(g, lo * (1 - 1e-12), s2 + lam.sum() / n, xtol=1e-300, rtol=1e-13)


@pytest.mark.parametrize("n", [50, 100, 200, 400, 800, 5000])
def test_solve_kappa_matches_brentq(n):
    grid = np.logspace(-12, 6, 37)
    ours = rmt.solve_kappa(grid, LAM, n)
    ref = np.array([_brentq_kappa(s, LAM, n) for s in grid])
    np.testing.assert_allclose(ours, ref, rtol=1e-10, err_msg=f"n={n}")


def test_fixed_point_residual_and_bounds():
    grid = np.logspace(-10, 4, 50)
    for n in (100, 200, 400):
        k = rmt.solve_kappa(grid, LAM, n)
        residual = k - grid - k / n * rmt.df1(k, LAM)
        assert np.all(np.abs(residual) <= 1e-10 * k), (n, residual.max())
        assert np.all(k >= grid)
        assert np.all(np.diff(k) > 0)  # kappa increases with sigma2
        assert np.all(np.diff(k / grid) < 0)  # kappa/sigma2 decreases with sigma2


def test_large_n_limit_is_sigma2():
    grid = np.logspace(-6, 2, 9)
    np.testing.assert_allclose(rmt.solve_kappa(grid, LAM, 1e12), grid, rtol=1e-6)


def test_kappa_increases_as_n_decreases():
    ks = [float(rmt.solve_kappa(1e-2, LAM, n)) for n in (1000, 400, 200, 100, 50)]
    assert np.all(np.diff(ks) > 0)


def test_small_sigma_limits():
    # gamma = 1/2: kappa/sigma2 -> 1/(1 - gamma) = 2 as sigma -> 0
    assert abs(float(rmt.solve_kappa(1e-9, LAM, 400)) / 1e-9 - 2.0) < 1e-5
    # gamma = 2: kappa(0+) = kappa0 with df1(kappa0) = n
    k0 = brentq(lambda k: rmt.df1(k, LAM) - 100, 1e-10, 10.0, xtol=1e-300, rtol=1e-14)
    assert abs(float(rmt.solve_kappa(1e-14, LAM, 100)) - k0) / k0 < 1e-9
    assert rmt.kappa0(LAM, 400) == 0.0
    assert float(rmt.solve_kappa(0.0, LAM, 400)) == 0.0


def test_wrong_trace_normalisation_would_be_caught():
    # A d-normalised trace (df1/d instead of df1) gives kappa/sigma2 -> 1/(1 - 1/n): far from 2.
    k = float(rmt.solve_kappa(1e-6, LAM, 400))
    assert abs(k / 1e-6 - 2.0) < 1e-3
    wrong = brentq(lambda k: k * (1 - rmt.df1(k, LAM) / LAM.size / 400) - 1e-6, 1e-6, 1.0)
    assert abs(wrong / 1e-6 - 2.0) > 0.5


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(min_value=1e-4, max_value=10.0), min_size=2, max_size=40),
    st.floats(min_value=2.0, max_value=500.0),
    st.floats(min_value=1e-8, max_value=1e3),
)
def test_fixed_point_holds_for_any_spectrum(spectrum, n, s2):
    lam = np.asarray(spectrum)
    k = float(rmt.solve_kappa(s2, lam, n))
    assert k >= s2 * (1 - 1e-12)
    assert abs(k - s2 - k / n * float(rmt.df1(k, lam))) <= 1e-9 * k
    # Permuting the spectrum changes nothing.
    assert float(rmt.solve_kappa(s2, lam[::-1], n)) == pytest.approx(k, rel=1e-12)


@pytest.mark.parametrize("bad", [{"sigma2": -1.0}, {"sigma2": float("nan")}, {"n": 0}])
def test_invalid_inputs_raise(bad):
    kwargs = {"sigma2": 1e-2, "n": 100, **bad}
    with pytest.raises(ValueError):
        rmt.solve_kappa(kwargs["sigma2"], LAM, kwargs["n"])


# ---------------------------------------------------------------------------------------------
# Monte Carlo with explicit Gaussian samples
# ---------------------------------------------------------------------------------------------

D, N, DRAWS = 60, 90, 3000
LAM_S = np.arange(1, D + 1, dtype=float) ** -1.0


@pytest.fixture(scope="module")
def spectra():
    rng = np.random.default_rng(123)
    x = rng.standard_normal((DRAWS, N, D)) * np.sqrt(LAM_S)
    cov = np.einsum("bni,bnj->bij", x, x) / N
    w, q = np.linalg.eigh(cov)
    return np.clip(w, 0, None), q


def test_mean_equivalent_vs_monte_carlo(spectra):
    w, q = spectra
    for s2 in (1e-3, 1e-2, 1e-1):
        sim = np.einsum("bij,bj->bi", q * q, w / (w + s2))
        mean, se = sim.mean(0), sim.std(0) / np.sqrt(DRAWS)
        theory = rmt.denoiser_mean_equiv(s2, LAM_S, N)
        err = np.abs(mean - theory)
        # 1/d finite-size corrections at d = 60 are ~0.005; Monte Carlo adds 4 SE.
        assert err.max() <= 0.006 + 4 * se.max(), (
            f"sigma2={s2}: theory {theory[err.argmax()]:.4f} vs MC {mean[err.argmax()]:.4f}"
        )
        naive = LAM_S / (LAM_S + s2)
        if s2 <= 1e-2:
            assert np.abs(mean - naive)[-10:].max() > 5 * err[-10:].max()


def test_variance_equivalent_vs_monte_carlo(spectra):
    w, q = spectra
    rng = np.random.default_rng(5)
    v = rng.standard_normal((4, D))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    x = rng.standard_normal((4, D)) * np.sqrt(LAM_S)
    v[0] = x[0] / np.linalg.norm(x[0])  # an aligned pair: the cross term doubles the variance
    s2 = 1e-2
    vals = np.einsum("bvi,bi,bxi->bvx", v @ q, w / (w + s2), x @ q)  # v^T Q g(w) Q^T x
    sim = vals.var(0, ddof=1)
    theory = rmt.denoiser_var_equiv(v, x, s2, LAM_S, N)
    ratio = sim / theory
    se = np.sqrt(2 / (DRAWS - 1))
    assert np.all(np.abs(ratio - 1) < 4 * se + 0.03), f"ratios {ratio.round(3)}"
    # Without the cross term the aligned pair is off by ~2x: the check can fail.
    scaling, wts = rmt.variance_factors(s2, LAM_S, N)
    factorised = scaling * (v[0] ** 2 * wts).sum() * (x[0] ** 2 * wts).sum()
    assert sim[0, 0] / factorised > 1.5


def test_sqrt_equivalent_vs_monte_carlo(spectra):
    w, q = spectra
    sim = np.einsum("bij,bj->bi", q * q, np.sqrt(w))
    theory = rmt.sqrt_equiv(LAM_S, N)
    assert np.abs(sim.mean(0) - theory).max() < 0.005
    assert np.abs(rmt.sqrt_equiv(LAM_S, N, 100) - rmt.sqrt_equiv(LAM_S, N, 200)).max() < 1e-8
    for sigma in (0.0, 0.5):
        coarse, fine = (
            rmt.sampling_map_mean_equiv(LAM_S, N, sigma, 80.0, 400),
            rmt.sampling_map_mean_equiv(LAM_S, N, sigma, 80.0, 800),
        )
        assert np.abs(coarse / fine - 1).max() < 1e-8
    # Population sqrt is a different (wrong) answer at this n/d.
    assert np.abs(sim.mean(0) - np.sqrt(LAM_S)).max() > 0.02


@pytest.mark.parametrize("sigma", [0.0, 0.3, 1.0])
def test_sampling_map_vs_monte_carlo(spectra, sigma):
    w, q = spectra
    sigma_T = 80.0
    f = np.sqrt((w + sigma**2) / (w + sigma_T**2))
    sim_mean = np.einsum("bij,bj->bi", q * q, f).mean(0)
    eq = rmt.sampling_map_mean_equiv(LAM_S, N, sigma, sigma_T)
    assert np.max(np.abs(sim_mean - eq) / eq) < 0.03
    u = sigma_T * np.random.default_rng(9).standard_normal((3, D))
    out = np.einsum("bmi,bi,bdi->bmd", u @ q, f, q)  # Q f(w) Q^T u
    sim_var = out.var(0, ddof=1).sum(-1)
    theory = rmt.sampling_map_var(u, LAM_S, N, sigma, sigma_T).sum(-1)
    np.testing.assert_allclose(sim_var, theory, rtol=0.1, err_msg="total variance of F u over data sets")


def test_sampling_map_at_sigma_T_is_identity():
    np.testing.assert_allclose(rmt.sampling_map_mean_equiv(LAM_S, N, 79.999999, 80.0), 1.0, atol=1e-6)


def test_seed_disagreement_vs_monte_carlo_with_estimated_means():
    rng = np.random.default_rng(11)
    d, n, pairs = 30, 80, 1500
    lam = np.arange(1, d + 1, dtype=float) ** -1.5
    mu = rng.standard_normal(d) * 0.3
    z = rng.standard_normal((5, d))
    sigma_T = 80.0

    def sample_map(xs):
        m = xs.mean(1, keepdims=True)
        c = xs - m
        cov = np.einsum("bni,bnj->bij", c, c) / (n - 1)
        ww, qq = np.linalg.eigh(cov)
        f = np.sqrt(np.clip(ww, 0, None) / (np.clip(ww, 0, None) + sigma_T**2))
        centered = sigma_T * z[None] - m  # (b, m, d)
        return m + np.einsum("bmi,bi,bdi->bmd", centered @ qq, f, qq)

    xa = mu + rng.standard_normal((pairs, n, d)) * np.sqrt(lam)
    xb = mu + rng.standard_normal((pairs, n, d)) * np.sqrt(lam)
    sim = ((sample_map(xa) - sample_map(xb)) ** 2).mean(-1).mean(0)
    pred = rmt.seed_disagreement(z, lam, n, mu, sigma_T)
    np.testing.assert_allclose(pred, sim, rtol=0.1)
    assert np.argsort(pred).tolist() == np.argsort(sim).tolist() or abs(np.corrcoef(pred, sim)[0, 1]) > 0.9


def test_kappa_grid_and_limit_checks():
    lam = np.arange(1, 51, dtype=np.float64) ** -1.0
    grid = np.logspace(-6, 1, 5)
    t = rmt.kappa_grid(lam, [25, 100], grid)
    assert list(t["n"]) == [25] * 5 + [100] * 5 and np.allclose(t["gamma"], [2.0] * 5 + [0.5] * 5)
    assert np.array_equal(t["kappa"][5:], rmt.solve_kappa(grid, lam, 100))
    assert np.allclose(t["ratio"], t["kappa"] / t["sigma2"])
    lim = rmt.kappa_limit_checks(lam)
    assert lim["asymptote_gamma_half"] == 2.0 and lim["tiny_sigma2"] == pytest.approx(2e-4 / 50)
    assert abs(lim["ratio_gamma_half_tiny"] - 2.0) < 1e-3
    assert lim["kappa_gamma_two_tiny"] == pytest.approx(lim["kappa0_gamma_two_brentq"], rel=1e-3)
    assert float(rmt.df1(lim["kappa0_gamma_two_brentq"], lam)) == pytest.approx(25, rel=1e-10)


def test_seed_disagreement_from_moments_is_rotation_invariant():
    rng = np.random.default_rng(0)
    lam = np.arange(1, 9, dtype=np.float64) ** -1.5
    mu, z = rng.standard_normal(8), rng.standard_normal((4, 8))
    diag = rmt.seed_disagreement_from_moments(z, mu, np.diag(lam), 30)
    order = np.argsort(lam)  # eigh's ascending order
    assert np.allclose(diag, rmt.seed_disagreement(z[:, order], lam[order], 30, mu[order]), rtol=1e-12)
    q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    rotated = rmt.seed_disagreement_from_moments(z @ q.T, q @ mu, q @ np.diag(lam) @ q.T, 30)
    assert np.allclose(rotated, diag, rtol=1e-8)
