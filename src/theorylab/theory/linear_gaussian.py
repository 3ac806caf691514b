"""A linear-Gaussian AR(1) model of conditional diffusion surrogates (self-refining-surrogate card, "Theory").

Ours, not the paper's (a closed-form stand-in for the unifying framework of Liu, Zanna, Bruna, arXiv 2603.17750):
per mode, ``x_t = a x_{t−1} + ξ`` with ξ ~ N(0, Σ(1 − a²)), so the invariant variance is Σ. A surrogate conditions on
the diffused previous frame ``x̃ = √ᾱ_c x_{t−1} + √(1 − ᾱ_c) ε`` (level c of a DDPM schedule, ``alpha_bars[c]``).
The exact conditional is N(g_c x̃, v_c) with

    g_c = √ᾱ_c a Σ/(ᾱ_c Σ + 1 − ᾱ_c),     v_c = Σ − ᾱ_c a² Σ²/(ᾱ_c Σ + 1 − ᾱ_c).

A learned model with relative regression error δ uses ĝ_c = (1 + δ) g_c; rolled out, x_t = ĝ_c x̃_{t−1} + √v_c z
is an AR(1) with contraction ρ_c = ĝ_c √ᾱ_c and stationary variance V_c = (ĝ_c²(1 − ᾱ_c) + v_c)/(1 − ρ_c²)
(infinite when |ρ_c| >= 1). Its one-step MSE against the truth from a stationary x_{t−1} is
Σ − 2 ĝ_c √ᾱ_c a Σ + ĝ_c²(ᾱ_c Σ + 1 − ᾱ_c) + v_c. When (1 + δ) a > 1 the chain diverges below the critical level
ᾱ_{c*} = 1/((1 + δ) a Σ − Σ + 1) (ρ_c = 1 there). At ᾱ_c → 0 it samples π: V = Σ and one-step MSE 2Σ.

The diffusion schedule itself comes from the caller (``theorylab.nn.unet.noise_schedule``; theory may not import nn).
"""

from __future__ import annotations

import numpy as np


def _abar(alpha_bars, c) -> np.ndarray:
    return np.asarray(alpha_bars, dtype=np.float64)[np.asarray(c)]


def exact_conditional(alpha_bar, a: float, sigma2: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(g_c, v_c)``: the slope and variance of p(x_t | x̃) for conditioning at ``alpha_bar`` (array or float)."""
    A = np.asarray(alpha_bar, dtype=np.float64)
    den = A * sigma2 + 1 - A
    return np.sqrt(A) * a * sigma2 / den, sigma2 - A * a**2 * sigma2**2 / den


def ar1_curves(alpha_bar, a: float, sigma2: float = 1.0, delta: float = 0.0) -> dict[str, np.ndarray]:
    """Per level: ``g`` (exact slope), ``g_hat`` = (1 + δ) g, ``v``, ``rho`` = ĝ √ᾱ, ``V`` (stationary variance of the
    rollout, ``inf`` where |ρ| >= 1) and ``mse`` (one-step MSE from a stationary previous frame)."""
    A = np.asarray(alpha_bar, dtype=np.float64)
    g, v = exact_conditional(A, a, sigma2)
    gh = (1 + delta) * g
    rho = gh * np.sqrt(A)
    with np.errstate(divide="ignore", invalid="ignore"):
        V = np.where(np.abs(rho) < 1, (gh**2 * (1 - A) + v) / (1 - rho**2), np.inf)
    mse = sigma2 - 2 * gh * np.sqrt(A) * a * sigma2 + gh**2 * (A * sigma2 + 1 - A) + v
    return dict(alpha_bar=A, g=g, g_hat=gh, v=v, rho=rho, V=V, mse=mse)


def critical_alpha_bar(a: float, delta: float, sigma2: float = 1.0) -> float:
    """ᾱ_{c*} = 1/((1 + δ) a Σ − Σ + 1), where ρ_c = 1; levels with ᾱ_c above it diverge. ``nan`` when
    (1 + δ) a <= 1 (every level is stable)."""
    if (1 + delta) * a <= 1:
        return float("nan")
    return 1.0 / ((1 + delta) * a * sigma2 - sigma2 + 1)


def critical_level(alpha_bars, a: float, delta: float, sigma2: float = 1.0) -> int:
    """The smallest level c whose ᾱ_c is below ᾱ_{c*} (the first stable level; 0 when every level is stable)."""
    crit = critical_alpha_bar(a, delta, sigma2)
    if np.isnan(crit):
        return 0
    stable = np.nonzero(np.asarray(alpha_bars, dtype=np.float64) < crit)[0]
    return int(stable[0]) if len(stable) else len(alpha_bars)


def simulate_chains(
    alpha_bar,
    a: float,
    sigma2: float,
    delta: float,
    chains: int,
    steps: int,
    rng: np.random.Generator,
    average_last: int = 0,
) -> dict[str, np.ndarray]:
    """Monte Carlo of the surrogate rollout ``x_t = ĝ (√ᾱ x_{t−1} + √(1 − ᾱ) ε) + √v z`` from x_0 ~ N(0, Σ), for each
    ᾱ in ``alpha_bar`` (array or float; all levels simulated together).

    Returns arrays over levels: ``variance`` (mean of x² over chains at the last step, or over the last
    ``average_last`` steps), ``se`` (its standard error over the independent chains), ``max_variance`` (the largest
    per-step variance; ``inf`` once it overflows) and ``mse`` (the one-step MSE of the first step against the true
    AR(1) step)."""
    A = np.atleast_1d(np.asarray(alpha_bar, dtype=np.float64))[:, None]
    g, v = exact_conditional(A, a, sigma2)
    gh = (1 + delta) * g
    # ĝ(√ᾱ x + √(1 − ᾱ) ε) + √v z = ĝ√ᾱ x + √(ĝ²(1 − ᾱ) + v) ξ: one normal draw per step
    rho, sd = gh * np.sqrt(A), np.sqrt(gh**2 * (1 - A) + v)
    x = rng.standard_normal((len(A), chains)) * np.sqrt(sigma2)
    true_next = a * x + np.sqrt(sigma2 * (1 - a**2)) * rng.standard_normal(x.shape)
    acc = np.zeros(x.shape)
    peak = np.zeros(len(A))
    mse = None
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps):
            x = rho * x + sd * rng.standard_normal(x.shape)
            if t == 0:
                mse = np.mean((x - true_next) ** 2, axis=1)
            var = np.mean(x**2, axis=1)
            peak = np.where(np.isfinite(var), np.maximum(peak, var), np.inf)
            if average_last and t >= steps - average_last:
                acc += x**2
        per_chain = acc / average_last if average_last else x**2
        return dict(variance=per_chain.mean(1), se=per_chain.std(1) / np.sqrt(chains), max_variance=peak, mse=mse)
