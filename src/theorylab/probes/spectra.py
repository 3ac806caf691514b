"""Spectral summaries: stable and effective rank of weight matrices; the normalised Gram spectrum of a token set
and its participation ratio (consensus measures of Silvestre, Rodríguez Abella and Tabuada 2026)."""

from __future__ import annotations

import torch
from torch import Tensor


def stable_rank(W: Tensor) -> Tensor:
    """``‖W‖_F² / ‖W‖₂²`` (between 1 and rank W); batched over leading axes."""
    s = torch.linalg.svdvals(W.double())
    return s.pow(2).sum(-1) / s[..., 0].pow(2)


def effective_rank(W: Tensor) -> Tensor:
    """Roy and Vetterli's ``exp(entropy of σ_i / Σσ)``; batched over leading axes."""
    s = torch.linalg.svdvals(W.double())
    p = s / s.sum(-1, keepdim=True)
    ent = -(torch.where(p > 0, p * p.log(), torch.zeros_like(p))).sum(-1)
    return ent.exp()


def gram_spectrum(Z: Tensor) -> Tensor:
    """Eigenvalues ``λ̄_1 ≥ … ≥ λ̄_ℓ`` of ``G = Ẑ Ẑᵀ`` for the ``ℓ`` tokens (rows) of ``Z`` ``(..., ℓ, n)``,
    each row scaled to unit norm, divided by their sum (``tr G = ℓ``); batched over leading axes.

    ``λ̄₁ ∈ [1/ℓ, 1]``: 1 exactly when all tokens are ±-collinear (consensus), ``1/ℓ`` for orthonormal tokens.
    Round-off negatives of the PSD ``G`` are clipped to 0."""
    Zn = Z.double()
    Zn = Zn / Zn.norm(dim=-1, keepdim=True)
    lam = torch.linalg.eigvalsh(Zn @ Zn.transpose(-1, -2)).flip(-1).clamp_min(0.0)
    return lam / lam.sum(-1, keepdim=True)


def participation_ratio(x: Tensor, *, tokens: bool = False) -> Tensor:
    """``r = 1 / Σ_k λ̄_k²`` (between 1 and ``ℓ``) of a normalised spectrum ``x`` ``(..., ℓ)``, or, with
    ``tokens=True``, of :func:`gram_spectrum` of the token matrix ``x`` ``(..., ℓ, n)``."""
    lam = gram_spectrum(x) if tokens else x
    return 1.0 / lam.pow(2).sum(-1)
