"""The Gaussian model of thermalization against Monte Carlo of Algorithm 1 with the optimal denoiser (thermalizer card,
claims 1-2)."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.unet import noise_schedule
from theorylab.theory.thermalize import GaussianOracle as Oracle
from theorylab.theory.thermalize import gain_limits, optimal_eps, reverse_step, thermalize_gain, thermalize_noise
from theorylab.train.rollout import Thermalize

BETAS, ABARS = noise_schedule(1000, "cosine")
VARIANCES = torch.tensor([1.0, 1e-3, 1e-5], dtype=torch.float64)


def GaussianOracle(variances, level):
    """ε* for N(0, diag σ²) at the level the corrector asks for; its classifier always says ``level``."""
    return Oracle(variances, ABARS, 200, level)


def test_oracle_is_the_optimal_eps_with_a_fixed_level():
    x = torch.randn(4, 3, dtype=torch.float64)
    eps, logits = Oracle(VARIANCES, ABARS, 200, 10)(x, 6)
    assert torch.equal(eps, optimal_eps(x, VARIANCES, ABARS[6])) and logits.shape == (4, 200)
    assert bool((logits.argmax(-1) == 10).all()) and float(logits.sum()) == 4.0
    assert torch.equal(Oracle(VARIANCES, ABARS, 200, 10)(x, None)[0], torch.zeros_like(x))


def test_closed_form_gain_and_its_limits():
    M = thermalize_gain(torch.tensor([1e6, 0.0], dtype=torch.float64), 10, 4, BETAS, ABARS)
    top, floor = gain_limits(10, 4, ABARS)
    assert float(M[0]) == pytest.approx(top, abs=1e-4) and float(M[1]) == pytest.approx(floor, abs=1e-4)
    assert floor == pytest.approx(0.3535, abs=1e-4) and top == pytest.approx(1 / 0.99977, abs=1e-5)
    assert [round(float(v), 4) for v in thermalize_gain(VARIANCES[1:], 10, 4, BETAS, ABARS)] == [0.7292, 0.3623]


def test_algorithm_1_with_the_optimal_denoiser_matches_the_gain_and_noise():
    g = torch.Generator().manual_seed(0)
    n = 200_000
    x0 = torch.randn(n, 3, generator=g, dtype=torch.float64) * VARIANCES.sqrt()
    corrector = Thermalize(
        GaussianOracle(VARIANCES, 10), BETAS, ABARS, s_init=4, s_stop=4, generator=g, noise_blind=False
    )
    x1, info = corrector(x0, 1)
    assert bool((info["level"] == 10).all()) and bool((info["calls"] == 7).all()) and not bool(info["aborted"].any())
    gain = (x1 * x0).mean(0) / x0.pow(2).mean(0)
    M = thermalize_gain(VARIANCES, 10, 4, BETAS, ABARS)
    assert torch.allclose(gain, M, atol=0.01)  # claim 1: Monte Carlo vs closed form
    resid = (x1 - gain * x0).var(0)
    w = thermalize_noise(VARIANCES, 10, 4, BETAS, ABARS)
    assert torch.allclose(resid, w, rtol=0.03)
    # the same through the plain reverse_step
    x = x0.clone()
    for s in range(10, 4, -1):
        x = reverse_step(x, optimal_eps(x, VARIANCES, ABARS[s]), s, BETAS, ABARS)
    assert torch.allclose((x * x0).mean(0) / x0.pow(2).mean(0), M, atol=1e-12)


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_thermalized_linear_emulator_is_stable_with_the_predicted_variance():
    """Claim 2: a_k = 1.2 below σ² = 1e-5, 0.9 elsewhere; thermalized every step at ŝ = 10 -> s_stop = 4."""
    var = torch.tensor([1.0, 0.3, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7], dtype=torch.float64)
    a = torch.where(var < 1e-5, 1.2, 0.9).double()
    M = thermalize_gain(var, 10, 4, BETAS, ABARS)
    assert float((M * a).abs().max()) == pytest.approx(0.9, abs=1e-3)
    g = torch.Generator().manual_seed(1)
    corrector = Thermalize(GaussianOracle(var, 10), BETAS, ABARS, s_init=4, s_stop=4, generator=g, noise_blind=False)
    x = torch.randn(20_000, len(var), generator=g, dtype=torch.float64) * var.sqrt()
    plain = x.clone()
    late = []
    for step in range(300):
        x, _ = corrector(a * x, step)
        if step >= 100:
            late.append(x.pow(2).mean(0))
        if step < 50:
            plain = a * plain
            if step == 39:
                n40 = plain.norm(dim=1).mean()
    n50 = plain.norm(dim=1).mean()
    stationary = torch.stack(late).mean(0)
    w = thermalize_noise(var, 10, 4, BETAS, ABARS)
    assert torch.allclose(stationary, w / (1 - (M * a) ** 2), rtol=0.03)
    assert 1.19 <= float((n50 / n40) ** 0.1) <= 1.21  # without thermalization the leak band grows 1.2x per step


def test_reverse_step_coefficients_equal_the_scalar_step():
    from theorylab.theory.thermalize import reverse_step_coefficients

    c_x, c_eps, sigma = reverse_step_coefficients(BETAS, ABARS)
    g = torch.Generator().manual_seed(0)
    x, eps, z = (torch.randn(6, 5, generator=g, dtype=torch.float64) for _ in range(3))
    s = torch.tensor([0, 1, 7, 50, 300, 999])
    batched = c_x[s, None] * x - c_eps[s, None] * eps + sigma[s, None] * z
    for i, level in enumerate(s.tolist()):
        torch.testing.assert_close(batched[i], reverse_step(x[i], eps[i], level, BETAS, ABARS, z[i]))
    assert sigma[0] == 0 and (sigma[1:] > 0).all()
    from theorylab.theory.thermalize import reverse_step_rows

    torch.testing.assert_close(reverse_step_rows(x, eps, s, (c_x, c_eps, sigma), z), batched)
    torch.testing.assert_close(reverse_step_rows(x, eps, s, (c_x, c_eps, sigma)), batched - sigma[s, None] * z)
