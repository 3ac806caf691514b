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
def ustat_k3_matrix(X: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor, *, diagonal: bool = False, block: int = 2048, device: str | torch.device | None = None) -> np.ndarray:
    """``sum_{i,j} y_i y_j K_3(x_i, x_j)`` normalised, symmetrised: U-statistic (``diagonal=False``) or V-statistic.

    Terms of the closed form summed over pairs with weights ``A_ij = y_i y_j`` (diagonal zeroed for U):
    ``X^T [A o (G^2 - s 1^T - 1 s^T + d + 4)] X - 4 X^T diag(y o (A' G 1)) X + 2 X^T A^T X + 2 I sum(A o G)``,
    with ``G = X X^T`` and ``s = diag G``, accumulated over row blocks.
    """
    xt = torch.as_tensor(X, dtype=torch.float64, device=device)
    yt = torch.as_tensor(y, dtype=torch.float64, device=xt.device)
    n, d = xt.shape
    s = (xt * xt).sum(1)  # (n,)
    total = torch.zeros(d, d, dtype=torch.float64, device=xt.device)
    trace_term = torch.zeros((), dtype=torch.float64, device=xt.device)
    for start in range(0, n, block):
        rows = slice(start, min(start + block, n))
        xi, yi, si = xt[rows], yt[rows], s[rows]
        g = xi @ xt.T  # (b, n)
        a = yi[:, None] * yt[None, :]  # (b, n)
        if not diagonal:
            idx = torch.arange(rows.start, rows.stop, device=xt.device)
            a[idx - rows.start, idx] = 0.0
        w = a * (g * g - si[:, None] - s[None, :] + d + 4)
        total += xi.T @ (w @ xt)  # sum_ij w_ij x_i x_j^T
        q = (a * g).sum(1)  # (b,): sum_j A_ij G_ij
        total -= 4 * (xi * q[:, None]).T @ xi  # -2 G (x_i x_i^T + x_j x_j^T), both halves
        total += 2 * (a @ xt).T @ xi  # 2 sum_ij A_ij x_j x_i^T
        trace_term += 2 * q.sum()
    total += trace_term * torch.eye(d, dtype=torch.float64, device=xt.device)
    pairs = n * (n - 1) if not diagonal else n * n
    m = (total / pairs).cpu().numpy()
    return (m + m.T) / 2


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
