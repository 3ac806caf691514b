"""Causality of a sequence model, checked by perturbation: no output may depend on a future token.

For a random sequence and every position ``t`` the token at ``t`` is replaced by a different random token; a causal
model's outputs at positions ``< t`` must not move. Used by fast-slow-attention (Gao, arXiv 2606.16730: the slow path's
block pooling must not let a token read its own block) and by any causal model in the library.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class LeakReport:
    """``per_position[t]``: max |Δ output| over positions ``< t`` and every output coordinate when token ``t``
    changes (0 for ``t = 0``, which has no earlier position); ``max_leak``: the largest over ``t``."""

    per_position: np.ndarray

    @property
    def max_leak(self) -> float:
        return float(self.per_position.max()) if len(self.per_position) else 0.0

    def leaking_positions(self, tol: float) -> list[int]:
        return [int(t) for t in np.flatnonzero(self.per_position > tol)]


@torch.no_grad()
def leak_test(
    model: nn.Module,
    T: int,
    vocab: int,
    generator: torch.Generator,
    *,
    sequences: int = 2,
    device: torch.device | str = "cpu",
) -> LeakReport:
    """Perturb each of the ``T`` positions of ``sequences`` random token sequences in turn (one batch of ``T + 1``
    sequences per draw: the original and its ``T`` one-token edits); ``model(tokens: (N, T)) -> (N, T, ...)``.
    Returns the worst |Δ| at earlier positions for every ``t`` (:class:`LeakReport`)."""
    if T < 2 or vocab < 2:
        raise ValueError(f"leak_test needs T >= 2 and vocab >= 2; got T = {T}, vocab = {vocab}")
    if sequences < 1:
        raise ValueError(f"sequences must be >= 1; got {sequences}")
    was_training = model.training
    model.eval()
    worst = np.zeros(T)
    try:
        for _ in range(sequences):
            x = torch.randint(vocab, (T,), generator=generator)
            shift = torch.randint(1, vocab, (T,), generator=generator)  # a different token at every position
            batch = x.repeat(T + 1, 1)  # row 0 the original, row t + 1 with token t changed
            idx = torch.arange(T)
            batch[idx + 1, idx] = (x + shift) % vocab
            out = model(batch.to(device)).float().cpu()  # (T + 1, T, ...)
            diff = (out[1:] - out[:1]).abs().flatten(2).amax(-1)  # (T edited, T positions)
            earlier = torch.arange(T)[None, :] < torch.arange(T)[:, None]  # position s < edited t
            worst = np.maximum(worst, torch.where(earlier, diff, torch.zeros(())).amax(-1).numpy())
    finally:
        model.train(was_training)
    return LeakReport(worst)
