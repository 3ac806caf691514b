"""Linear (Gaussian) denoisers and their exact probability-flow sampling map.

Reference: Wang, Zavatone-Veth, Pehlevan, arXiv 2602.02908, the linear denoiser
D(x; sigma) = mu + Sigma (Sigma + sigma^2 I)^-1 (x - mu), which is the optimal denoiser of N(mu, Sigma),
and the PF-ODE solution it induces in closed form.
"""

from __future__ import annotations

import torch
from torch import nn


class LinearDenoiser(nn.Module):
    """D(x; sigma) = mu + Sigma (Sigma + sigma^2 I)^-1 (x - mu) from a data set's mean and covariance.

    Built once from (mu, Sigma); the eigendecomposition makes every noise level cost one matmul.
    Works on batches: ``x`` (..., d), ``sigma`` a float or a tensor broadcastable to ``x.shape[:-1]``.
    """

    def __init__(self, mean: torch.Tensor, covariance: torch.Tensor):
        super().__init__()
        evals, evecs = torch.linalg.eigh(covariance)
        self.register_buffer("mean", mean)
        self.register_buffer("evals", evals.clamp_min(0))
        self.register_buffer("evecs", evecs)

    @classmethod
    def fit(cls, x: torch.Tensor, known_mean: torch.Tensor | None = None) -> "LinearDenoiser":
        """From samples ``x`` (n, d): estimated mean with 1/(n-1), or a known mean with 1/n."""
        if known_mean is None:
            mean = x.mean(0)
            centered = x - mean
            cov = centered.T @ centered / (x.shape[0] - 1)
        else:
            mean = known_mean
            centered = x - mean
            cov = centered.T @ centered / x.shape[0]
        return cls(mean, cov)

    def spectral(self, fn: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Apply V diag(fn) V^T to x - mu: fn (..., d) per-eigenvalue gains."""
        coords = (x - self.mean) @ self.evecs  # (..., d) in the data eigenbasis
        return (coords * fn) @ self.evecs.T

    def forward(self, x: torch.Tensor, sigma: float | torch.Tensor) -> torch.Tensor:
        s2 = torch.as_tensor(sigma, dtype=x.dtype, device=x.device) ** 2
        if s2.ndim > 0:
            s2 = s2[..., None]
        gain = self.evals / (self.evals + s2)
        return self.mean + self.spectral(gain, x)


def linear_sampling_map(
    denoiser: LinearDenoiser, x_T: torch.Tensor, sigma_T: float = 80.0, sigma: float = 0.0
) -> torch.Tensor:
    """Exact PF-ODE map from noise level sigma_T to sigma for the Gaussian model of ``denoiser``:
    x* = mu + (Sigma + sigma^2)^(1/2) (Sigma + sigma_T^2)^(-1/2) (x_T - mu).
    """
    gain = torch.sqrt((denoiser.evals + sigma**2) / (denoiser.evals + sigma_T**2))
    return denoiser.mean + denoiser.spectral(gain, x_T)


def linear_samples(train, x_T: torch.Tensor, sigma_T: float = 80.0) -> torch.Tensor:
    """Clean samples (sigma = 0) from the seeds ``x_T`` by the exact PF-ODE map of the linear denoiser fitted
    (estimated mean, 1/(n-1) covariance) on the rows of ``train`` (n, d), in float64."""
    return linear_sampling_map(LinearDenoiser.fit(torch.as_tensor(train, dtype=torch.float64)), x_T, sigma_T)
