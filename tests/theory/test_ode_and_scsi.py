"""The fixed-step integrator against exact solutions; the Gaussian oracle against algebra."""

from __future__ import annotations

import math

import numpy as np
import torch

from theorylab.theory.ode import integrate
from theorylab.theory.scsi_gaussian import (
    covariance_error,
    deconvolved_moments,
    oracle_transport,
    self_consistency_residual,
)


def test_integrators_converge_at_their_order():
    x0 = torch.tensor([[1.0]], dtype=torch.float64)
    exact = math.exp(-1.0)
    errors = {}
    for method in ("euler", "heun"):
        e = [abs(float(integrate(lambda x, t: -x, x0, 0.0, 1.0, n, method)) - exact) for n in (20, 40)]
        errors[method] = e[0] / e[1]
    assert 1.8 < errors["euler"] < 2.2 and 3.6 < errors["heun"] < 4.4
    # Backward integration undoes forward integration (to the scheme's accuracy).
    v = lambda x, t: torch.sin(x) + t[:, None]  # noqa: E731
    x = torch.randn(5, 1, dtype=torch.float64)
    back = integrate(v, integrate(v, x, 0.0, 1.0, 400, "heun"), 1.0, 0.0, 400, "heun")
    assert torch.allclose(back, x, atol=1e-5)


def test_oracle_transport_maps_the_observed_law_to_the_clean_one():
    s = np.array([[1.0, 0.5], [0.5, 0.5]])
    m = np.array([1.0, -0.5])
    sigma = 0.6
    mat, shift = oracle_transport(m, s, sigma)
    assert np.allclose(mat @ (s + sigma**2 * np.eye(2)) @ mat.T, s, atol=1e-12)
    assert np.allclose(mat @ m + shift, m)
    rng = np.random.default_rng(0)
    x = m + rng.standard_normal((200_000, 2)) @ np.linalg.cholesky(s).T
    y = x + sigma * rng.standard_normal(x.shape)
    m_hat, s_hat = deconvolved_moments(y, sigma)
    assert np.abs(m_hat - m).max() < 0.01 and np.abs(s_hat - s).max() < 0.01
    assert covariance_error(y @ mat.T + shift, s) < 0.01
    again = (y @ mat.T + shift) + sigma * rng.standard_normal(y.shape)
    assert self_consistency_residual(again, y) < 0.01
    # identity is not a fixed point
    assert self_consistency_residual(y + sigma * rng.standard_normal(y.shape), y) > 0.15
