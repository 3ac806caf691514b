"""Spectral summaries of weight matrices: stable rank and effective rank."""

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
