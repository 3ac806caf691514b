"""Shallow polynomial (monomial-activation) networks f(x) = sum_i a_i <w_i, x>^k and their symmetric-tensor view.

A width-r network with activation t -> t^k is the symmetric tensor T = sum_i a_i w_i^{(x)k} of rank <= r
(Arjevani, Bruna, Kileel, Polak & Trager, arXiv 2501.06074): f(x) = <T, x^{(x)k}>. For k = 2 the tensor is the
matrix A = W^T diag(a) W. The functional helpers take ``(W, a)`` batched over leading dimensions so that many
networks (gradient-descent runs) can be handled at once.
"""

from __future__ import annotations

import math
import string

import torch
from torch import nn

__all__ = ["PolyNet", "flatten_params", "poly_forward", "poly_tensor", "symmetry_directions", "unflatten_params"]


def _check(W: torch.Tensor, a: torch.Tensor, k: int) -> None:
    if k < 1:
        raise ValueError(f"degree k must be >= 1; got {k}")
    if W.ndim < 2 or a.shape != W.shape[:-1]:
        raise ValueError(f"W must be (..., r, d) and a (..., r); got W {tuple(W.shape)}, a {tuple(a.shape)}")


def poly_forward(W: torch.Tensor, a: torch.Tensor, x: torch.Tensor, k: int) -> torch.Tensor:
    """f(x) = sum_i a_i <w_i, x>^k for W (r, d), a (r,), x (n, d) -> (n,)."""
    _check(W, a, k)
    return ((x @ W.transpose(-1, -2)) ** k) @ a


def poly_tensor(W: torch.Tensor, a: torch.Tensor, k: int) -> torch.Tensor:
    """T = sum_i a_i w_i^{(x)k}, shape (..., d, ..., d) with k trailing axes; for k = 2 the matrix W^T diag(a) W."""
    _check(W, a, k)
    if k == 2:
        return W.transpose(-1, -2) @ (a[..., :, None] * W)
    if k > 8:
        raise ValueError(f"dense tensors are built for k <= 8 only; got k = {k}")
    letters = string.ascii_lowercase[:k]
    spec = "...r," + ",".join(f"...r{c}" for c in letters) + "->..." + letters
    return torch.einsum(spec, a, *([W] * k))


def flatten_params(W: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """theta = (vec W row-major, a): length r(d + 1)."""
    return torch.cat([W.reshape(-1), a.reshape(-1)])


def unflatten_params(theta: torch.Tensor, r: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse of :func:`flatten_params`."""
    if theta.shape[-1] != r * (d + 1):
        raise ValueError(f"theta must have r(d + 1) = {r * (d + 1)} entries; got {theta.shape[-1]}")
    return theta[..., : r * d].reshape(*theta.shape[:-1], r, d), theta[..., r * d :]


def symmetry_directions(W: torch.Tensor, a: torch.Tensor, k: int) -> torch.Tensor:
    """Tangent vectors (rows, in the ``flatten_params`` layout) of the parameter symmetries that fix the tensor.

    Scalings w_i -> c w_i, a_i -> a_i / c^k give (delta w_i, delta a_i) = (w_i, -k a_i), one per neuron. For k = 2
    the linear maps W -> M W with M^T diag(a) M = diag(a) (orthogonal or hyperbolic rotations, dimension
    r(r - 1)/2) give delta W = diag(a)^{-1} K W for K = E_ij - E_ji, i < j; they need every a_i != 0.
    """
    _check(W, a, k)
    r, d = W.shape
    dirs = []
    for i in range(r):
        dW = torch.zeros_like(W)
        dW[i] = W[i]
        da = torch.zeros_like(a)
        da[i] = -k * a[i]
        dirs.append(flatten_params(dW, da))
    if k == 2 and r > 1:
        if bool((a == 0).any()):
            raise ValueError("rotation symmetries need every a_i != 0")
        for i in range(r):
            for j in range(i + 1, r):
                K = torch.zeros(r, r, dtype=W.dtype)
                K[i, j], K[j, i] = 1.0, -1.0
                dirs.append(flatten_params((K / a[:, None]) @ W, torch.zeros_like(a)))
    return torch.stack(dirs)


class PolyNet(nn.Module):
    """f(x) = sum_{i <= r} a_i <w_i, x>^k with parameters W (r, d) and a (r,).

    ``to_tensor()`` returns the symmetric tensor sum_i a_i w_i^{(x)k} (the matrix W^T diag(a) W when k = 2);
    ``PolyNet.from_tensor(A, r)`` builds a k = 2 network from a symmetric matrix by keeping its r eigenpairs of
    largest |eigenvalue| (exact when rank A <= r).
    """

    def __init__(
        self,
        d: int,
        r: int,
        k: int = 2,
        *,
        dtype: torch.dtype = torch.float64,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        if d < 1 or r < 1 or k < 1:
            raise ValueError(f"PolyNet needs d, r, k >= 1; got d={d}, r={r}, k={k}")
        self.d, self.r, self.k = int(d), int(r), int(k)
        self.W = nn.Parameter(torch.randn(r, d, dtype=dtype, generator=generator) / math.sqrt(d))
        self.a = nn.Parameter(torch.randn(r, dtype=dtype, generator=generator))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.d:
            raise ValueError(f"input must have last dimension d = {self.d}; got {tuple(x.shape)}")
        return poly_forward(self.W, self.a, x, self.k)

    def to_tensor(self) -> torch.Tensor:
        return poly_tensor(self.W, self.a, self.k)

    def flat(self) -> torch.Tensor:
        return flatten_params(self.W.detach(), self.a.detach())

    @classmethod
    def from_params(cls, W: torch.Tensor, a: torch.Tensor, k: int = 2) -> "PolyNet":
        _check(W, a, k)
        net = cls(W.shape[1], W.shape[0], k, dtype=W.dtype)
        with torch.no_grad():
            net.W.copy_(W)
            net.a.copy_(a)
        return net

    @classmethod
    def from_tensor(cls, A: torch.Tensor, r: int, k: int = 2, tol: float = 1e-12) -> "PolyNet":
        """k = 2 only: W rows sqrt|lambda_i| v_i^T, a_i = sign(lambda_i) for the r largest |lambda_i| (zero rows
        with a_i = 1 if fewer than r eigenvalues exceed ``tol`` times the largest)."""
        if k != 2:
            raise ValueError(f"from_tensor is implemented for k = 2 (matrices) only; got k = {k}")
        A = torch.as_tensor(A)
        if A.ndim != 2 or A.shape[0] != A.shape[1] or not torch.allclose(A, A.T, atol=1e-12, rtol=1e-10):
            raise ValueError(f"from_tensor needs a symmetric square matrix; got shape {tuple(A.shape)}")
        lam, V = torch.linalg.eigh(A)
        order = torch.argsort(lam.abs(), descending=True)[:r]
        lam, V = lam[order], V[:, order]
        keep = lam.abs() > tol * max(float(lam.abs().max()) if len(lam) else 0.0, 1e-300)
        W = torch.zeros(r, A.shape[0], dtype=A.dtype)
        a = torch.ones(r, dtype=A.dtype)
        n = int(keep.sum())
        W[:n] = lam[keep].abs().sqrt()[:, None] * V[:, keep].T
        a[:n] = torch.sign(lam[keep])
        return cls.from_params(W, a, 2)
