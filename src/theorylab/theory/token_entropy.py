"""The unigram entropy of a token stream: the best cross-entropy (nats per token) of a model that sees
no context. A language model whose loss ends below it has used its context (for a decoder whose
tokens see only themselves without attention, it is the ceiling attention must beat)."""

from __future__ import annotations

import torch
from torch import Tensor


def unigram_entropy(stream: Tensor, vocab_size: int) -> float:
    """``−Σ_v f_v log f_v`` (nats) of the token frequencies ``f`` of the 1-d integer ``stream``."""
    counts = torch.bincount(stream, minlength=vocab_size).double()
    freq = counts[counts > 0] / counts.sum()
    return float(-(freq * freq.log()).sum())
