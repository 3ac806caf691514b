"""Token-level cross-entropies written for ``torch.func.vmap`` (no data-dependent indexing).

:func:`trigger_loss` is the loss of the noisy in-context recall task of Chen, Bruna, Bietti
(arXiv 2406.03068, Sec. 3): cross-entropy on the trigger's next token only. :func:`next_token_loss`
is the plain causal language-model loss over every position.
"""

from __future__ import annotations

import torch

IGNORE = -100
"""The target value of positions that carry no loss (PyTorch's ``ignore_index`` default)."""


def trigger_loss(logits: torch.Tensor, targets: torch.Tensor, ignore: int = IGNORE) -> torch.Tensor:
    """Mean cross-entropy at the positions whose target is not ``ignore``; vmap-safe."""
    mask = targets != ignore
    logp = logits.log_softmax(-1).gather(-1, targets.clamp(min=0)[..., None]).squeeze(-1)
    return -(logp * mask).sum() / mask.sum().clamp(min=1)


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy of ``logits: (n, T, V)`` for ``tokens: (n, T)`` over every position; vmap-safe."""
    logp = logits[:, :-1].log_softmax(-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return -logp.mean()
