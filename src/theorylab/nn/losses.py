"""Losses for algorithm learning (Nerem et al., arXiv 2503.19173; Wittig et al., arXiv 2602.13106).

Both reduce over the leading (node) axis and keep a trailing member axis: ``pred`` ``(N, S)``,
``target`` ``(N,)`` or ``(N, S)``, optional ``weights`` ``(N, S)`` (default: the mean over nodes).
"""

from __future__ import annotations

import torch
from torch import Tensor


def _aligned(pred: Tensor, target: Tensor) -> Tensor:
    return target if target.ndim == pred.ndim else target[:, None].expand_as(pred)


def _weights(pred: Tensor, weights: Tensor | None) -> Tensor:
    if weights is None:
        return torch.full_like(pred, 1.0 / pred.shape[0])
    return weights


def multiplicative(pred: Tensor, target: Tensor, weights: Tensor | None = None, eps: float = 1e-12) -> Tensor:
    """``Σ_v weight_v |1 − ŷ_v/y_v|`` over nodes with ``|y_v| > eps`` (the source, y = 0, is left out)."""
    t = _aligned(pred, target)
    keep = t.abs() > eps
    ratio = torch.where(keep, (1 - pred / torch.where(keep, t, torch.ones_like(t))).abs(), torch.zeros_like(pred))
    if weights is None:
        return ratio.sum(0) / keep.sum(0).clamp(min=1)
    return (ratio * weights).sum(0)


def mse(pred: Tensor, target: Tensor, weights: Tensor | None = None) -> Tensor:
    """``Σ_v weight_v (ŷ_v − y_v)²`` (the mean over nodes by default)."""
    return ((pred - _aligned(pred, target)).pow(2) * _weights(pred, weights)).sum(0)
