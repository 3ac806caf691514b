"""Spectral estimators of the generative-leap paper (Damian, Lee, Bruna, arXiv 2506.05500).

- :func:`k3_kernel`: the order-3 Hermite kernel ``K_3(x, x')_{ab} = sum_{ce} He_3(x)_{ace} He_3(x')_{bce}``
  in closed form (checked against explicit tensors in the tests);
- :func:`ustat_k3_matrix`: ``M = (1/(n(n-1))) sum_{i != j} y_i y_j K_3(x_i, x_j)`` (U-statistic, diagonal
  removed) or the V-statistic ``(1/n^2) sum_{i,j}`` (diagonal kept), computed in O(n^2 d) through the
  Gram matrix in row blocks (memory O(block * n)), on the GPU when the inputs are there. For the
  3-parity its population value is ``2 (2/pi)^3 P_span(e1,e2,e3)``;
- :class:`SpectralU3`: the top eigenvectors of that matrix, scikit-learn style;
- :class:`TransformedPHD`: the order-2 estimator ``M_2 = (1/n) sum T(y_i)(x_i x_i^T - I)`` with a label
  transform ``T`` (``log|y|`` by default: ``y^2`` has too heavy tails).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from theorylab.theory.sdr import PHD, SubspaceEstimator


def k3_kernel(x: np.ndarray, xp: np.ndarray) -> np.ndarray:
    """``K_3(x, x')`` (d, d) for two vectors, closed form:
    ``x_a x'_b (<x,x'>^2 - |x|^2 - |x'|^2 + d + 4) - 2<x,x'>(x_a x_b + x'_a x'_b) + 2 x'_a x_b + 2 delta_ab <x,x'>``.
    """
    x, xp = np.asarray(x, dtype=np.float64), np.asarray(xp, dtype=np.float64)
    d = len(x)
    g = x @ xp
    return (
        np.outer(x, xp) * (g * g - x @ x - xp @ xp + d + 4)
        - 2 * g * (np.outer(x, x) + np.outer(xp, xp))
        + 2 * np.outer(xp, x)
        + 2 * g * np.eye(d)
    )


@torch.no_grad()
def k3_pair_sums(X: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor, *, block: int = 2048, device: str | torch.device | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(sum_{i != j} y_i y_j K_3(x_i, x_j), sum_i y_i^2 K_3(x_i, x_i))``, both (d, d).

    Summing the closed form over all pairs (``m = X^T y``, ``p = X^T (y o s)``, ``s_i = |x_i|^2``):
    ``sum_ij y_i y_j G_ij^2 x_i x_j^T + (d + 4) m m^T - p m^T - m p^T - 4 X^T diag(y o X m) X + 2 m m^T + 2 |m|^2 I``.
    Only the first term needs the n x n Gram matrix ``G``; it is accumulated over row blocks (two
    matmuls and one in-place square per block, memory O(block * n)), so the cost is O(n^2 d).
    The diagonal is ``K_3(x, x) = (s^2 - 6 s + d + 6) x x^T + 2 s I``; the U-sum is the total minus it.
    """
    xt = torch.as_tensor(X, dtype=torch.float64, device=device)
    yt = torch.as_tensor(y, dtype=torch.float64, device=xt.device)
    n, d = xt.shape
    eye = torch.eye(d, dtype=torch.float64, device=xt.device)
    s = (xt * xt).sum(1)  # (n,)
    m = xt.T @ yt  # (d,)
    p = xt.T @ (yt * s)
    total = torch.zeros(d, d, dtype=torch.float64, device=xt.device)
    for start in range(0, n, block):
        xi, yi = xt[start : start + block], yt[start : start + block]
        g = xi @ xt.T  # (b, n)
        g.square_().mul_(yt)  # y_j G_ij^2
        total += (xi * yi[:, None]).T @ (g @ xt)
        del g
    total += (d + 6) * torch.outer(m, m) - torch.outer(p, m) - torch.outer(m, p)
    total -= 4 * (xt * (yt * (xt @ m))[:, None]).T @ xt
    total += 2 * (m @ m) * eye
    wd = yt * yt * (s * s - 6 * s + d + 6)
    diag = (xt * wd[:, None]).T @ xt + 2 * (yt * yt * s).sum() * eye
    return (total - diag).cpu().numpy(), diag.cpu().numpy()


def ustat_k3_matrix(X: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor, *, diagonal: bool = False, block: int = 2048, device: str | torch.device | None = None) -> np.ndarray:
    """The U-statistic ``(1/(n(n-1))) sum_{i != j} y_i y_j K_3(x_i, x_j)`` (``diagonal=False``) or the
    V-statistic ``(1/n^2) sum_{i,j}`` (``diagonal=True``), symmetrised."""
    n = len(y)
    off, diag = k3_pair_sums(X, y, block=block, device=device)
    m = (off + diag) / (n * n) if diagonal else off / (n * (n - 1))
    return (m + m.T) / 2


def u_and_v_k3_matrices(X: np.ndarray, y: np.ndarray, *, block: int = 2048, device: str | torch.device | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Both statistics from one pass over the pairs."""
    n = len(y)
    off, diag = k3_pair_sums(X, y, block=block, device=device)
    u, v = off / (n * (n - 1)), (off + diag) / (n * n)
    return (u + u.T) / 2, (v + v.T) / 2


def top_subspace(matrix: np.ndarray, k: int) -> np.ndarray:
    """The top-``k`` eigenvectors of a symmetric matrix: (d, k)."""
    vals, vecs = np.linalg.eigh(matrix)
    return vecs[:, np.argsort(-vals)[:k]]


class SpectralU3(SubspaceEstimator):
    """Top eigenvectors of the order-3 U-statistic matrix (``diagonal=True``: the V-statistic)."""

    def __init__(self, n_components: int = 3, diagonal: bool = False, block: int = 2048, device: str | None = None):
        super().__init__(n_components)
        self.diagonal, self.block, self.device = diagonal, block, device

    def _matrix(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return ustat_k3_matrix(X, y - y.mean(), diagonal=self.diagonal, block=self.block, device=self.device)


def log_abs(y: np.ndarray) -> np.ndarray:
    """The tempered label transform ``log |y|`` (zeros mapped to the smallest nonzero |y|)."""
    a = np.abs(y)
    floor = a[a > 0].min() if (a > 0).any() else 1.0
    return np.log(np.maximum(a, floor))


class TransformedPHD(PHD):
    """Order-2 estimator with a label transform: pHd on ``T(y)`` (centred). Any transform of a
    binary label is affine in it, so for ``y = +-1`` use the identity."""

    def __init__(self, n_components: int = 1, transform: Callable[[np.ndarray], np.ndarray] = log_abs):
        super().__init__(n_components)
        self.transform = transform

    def fit(self, X: np.ndarray, y: np.ndarray) -> "TransformedPHD":
        X, y = self._check(X, y)
        return super().fit(X, np.asarray(self.transform(y), dtype=np.float64))
