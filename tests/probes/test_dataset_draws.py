"""Monte Carlo over data-set draws against brute-force matrix functions of the same draws."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from theorylab.data.gaussian import wishart_sample_covariance
from theorylab.probes.dataset_draws import bilinear_denoiser_draws, chunk_sizes, spectral_draws

LAM = np.arange(1, 7, dtype=np.float64) ** -1.0


def test_chunk_sizes():
    assert chunk_sizes(10, 4) == [4, 4, 2] and chunk_sizes(8, 4) == [4, 4] and sum(chunk_sizes(1001, 250)) == 1001


def _covariances(n, draws, chunk, seed):
    rng = np.random.default_rng(seed)
    return np.concatenate([wishart_sample_covariance(LAM, n, size, rng).numpy() for size in chunk_sizes(draws, chunk)])


def test_spectral_draws_match_direct_matrix_functions():
    s2, sigma_T, u = np.array([1e-2, 0.3]), 5.0, np.random.default_rng(3).standard_normal((2, LAM.size))
    sim = spectral_draws(LAM, 12, 9, 4, s2, (0.0, 0.5), sigma_T, u, np.random.default_rng(7))
    covs = _covariances(12, 9, 4, 7)  # the same draws, from the same stream
    eye = np.eye(LAM.size)
    gains = np.array([[np.diag(c @ np.linalg.inv(c + s * eye)) for s in s2] for c in covs])
    np.testing.assert_allclose(sim["gain"].mean, gains.mean(0), atol=1e-10)
    np.testing.assert_allclose(sim["gain"].se, gains.std(0, ddof=1) / 3, atol=1e-10)
    roots = np.array([np.diag(scipy.linalg.sqrtm(c).real) for c in covs])
    np.testing.assert_allclose(sim["sqrt"].mean, roots.mean(0), atol=1e-8)
    for s in (0.0, 0.5):
        maps = [
            scipy.linalg.sqrtm(c + s * s * eye).real @ np.linalg.inv(scipy.linalg.sqrtm(c + sigma_T**2 * eye).real)
            for c in covs
        ]
        np.testing.assert_allclose(sim["map_mean"][s].mean, np.mean([np.diag(f) for f in maps], 0), atol=1e-8)
        np.testing.assert_allclose(sim["map_outputs"][s], np.array([u @ f.T for f in maps]), atol=1e-8)


def test_bilinear_draws_match_a_direct_solve():
    v, x = np.random.default_rng(4).standard_normal((2, 3, LAM.size))
    values = bilinear_denoiser_draws(LAM, 10, 7, 3, 0.05, v, x, np.random.default_rng(5))
    covs = _covariances(10, 7, 3, 5)
    eye = np.eye(LAM.size)
    direct = np.array(
        [v @ (c @ np.linalg.inv(c + 0.05 * eye)) @ x.T for c in covs]
    )  # v^T D(x), D = Sigma_hat (Sigma_hat + s2)^-1
    assert values.shape == (7, 3, 3)
    np.testing.assert_allclose(values, direct, atol=1e-10)
