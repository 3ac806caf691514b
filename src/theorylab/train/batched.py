"""Train S independent models of one architecture as a single computation.

The S members (seeds, or variants that differ only in parameter/buffer values) are stacked
along a new leading axis (``torch.func.stack_module_state``) and run through one copy of the
module with ``torch.func.vmap(functional_call(...))``. The loss summed over members has, for
each member's parameters, exactly that member's gradient, and AdamW is element-wise, so every
member follows the trajectory it would follow alone (checked in float64 against a plain loop in
``tests/train/test_batched.py``), while each step costs a handful of batched kernels instead of
S small ones.

Divergence is tracked per member without a device sync per step: the first step at which a
member's loss is not finite is kept in a tensor, and the member is reported, not the run killed.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Literal, Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from theorylab.core.precision import autocast

Batch = tuple[Tensor, Tensor]


class StackedModels(nn.Module):
    """S copies of one architecture with stacked parameters: ``params[name]`` is (S, *shape).

    Call it on stacked inputs ``(S, B, ...)`` to get stacked outputs ``(S, B, ...)``; each member
    sees only its own slice. ``member(s)`` returns an ordinary module holding member ``s``'s
    weights (for probes and hooks); ``unstack()`` returns them all.
    """

    def __init__(self, models: Sequence[nn.Module]):
        super().__init__()
        if not models:
            raise ValueError("StackedModels needs at least one model")
        first = models[0]
        for other in models[1:]:
            if type(other) is not type(first) or [(n, p.shape) for n, p in other.named_parameters()] != [
                (n, p.shape) for n, p in first.named_parameters()
            ]:
                raise ValueError("all members must share one architecture (same module type and parameter shapes)")
        params, buffers = stack_module_state(list(models))
        trainable = {n: p.requires_grad for n, p in first.named_parameters()}
        self.names = list(params)
        self.params = nn.ParameterDict(
            {_key(n): nn.Parameter(p.detach().clone(), requires_grad=trainable[n]) for n, p in params.items()}
        )
        for n, b in buffers.items():
            self.register_buffer(_key(n), b.detach().clone())
        self.buffer_names = list(buffers)
        # One weightless copy carries the code; functional_call supplies the weights.
        self._template = [copy.deepcopy(first).to("meta")]
        self.size = len(models)

    @property
    def template(self) -> nn.Module:
        return self._template[0]

    def stacked_state(self) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
        params = {n: self.params[_key(n)] for n in self.names}
        buffers = {n: getattr(self, _key(n)) for n in self.buffer_names}
        return params, buffers

    def functional(self) -> Callable[[dict[str, Tensor], dict[str, Tensor], Tensor], Tensor]:
        template = self.template

        def call(params: dict[str, Tensor], buffers: dict[str, Tensor], x: Tensor) -> Tensor:
            return functional_call(template, (params, buffers), (x,))

        return call

    def forward(self, x: Tensor) -> Tensor:
        """x: (S, B, ...) -> (S, B, ...)."""
        if x.shape[0] != self.size:
            raise ValueError(f"stacked input has {x.shape[0]} members on axis 0; the stack has {self.size}")
        params, buffers = self.stacked_state()
        return vmap(self.functional())(params, buffers, x)

    def member(self, s: int) -> nn.Module:
        """An ordinary module holding member ``s``'s weights (a copy: editing it leaves the stack alone)."""
        params, buffers = self.stacked_state()
        module = copy.deepcopy(self.template).to_empty(device=next(iter(params.values())).device)
        with torch.no_grad():
            for n, p in module.named_parameters():
                p.data = params[n][s].detach().clone()
                p.requires_grad_(params[n].requires_grad)
            for n, b in module.named_buffers():
                b.data = buffers[n][s].detach().clone()
        return module

    def unstack(self) -> list[nn.Module]:
        return [self.member(s) for s in range(self.size)]


def _key(name: str) -> str:
    # ParameterDict / buffer names may not contain dots.
    return name.replace(".", "__")


@dataclass(frozen=True)
class AdamWSchedule:
    """AdamW (or, with ``kind="sgd"``, SGD with ``momentum``) with linear warm-up over
    ``warmup_frac`` of the steps, then cosine decay to ``final_lr_frac * lr`` (or a constant rate)."""

    lr: float = 1e-3
    kind: Literal["adamw", "sgd"] = "adamw"
    momentum: float = 0.9  # SGD only
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.0
    warmup_frac: float = 0.0
    final_lr_frac: float = 0.0
    schedule: Literal["cosine", "constant"] = "cosine"
    grad_clip: float | None = None  # per-member global gradient-norm clip

    def lr_factor(self, steps: int) -> Callable[[int], float]:
        warmup = int(round(self.warmup_frac * steps))

        def factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            if self.schedule == "constant":
                return 1.0
            progress = (step - warmup) / max(1, steps - warmup)
            return self.final_lr_frac + (1 - self.final_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

        return factor

    def build(
        self, params: Iterable[Tensor], steps: int
    ) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
        if self.kind == "sgd":
            optimizer: torch.optim.Optimizer = torch.optim.SGD(
                list(params), lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay
            )
        else:
            optimizer = torch.optim.AdamW(list(params), lr=self.lr, betas=self.betas, weight_decay=self.weight_decay)
        return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, self.lr_factor(steps))


@dataclass
class TrainLog:
    """What :func:`train_stacked` records: loss per member at the logged steps, first bad step per member."""

    steps: list[int] = field(default_factory=list)
    losses: list[np.ndarray] = field(default_factory=list)
    diverged_at: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def table(self, member_labels: Sequence | None = None) -> pd.DataFrame:
        """Tidy loss curve: one row per (step, member)."""
        if not self.steps:
            return pd.DataFrame(columns=["step", "member", "loss"])
        s = len(self.losses[0])
        labels = list(member_labels) if member_labels is not None else list(range(s))
        return pd.DataFrame(
            {
                "step": np.repeat(self.steps, s),
                "member": labels * len(self.steps),
                "loss": np.concatenate(self.losses),
            }
        )

    @property
    def diverged(self) -> np.ndarray:
        return self.diverged_at >= 0


def train_stacked(
    models: StackedModels,
    batches: Callable[[int], Batch],
    loss: Callable[[Tensor, Tensor], Tensor],
    *,
    steps: int,
    optim: AdamWSchedule,
    log_every: int | None = None,
    progress: Callable[[Iterable[int], str], Iterator[int]] | None = None,
    description: str = "training",
    evaluate: Callable[[int], None] | None = None,
    evaluate_every: int | None = None,
    precision: str = "fp32",
) -> TrainLog:
    """Train every member of ``models`` for ``steps`` steps, in place.

    ``batches(step)`` returns stacked ``(inputs, targets)`` with the member axis first, so each
    member can draw its own data stream. ``loss(prediction, target)`` is one member's scalar loss
    (it is vmapped). ``progress`` wraps the step iterator (e.g. ``RunContext.progress``).
    ``evaluate(n)`` is called with the number of completed updates ``n`` before training
    (``n = 0``), every ``evaluate_every`` updates and after the last one: probes read the
    current weights there (e.g. through ``models.member(s)``).
    Members whose loss becomes NaN/inf are recorded in ``TrainLog.diverged_at`` (the first such
    step, -1 if none); the others train on unaffected, since members never mix.
    ``precision="bf16"`` runs each step's forward (and so its backward) under bf16 autocast
    (:mod:`theorylab.core.precision`): the weights, their gradients and the optimiser stay fp32, and
    ``evaluate`` runs outside it, in the weights' own precision.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    params, buffers = models.stacked_state()
    trainable = {n: p for n, p in params.items() if p.requires_grad}
    frozen = {n: p for n, p in params.items() if not p.requires_grad}
    optimizer, scheduler = optim.build(trainable.values(), steps)
    call = models.functional()

    def member_loss(
        train_p: dict[str, Tensor], frozen_p: dict[str, Tensor], bufs: dict[str, Tensor], x: Tensor, y: Tensor
    ) -> Tensor:
        return loss(call({**train_p, **frozen_p}, bufs, x), y)

    if models.size == 1:
        # One member: vmap would only add its overhead (~1.5x at toy sizes); index the stack instead.
        def batched_loss(train_p, frozen_p, bufs, x, y):  # noqa: ANN001, ANN202
            def first(d: dict[str, Tensor]) -> dict[str, Tensor]:
                return {n: t[0] for n, t in d.items()}

            return member_loss(first(train_p), first(frozen_p), first(bufs), x[0], y[0])[None]
    else:
        batched_loss = vmap(member_loss)
    log_every = log_every or max(1, steps // 100)
    device = next(iter(params.values())).device
    first_bad = torch.full((models.size,), -1, dtype=torch.long, device=device)
    log = TrainLog()
    if evaluate is not None:
        evaluate(0)
    step_iter: Iterable[int] = range(steps)
    if progress is not None:
        step_iter = progress(step_iter, description)
    for step in step_iter:
        x, y = batches(step)
        with autocast(precision, device):
            losses = batched_loss(trainable, frozen, buffers, x, y)  # (S,)
        if losses.dtype in (torch.bfloat16, torch.float16):  # a loss left in autocast's dtype: logged in fp32
            losses = losses.float()
        optimizer.zero_grad(set_to_none=True)
        losses.sum().backward()
        if optim.grad_clip is not None:
            _clip_per_member(list(trainable.values()), optim.grad_clip)
        optimizer.step()
        scheduler.step()
        bad = ~torch.isfinite(losses.detach())
        first_bad = torch.where(bad & (first_bad < 0), torch.full_like(first_bad, step), first_bad)
        if evaluate is not None and evaluate_every and (step + 1) % evaluate_every == 0 and step != steps - 1:
            evaluate(step + 1)
        if step % log_every == 0 or step == steps - 1:
            log.steps.append(step)
            log.losses.append(losses.detach().double().cpu().numpy())
            if bool((first_bad >= 0).all()):
                break  # every member diverged: nothing left to train
    if evaluate is not None:
        evaluate(step + 1)
    log.diverged_at = first_bad.cpu().numpy()
    return log


@torch.no_grad()
def _clip_per_member(params: list[Tensor], max_norm: float) -> None:
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads))  # (S,)
    factor = (max_norm / (norms + 1e-6)).clamp(max=1.0)  # as torch.nn.utils.clip_grad_norm_
    for g in grads:
        g.mul_(factor.view(-1, *([1] * (g.dim() - 1))))


@torch.no_grad()
def evaluate_stacked(models: StackedModels, inputs: Tensor, chunk: int | None = None) -> Tensor:
    """Stacked predictions ``(S, B, ...)`` for stacked inputs ``(S, B, ...)``, in chunks of the batch axis."""
    if chunk is None or inputs.shape[1] <= chunk:
        return models(inputs)
    return torch.cat([models(inputs[:, i : i + chunk]) for i in range(0, inputs.shape[1], chunk)], dim=1)
