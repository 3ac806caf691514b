"""Online next-token training on fresh synthetic sequences, with measurements at chosen steps.

The loop of the toy-model experiments of Ravfogel, Yehudai, Linzen, Bruna & Bietti (arXiv 2510.15804, Sec. 4):
every step draws a fresh batch from a sampler (no data reuse), the loss is the next-token cross-entropy at chosen
target positions only, and ``measure(model)`` runs in eval mode at each evaluation step.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def next_token_loss(model: nn.Module, tokens: Tensor, targets: Sequence[int] | None = None) -> Tensor:
    """Mean cross-entropy of predicting ``tokens[:, t]`` from ``tokens[:, :t]`` over target positions ``targets``
    (all positions 1..T-1 when None). The model sees ``tokens[:, :-1]`` and must be causal."""
    logits = model(tokens[:, :-1])  # (B, T-1, V): output at position t-1 predicts token t
    idx = list(range(1, tokens.shape[1])) if targets is None else list(targets)
    if any(not 1 <= t < tokens.shape[1] for t in idx):
        raise ValueError(f"'targets' must lie in 1..{tokens.shape[1] - 1}; got {idx}")
    out = logits[:, [t - 1 for t in idx]]
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), tokens[:, idx].reshape(-1))


def train_online_lm(
    model: nn.Module,
    sample: Callable[[int, torch.Generator], Tensor],
    *,
    steps: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    targets: Sequence[int] | None = None,
    evaluate_at: Iterable[int] = (),
    measure: Callable[[nn.Module, int], Any] | None = None,
    device: torch.device | str = "cpu",
    progress: Callable | None = None,
    weight_decay: float = 0.0,
    decay: Sequence[str] | None = None,
) -> tuple[dict[int, Any], list[float]]:
    """Adam on ``steps`` fresh batches ``sample(batch, generator)`` (token ids (B, T)); returns
    ``(measurements by step, training loss per step)``. ``measure(model, step)`` runs under ``torch.no_grad`` and
    ``model.eval()`` after each step in ``evaluate_at`` (step 0 = before training).

    ``weight_decay > 0`` makes it AdamW (decoupled decay) on the parameters whose names start with a prefix in
    ``decay`` (all trainable parameters when None); the others are not decayed."""
    evaluate = set(int(s) for s in evaluate_at)
    if any(s < 0 or s > steps for s in evaluate):
        raise ValueError(f"'evaluate_at' steps must lie in 0..{steps}; got {sorted(evaluate)}")
    if weight_decay < 0:
        raise ValueError(f"'weight_decay' must be >= 0; got {weight_decay}")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    prefixes = tuple(decay) if decay is not None else ("",)
    unmatched = [pre for pre in prefixes if pre and not any(n.startswith(pre) for n, _ in named)]
    if weight_decay and unmatched:
        raise ValueError(f"'decay' prefixes {unmatched} match no trainable parameter")
    decayed = [p for n, p in named if n.startswith(prefixes)]
    kept = [p for n, p in named if not n.startswith(prefixes)]
    groups = [
        g for g in (dict(params=decayed, weight_decay=weight_decay), dict(params=kept, weight_decay=0.0)) if g["params"]
    ]
    # The fused kernel (one call per step instead of ~10 per tensor) is a quarter of a toy step on CPU.
    fused = all(p.device.type in ("cpu", "cuda") for _, p in named)
    opt = torch.optim.AdamW(groups, lr=lr, fused=fused)  # with weight_decay = 0 this is exactly Adam
    measured: dict[int, Any] = {}
    losses: list[float] = []

    def _measure(step: int) -> None:
        if measure is not None and step in evaluate:
            model.eval()
            with torch.no_grad():
                measured[step] = measure(model, step)
            model.train()

    _measure(0)
    it = range(1, steps + 1) if progress is None else progress(range(1, steps + 1), "train online LM")
    for step in it:
        tokens = sample(batch, generator).to(device)
        loss = next_token_loss(model, tokens, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        _measure(step)
    return measured, losses
