"""Reversible interventions on trained models and the read-outs that go with them.

- :func:`ablate`: zero the output of named sub-modules (a feed-forward layer, an attention
  block, a hook point) for the duration of a ``with`` block; works on any ``nn.Module``, ours or a
  Hugging Face model.
- :func:`low_rank`: replace weight matrices by their best rank-k approximation (LASER, Sharma,
  Ash, Misra, arXiv 2312.13558: "layer-selective rank reduction") and restore them on exit.
- :func:`direct_logit` and :func:`logit_margin`: what one component writes to the logits through
  the unembedding, and its margin for a token (Chen, Bruna, Bietti, arXiv 2406.03068, Sec. 4).
- :func:`attention_to`: attention mass each query puts on one chosen key.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterable, Iterator, Mapping

import torch
from torch import Tensor, nn


def _zero_like_output(output):
    if isinstance(output, Tensor):
        return torch.zeros_like(output)
    if isinstance(output, tuple) and output and isinstance(output[0], Tensor):
        return (torch.zeros_like(output[0]), *output[1:])  # HF blocks return (hidden, extras...)
    raise TypeError(f"cannot zero an output of type {type(output).__name__}")


@contextmanager
def ablate(model: nn.Module, names: str | Iterable[str]) -> Iterator[None]:
    """Zero the outputs of the sub-modules ``names`` (as in ``model.named_modules()``) inside the block.

    In a residual network, zeroing a sub-block's output removes its contribution to the stream
    (e.g. ``"blocks.1.mlp"`` drops the second feed-forward layer). Hooks are removed on exit.
    """
    names = [names] if isinstance(names, str) else list(names)
    modules = dict(model.named_modules())
    unknown = [n for n in names if n not in modules]
    if unknown:
        raise KeyError(f"no sub-module named {unknown} in {type(model).__name__}")
    handles = [modules[n].register_forward_hook(lambda _m, _i, out: _zero_like_output(out)) for n in names]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def best_rank_k(matrix: Tensor, rank: int) -> Tensor:
    """The best rank-``rank`` approximation (Eckart-Young) of a 2-D tensor, by SVD in float64."""
    if matrix.dim() != 2:
        raise ValueError(f"low-rank truncation needs a matrix, got shape {tuple(matrix.shape)}")
    if rank < 0:
        raise ValueError(f"rank must be >= 0, got {rank}")
    u, s, vh = torch.linalg.svd(matrix.detach().double(), full_matrices=False)
    k = min(rank, s.numel())
    return ((u[:, :k] * s[:k]) @ vh[:k]).to(matrix.dtype)


def best_rank_k_stack(weight: Tensor, rank: int) -> Tensor:
    """:func:`best_rank_k` of a matrix, or of every matrix of a stack (..., m, n) such as a
    per-head attention weight ``W_V: (H, v, d)``, each truncated on its own."""
    if weight.dim() == 2:
        return best_rank_k(weight, rank)
    if weight.dim() < 2:
        raise ValueError(f"low-rank truncation needs a matrix or a stack of matrices, got shape {tuple(weight.shape)}")
    flat = weight.reshape(-1, *weight.shape[-2:])
    return torch.stack([best_rank_k(m, rank) for m in flat]).reshape(weight.shape)


@contextmanager
def low_rank(model: nn.Module, ranks: Mapping[str, int]) -> Iterator[None]:
    """Replace each parameter ``name`` (as in ``model.named_parameters()``) by its best rank-k
    approximation inside the block, restoring the exact weights on exit (even after an error).
    A rank at or above the matrix's own leaves it unchanged. A parameter with more than two axes
    (per-head weights, e.g. ``blocks.1.attn.W_V`` of shape (H, v, d)) is truncated head by head."""
    params = dict(model.named_parameters())
    unknown = [n for n in ranks if n not in params]
    if unknown:
        raise KeyError(f"no parameter named {unknown} in {type(model).__name__}")
    saved = {n: params[n].detach().clone() for n in ranks}
    try:
        with torch.no_grad():
            for n, k in ranks.items():
                params[n].copy_(best_rank_k_stack(params[n], k))
        yield
    finally:
        with torch.no_grad():
            for n, w in saved.items():
                params[n].copy_(w)


def direct_logit(component: Tensor, unembed: Tensor) -> Tensor:
    """Logits written by one residual-stream component alone: ``component @ unembed.T``.

    ``component``: (..., d) the component's output; ``unembed``: (V, d) the readout weight.
    Returns (..., V). (A final norm, where present, is ignored: the "direct" path.)
    """
    return component @ unembed.T


def logit_margin(logits: Tensor, token: int | Tensor) -> Tensor:
    """``logits[token] - max_{v != token} logits[v]`` on the last axis: > 0 where ``token`` wins."""
    tok = torch.as_tensor(token, device=logits.device).expand(logits.shape[:-1]).long()
    chosen = logits.gather(-1, tok[..., None]).squeeze(-1)
    others = logits.scatter(-1, tok[..., None], float("-inf")).amax(dim=-1)
    return chosen - others


def attention_to(pattern: Tensor, key: Tensor) -> Tensor:
    """Attention mass each query puts on one key: ``pattern[..., t, key[..., t]]``.

    ``pattern``: (B, T, T) rows over keys; ``key``: (B, T) int key index per query, < 0 for none.
    Returns (B, T), NaN where ``key < 0``.
    """
    safe = key.clamp(min=0).long()
    mass = pattern.gather(-1, safe[..., None]).squeeze(-1)
    return torch.where(key >= 0, mass, torch.full_like(mass, float("nan")))
