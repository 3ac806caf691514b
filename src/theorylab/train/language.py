"""Language-model training for toy transformers: causal (next token) or masked (BERT-style) objectives.

``objective="clm"``: predict token t+1 from tokens <= t (the model should be ``causal``).
``objective="mlm"``: replace a random ``mask_rate`` of the positions by ``mask_id`` and predict the
original tokens there (Devlin et al.; no 80/10/10 split: every chosen position gets the mask token).
Used by the encoder/decoder comparisons (bilinear-attention-operator) and the decoders of
query-key-asymmetry.

:func:`train_trigger_lm` trains stacked causal models (:mod:`theorylab.train.batched`) on real text
into which the noisy in-context recall task of Chen, Bruna, Bietti (arXiv 2406.03068) is written
with real words (:class:`~theorylab.data.text.TriggerWordTask`): the real-text analogue of the
paper's Pythia setting (Sec. 5).
"""

from __future__ import annotations

from typing import Callable, Iterable, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.core.errors import Diverged
from theorylab.core.precision import autocast
from theorylab.data.text import TriggerWordTask, random_windows
from theorylab.nn.token_losses import next_token_loss
from theorylab.train.batched import AdamWSchedule, StackedModels, TrainLog, train_stacked

Objective = Literal["clm", "mlm"]


def lm_loss(
    model: nn.Module,
    tokens: Tensor,
    objective: Objective,
    mask_id: int | None = None,
    mask_rate: float = 0.15,
    generator: torch.Generator | None = None,
) -> Tensor:
    """The mean cross-entropy of ``model`` on ``tokens: (B, T + 1)`` (clm) or ``(B, T)`` (mlm)."""
    if objective == "clm":
        logits = model(tokens[:, :-1])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    if objective == "mlm":
        if mask_id is None:
            raise ValueError("the masked objective needs 'mask_id' (a token outside the text's vocabulary)")
        # drawn on CPU: reproducible on any device
        chosen = (torch.rand(tokens.shape, generator=generator) < mask_rate).to(tokens.device)
        chosen[:, 0] |= ~chosen.any(1)  # at least one target per sequence
        logits = model(torch.where(chosen, torch.full_like(tokens, mask_id), tokens))
        return F.cross_entropy(logits[chosen], tokens[chosen])
    raise ValueError(f"objective must be 'clm' or 'mlm', got {objective!r}")


def train_language_model(
    model: nn.Module,
    stream: Tensor,
    *,
    objective: Objective,
    steps: int,
    batch: int,
    length: int,
    lr: float,
    generator: torch.Generator,
    mask_id: int | None = None,
    mask_rate: float = 0.15,
    log_every: int = 50,
    on_log: Callable[[int, float], None] | None = None,
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
    check: Callable[[str, Tensor, int], None] | None = None,
    device: torch.device | str = "cpu",
    precision: str = "fp32",
) -> list[dict]:
    """AdamW on random windows of ``stream``; returns ``[{step, loss}]`` every ``log_every`` steps and
    calls ``on_log(step, loss)`` there (and after the last step), e.g. to measure the weights. ``precision="bf16"``
    runs each step's forward (and so its backward) under bf16 autocast; the weights, the optimiser and ``on_log``
    stay in the model's dtype."""
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    extra = 1 if objective == "clm" else 0
    log = []
    steps_iter = range(steps) if progress is None else progress(range(steps), f"train {objective.upper()}")
    for step in steps_iter:
        tokens = random_windows(stream, batch, length + extra, generator).to(device)
        with autocast(precision, device):
            loss = lm_loss(model, tokens, objective, mask_id, mask_rate, generator=generator)
        if check is not None:
            check(f"{objective} training loss", loss, step)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % log_every == 0 or step == steps - 1:
            value = loss.item()
            log.append(dict(step=step, loss=value))
            if on_log is not None:
                on_log(step, value)
    return log


def train_trigger_lm(
    models: StackedModels,
    stream: np.ndarray | Tensor,
    task: TriggerWordTask,
    *,
    steps: int,
    batch: int,
    length: int,
    p_noise: float,
    task_rate: float,
    optim: AdamWSchedule,
    generator: torch.Generator,
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
    device: torch.device | str = "cpu",
    precision: str = "fp32",
) -> TrainLog:
    """Next-token training (:func:`~theorylab.nn.token_losses.next_token_loss`, every position) of
    the S members of ``models`` on ``batch`` random windows of ``length`` tokens of ``stream`` per
    member and step; a fraction ``task_rate`` of the windows (drawn per window) carries ``task``
    written in with noise level ``p_noise``. All draws come from ``generator``, in the order
    windows, task, carrier flags. Raises :class:`~theorylab.core.errors.Diverged` when every
    member's loss became non-finite. ``precision``: the training steps' arithmetic (``"bf16"``: autocast,
    :func:`~theorylab.train.batched.train_stacked`)."""
    s = torch.as_tensor(stream)
    n = models.size * batch

    def batches(step: int) -> tuple[Tensor, Tensor]:
        windows = random_windows(s, n, length, generator)
        written = task.write(windows, p_noise, generator).tokens
        carry = torch.rand(n, 1, generator=generator) < task_rate
        x = torch.where(carry, written, windows).view(models.size, batch, length).to(device)
        return x, x

    log = train_stacked(
        models,
        batches,
        next_token_loss,
        steps=steps,
        optim=optim,
        progress=progress,
        description="train language model",
        precision=precision,
    )
    if log.diverged_at.min() >= 0:
        raise Diverged("language-model training loss", int(log.diverged_at.min()))
    return log
