"""Token-level cross-entropies written for ``torch.func.vmap`` (no data-dependent indexing).

:func:`trigger_loss` is the loss of the noisy in-context recall task of Chen, Bruna, Bietti
(arXiv 2406.03068, Sec. 3): cross-entropy on the trigger's next token only. :func:`next_token_loss`
is the plain causal language-model loss over every position.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

IGNORE = -100
"""The target value of positions that carry no loss (PyTorch's ``ignore_index`` default)."""

PADDED_CLASSES = 16
"""The class count :func:`pad_classes` pads to: one AVX-512 register of float32."""


@functools.cache
def _avx512() -> bool:
    return torch.backends.cpu.get_cpu_capability() == "AVX512"


def pad_classes(logits: torch.Tensor) -> torch.Tensor:
    """``logits`` with ``-inf`` classes appended up to :data:`PADDED_CLASSES` where that is faster: float32 on a CPU
    with AVX-512 and 4 <= V < 16 classes. Elsewhere ``logits`` itself.

    Why: torch's CPU (log-)softmax over a last dimension shorter than one vector register takes a slow path.
    Measured by ``benchmarks/small_vocab_softmax.py`` on an AMD EPYC with AVX-512 (one thread, 65,536 rows,
    cross-entropy forward and backward): V = 10 15.2 ms, the same rows padded to 16 classes 2.9 ms (5.3x); V = 4, 8, 12,
    15: 2.0x, 4.5x, 6.4x, 7.8x; V = 2 and 16 0.86-0.97x; float64 rows are slower padded (0.2-0.9x), and so is
    padding to 32. The real classes' log-probabilities and gradients are the same to rounding (an ``exp(-inf)`` adds
    exactly 0) and a padded class has probability 0, so a loss, an argmax or a ``gather`` over the first V columns
    reads the same; AVX2 CPUs were not measured and keep the plain path."""
    V = logits.shape[-1]
    if logits.device.type != "cpu" or logits.dtype != torch.float32 or not 4 <= V < PADDED_CLASSES or not _avx512():
        return logits
    return F.pad(logits, (0, PADDED_CLASSES - V), value=float("-inf"))


def trigger_loss(logits: torch.Tensor, targets: torch.Tensor, ignore: int = IGNORE) -> torch.Tensor:
    """Mean cross-entropy at the positions whose target is not ``ignore``; vmap-safe."""
    mask = targets != ignore
    logp = logits.log_softmax(-1).gather(-1, targets.clamp(min=0)[..., None]).squeeze(-1)
    return -(logp * mask).sum() / mask.sum().clamp(min=1)


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy of ``logits: (n, T, V)`` for ``tokens: (n, T)`` over every position; vmap-safe."""
    logp = logits[:, :-1].log_softmax(-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return -logp.mean()
