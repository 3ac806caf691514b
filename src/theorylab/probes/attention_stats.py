"""Statistics of attention patterns read through a model's hook points.

Patterns are ``(B, H, T_q, T_k)`` tensors of attention weights (rows sum to one), as the
``hook_pattern`` points of :class:`~theorylab.nn.ToyTransformer` give them.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def attention_entropy(pattern: Tensor) -> Tensor:
    """Mean entropy (nats) of each head's attention rows: (H,). 0 for one-hot rows, log T_k for uniform."""
    p = pattern.clamp_min(0)
    plogp = torch.where(p > 0, p * p.log(), torch.zeros_like(p))
    return -plogp.sum(-1).mean(dim=(0, 2))


def argmax_hit_rate(pattern: Tensor, index: Tensor) -> Tensor:
    """Per head, the fraction of queries whose top-weighted key is ``index``: (H,).

    ``index``: (B, T_q) the key each query should attend to (e.g. the farthest point).
    """
    top = pattern.argmax(dim=-1)  # (B, H, T_q)
    return (top == index[:, None, :]).to(torch.float64).mean(dim=(0, 2))


@torch.no_grad()
def attention_patterns(model: nn.Module, x: Tensor) -> dict[int, Tensor]:
    """Every layer's pattern for input ``x``: ``{layer: (B, H, T, T)}`` (through ``run_with_cache``)."""
    _, cache = model.run_with_cache(x, names=lambda name: name.endswith("attn.hook_pattern"))
    return {int(name.split(".")[1]): t for name, t in cache.items()}
