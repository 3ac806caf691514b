"""Gaussian data with a prescribed covariance spectrum, and exact draws of its sample covariance."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray


@dataclass(frozen=True)
class PowerLawGaussian:
    """x ~ N(0, Sigma), Sigma = U diag(lambda) U^T with lambda_k = k^-alpha (k = 1..d) or a given spectrum.

    ``basis="eigen"`` keeps U = I; ``basis="random"`` uses a Haar-random orthogonal U drawn from
    ``basis_seed`` (no result of a rotation-invariant estimator may depend on it).
    """

    d: int
    alpha: float = 1.0
    spectrum: tuple[float, ...] | None = None
    basis: str = "eigen"
    basis_seed: int = 0

    def __post_init__(self) -> None:
        if self.d < 1:
            raise ValueError("d must be >= 1")
        if self.spectrum is not None and len(self.spectrum) != self.d:
            raise ValueError("spectrum must have d entries")
        if self.basis not in ("eigen", "random"):
            raise ValueError("basis must be 'eigen' or 'random'")

    @property
    def eigenvalues(self) -> NDArray[np.float64]:
        if self.spectrum is not None:
            return np.asarray(self.spectrum, dtype=np.float64)
        return np.arange(1, self.d + 1, dtype=np.float64) ** (-self.alpha)

    @property
    def orthogonal_basis(self) -> NDArray[np.float64]:
        if self.basis == "eigen":
            return np.eye(self.d)
        g = np.random.default_rng(self.basis_seed).standard_normal((self.d, self.d))
        q, r = np.linalg.qr(g)
        return q * np.sign(np.diag(r))  # Haar measure

    @property
    def covariance(self) -> NDArray[np.float64]:
        u = self.orthogonal_basis
        return (u * self.eigenvalues) @ u.T

    def sample(
        self, n: int, generator: torch.Generator, batch: tuple[int, ...] = (), dtype: torch.dtype = torch.float64
    ) -> torch.Tensor:
        """Draw ``batch + (n, d)`` points."""
        z = torch.randn(*batch, n, self.d, generator=generator, dtype=dtype)
        root = torch.as_tensor(self.orthogonal_basis * np.sqrt(self.eigenvalues), dtype=dtype)  # U Lambda^(1/2)
        return z @ root.T


def wishart_sample_covariance(
    eigenvalues: NDArray[np.float64] | torch.Tensor,
    n: int,
    draws: int,
    rng: np.random.Generator,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """``draws`` independent known-mean sample covariances (1/n) sum_i x_i x_i^T of n Gaussian points.

    Drawn exactly, in the eigenbasis of Sigma = diag(lambda), through Bartlett's decomposition of
    the Wishart law W_d(n, I): W = L L^T with L lower triangular, L_ii^2 ~ chi^2(n - i + 1) and
    L_ij ~ N(0, 1) below the diagonal. This costs O(d^3) per draw instead of O(n d^2), so many
    data-set draws at large n stay cheap. Rank-deficient cases (n < d) fall back to explicit
    samples. The normals are drawn on ``device`` from a torch generator seeded by ``rng`` (same
    law on every device; the numbers differ between CPU and CUDA). Returns a (draws, d, d)
    float64 tensor on ``device``.
    """
    device = torch.device(device)
    lam = torch.as_tensor(eigenvalues, dtype=torch.float64, device=device)
    d = lam.numel()
    root = lam.sqrt()
    # torch's float32 normals are several times faster than float64 ones (or NumPy's) on CPU;
    # their 24-bit mantissa changes nothing a Monte Carlo average can see.
    gen = torch.Generator(device=device)
    gen.manual_seed(int(rng.integers(2**62)))
    if n < d:
        x = torch.randn(draws, n, d, generator=gen, device=device).double() * root
        return x.transpose(1, 2) @ x / n
    chi = torch.from_numpy(np.sqrt(rng.chisquare(n - np.arange(d), size=(draws, d)))).to(device)
    lower = torch.randn(draws, d, d, generator=gen, device=device).tril_(-1).double()
    lower.diagonal(dim1=1, dim2=2).copy_(chi)
    w = lower @ lower.transpose(1, 2)  # (draws, d, d) ~ Wishart(n, I)
    return root[:, None] * w * root[None, :] / n


def correlated_gaussian(
    n: int, mean: NDArray[np.float64], cov: NDArray[np.float64], rng: np.random.Generator
) -> torch.Tensor:
    """``n`` draws of N(mean, cov) as a float32 tensor (n, d): ``mean + z L^T`` with ``L`` the Cholesky factor
    of ``cov`` and ``z`` standard normals from ``rng`` (computed in float64, then cast)."""
    mean = np.asarray(mean, dtype=np.float64)
    return torch.from_numpy(mean + rng.standard_normal((n, len(mean))) @ np.linalg.cholesky(cov).T).float()
