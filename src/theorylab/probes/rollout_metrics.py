"""Metrics of emulator rollouts against the truth (the PDE kit's conventions: docs/kits/pde.md).

Trajectories are ``[B, T, C, *spatial]``; every metric is per trajectory (and per time where it says
so), to be summarised as median and IQR over trajectories.

- :func:`pearson_t`: ρ_t = corr(pred_t, true_t) over all spatial points and channels.
- :func:`corr_time`: the first time with ρ_t < c (PDE-Refiner's convention); trajectories that never
  cross are censored at the horizon and flagged.
- :func:`nrmse_t`: ‖p_t − y_t‖/‖y_t‖ (PDEBench).
- :func:`spectrum_1d` (E(m) = mean |x̂_m|²), :func:`ke_spectrum_2d` (isotropic kinetic-energy spectrum
  from vorticity, E(k) = ½ Σ_{k−½ <= |k'| < k+½} |û|² + |v̂|²), :func:`spectral_similarity`
  (mean_k |E_p − E_t|/E_t, the Thermalizer paper's), :func:`log_spectral_distance`.
- :func:`time_to_blowup`: first step with a non-finite value or rms > ``limit``;
  :func:`off_attractor_time`: first step whose rms leaves [0.3, 2] data std.
- :func:`per_step_growth` (geometric growth factor of an rms), :func:`corrector_cost` (denoiser calls and
  share of thermalized steps per trajectory), :func:`spectrum_log_se` (SE of a pooled spectrum's log).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor


def pearson_t(pred: Tensor, true: Tensor) -> Tensor:
    """``[B, T]`` correlation over every non-batch, non-time axis."""
    p = pred.flatten(2).double()
    y = true.flatten(2).double()
    p = p - p.mean(-1, keepdim=True)
    y = y - y.mean(-1, keepdim=True)
    return (p * y).sum(-1) / (p.norm(dim=-1) * y.norm(dim=-1)).clamp_min(1e-300)


def corr_time(rho: Tensor, threshold: float, dt: float = 1.0) -> tuple[Tensor, Tensor]:
    """``(time, censored)`` per trajectory: the first t with ρ_t < threshold (NaN counts as below), else
    the horizon with ``censored = True``."""
    below = ~(rho >= threshold)
    T = rho.shape[-1]
    first = torch.where(below.any(-1), below.float().argmax(-1), torch.full(rho.shape[:-1], T - 1))
    return first.double() * dt, ~below.any(-1)


def nrmse_t(pred: Tensor, true: Tensor) -> Tensor:
    p, y = pred.flatten(2).double(), true.flatten(2).double()
    return (p - y).norm(dim=-1) / y.norm(dim=-1).clamp_min(1e-300)


def spectrum_1d(x: Tensor) -> Tensor:
    """``E(m) = mean |x̂_m|²`` over every axis but the last (Fourier modes m = 0 .. N/2)."""
    xh = torch.fft.rfft(x.double(), dim=-1) / x.shape[-1]
    return xh.abs().pow(2).reshape(-1, xh.shape[-1]).mean(0)


def ke_spectrum_2d(w: Tensor) -> Tensor:
    """Isotropic kinetic-energy spectrum of vorticity fields ``[..., N, N]`` on [0, 2π)² (shells k = 0 .. N/2)."""
    N = w.shape[-1]
    wh = torch.fft.fft2(w.double()) / N**2
    k1 = torch.fft.fftfreq(N, 1.0 / N, dtype=torch.float64)
    ky, kx = torch.meshgrid(k1, k1, indexing="ij")
    k2 = kx**2 + ky**2
    # |û|² + |v̂|² = |ω̂|²/|k|²
    energy = 0.5 * wh.abs().pow(2) * torch.where(k2 > 0, 1.0 / torch.where(k2 > 0, k2, 1.0), 0.0)
    shell = torch.round(k2.sqrt()).long()
    E = torch.zeros(N // 2 + 1, dtype=torch.float64)
    mean_energy = energy.reshape(-1, N, N).mean(0)
    keep = shell <= N // 2
    E.index_add_(0, shell[keep], mean_energy[keep])
    return E


def spectral_similarity(pred_spectrum: Tensor, true_spectrum: Tensor, skip_zero: bool = True) -> float:
    s = 1 if skip_zero else 0
    return float(((pred_spectrum[s:] - true_spectrum[s:]).abs() / true_spectrum[s:]).mean())


def log_spectral_distance(pred_spectrum: Tensor, true_spectrum: Tensor, skip_zero: bool = True) -> float:
    s = 1 if skip_zero else 0
    return float((torch.log10(pred_spectrum[s:]) - torch.log10(true_spectrum[s:])).abs().mean())


def spectrum_band(ratios, low: float, high: float) -> tuple[bool, float]:
    """``(every ratio in [low, high], mean |ln ratio|)`` of per-mode spectrum ratios E_model(m)/E_ref(m): the
    energetic-statistics test of the rollout studies (thermalizer, self-refining-surrogate)."""
    r = np.asarray(ratios, dtype=float)
    return bool(((r >= low) & (r <= high)).all()), float(np.abs(np.log(r)).mean())


def censored_median_bounds(time, censored) -> tuple[float, float]:
    """``(lower, upper)`` bounds on the median of ``time`` when its ``censored`` entries are only lower bounds.

    A censored :func:`corr_time` (ρ_t never fell below the threshold in the window) bounds the true time from below;
    the median of a sample with some such entries lies between the median with them at their bound and the median
    with them at +inf, so a comparison of medians is decided only where those bounds decide it.
    """
    time = np.asarray(time, dtype=float)
    return float(np.median(time)), float(np.median(np.where(np.asarray(censored, bool), np.inf, time)))


def time_to_blowup(traj: Tensor, limit: float = 1e3, dt: float = 1.0) -> Tensor:
    """``[B]`` first time with a non-finite value or rms > ``limit``; ``inf`` when none."""
    x = traj.flatten(2).double()
    rms = x.pow(2).mean(-1).sqrt()
    bad = ~(rms <= limit)
    first = bad.float().argmax(-1).double() * dt
    return torch.where(bad.any(-1), first, torch.full_like(first, math.inf))


def pointwise_w1(pred: Tensor, true: Tensor) -> Tensor:
    """``[B]`` 1-Wasserstein distance between the histograms of pointwise values of ``pred[b]`` and
    ``true[b]`` (every time, point and channel of the window pooled; SciPy's exact 1-D W1)."""
    from scipy.stats import wasserstein_distance

    return torch.tensor(
        [
            wasserstein_distance(p.flatten().double().numpy(), y.flatten().double().numpy())
            for p, y in zip(pred.cpu(), true.cpu())
        ],
        dtype=torch.float64,
    )


def off_attractor_time(traj: Tensor, std: float, band: tuple[float, float] = (0.3, 2.0)) -> Tensor:
    """``[B]`` first step whose rms, in units of the data std, leaves ``band`` (the kit's
    off-attractor time; truth KS22 never leaves [0.3, 2]); ``inf`` when none. Non-finite counts as left."""
    rms = traj.flatten(2).double().pow(2).mean(-1).sqrt() / std
    bad = ~((rms >= band[0]) & (rms <= band[1]))
    return torch.where(bad.any(-1), bad.float().argmax(-1).double(), torch.tensor(math.inf, dtype=torch.float64))


def per_step_growth(steps: Tensor, mean_square: Tensor) -> float:
    """The per-step factor of an rms that grows geometrically: exp(½ b) for the least-squares fit
    log E‖x_t‖² ≈ b t + c over ``steps`` (``mean_square[i]`` at ``steps[i]``)."""
    design = torch.stack([steps, torch.ones_like(steps)], 1)
    return float(torch.exp(0.5 * torch.linalg.lstsq(design, mean_square.log()[:, None]).solution[0, 0]))


def corrector_cost(logs: dict[str, Tensor]) -> dict[str, Tensor]:
    """Per trajectory, from a :class:`~theorylab.train.rollout.Thermalize` rollout's logs (``[n_steps, B]``):
    ``calls_per_step`` (mean denoiser calls), ``thermalized_share`` (share of steps denoised), ``aborted``."""
    return dict(
        calls_per_step=logs["calls"].double().mean(0),
        thermalized_share=logs["thermalized"].double().mean(0),
        aborted=logs["aborted"].any(0),
    )


def spectrum_log_se(traj: Tensor) -> Tensor:
    """Standard error of ln E(m) of the pooled spectrum of ``traj`` ``[B, T, ..., N]``, from the spread of the
    B per-trajectory time-averaged spectra (:func:`spectrum_1d`; trajectories independent)."""
    per_traj = torch.stack([spectrum_1d(traj[i]) for i in range(traj.shape[0])])
    return per_traj.std(0) / per_traj.mean(0) / math.sqrt(traj.shape[0])
