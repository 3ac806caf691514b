from __future__ import annotations

import numpy as np
import torch
from scipy.linalg import sqrtm

from theorylab.nn import LinearDenoiser, linear_sampling_map


def _random_gaussian(d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(d, d, generator=g, dtype=torch.float64)
    cov = a @ a.T / d + 0.05 * torch.eye(d, dtype=torch.float64)
    mean = torch.randn(d, generator=g, dtype=torch.float64)
    return mean, cov, g


def test_linear_denoiser_matches_matrix_formula():
    mean, cov, g = _random_gaussian()
    den = LinearDenoiser(mean, cov)
    x = torch.randn(5, 6, generator=g, dtype=torch.float64)
    for sigma in (0.01, 0.5, 3.0):
        ref = mean + (x - mean) @ torch.linalg.solve(cov + sigma**2 * torch.eye(6, dtype=torch.float64), cov).T
        torch.testing.assert_close(den(x, sigma), ref)


def test_linear_denoiser_is_the_gaussian_posterior_mean():
    """For x0 ~ N(mu, Sigma) and x = x0 + sigma eps, E[x0 | x] is the linear denoiser: regress by Monte Carlo."""
    mean, cov, g = _random_gaussian(d=3, seed=1)
    den = LinearDenoiser(mean, cov)
    chol = torch.linalg.cholesky(cov)
    x0 = mean + torch.randn(400_000, 3, generator=g, dtype=torch.float64) @ chol.T
    sigma = 0.7
    x = x0 + sigma * torch.randn(400_000, 3, generator=g, dtype=torch.float64)
    design = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1)
    coef = torch.linalg.lstsq(design, x0).solution  # best affine predictor of x0 from x
    probe = torch.randn(4, 3, generator=g, dtype=torch.float64)
    fitted = torch.cat([probe, torch.ones(4, 1, dtype=probe.dtype)], 1) @ coef
    torch.testing.assert_close(fitted, den(probe, sigma), atol=0.02, rtol=0.0)


def test_fit_conventions():
    x = torch.randn(50, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    est = LinearDenoiser.fit(x)
    np.testing.assert_allclose(est.mean.numpy(), x.mean(0).numpy())
    cov = est.evecs @ torch.diag(est.evals) @ est.evecs.T
    np.testing.assert_allclose(cov.numpy(), np.cov(x.numpy(), rowvar=False), atol=1e-12)
    known = LinearDenoiser.fit(x, known_mean=torch.zeros(4, dtype=torch.float64))
    cov_k = known.evecs @ torch.diag(known.evals) @ known.evecs.T
    np.testing.assert_allclose(cov_k.numpy(), (x.T @ x / 50).numpy(), atol=1e-12)


def test_sampling_map_closed_form_and_limits():
    mean, cov, g = _random_gaussian(seed=3)
    den = LinearDenoiser(mean, cov)
    x_T = 80 * torch.randn(4, 6, generator=g, dtype=torch.float64)
    c = cov.numpy()
    ref_mat = np.real(sqrtm(c + 0.2**2 * np.eye(6)) @ np.linalg.inv(sqrtm(c + 80.0**2 * np.eye(6))))
    ref = mean.numpy() + (x_T.numpy() - mean.numpy()) @ ref_mat.T
    np.testing.assert_allclose(linear_sampling_map(den, x_T, 80.0, 0.2).numpy(), ref, atol=1e-9)
    torch.testing.assert_close(linear_sampling_map(den, x_T, 5.0, 5.0), x_T)  # sigma = sigma_T: identity
    # The PF-ODE pushes N(mu, Sigma + sigma_T^2) to N(mu, Sigma): check the output covariance.
    chol = torch.linalg.cholesky(cov + 80.0**2 * torch.eye(6, dtype=torch.float64))
    xs = mean + torch.randn(200_000, 6, generator=g, dtype=torch.float64) @ chol.T
    out = linear_sampling_map(den, xs, 80.0, 0.0)
    np.testing.assert_allclose(np.cov(out.numpy(), rowvar=False), c, atol=0.03)


def test_linear_samples_against_matrix_square_roots():
    from theorylab.nn.denoisers import linear_samples

    rng = np.random.default_rng(0)
    train = rng.standard_normal((30, 4)) @ rng.standard_normal((4, 4)) + 1.0
    x_T = torch.as_tensor(rng.standard_normal((5, 4)) * 80.0)
    mu, cov = train.mean(0), np.cov(train, rowvar=False)  # estimated mean, 1/(n-1)
    F = sqrtm(cov).real @ np.linalg.inv(sqrtm(cov + 80.0**2 * np.eye(4)).real)
    expected = mu + (x_T.numpy() - mu) @ F.T
    assert np.allclose(linear_samples(train, x_T, 80.0).numpy(), expected, atol=1e-8)
