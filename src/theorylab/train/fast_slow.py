"""Several language models trained in lockstep on the same batches, each step timed per model.

For ablations whose members differ in architecture (fast-slow-attention: coupled / frozen / dense, Gao, arXiv
2606.16730), so they cannot be stacked into one batched computation: at every step each model takes its own AdamW
step on the same batch, one after the other. The members see identical data (paired comparisons), and their step
times are measured interleaved, so a change of machine load affects all of them alike (a time *ratio* measured in
one process).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from theorylab.core.errors import Diverged
from theorylab.nn.token_losses import next_token_loss
from theorylab.train.batched import AdamWSchedule


@dataclass
class LockstepLog:
    """``losses[m]``: training loss of model m at every step; ``step_seconds[m]``: wall time of its every step
    (forward, backward, optimiser; synchronised on CUDA)."""

    losses: list[list[float]] = field(default_factory=list)
    step_seconds: list[list[float]] = field(default_factory=list)

    def median_step_seconds(self, m: int, skip: int = 2) -> float:
        """Median step time of model ``m`` over the steps after the first ``skip`` (warm-up)."""
        t = self.step_seconds[m]
        return float(np.median(t[skip:] if len(t) > skip else t))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_lockstep(
    models: Sequence[nn.Module],
    batches: Callable[[int], Tensor],
    *,
    steps: int,
    optim: AdamWSchedule,
    loss: Callable[[Tensor, Tensor], Tensor] = next_token_loss,
    evaluate: Callable[[int], None] | None = None,
    evaluate_every: int | None = None,
    progress: Callable[[Iterable[int], str], Iterator[int]] | None = None,
    description: str = "train in lockstep",
) -> LockstepLog:
    """Train every model for ``steps`` steps on ``batches(step)`` (token windows (B, T); ``loss(logits, tokens)``,
    next-token by default), each with its own AdamW (``optim``: learning rate, schedule, weight decay) over its
    trainable parameters. ``evaluate(n)`` runs after ``n`` completed steps: at 0, every ``evaluate_every`` and at the
    end. Raises :class:`~theorylab.core.errors.Diverged` on a non-finite loss."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    built = [optim.build([p for p in m.parameters() if p.requires_grad], steps) for m in models]
    device = next(models[0].parameters()).device
    log = LockstepLog([[] for _ in models], [[] for _ in models])
    for m in models:
        m.train()
    if evaluate is not None:
        evaluate(0)
    step_iter: Iterable[int] = range(steps) if progress is None else progress(range(steps), description)
    for step in step_iter:
        tokens = batches(step).to(device)
        for i, (model, (opt, sched)) in enumerate(zip(models, built)):
            _sync(device)
            start = time.perf_counter()
            value = loss(model(tokens), tokens)
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            sched.step()
            _sync(device)
            log.step_seconds[i].append(time.perf_counter() - start)
            v = float(value.detach())
            if not np.isfinite(v):
                raise Diverged(f"training loss of model {i}", step)
            log.losses[i].append(v)
        if evaluate is not None and evaluate_every and (step + 1) % evaluate_every == 0 and step != steps - 1:
            evaluate(step + 1)
    if evaluate is not None:
        evaluate(steps)
    return log


@torch.no_grad()
def mean_next_token_loss(model: nn.Module, windows: Tensor, chunk: int = 64) -> float:
    """Mean next-token cross-entropy (nats) of ``model`` over ``windows`` (N, T), in eval mode, chunked."""
    was = model.training
    model.eval()
    try:
        parts = [
            next_token_loss(model(windows[i : i + chunk]), windows[i : i + chunk]) * len(windows[i : i + chunk])
            for i in range(0, len(windows), chunk)
        ]
    finally:
        model.train(was)
    return float(torch.stack(parts).sum() / len(windows))
