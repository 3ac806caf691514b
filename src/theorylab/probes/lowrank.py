"""Reversible low-rank edits of query/key weights, and the loss they cost (query-key-asymmetry card).

``truncate(model, which, rank)`` replaces, in every head of a :class:`~theorylab.nn.ToyTransformer`,
W_Q, W_K or the operator M = W_Qᵀ W_K by its best rank-``rank`` approximation (SVD) and restores the
weights on exit, even after an error. For ``which="qk"`` the truncated M is written back in the
balanced gauge W_Q = (U√Σ)ᵀ, W_K = (V√Σ)ᵀ, so only M is changed. ``delta_loss`` measures the loss
change of an edit on fixed data.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Literal

import torch
from torch import Tensor, nn

Which = Literal["q", "k", "qk"]


def _best_rank(W: Tensor, rank: int) -> Tensor:
    U, s, Vh = torch.linalg.svd(W, full_matrices=False)
    return (U[..., :rank] * s[..., None, :rank]) @ Vh[..., :rank, :]


@contextmanager
@torch.no_grad()
def truncate(model: nn.Module, which: Which, rank: int) -> Iterator[None]:
    """Every head's W_Q (``"q"``), W_K (``"k"``) or M (``"qk"``) at rank ``rank`` inside the block."""
    if which not in ("q", "k", "qk"):
        raise ValueError(f"which must be 'q', 'k' or 'qk', got {which!r}")
    saved = []
    try:
        for block in model.blocks:
            a = block.attn
            if a.W_K is None:
                raise ValueError("tied queries and keys cannot be truncated separately")
            saved.append((a, a.W_Q.detach().clone(), a.W_K.detach().clone()))
            r_head = a.W_Q.shape[1]
            if rank >= r_head:
                continue
            if which == "q":
                a.W_Q.copy_(_best_rank(a.W_Q, rank))
            elif which == "k":
                a.W_K.copy_(_best_rank(a.W_K, rank))
            else:
                M = a.W_Q.transpose(1, 2) @ a.W_K  # (H, d, d): scale left out, it is common to both
                U, s, Vh = torch.linalg.svd(M, full_matrices=False)
                root = s[:, :rank].sqrt()
                a.W_Q.zero_()
                a.W_K.zero_()
                a.W_Q[:, :rank] = (U[:, :, :rank] * root[:, None, :]).transpose(1, 2)
                a.W_K[:, :rank] = root[:, :, None] * Vh[:, :rank, :]
        yield
    finally:
        for a, wq, wk in saved:
            a.W_Q.copy_(wq)
            a.W_K.copy_(wk)


@torch.no_grad()
def delta_loss(model: nn.Module, loss_fn: Callable[[nn.Module], Tensor], which: Which, rank: int) -> float:
    """``loss(truncated) − loss(original)`` on whatever data ``loss_fn`` closes over."""
    base = float(loss_fn(model))
    with truncate(model, which, rank):
        edited = float(loss_fn(model))
    return edited - base
