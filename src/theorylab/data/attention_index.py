"""Attention-indexed models (AIMs): Gaussian tokens, a Wishart teacher ``S*`` and Hermite links.

Xu, Sagitova, Zdeborová & Krzakala, *High-dimensional learning dynamics of attention-indexed models*, arXiv
2609.03858 (after Boncoraglio, Troiani, Erba & Zdeborová, arXiv 2506.01582). Tokens ``x_1..x_L`` in ``R^d`` with
``E[x_i x_j^T] = C_ij I_d`` (``x ~ N(0, C ⊗ I_d)``); the bilinear forms ``G_ij(S) = x_i^T S x_j / sqrt(d)`` index the
label. The single-token (L = 1) target is ``y = h(G(S*))`` with the centred form ``G(S) = (x^T S x - Tr S)/sqrt(d)``.
Every generator takes an explicit ``torch.Generator``; nothing reads global RNG state.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

LINKS = ("h1", "h2", "h3")


def _h1(z: torch.Tensor) -> torch.Tensor:
    return z


def _h2(z: torch.Tensor) -> torch.Tensor:
    return (z * z - 1) / math.sqrt(2)


def _h3(z: torch.Tensor) -> torch.Tensor:
    return (z**3 - 3 * z) / math.sqrt(6)


def _dh1(z: torch.Tensor) -> torch.Tensor:
    return torch.ones_like(z)


def _dh2(z: torch.Tensor) -> torch.Tensor:
    return math.sqrt(2) * z


def _dh3(z: torch.Tensor) -> torch.Tensor:
    return (3 * z * z - 3) / math.sqrt(6)


_FNS = {"h1": (_h1, _dh1), "h2": (_h2, _dh2), "h3": (_h3, _dh3)}


def link(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The normalised Hermite link ``h_k = He_k / sqrt(k!)`` (h1, h2, h3); works on tensors and numpy arrays."""
    if name not in _FNS:
        raise ValueError(f"unknown link '{name}'; valid: {', '.join(LINKS)}")
    return _FNS[name][0]


def link_derivative(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """``h_k'`` (the SGD residual needs it)."""
    if name not in _FNS:
        raise ValueError(f"unknown link '{name}'; valid: {', '.join(LINKS)}")
    return _FNS[name][1]


def tokens(
    n: int, d: int, generator: torch.Generator, C: torch.Tensor | None = None, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """``n`` sequences of L tokens, (n, L, d), with ``E[x_i x_j^T] = C_ij I_d`` (C = I, L = 1 when None).

    ``x = chol(C) z`` token-wise, ``z`` standard Gaussian, so the d coordinates are independent copies of N(0, C).
    """
    if n < 1 or d < 1:
        raise ValueError(f"tokens needs n >= 1 and d >= 1; got n = {n}, d = {d}")
    C = torch.eye(1, dtype=torch.float64) if C is None else torch.as_tensor(C, dtype=torch.float64)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or not torch.allclose(C, C.T):
        raise ValueError(f"C must be a symmetric L x L matrix; got shape {tuple(C.shape)}")
    chol = torch.linalg.cholesky(C)  # raises on a C that is not positive definite
    z = torch.randn(n, C.shape[0], d, generator=generator, dtype=dtype)
    return torch.einsum("ik,nkd->nid", chol.to(dtype), z)


def teacher(d: int, generator: torch.Generator, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``S* = W* W*^T`` with ``W*`` (d, d) standard Gaussian, rescaled so that ``Var G(S*) = 2 Tr(S*^2)/d = 1``."""
    if d < 2:
        raise ValueError(f"teacher needs d >= 2; got {d}")
    W = torch.randn(d, d, generator=generator, dtype=torch.float64)
    S = W @ W.T
    return (S / torch.sqrt(2 * (S * S).sum() / d)).to(dtype)


def bilinear_forms(x: torch.Tensor, S: torch.Tensor, chunk: int = 20_000) -> torch.Tensor:
    """Uncentred ``G_ij(S) = x_i^T S x_j / sqrt(d)`` for x (n, L, d) and S (d, d): (n, L, L), in chunks of rows."""
    n, L, d = x.shape
    out = torch.empty(n, L, L, dtype=x.dtype)
    S = S.to(x.dtype)
    for a in range(0, n, chunk):
        xs = x[a : a + chunk]
        out[a : a + chunk] = (xs @ S) @ xs.transpose(1, 2)
    return out / math.sqrt(d)


def centred_form(x: torch.Tensor, S: torch.Tensor, chunk: int = 20_000) -> torch.Tensor:
    """Single-token centred ``G(S) = (x^T S x - Tr S)/sqrt(d)`` for x (n, d) and S (d, d): (n,).

    Computed as ``(x S) · x`` row by row in chunks, in x's dtype (float32 is enough: the centring subtracts
    ``Tr S ~ d/2`` from a number of that size, a relative error ~ 1e-7 against fluctuations ~ sqrt(d)).
    """
    n, d = x.shape
    S = S.to(x.dtype)
    out = torch.empty(n, dtype=torch.float64)
    tr = float(torch.trace(S.double()))
    for a in range(0, n, chunk):
        xs = x[a : a + chunk]
        out[a : a + chunk] = ((xs @ S) * xs).sum(1).double()
    return (out - tr) / math.sqrt(d)
