"""Training loops of the thermalizer (Pedersen, Zanna, Bruna, arXiv 2503.18731): the noise-blind denoiser
with its noise-level classifier, and autoregressive emulators with a multi-step (unrolled) loss.

- :func:`train_level_denoiser`: snapshots of the invariant measure are diffused to a uniformly drawn level
  s (``x_s = √ᾱ_s x + √(1 − ᾱ_s) ε``) and the network is trained on ``MSE(ε̂, ε) + CE(level logits, s)``:
  the ε-prediction of DDPM without the level as input (noise-blind), plus the classifier that Algorithm 1
  reads ŝ from.
- :func:`train_emulator`: a residual emulator ``x_{t+1} = f(x_t)`` trained on the summed MSE of ``k``
  unrolled steps from random (trajectory, time) starts; ``k`` grows from 1 to ``max_unroll`` over
  training (the paper's unroll curriculum; ``max_unroll = 1`` is the plain one-step loss).
- :func:`fit_unet_emulator`: the residual U-Net emulator of a 2-D flow (Kolmogorov flow, the QG jet) built and
  trained with AdamW by :func:`train_emulator`: the learned surrogate both the thermalizer and the
  self-refining-surrogate studies correct.
"""

from __future__ import annotations

from typing import Callable, Iterable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.core.rng import seeded
from theorylab.nn.unet import UNet, diffuse

Progress = Callable[[Iterable[int], str], Iterable[int]]
Check = Callable[[str, Tensor, int], None]


def train_level_denoiser(
    model: nn.Module,
    snapshots: Tensor,
    alpha_bars: Tensor,
    *,
    steps: int,
    batch: int,
    levels: int,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    model_kwargs: dict | None = None,
    device: torch.device | str = "cpu",
    log_every: int = 100,
    progress: Progress | None = None,
    check: Check | None = None,
    description: str = "train the thermalizer",
) -> list[dict]:
    """Train ``model(x_s, **model_kwargs) -> (ε̂, level logits)`` on ``snapshots`` ``[M, *shape]`` (kept where
    they are; batches move to ``device``). Per step, from ``generator`` (on the CPU) in this order: the
    snapshot indices, the levels s ~ U{0..levels−1}, the noise ε. ``alpha_bars`` is the schedule's ᾱ (its
    first ``levels`` entries are used). Returns ``[{step, loss}]`` every ``log_every`` steps and at the last;
    ``check(what, loss, step)`` may raise on a non-finite loss (e.g. ``RunContext.check_finite``)."""
    ab = alpha_bars.float().to(device)
    kwargs = model_kwargs or {}
    log = []
    it = range(steps) if progress is None else progress(range(steps), description)
    for step in it:
        x = snapshots[torch.randint(0, len(snapshots), (batch,), generator=generator)].to(device)
        s = torch.randint(0, levels, (batch,), generator=generator).to(device)
        e = torch.randn(x.shape, generator=generator).to(device)
        eps, logits = model(diffuse(x, ab[s], e), **kwargs)
        loss = F.mse_loss(eps, e) + F.cross_entropy(logits, s)
        if check is not None:
            check("thermalizer loss", loss, step)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        if step % log_every == 0 or step == steps - 1:
            log.append(dict(step=step, loss=loss.item()))
    return log


def train_emulator(
    model: nn.Module,
    trajectories: Tensor,
    *,
    steps: int,
    batch: int,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    max_unroll: int = 1,
    device: torch.device | str = "cpu",
    log_every: int = 100,
    progress: Progress | None = None,
    check: Check | None = None,
    what: str = "emulator loss",
    description: str = "train the emulator",
) -> list[dict]:
    """Train ``model`` to map ``trajectories[b, t]`` to ``trajectories[b, t + 1]`` (``[B, T, *state]``, kept where
    they are). Step ``i`` unrolls ``k = min(max_unroll, 1 + i max_unroll // steps)`` model calls from starts
    ``t ~ U{0..T−k−1}`` and sums the k MSEs. Per step, ``generator`` draws the trajectory indices, then the
    start times. Returns ``[{step, loss}]`` every ``log_every`` steps and at the last."""
    B, T = trajectories.shape[:2]
    log = []
    it = range(steps) if progress is None else progress(range(steps), description)
    for step in it:
        k = min(max_unroll, 1 + step * max_unroll // max(1, steps))  # unroll curriculum 1 -> max_unroll
        b = torch.randint(0, B, (batch,), generator=generator)
        t = torch.randint(0, T - k, (batch,), generator=generator)
        x = trajectories[b, t].to(device)
        loss = 0.0
        for j in range(1, k + 1):
            x = model(x)
            loss = loss + F.mse_loss(x, trajectories[b, t + j].to(device))
        if check is not None:
            check(what, loss, step)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % log_every == 0 or step == steps - 1:
            log.append(dict(step=step, loss=loss.item()))
    return log


def fit_unet_emulator(
    trajectories: Tensor,
    *,
    width: int,
    levels: int,
    init_seed: int,
    steps: int,
    batch: int,
    lr: float,
    weight_decay: float,
    generator: torch.Generator,
    max_unroll: int = 4,
    device: torch.device | str = "cpu",
    progress: Progress | None = None,
    check: Check | None = None,
) -> UNet:
    """A residual 2-D U-Net emulator of ``trajectories`` ``[B, T, C, n, n]`` (channels C in and out), initialised
    under ``init_seed`` (:func:`~theorylab.core.rng.seeded`) and trained by :func:`train_emulator` with AdamW at
    ``lr`` and ``weight_decay``, the unroll curriculum rising to ``max_unroll`` (the thermalizer paper's 4 for
    Kolmogorov flow)."""
    channels = trajectories.shape[2]
    with seeded(init_seed):
        emulator = UNet(2, channels, channels, width=width, levels=levels, residual=True).to(device)
    optimizer = torch.optim.AdamW(emulator.parameters(), lr=lr, weight_decay=weight_decay)
    train_emulator(
        emulator,
        trajectories,
        steps=steps,
        batch=batch,
        max_unroll=max_unroll,
        optimizer=optimizer,
        generator=generator,
        device=device,
        progress=progress,
        check=check,
    )
    return emulator
