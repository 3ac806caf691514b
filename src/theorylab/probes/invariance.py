"""Invariance gap: how differently a model treats two inputs that it should (or cannot help but) treat alike.

Bechler-Speicher et al., *Lost in Tokenization*, arXiv 2605.22471 (2026): a transformer with no positional encoding
sees a graph only through the multiset of its tokens. The Shrikhande graph and the 4x4 rook's graph have identical
random-walk tokens (every vertex's ``(P^t)_ii`` is fixed by srg(16, 6, 2, 2)), so any RW-token model gives them
the same pooled logits however it was trained; an adjacency-token model need not. ``invariance_gap`` measures
``max |f(tokens_a) - f(tokens_b)|`` over the batch and the logits, under ``no_grad`` and ``eval()``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


@torch.no_grad()
def invariance_gaps(
    model: nn.Module, tokens_a: Tensor, tokens_b: Tensor, mask_a: Tensor | None = None, mask_b: Tensor | None = None
) -> Tensor:
    """Per pair ``max_c |f(a)_c - f(b)_c|`` of pooled logits (B,); ``model(tokens, mask) -> (B, C)``."""
    if tokens_a.shape != tokens_b.shape:
        raise ValueError(
            f"tokens_a and tokens_b must have one shape; got {tuple(tokens_a.shape)} and {tuple(tokens_b.shape)}"
        )
    was = model.training
    model.eval()
    try:
        fa, fb = model(tokens_a, mask_a), model(tokens_b, mask_b)
    finally:
        model.train(was)
    if fa.dim() != 2:
        raise ValueError(f"invariance_gap needs pooled logits (B, C); the model returned {tuple(fa.shape)}")
    return (fa.double() - fb.double()).abs().amax(-1)


def invariance_gap(
    model: nn.Module, tokens_a: Tensor, tokens_b: Tensor, mask_a: Tensor | None = None, mask_b: Tensor | None = None
) -> float:
    """``max |f(tokens_a) - f(tokens_b)|`` over pairs and pooled logits (a float)."""
    return float(invariance_gaps(model, tokens_a, tokens_b, mask_a, mask_b).max())


@torch.no_grad()
def pair_accuracy(
    model: nn.Module, tokens_a: Tensor, tokens_b: Tensor, mask_a: Tensor | None = None, mask_b: Tensor | None = None
) -> float:
    """Accuracy of a 2-class pooled model on the pairs (label 0 for ``a``, 1 for ``b``); equal logits give one right
    and one wrong answer per pair, so identical inputs score exactly 0.5."""
    was = model.training
    model.eval()
    try:
        pa, pb = model(tokens_a, mask_a).argmax(-1), model(tokens_b, mask_b).argmax(-1)
    finally:
        model.train(was)
    return float(((pa == 0).double().mean() + (pb == 1).double().mean()) / 2)
