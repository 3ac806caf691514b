"""Synthetic in-context learning tasks.

:func:`in_context_linear_regression` is the task of Dherin et al., "Learning without training",
arXiv 2507.16003, Sec. 4 (after Garg et al., arXiv 2208.01066): each sequence carries its own
weight vector ``w ~ N(0, I)``; tokens ``[x_i, y_i]`` with ``x_i ~ N(0, I)``, ``y_i = wᵀ x_i``, and a
final query token ``[x_q, 0]`` whose label the model must predict from the context.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class RegressionPrompts:
    """``tokens``: ``(n, T, dim + 1)``, the last row of each the query ``[x_q, 0]``; ``y_query``: ``(n,)``; ``w``: ``(n,
    dim)``."""

    tokens: Tensor
    y_query: Tensor
    w: Tensor

    @property
    def n_context(self) -> int:
        return self.tokens.shape[1] - 1


def in_context_linear_regression(n_tasks: int, length: int, dim: int = 2, *, generator: torch.Generator,
                                 dtype: torch.dtype = torch.float64, noise: float = 0.0) -> RegressionPrompts:
    """``n_tasks`` prompts of ``length`` tokens (``length - 1`` examples, then the query)."""
    if n_tasks < 1 or length < 2 or dim < 1:
        raise ValueError(f"need n_tasks >= 1, length >= 2, dim >= 1; got {n_tasks}, {length}, {dim}")
    w = torch.randn(n_tasks, dim, generator=generator, dtype=dtype)
    x = torch.randn(n_tasks, length, dim, generator=generator, dtype=dtype)
    y = torch.einsum("ntd,nd->nt", x, w)
    if noise > 0:
        y = y + noise * torch.randn(y.shape, generator=generator, dtype=dtype)
    tokens = torch.cat([x, y.unsqueeze(-1)], dim=-1)
    y_query = tokens[:, -1, -1].clone()
    tokens[:, -1, -1] = 0.0
    return RegressionPrompts(tokens, y_query, w)
