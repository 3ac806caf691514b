"""Algorithm 1 on the exact Gaussian model: the Monte Carlo helpers agree with the closed forms."""

from __future__ import annotations

import torch

from theorylab.nn.unet import noise_schedule
from theorylab.theory.thermalize import thermalize_gain
from theorylab.train.thermalize_gaussian import gaussian_gain_monte_carlo, gaussian_linear_rollouts

BETAS, ABARS = noise_schedule(1000, "cosine")


def test_gain_monte_carlo_matches_the_closed_form():
    var = torch.tensor([1.0, 1e-3, 1e-5], dtype=torch.float64)
    mc, se = gaussian_gain_monte_carlo(var, 20_000, BETAS, ABARS, 200, torch.Generator().manual_seed(0))
    M = thermalize_gain(var, 10, 4, BETAS, ABARS)
    assert bool(((mc - M).abs() <= 5 * se).all()) and float(se.max()) < 1e-3
    mc2, _ = gaussian_gain_monte_carlo(var, 20_000, BETAS, ABARS, 200, torch.Generator().manual_seed(0), s_hat=20)
    assert bool(((mc2 - thermalize_gain(var, 20, 4, BETAS, ABARS)).abs() <= 5 * se.max()).all())


def test_linear_rollouts_match_the_gaussian_model():
    var = torch.tensor([1.0, 1e-3, 1e-6, 1e-7], dtype=torch.float64)
    a = torch.where(var < 1e-5, 1.2, 0.9).double()
    out = gaussian_linear_rollouts(var, a, 400, BETAS, ABARS, 200, torch.Generator().manual_seed(0), steps=200)
    assert bool(((out["factor_thermalized"] - out["factor_theory"]).abs() <= 5 * out["factor_thermalized_se"]).all())
    assert torch.allclose(out["stationary_mc"], out["stationary_theory"], rtol=0.1)
    assert abs(out["plain_growth"] - out["plain_growth_theory"]) < 0.01 and out["plain_growth"] > 1
