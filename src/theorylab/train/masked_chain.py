"""Masked-token training on Markov-chain sequences (BERT-style corruption, loss on the masked positions only).

Fresh sequences every step (the setup of Haggi-Mani & Rish's follow-up, arXiv 2607.15449): they are drawn ``chunk``
steps at a time by the vectorised sampler of :mod:`theorylab.data.markov`, so the Python loop runs over positions
once per chunk, not per step. Adam with no weight decay (AdamW with weight decay 0 is the same update).
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from theorylab.data.markov import mask_tokens, sample_chain


def masked_loss(model: nn.Module, tokens: Tensor, corrupted: Tensor, mask: Tensor) -> Tensor:
    """Mean cross-entropy (nats) of ``model(corrupted)`` against ``tokens`` over the masked positions."""
    logits = model(corrupted)  # (B, L, V)
    return nn.functional.cross_entropy(logits[mask], tokens[mask])


def masked_batches(
    P: np.ndarray,
    *,
    length: int,
    batch: int,
    steps: int,
    mask_rate: float,
    mask_id: int,
    generator: torch.Generator,
    chunk: int = 250,
) -> Iterable[tuple[Tensor, Tensor, Tensor]]:
    """``steps`` fresh batches ``(tokens, corrupted, mask)`` of the chain ``P``, each (batch, length), drawn ``chunk``
    steps at a time. A masked position never goes unused: a batch without one gets its first position masked."""
    done = 0
    while done < steps:
        n = min(chunk, steps - done)
        tokens = sample_chain(P, n * batch, length, generator).view(n, batch, length)
        corrupted, mask = mask_tokens(tokens, mask_rate, mask_id, generator)
        for i in range(n):
            m = mask[i]
            if not m.any():
                m = m.clone()
                m[0, 0] = True
                yield tokens[i], torch.where(m, torch.full_like(tokens[i], mask_id), tokens[i]), m
            else:
                yield tokens[i], corrupted[i], m
        done += n


def train_masked_chain(
    model: nn.Module,
    P: np.ndarray,
    *,
    length: int,
    batch: int,
    steps: int,
    lr: float,
    mask_rate: float,
    mask_id: int,
    generator: torch.Generator,
    log_every: int = 50,
    progress: Callable | None = None,
    check: Callable | None = None,
    device: str | torch.device = "cpu",
    schedule: str = "constant",
) -> pd.DataFrame:
    """Train ``model`` (token ids (B, L) -> logits (B, L, V)) by Adam on fresh masked batches of ``P``.

    Returns the loss curve: one row per ``log_every`` steps, the mean masked loss over those steps (columns
    ``step``, ``loss``). ``check(what, value, step)`` is called on each logged loss (e.g. a divergence check).
    Batches are drawn on the CPU (``generator``) and moved to ``device``, the model's. ``schedule``: ``"constant"``
    or ``"linear"`` (the learning rate decays linearly from ``lr`` to 0 over the run)."""
    if schedule not in ("constant", "linear"):
        raise ValueError(f"schedule must be 'constant' or 'linear', got {schedule!r}")
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0 if schedule == "constant" else 1.0 - k / steps)
    rows, acc, n = [], 0.0, 0
    batches = masked_batches(
        P, length=length, batch=batch, steps=steps, mask_rate=mask_rate, mask_id=mask_id, generator=generator
    )
    for step, (tokens, corrupted, mask) in enumerate(progress(batches, total=steps) if progress else batches, 1):
        loss = masked_loss(model, tokens.to(device), corrupted.to(device), mask.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        acc, n = acc + loss.item(), n + 1
        if step % log_every == 0 or step == steps:
            if check is not None:
                check("masked loss", acc / n, step)
            rows.append(dict(step=step, loss=acc / n))
            acc, n = 0.0, 0
    return pd.DataFrame(rows)
