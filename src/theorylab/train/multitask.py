"""Loops around one checkpoint for the local-perturbation-geometry study (Piontkovskaia & Nikolenko, arXiv 2607.16821).

- :func:`train_until_accurate`: AdamW on a fixed multitask set until every task reaches ``target`` accuracy at
  the answer position (the base checkpoint θ₀);
- :func:`sgd_path`: plain SGD on a flat parameter vector (``θ ← θ − lr ∇L_batch(θ)``), returning every iterate
  (task vectors ``δ_A = θ_100 − θ₀``, trajectory-prefix bases, drifted points θ_s).
"""

from __future__ import annotations

import copy
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import grad

from theorylab.core.errors import MissingResource


def answer_logits(model: nn.Module, tokens: Tensor, position: int) -> Tensor:
    """Logits at ``position``: ``(B, V)``."""
    return model(tokens)[:, position]


def per_task_accuracy(model: nn.Module, tokens: Tensor, answers: Tensor, task_ids: Tensor, position: int) -> np.ndarray:
    """Accuracy of the arg-max answer per task index."""
    with torch.no_grad():
        hit = (answer_logits(model, tokens, position).argmax(-1) == answers).double()
    return np.array([float(hit[task_ids == k].mean()) for k in range(int(task_ids.max()) + 1)])


def train_until_accurate(
    model: nn.Module,
    tokens: Tensor,
    answers: Tensor,
    task_ids: Tensor,
    *,
    position: int,
    max_steps: int,
    lr: float,
    batch: int,
    target: float = 0.95,
    weight_decay: float = 0.01,
    min_steps: int = 0,
    check_every: int = 50,
    generator: torch.Generator | None = None,
    check: Callable[[str, float], None] | None = None,
) -> tuple[int, np.ndarray, list[float]]:
    """AdamW on minibatches drawn from ``tokens`` until every task's accuracy is ``>= target`` (checked every
    ``check_every`` steps, from step ``min_steps`` on) or ``max_steps``. Returns ``(steps taken, per-task
    accuracy, losses)``."""
    if max_steps < 1 or batch < 1 or not 0 < target <= 1 or not 0 <= min_steps <= max_steps:
        raise ValueError(
            f"need max_steps >= 1, batch >= 1, 0 < target <= 1, 0 <= min_steps <= max_steps; got "
            f"{max_steps}, {batch}, {target}, {min_steps}"
        )
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses: list[float] = []
    n = len(tokens)
    acc = per_task_accuracy(model, tokens, answers, task_ids, position)
    for step in range(1, max_steps + 1):
        idx = torch.randint(0, n, (min(batch, n),), generator=generator)
        loss = F.cross_entropy(answer_logits(model, tokens[idx], position), answers[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if check is not None:
            check("base loss", losses[-1])
        if (step % check_every == 0 and step >= min_steps) or step == max_steps:
            acc = per_task_accuracy(model, tokens, answers, task_ids, position)
            if acc.min() >= target:
                return step, acc, losses
    return max_steps, acc, losses


def sgd_path(
    loss: Callable[[Tensor, Tensor], Tensor], theta0: Tensor, batches: Callable[[int], Tensor], *, steps: int, lr: float
) -> Tensor:
    """``(steps + 1, D)``: θ₀ and every SGD iterate, ``θ_{k+1} = θ_k − lr ∇_θ loss(θ_k, batches(k))``."""
    if steps < 1 or lr <= 0:
        raise ValueError(f"sgd_path needs steps >= 1 and lr > 0; got {steps}, {lr}")
    g = grad(loss)
    path = [theta0.detach().clone()]
    theta = path[0]
    for k in range(steps):
        theta = theta - lr * g(theta, batches(k))
        path.append(theta.detach())
    return torch.stack(path)


def lora_recovery(
    model: nn.Module,
    loss_of: Callable[[nn.Module], Tensor],
    targets: list[str],
    *,
    rank: int,
    steps: int,
    lr: float,
    noise: float,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Perturb the ``targets`` (``nn.Linear`` module names) of a copy of ``model`` with Gaussian weight noise of
    relative size ``noise`` (per matrix, ``‖N‖ = noise ‖W‖``), then recover with rank-``rank`` LoRA adapters (the
    optional package ``peft``) trained by plain SGD on ``loss_of(module)``. Returns ``(path, clean)``: the merged
    target weights, flattened and concatenated, after each step ``(steps + 1, D_targets)``, and those of ``model``.
    """
    try:
        import peft
    except ImportError as err:
        raise MissingResource(
            "the optional package peft (LoRA adapters)", "install it with `pip install peft`"
        ) from err

    if steps < 1 or rank < 1 or lr <= 0 or noise < 0:
        raise ValueError(
            f"lora_recovery needs steps, rank >= 1, lr > 0, noise >= 0; got {steps}, {rank}, {lr}, {noise}"
        )
    noisy = copy.deepcopy(model)
    mods = dict(noisy.named_modules())
    bad = [t for t in targets if not isinstance(mods.get(t), nn.Linear)]
    if bad or not targets:
        raise ValueError(f"LoRA targets must name nn.Linear modules; got {bad or targets}")
    clean = torch.cat([model.get_submodule(t).weight.detach().reshape(-1) for t in targets])
    with torch.no_grad():
        for t in targets:
            w = mods[t].weight
            z = torch.randn(w.shape, generator=generator, dtype=w.dtype).to(w.device)
            w += noise * w.norm() * z / z.norm()
    lora = peft.inject_adapter_in_model(
        peft.LoraConfig(r=rank, lora_alpha=rank, lora_dropout=0.0, target_modules=list(targets)), noisy
    )
    params = [p for n, p in lora.named_parameters() if "lora_" in n]
    for n, p in lora.named_parameters():
        p.requires_grad_("lora_" in n)
    lora.to(clean.dtype)

    def merged() -> Tensor:
        out = []
        for t in targets:
            layer = lora.get_submodule(t)
            out.append((layer.base_layer.weight + layer.get_delta_weight("default")).detach().reshape(-1))
        return torch.cat(out)

    opt = torch.optim.SGD(params, lr=lr)
    path = [merged()]
    for _ in range(steps):
        loss = loss_of(lora)
        opt.zero_grad()
        loss.backward()
        opt.step()
        path.append(merged())
    return torch.stack(path), clean
