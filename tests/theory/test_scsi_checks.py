"""The oracle fixed-point checks and the covariance ellipse of the linear-Gaussian SCSI case."""

from __future__ import annotations

import numpy as np

from theorylab.theory.scsi_gaussian import covariance_ellipse, oracle_fixed_point_checks


def test_oracle_is_a_fixed_point_and_the_identity_is_not():
    rng = np.random.default_rng(0)
    mean, cov, sigma = np.array([1.0, -0.5]), np.array([[1.0, 0.5], [0.5, 0.5]]), 0.6
    y = mean + rng.standard_normal((50_000, 2)) @ np.linalg.cholesky(cov).T + sigma * rng.standard_normal((50_000, 2))
    rows = oracle_fixed_point_checks(y, sigma, lambda a: a + sigma * rng.standard_normal(a.shape), mean, cov)
    oracle, identity = rows
    assert oracle["map"] == "oracle" and identity["map"] == "identity" and oracle["samples"] == 50_000
    assert oracle["cov_error"] < 0.03 and oracle["residual"] < 0.03 and oracle["mean_error"] < 0.02
    assert identity["residual"] > 0.15 and identity["cov_error"] > 0.3


def test_covariance_ellipse_is_the_two_sigma_level_set():
    cov, mean = np.array([[2.0, 0.3], [0.3, 0.5]]), np.array([1.0, 2.0])
    pts = covariance_ellipse(cov, mean, scale=2.0, points=50)
    d = pts - mean[:, None]
    assert pts.shape == (2, 50)
    assert np.allclose(np.einsum("in,ij,jn->n", d, np.linalg.inv(cov), d), 4.0)
