"""Training and evaluating a token model on associative recall (studies/representation-collapse.md).

The card's trained model answers :func:`~theorylab.data.tasks.associative_recall` prompts at one training length
and is then read at longer ones: accuracy against length next to the collapse measurements. The loss is the
cross-entropy of the logits at the query position (the last token) against the queried value; the optimiser AdamW.
"""

from __future__ import annotations

from typing import Callable, Iterable

import torch
from torch import Tensor, nn

from theorylab.data.tasks import associative_recall


def train_recall(
    model: nn.Module,
    *,
    steps: int,
    n_pairs: int,
    length: int,
    vocab: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    weight_decay: float = 0.01,
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
    check: Callable[[str, Tensor, int], None] | None = None,
    device: torch.device | str = "cpu",
) -> list[float]:
    """``steps`` AdamW steps on fresh recall batches of ``length`` tokens; returns every step's loss.

    ``model`` maps ``(batch, T)`` tokens to ``(batch, T, vocab)`` logits. ``check(what, loss, step)`` sees each
    loss before its step (e.g. to stop on NaN); ``progress(iterable, description)`` wraps the loop. The model is
    in train mode for the loop and in eval mode after it.
    """
    if steps < 1 or batch < 1 or lr <= 0:
        raise ValueError(f"need steps >= 1, batch >= 1 and lr > 0; got {steps}, {batch}, {lr}")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses = []
    model.train()
    for step in range(steps) if progress is None else progress(range(steps), "train associative recall"):
        p = associative_recall(n_pairs, length, vocab, batch, generator=generator)
        logits = model(p.tokens.to(device))[:, -1]
        loss = nn.functional.cross_entropy(logits, p.answer.to(device))
        if check is not None:
            check("recall loss", loss, step)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def recall_accuracy(
    model: nn.Module,
    *,
    n_pairs: int,
    length: int,
    vocab: int,
    batch: int,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
) -> float:
    """The share of ``batch`` fresh recall prompts of ``length`` tokens whose arg-max answer is right."""
    p = associative_recall(n_pairs, length, vocab, batch, generator=generator)
    return float((model(p.tokens.to(device))[:, -1].argmax(-1).cpu() == p.answer).double().mean())
