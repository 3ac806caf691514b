"""An exact Gaussian model of thermalization (Pedersen, Zanna, Bruna, arXiv 2503.18731, Algorithm 1).

Ours, not the paper's (thermalizer card, "Theory"): take an invariant measure N(0, diag σ_k²) and the
DDPM schedule β_s, α_s = 1 − β_s, ᾱ_s = Π_{r<=s} α_r with levels s = 0..T−1 as stored (``betas[s]``,
``alpha_bars[s]``; ᾱ_{−1} = 1: the convention of DDPM code and of the thermalizer's level classifier). The Bayes-optimal
noise-blind ε-predictor at level s is ``ε*(x) = √(1 − ᾱ_s) x / (ᾱ_s σ² + 1 − ᾱ_s)``, so one reverse
step ``x <- (x − β_s/√(1 − ᾱ_s) ε*(x))/√α_s + σ_s z`` multiplies a mode by

    m_s(σ²) = (1 − β_s/(ᾱ_s σ² + 1 − ᾱ_s))/√α_s

and adds noise of variance σ_s² = β_s (1 − ᾱ_{s−1})/(1 − ᾱ_s). Thermalizing from level ŝ down to
s_stop has mean gain M = Π_{s=s_stop+1}^{ŝ} m_s: Π 1/√α_s = √(ᾱ_stop/ᾱ_ŝ) (1.00023 for ŝ = 10, s_stop = 4,
cosine T = 1000) for energetic modes (σ² ≫ 1 − ᾱ_ŝ), and Π √α_s (1 − ᾱ_{s−1})/(1 − ᾱ_s) =
√(ᾱ_ŝ/ᾱ_stop)(1 − ᾱ_stop)/(1 − ᾱ_ŝ) (0.3535) for modes below the noise floor: a data-adaptive spectral
damper. (The card writes the energetic limit as √(ᾱ_ŝ/ᾱ_stop) ≈ 0.99977, the reciprocal; with
ε* → 0 each step divides by √α_s, so the limit is above 1.)
"""

from __future__ import annotations

import torch
from torch import Tensor


def _levels(alpha_bars: Tensor) -> Tensor:
    """ᾱ shifted by one so that ``abar[s + 1] = ᾱ_s`` and ``abar[0] = ᾱ_{−1} = 1``."""
    return torch.cat([torch.ones(1, dtype=alpha_bars.dtype), alpha_bars])


def optimal_eps(x: Tensor, variance: Tensor | float, alpha_bar: Tensor | float) -> Tensor:
    """``ε*(x) = √(1 − ᾱ) x/(ᾱ σ² + 1 − ᾱ)``: the noise predictor that is optimal for N(0, σ²) at level ᾱ."""
    a = torch.as_tensor(alpha_bar, dtype=x.dtype)
    return (1 - a).sqrt() * x / (a * torch.as_tensor(variance, dtype=x.dtype) + 1 - a)


def reverse_step(x: Tensor, eps: Tensor, s: int, betas: Tensor, alpha_bars: Tensor, z: Tensor | None = None) -> Tensor:
    """DDPM's ancestral step from level s to s − 1: ``(x − β_s/√(1 − ᾱ_s) ε)/√α_s + σ_s z`` with
    σ_s² = β_s (1 − ᾱ_{s−1})/(1 − ᾱ_s) (no noise at s = 0 or when ``z`` is None)."""
    abar = _levels(alpha_bars)
    beta = float(betas[s])
    mean = (x - beta / float(1 - abar[s + 1]) ** 0.5 * eps) / (1 - beta) ** 0.5
    if z is None or s == 0:
        return mean
    var = beta * float(1 - abar[s]) / float(1 - abar[s + 1])
    return mean + var**0.5 * z


def reverse_step_coefficients(betas: Tensor, alpha_bars: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-level tables ``(c_x, c_eps, σ)`` (float64, ``[T]``) of :func:`reverse_step`, so that a batch whose rows
    sit at different levels ``s`` [B] steps at once: ``c_x[s] x − c_eps[s] ε + σ[s] z`` (σ_0 = 0)."""
    b = betas.double().cpu()
    ab = alpha_bars.double().cpu()
    ab_prev = _levels(ab)[:-1]  # ᾱ_{s−1}
    c_x = 1 / (1 - b).sqrt()
    c_eps = b / ((1 - ab).sqrt() * (1 - b).sqrt())
    sigma = (b * (1 - ab_prev) / (1 - ab)).sqrt()
    sigma[0] = 0
    return c_x, c_eps, sigma


def reverse_step_rows(
    x: Tensor, eps: Tensor, s: Tensor, coefficients: tuple[Tensor, Tensor, Tensor], z: Tensor | None = None
) -> Tensor:
    """:func:`reverse_step` for a batch whose rows sit at different levels ``s`` ``[B]``:
    ``c_x[s] x − c_eps[s] ε + σ[s] z`` with the tables of :func:`reverse_step_coefficients` (no noise term when
    ``z`` is None). The tables stay float64 (only moved to ``x``'s device), as in the scalar step."""
    c_x, c_eps, sigma = coefficients
    view = (len(s),) + (1,) * (x.ndim - 1)
    out = c_x[s].view(view).to(x.device) * x - c_eps[s].view(view).to(x.device) * eps
    return out if z is None else out + sigma[s].view(view).to(x.device) * z


def step_gain(variance: Tensor, s: int, betas: Tensor, alpha_bars: Tensor) -> Tensor:
    """``m_s(σ²)``: the factor one optimal reverse step at level s applies to a mode of variance σ²."""
    abar = _levels(alpha_bars)
    beta = betas[s]
    return (1 - beta / (abar[s + 1] * variance + 1 - abar[s + 1])) / (1 - beta).sqrt()


def thermalize_gain(variance: Tensor, s_hat: int, s_stop: int, betas: Tensor, alpha_bars: Tensor) -> Tensor:
    """``M = Π_{s = s_stop+1}^{ŝ} m_s(σ²)`` (1 when ŝ <= s_stop)."""
    M = torch.ones_like(torch.as_tensor(variance, dtype=torch.float64))
    for s in range(s_stop + 1, s_hat + 1):
        M = M * step_gain(torch.as_tensor(variance, dtype=torch.float64), s, betas, alpha_bars)
    return M


def thermalize_noise(variance: Tensor, s_hat: int, s_stop: int, betas: Tensor, alpha_bars: Tensor) -> Tensor:
    """``w``: the variance the reverse steps from ŝ to s_stop add to a mode (each step's σ_s² times the
    squared gains of the steps after it)."""
    abar = _levels(alpha_bars)
    var = torch.as_tensor(variance, dtype=torch.float64)
    w = torch.zeros_like(var)
    for s in range(s_hat, s_stop, -1):  # the order the steps run: ŝ first
        w = w * step_gain(var, s, betas, alpha_bars) ** 2
        if s > 0:
            w = w + betas[s] * (1 - abar[s]) / (1 - abar[s + 1])
    return w


def gain_limits(s_hat: int, s_stop: int, alpha_bars: Tensor) -> tuple[float, float]:
    """``(energetic, below the noise floor)`` limits of M: √(ᾱ_stop/ᾱ_ŝ) and √(ᾱ_ŝ/ᾱ_stop)(1 − ᾱ_stop)/(1 − ᾱ_ŝ)."""
    ratio = float(alpha_bars[s_hat] / alpha_bars[s_stop])
    return ratio**-0.5, ratio**0.5 * float((1 - alpha_bars[s_stop]) / (1 - alpha_bars[s_hat]))


class GaussianOracle:
    """The Bayes-optimal denoiser of N(0, diag σ²) as a :class:`theorylab.train.rollout.Thermalize` denoiser.

    ``oracle(x, s)`` returns ``(ε*(x) at level s, logits)``: ε* is :func:`optimal_eps` with ᾱ_s (zeros when
    ``s`` is None, the classification call), and the logits put every state at level ``s_hat`` (one-hot over
    ``levels`` classes), so Algorithm 1 always thermalizes from ŝ = ``s_hat``. The logits are built once per
    batch size."""

    def __init__(self, variance: Tensor, alpha_bars: Tensor, levels: int, s_hat: int = 10):
        self.var, self.alpha_bars, self.levels, self.s_hat = variance, alpha_bars, levels, s_hat
        self.logits: Tensor | None = None

    def __call__(self, x: Tensor, s: int | None) -> tuple[Tensor, Tensor]:
        if self.logits is None or self.logits.shape[0] != x.shape[0]:
            self.logits = torch.zeros(x.shape[0], self.levels, dtype=x.dtype)
            self.logits[:, self.s_hat] = 1.0
        return (torch.zeros_like(x) if s is None else optimal_eps(x, self.var, self.alpha_bars[s])), self.logits
