"""Next-token training of a Hugging Face causal LM on random windows of a token stream.

Used to move a random-init model's weights away from Gaussian before checking a property on them
(implicit-patches: the paper's Gemma 3 trained "for a few hundred steps on a local text"). The loss
is the model's own (``model(input_ids=w, labels=w).loss``: HF shifts the labels, so ``w[t+1]`` is
predicted from ``w[<=t]``); the optimiser AdamW without weight decay.
"""

from __future__ import annotations

from typing import Callable, Iterable

import torch
from torch import Tensor, nn

from theorylab.data.text import random_windows


def train_hf_causal_lm(
    model: nn.Module,
    stream: Tensor,
    steps: int,
    *,
    generator: torch.Generator,
    length: int = 64,
    batch: int = 16,
    lr: float = 3e-3,
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
    check: Callable[[str, Tensor, int], None] | None = None,
    device: torch.device | str = "cpu",
) -> list[float]:
    """``steps`` AdamW steps (``lr``, weight decay 0) on ``batch`` windows of ``length`` tokens of ``stream``
    drawn from ``generator`` (:func:`~theorylab.data.text.random_windows`); returns the loss of every step.

    The model is put in train mode for the loop and back in eval mode after it. ``check(what, loss,
    step)`` sees every loss before its step (e.g. to stop on NaN); ``progress(iterable, description)``
    wraps the step loop.
    """
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    losses = []
    model.train()
    for step in range(steps) if progress is None else progress(range(steps), "train causal LM on text"):
        w = random_windows(stream, batch, length, generator).to(device)
        loss = model(input_ids=w, labels=w).loss
        if check is not None:
            check("language-model loss", loss, step)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses
