"""Training on the noisy in-context recall task (Chen, Bruna, Bietti, arXiv 2406.03068, Sec. 3).

:func:`train_trigger_recall` trains S models (seeds) of one architecture as one batch
(:mod:`theorylab.train.batched`) with the loss on the trigger's next token only
(:func:`~theorylab.nn.token_losses.trigger_loss`), and measures every member on fixed test
sequences (:func:`~theorylab.probes.trigger_recall.measure_trigger_recall`) during training.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import pandas as pd
import torch

from theorylab.core.errors import Diverged
from theorylab.data.markov import TriggerBatch, TriggerNoiseTask
from theorylab.nn.token_losses import IGNORE, trigger_loss
from theorylab.probes.trigger_recall import measure_trigger_recall
from theorylab.train.batched import AdamWSchedule, StackedModels, train_stacked


def train_trigger_recall(
    models: StackedModels,
    task: TriggerNoiseTask,
    test: TriggerBatch,
    *,
    p_noise: float,
    steps: int,
    batch: int,
    seq_len: int,
    train_bank: int,
    optim: AdamWSchedule,
    generator: torch.Generator,
    evaluate_every: int,
    name: str,
    labels: Mapping[str, Any] | None = None,
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
    device: torch.device | str = "cpu",
    precision: str = "fp32",
) -> tuple[pd.DataFrame, dict[int, int]]:
    """Train the S members of ``models`` on ``task`` at noise level ``p_noise``: ``batch`` sequences
    of ``seq_len`` tokens per member and step, resampled from a bank of ``train_bank`` sequences
    drawn once (``0``: fresh sequences every step), all from ``generator``. Every member is measured
    on ``test`` every ``evaluate_every`` updates and at the end; each row is ``labels``, then
    ``seed`` (the member index), ``step`` and the measurements.

    Returns the rows of the members that stayed finite and ``{member: step}`` of those that
    diverged; raises :class:`~theorylab.core.errors.Diverged` when every member did (``name``
    names the models in that message and in the progress line). ``precision``: the training steps' arithmetic
    (``"bf16"``: autocast, :func:`~theorylab.train.batched.train_stacked`); the measurements stay in fp32."""
    seeds = range(models.size)
    bank = task.sample(train_bank, seq_len, p_noise, generator) if train_bank else None

    def batches(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        if bank is not None:
            idx = torch.randint(train_bank, (len(seeds), batch), generator=generator)
            x, y = bank.tokens[idx], bank.targets(IGNORE)[idx]
        else:
            b = task.sample(len(seeds) * batch, seq_len, p_noise, generator)
            x, y = b.tokens.view(len(seeds), batch, -1), b.targets(IGNORE).view(len(seeds), batch, -1)
        return x.to(device), y.to(device)

    rows: list[dict] = []

    def evaluate(n_updates: int) -> None:
        for s in seeds:
            measured = measure_trigger_recall(models.member(s), test, task.noise)
            rows.append(dict(**(labels or {}), seed=s, step=n_updates, **measured))

    log = train_stacked(
        models,
        batches,
        trigger_loss,
        steps=steps,
        optim=optim,
        progress=progress,
        description=f"train {name}",
        evaluate=evaluate,
        evaluate_every=evaluate_every,
        precision=precision,
    )
    if log.diverged_at.min() >= 0:
        raise Diverged(f"training loss of every seed of {name}", int(log.diverged_at.min()))
    curve = pd.DataFrame(rows)
    bad = {s: int(log.diverged_at[s]) for s in seeds if log.diverged_at[s] >= 0}
    return curve[~curve["seed"].isin(list(bad))], bad
