"""Stochastic interpolants and the self-consistent training loop for black-box corruptions.

Interpolant (Albergo, Boffi, Vanden-Eijnden, arXiv 2303.08797): between a clean sample ``x0`` (t = 0)
and a corrupted one ``x1`` (t = 1), ``I_t = (1 - t) x0 + t x1``; the velocity ``b(x, t)`` that
minimises ``E |b(I_t, t) - (x1 - x0)|^2`` transports the law of ``x1`` to that of ``x0`` when the
ODE ``dX/dt = b(X, t)`` is run from t = 1 back to t = 0.

Self-consistency (Modi, Han, Vanden-Eijnden, Bruna, arXiv 2512.10857, Alg. 1): only corrupted
samples ``y`` and the channel ``A`` (a black box) are available. Each step transports a batch of
``y`` back to clean estimates ``x0 = T_b(y)``, re-corrupts them, ``x1 = A(x0)`` (with probability
``1 - alpha`` per sample the observed ``y`` itself is kept as ``x1``: the mixing of the authors'
description, reconstructed), and regresses ``b`` on the interpolant between them. At the fixed
point ``A_# (T_b# nu_obs) = nu_obs``: re-corrupting the cleaned law reproduces the observed one.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable, Literal

import numpy as np
import torch
from torch import Tensor, nn

from theorylab.core.precision import autocast
from theorylab.data.corruptions import Channel
from theorylab.theory.ode import integrate
from theorylab.train.batched import AdamWSchedule


def interpolate(
    x0: Tensor, x1: Tensor, t: Tensor, gamma: float = 0.0, z: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """``(I_t, dI_t/dt)`` for ``I_t = (1 - t) x0 + t x1 + gamma t (1 - t) z`` (``t`` of shape (n,)).

    ``gamma = 0`` is the linear interpolant; ``gamma > 0`` the stochastic one (Albergo et al.,
    Eq. 2.1, with gamma(t) = gamma t (1 - t)). The ODE with the drift b = E[dI_t/dt | I_t] alone
    transports the marginals in both cases (the SDE would also need the score)."""
    tt = t.reshape(-1, *([1] * (x0.dim() - 1))).to(x0.dtype)
    point, velocity = (1 - tt) * x0 + tt * x1, x1 - x0
    if gamma:
        if z is None:
            raise ValueError("a stochastic interpolant (gamma > 0) needs the latent noise z")
        point = point + gamma * tt * (1 - tt) * z
        velocity = velocity + gamma * (1 - 2 * tt) * z
    return point, velocity


def interpolant_loss(
    model: nn.Module,
    x0: Tensor,
    x1: Tensor,
    t: Tensor,
    latent: Tensor | None = None,
    gamma: float = 0.0,
    z: Tensor | None = None,
) -> Tensor:
    """``mean |b(I_t, t, latent) - dI_t/dt|^2`` (sum over coordinates, mean over samples)."""
    point, target = interpolate(x0, x1, t, gamma, z)
    return (model(point, t, latent) - target).pow(2).reshape(len(x0), -1).sum(1).mean()


@torch.no_grad()
def transport(
    model: nn.Module,
    x: Tensor,
    latent: Tensor | None = None,
    steps: int = 20,
    method: Literal["euler", "heun"] = "euler",
    backward: bool = True,
) -> Tensor:
    """Push ``x`` through the learned ODE: from t = 1 to t = 0 (``backward``: corrupted -> clean) or the reverse."""
    t0, t1 = (1.0, 0.0) if backward else (0.0, 1.0)
    return integrate(lambda z, t: model(z, t, latent), x, t0, t1, steps, method)


class EMA:
    """Exponential moving average of a model's weights (a frozen shadow copy), updated every ``every`` steps."""

    def __init__(self, model: nn.Module, decay: float = 0.995, every: int = 10):
        if not 0 <= decay < 1:
            raise ValueError(f"EMA decay must lie in [0, 1), got {decay}")
        self.decay, self.every = decay, every
        self.shadow = copy.deepcopy(model).requires_grad_(False)

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        if step % self.every:
            return
        for s, p in zip(self.shadow.parameters(), model.parameters()):
            s.lerp_(p.detach(), 1 - self.decay)


@dataclass
class SelfConsistentLog:
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    diverged_at: int = -1


def train_self_consistent(
    model: nn.Module,
    observed: Tensor,
    channel: Channel,
    *,
    observed_latents: Tensor | None = None,
    steps: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    alpha: float = 0.9,
    transport_steps: int = 20,
    method: Literal["euler", "heun"] = "euler",
    resamples: int = 1,
    gamma: float = 0.0,
    grad_clip: float | None = 1.0,
    schedule: Literal["constant", "cosine"] = "constant",
    ema: EMA | None = None,
    evaluate: Callable[[int], None] | None = None,
    evaluate_every: int = 0,
    progress: Callable | None = None,
    precision: Literal["fp32", "bf16"] = "fp32",
) -> SelfConsistentLog:
    """Algorithm 1 of arXiv 2512.10857 (see the module docstring); ``model(x, t, latent)``.

    ``observed``: the fixed corrupted data set (single view). ``evaluate(step)`` is called at
    step 0, every ``evaluate_every`` steps and at the end. A non-finite loss stops training and
    is reported in ``diverged_at``. ``precision="bf16"`` runs the per-step transport (no gradient) under bf16
    autocast (:mod:`theorylab.core.precision`); the loss and its gradient stay in the model's dtype.
    """
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    params = [p for p in model.parameters() if p.requires_grad]
    opt, sched = AdamWSchedule(lr=lr, schedule=schedule).build(params, steps)  # weight decay 0: Adam
    log = SelfConsistentLog()
    n = len(observed)
    device = observed.device
    if evaluate is not None:
        evaluate(0)
    it = range(steps) if progress is None else progress(range(steps), "self-consistent training")
    for step in it:
        idx = torch.randint(n, (batch,), generator=generator).to(device)
        y = observed[idx]
        lat_y = observed_latents[idx] if observed_latents is not None else None
        model.eval()
        with autocast(precision, device):
            x0 = transport(model, y, lat_y, transport_steps, method).to(y.dtype)
        model.train()
        total = 0.0
        opt.zero_grad(set_to_none=True)
        for _ in range(resamples):
            x1, lat1 = channel(x0, generator)
            keep_y = (torch.rand(batch, generator=generator) >= alpha).to(device)
            shape = (-1, *([1] * (y.dim() - 1)))
            x1 = torch.where(keep_y.view(shape), y, x1)
            if lat1 is not None and lat_y is not None:
                lat1 = torch.where(keep_y.view(shape), lat_y, lat1)
            t = torch.rand(batch, generator=generator, dtype=y.dtype).to(device)
            z = torch.randn(x0.shape, generator=generator, dtype=x0.dtype).to(device) if gamma else None
            loss = interpolant_loss(model, x0, x1, t, lat1, gamma, z) / resamples
            loss.backward()
            total += float(loss.detach())
        if not np.isfinite(total):
            log.diverged_at = step
            break
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()
        sched.step()
        if ema is not None:
            ema.update(model, step + 1)
        log.steps.append(step)
        log.losses.append(total)
        if evaluate is not None and evaluate_every and (step + 1) % evaluate_every == 0 and step != steps - 1:
            evaluate(step + 1)
    if evaluate is not None and log.diverged_at < 0:
        evaluate(steps)
    return log


@torch.no_grad()
def generate(
    model: nn.Module,
    observed: Tensor,
    channel: Channel,
    n: int,
    generator: torch.Generator,
    observed_latents: Tensor | None = None,
    steps: int = 20,
    method: Literal["euler", "heun"] = "euler",
) -> Tensor:
    """New clean samples (not cleaned copies of the data): clean ``n`` observed samples, corrupt them
    again with fresh channel noise (a new draw from the observed law at the fixed point), and
    transport those back. Uses only the black-box channel and the trained velocity."""
    idx = torch.randint(len(observed), (n,), generator=generator).to(observed.device)
    lat = observed_latents[idx] if observed_latents is not None else None
    fresh, fresh_lat = channel(transport(model, observed[idx], lat, steps, method), generator)
    return transport(model, fresh, fresh_lat if fresh_lat is not None else lat, steps, method)


def train_and_measure(
    model: nn.Module,
    observed: Tensor,
    channel: Channel,
    measure: Callable[[int, str, nn.Module], dict | None],
    *,
    ema_decay: float = 0.995,
    **kwargs,
) -> tuple[list[dict], SelfConsistentLog]:
    """:func:`train_self_consistent` with an :class:`EMA` of the weights, measuring both weight sets.

    At every evaluation step (``evaluate_every`` steps, step 0 and the end) ``measure(step, weights, net)``
    is called for ``("raw", model)`` then ``("ema", shadow)`` with the net in eval mode; the rows it
    returns (None: nothing at this step) are collected in order. ``kwargs`` go to
    :func:`train_self_consistent`. Returns the rows and the training log.
    """
    ema = EMA(model, ema_decay)
    rows: list[dict] = []

    def evaluate(step: int) -> None:
        for weights, net in (("raw", model), ("ema", ema.shadow)):
            net.eval()
            row = measure(step, weights, net)
            if row is not None:
                rows.append(row)

    log = train_self_consistent(model, observed, channel, ema=ema, evaluate=evaluate, **kwargs)
    return rows, log
