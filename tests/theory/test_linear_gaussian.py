"""The AR(1) closed forms of theory.linear_gaussian against the card's numbers, brute force and Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.nn.unet import noise_schedule
from theorylab.theory.linear_gaussian import (
    ar1_curves,
    critical_alpha_bar,
    critical_level,
    exact_conditional,
    simulate_chains,
)

AB = noise_schedule(1000, "cosine")[1].numpy()
LEVELS = [0, 10, 50, 100, 200, 400, 700, 999]


def test_card_numbers_on_the_cosine_schedule():
    c = ar1_curves(AB[LEVELS], 0.95, 1.0, 0.04)
    assert c["mse"][0] == pytest.approx(0.1965, abs=5e-5) and c["mse"][-1] == pytest.approx(2.0, abs=1e-6)
    assert c["V"][0] == pytest.approx(4.077, abs=5e-4) and c["V"][-1] == pytest.approx(1.0, abs=1e-6)
    assert c["V"][2] == pytest.approx(2.828, abs=5e-4)
    assert np.all(np.diff(c["mse"]) > 0) and np.all(np.diff(c["V"]) < 0)
    d = ar1_curves(AB[LEVELS], 0.95, 1.0, 0.08)
    assert d["V"][3] == pytest.approx(24.1, abs=0.05)
    assert np.all(np.isinf(d["V"][:3])) and np.all(np.isfinite(d["V"][3:]))
    assert critical_alpha_bar(0.95, 0.08) == pytest.approx(0.9747, abs=5e-5)
    assert 50 < critical_level(AB, 0.95, 0.08) <= 100
    assert np.isnan(critical_alpha_bar(0.95, 0.04)) and critical_level(AB, 0.95, 0.04) == 0


def test_exact_conditional_is_gaussian_regression():
    # brute force: the joint covariance of (x_t, x̃) and the Gaussian conditioning formula
    a, S, A = 0.9, 2.0, 0.7
    cov = np.array([[S, np.sqrt(A) * a * S], [np.sqrt(A) * a * S, A * S + 1 - A]])
    g, v = exact_conditional(A, a, S)
    assert g == pytest.approx(cov[0, 1] / cov[1, 1])
    assert v == pytest.approx(cov[0, 0] - cov[0, 1] ** 2 / cov[1, 1])


def test_stationary_variance_solves_the_lyapunov_equation():
    c = ar1_curves(AB[[30, 300]], 0.95, 1.0, 0.02)
    # V = ρ² V + ĝ²(1 − ᾱ) + v
    np.testing.assert_allclose(c["V"], c["rho"] ** 2 * c["V"] + c["g_hat"] ** 2 * (1 - AB[[30, 300]]) + c["v"])


def test_monte_carlo_matches_closed_forms():
    rng = np.random.default_rng(0)
    levels = [100, 400]
    c = ar1_curves(AB[levels], 0.95, 1.0, 0.04)
    mc = simulate_chains(AB[levels], 0.95, 1.0, 0.04, 4000, 600, rng, average_last=300)
    np.testing.assert_allclose(mc["variance"], c["V"], rtol=0.03)
    np.testing.assert_allclose(mc["mse"], c["mse"], rtol=0.06)
    boom = simulate_chains(AB[0], 0.95, 1.0, 0.08, 200, 3000, rng)
    assert boom["max_variance"][0] > 1e6
