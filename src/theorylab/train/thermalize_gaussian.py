"""Algorithm 1 of the thermalizer (Pedersen, Zanna, Bruna, arXiv 2503.18731) run on the exact Gaussian model.

With the Bayes-optimal denoiser of N(0, diag σ²) (:class:`theorylab.theory.thermalize.GaussianOracle`),
thermalizing from ŝ to s_stop is a linear map per mode (mean gain M, :func:`thermalize_gain`) plus
independent noise of variance w (:func:`thermalize_noise`). These Monte Carlo runs of the rollout kit's
:class:`~theorylab.train.rollout.Thermalize` check that closed form (the thermalizer card's Gaussian model; ours):

- :func:`gaussian_gain_monte_carlo`: one thermalization of probe inputs; the gain is the regression slope of
  output on input.
- :func:`gaussian_linear_rollouts`: a linear emulator x <- a x (a > 1 on the modes below the noise floor)
  rolled out plain and thermalized every step: per-step factors (lag-1 slopes), stationary variances
  w/(1 − (Ma)²) and the plain rollout's growth, each next to the model's value.
"""

from __future__ import annotations

import torch
from torch import Tensor

from theorylab.probes.estimators import slope_through_origin
from theorylab.probes.rollout_metrics import per_step_growth
from theorylab.theory.thermalize import GaussianOracle, thermalize_gain, thermalize_noise
from theorylab.train.rollout import Thermalize, rollout


def gaussian_gain_monte_carlo(
    variance: Tensor,
    samples: int,
    betas: Tensor,
    alpha_bars: Tensor,
    levels: int,
    generator: torch.Generator,
    s_hat: int = 10,
    s_stop: int = 4,
) -> tuple[Tensor, Tensor]:
    """``(gain, se)`` per mode: Algorithm 1 from ŝ = ``s_hat`` to ``s_stop`` with the optimal denoiser of
    N(0, ``variance``) applied once to ``samples`` unit-scale probes (float64, from ``generator``, which also
    draws the reverse-step noise). The map is linear plus independent noise, so the slope estimates M for any
    probe law; unit-scale probes keep the injected noise from swamping it on small-variance modes."""
    x0 = torch.randn(samples, len(variance), generator=generator, dtype=torch.float64)
    oracle = GaussianOracle(variance, alpha_bars, levels, s_hat)
    x1, _ = Thermalize(oracle, betas, alpha_bars, s_init=s_stop, s_stop=s_stop, generator=generator, noise_blind=False)(
        x0, 1
    )
    return slope_through_origin(x0, x1)


def gaussian_linear_rollouts(
    variance: Tensor,
    a: Tensor,
    chains: int,
    betas: Tensor,
    alpha_bars: Tensor,
    levels: int,
    generator: torch.Generator,
    s_hat: int = 10,
    s_stop: int = 4,
    steps: int = 300,
    burn_in: int = 100,
    plain_steps: int = 50,
    growth_window: tuple[int, int] = (40, 51),
) -> dict[str, Tensor | float]:
    """The linear emulator ``x <- a x`` on modes of N(0, ``variance``) from ``chains`` stationary starts, rolled out
    ``steps`` steps thermalized every step (ŝ = ``s_hat`` -> ``s_stop``) and ``plain_steps`` steps plain.

    Returns per mode: ``gain`` M, ``factor_theory`` M a, ``factor_thermalized`` (the lag-1 slope of x_{t+1} on
    x_t over t >= ``burn_in``) and its ``factor_thermalized_se``, ``stationary_mc`` (E x² there) and
    ``stationary_theory`` w/(1 − (Ma)²); and ``plain_growth``: the per-step factor of the plain rollout's rms
    over ``growth_window`` (:func:`per_step_growth` of E‖x_t‖²), with ``plain_growth_theory``, the same fit of
    Σ_k a_k^{2t} σ_k²."""
    M = thermalize_gain(variance, s_hat, s_stop, betas, alpha_bars)
    w = thermalize_noise(variance, s_hat, s_stop, betas, alpha_bars)
    corr = Thermalize(
        GaussianOracle(variance, alpha_bars, levels, s_hat),
        betas,
        alpha_bars,
        s_init=s_stop,
        s_stop=s_stop,
        generator=generator,
        noise_blind=False,
    )
    x0 = torch.randn(chains, len(variance), generator=generator, dtype=torch.float64) * variance.sqrt()
    therm = rollout(lambda x: a * x, x0, steps, corrector=corr, stop_on="never").states  # (chains, steps + 1, modes)
    plain = rollout(lambda x: a * x, x0, plain_steps, stop_on="never").states  # (chains, plain_steps + 1, modes)
    # The reverse-step noise is independent of x_t, so the lag-1 slope estimates exactly M a.
    slope, slope_se = slope_through_origin(therm[:, burn_in:-1], therm[:, burn_in + 1 :], (0, 1))
    lo, hi = growth_window
    t = torch.arange(lo, hi, dtype=torch.float64)
    measured_ms = plain[:, lo:hi].pow(2).sum(-1).mean(0)
    theory_ms = (a[None, :] ** (2 * t[:, None]) * variance[None, :]).sum(-1)
    return dict(
        gain=M,
        factor_theory=M * a,
        factor_thermalized=slope,
        factor_thermalized_se=slope_se,
        stationary_mc=therm[:, burn_in + 1 :].pow(2).mean((0, 1)),
        stationary_theory=w / (1 - (M * a) ** 2),
        plain_growth=per_step_growth(t, measured_ms),
        plain_growth_theory=per_step_growth(t, theory_ms),
    )
