"""Closure data, offline training of closure networks, and the coarse solver coupled with a learned closure.

After Otness, Zanna, Bruna (arXiv 2303.17496). The closure ``S(ū)`` is learned offline from pairs (coarse state,
closure target) by mean-squared error on standardised fields, then added to a coarse pseudo-spectral solver as an
extra explicit term: ``∂_t ū = F_coarse(ū) + NN(ū)`` (online use).

- :func:`closure_trajectories`: fine trajectories stored only as their coarse states and closure targets per
  level (``D_{n_k}(S)``, with ``S`` from :func:`theorylab.data.pde.closure_target`).
- :func:`channel_scale`: the global std per channel (the card's standardisation).
- :func:`train_direct`: one net ``ū -> S``; :func:`train_multiscale`: a
  :class:`~theorylab.nn.closure.MultiscaleClosure`, level by level with the nets below frozen
  (``mode="sequential"``, the paper's) or all levels at once on the sum of the level losses (``"joint"``).
  Adam with a one-cycle, constant or warmup-cosine schedule. Optional noise injection: a batch is clean with
  probability ``p_clean``, otherwise its inputs get Gaussian noise of std ``noise`` (standardised units).
- :class:`NetClosure`: a trained float32 net as a float64 tendency ``ū -> S`` (standardisation undone).
- :class:`CoupledSolver`: ETDRK4 on the coarse grid with the closure evaluated at every stage (four calls per
  step) as part of the explicit term, batched over trajectories, for :class:`~theorylab.data.pde.KS1D`,
  :class:`~theorylab.data.pde.NS2D` and :class:`~theorylab.data.qg.QG2L`. A zero closure gives the plain coarse
  solver bit for bit.
- :func:`coupled_rollout`: the coupled solver through :func:`theorylab.train.rollout.rollout`, with blow-up
  tracking (first non-finite step, or first recorded state with rms above a limit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, Mapping, Sequence

import torch
from torch import Tensor, nn

from theorylab.data.pde import DTYPE, KS1D, NS2D, closure_target, etdrk4_coefficients, etdrk4_step
from theorylab.nn.closure import DirectClosure, MultiscaleClosure
from theorylab.train.rollout import Rollout, rollout

Check = Callable[[str, float, int], None]
Schedule = Literal["one-cycle", "constant", "warmup-cosine"]
Resample = Callable[[Tensor, int], Tensor]


# ----------------------------------------------------------------------------------------------- data
def closure_trajectories(
    fine,
    coarse,
    operators: Mapping[str, tuple[Callable[[Tensor], Tensor], Resample]],
    levels: Sequence[int],
    x0: Tensor,
    n_records: int,
    record_every: int,
    on_record: Callable[[int, Tensor], None] | None = None,
    progress=None,
) -> dict[str, tuple[Tensor, list[Tensor]]]:
    """Per coarsening operator ``name -> (C, down)``: ``(ū [B, T, C, *grid_c], [S_k [B, T, C, *grid_k] per
    level])``, float64. The fine solver runs once from ``x0`` for ``n_records`` records of ``record_every``
    steps (record 0 is ``x0``); each record is kept only as its coarse state ``C x`` and the closure
    ``S = C F_fine(x) − F_coarse(C x)`` coarsened to every level (``down(S, n_k)``; the last level is the coarse
    grid itself). ``on_record(t, x)`` sees the fine states."""
    wrap = progress or (lambda items, description: items)
    out = {name: ([], [[] for _ in levels]) for name in operators}
    x = x0
    for t in wrap(range(n_records), "closure data"):
        if t:
            x = fine.step(x, record_every)
        if on_record is not None:
            on_record(t, x)
        for name, (C, down) in operators.items():
            S = closure_target(fine, coarse, C, x)
            out[name][0].append(C(x))
            for k, n in enumerate(levels):
                out[name][1][k].append(S if n == S.shape[-1] else down(S, n))
    return {name: (torch.stack(st, 1), [torch.stack(t, 1) for t in tg]) for name, (st, tg) in out.items()}


def channel_scale(x: Tensor) -> Tensor:
    """The global std of each channel of ``x [n, C, *grid]``, shaped ``[C, 1(, 1)]`` to broadcast."""
    dims = [0] + list(range(2, x.ndim))
    return x.double().std(dim=dims).view(x.shape[1], *[1] * (x.ndim - 2))


@dataclass
class ClosureSplit:
    """Standardised float32 samples ``[n, C, *grid]``: inputs ``ū`` at ``N_c`` and targets per level, for
    training and testing; ``in_scale``/``out_scale`` (``[C, 1(, 1)]``, float64) undo the standardisation."""

    x_train: Tensor
    y_train: list[Tensor]
    x_test: Tensor
    y_test: list[Tensor]
    in_scale: Tensor
    out_scale: Tensor


def split_closure_data(
    states: Tensor,
    targets: Sequence[Tensor],
    n_train: int | None = None,
    test: tuple[Tensor, Sequence[Tensor]] | None = None,
    device=None,
) -> ClosureSplit:
    """The card's split and standardisation of ``states [B, T, C, *grid]`` and per-level ``targets``: records
    ``[:n_train]`` of every trajectory train, the rest test (or, with ``test=(states, targets)`` of other
    trajectories, all of these train and those test); inputs divided by the training inputs' global std per
    channel, every level's targets by the training targets' std at ``N_c`` (the last level)."""
    if test is None and (n_train is None or not 0 < n_train < states.shape[1]):
        raise ValueError(f"n_train must leave training and test records; got {n_train} of {states.shape[1]}")

    def flat(a: Tensor) -> Tensor:
        return a.reshape(-1, *a.shape[2:])

    if test is None:
        test = (states[:, n_train:], [t[:, n_train:] for t in targets])
        states, targets = states[:, :n_train], [t[:, :n_train] for t in targets]
    in_scale, out_scale = channel_scale(flat(states)), channel_scale(flat(targets[-1]))

    def prep(a: Tensor, scale: Tensor) -> Tensor:
        return (flat(a) / scale).float().to(device)

    return ClosureSplit(
        prep(states, in_scale),
        [prep(t, out_scale) for t in targets],
        prep(test[0], in_scale),
        [prep(t, out_scale) for t in test[1]],
        in_scale,
        out_scale,
    )


# ----------------------------------------------------------------------------------------------- training
def _scheduler(opt: torch.optim.Optimizer, schedule: Schedule, lr: float, steps: int):
    if schedule == "one-cycle":
        return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    if schedule == "constant":
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    if schedule == "warmup-cosine":
        warm = max(1, steps // 100)

        def factor(s: int) -> float:
            return (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, steps - warm)))

        return torch.optim.lr_scheduler.LambdaLR(opt, factor)
    raise ValueError(f"unknown schedule {schedule!r}; known: one-cycle, constant, warmup-cosine")


def _fit(
    params,
    loss_fn: Callable[[Tensor], Tensor],
    n: int,
    steps: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    check: Check | None,
    progress,
    what: str,
    schedule: Schedule = "one-cycle",
    log_every: int = 50,
) -> list[dict]:
    """Adam on ``loss_fn(indices)`` over minibatches of ``n`` samples (peak/constant learning rate ``lr``)."""
    if steps < 1 or batch < 1 or n < 1:
        raise ValueError(f"{what}: needs steps >= 1, batch >= 1 and samples >= 1; got {steps}, {batch}, {n}")
    params = list(params)
    opt = torch.optim.Adam(params, lr=lr, fused=all(p.device.type in ("cpu", "cuda") for p in params))
    sched = _scheduler(opt, schedule, lr, steps)
    wrap = progress or (lambda items, description: items)
    log = []
    for step in wrap(range(1, steps + 1), what):
        loss = loss_fn(torch.randint(n, (min(batch, n),), generator=generator))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % log_every == 0 or step == steps:
            value = float(loss.detach())
            if check is not None:
                check(what, value, step)
            elif not math.isfinite(value):
                raise FloatingPointError(f"{what}: loss {value} at step {step}")
            log.append(dict(what=what, step=step, loss=value, lr=float(sched.get_last_lr()[0])))
    return log


def _noised(x: Tensor, noise: float, p_clean: float, generator: torch.Generator) -> Tensor:
    """Noise injection: each batch is clean with probability ``p_clean``, else ``x + noise ξ``."""
    if noise <= 0 or float(torch.rand((), generator=generator)) < p_clean:
        return x
    return x + noise * torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)


def train_direct(
    model: DirectClosure,
    x: Tensor,
    target: Tensor,
    *,
    steps: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    schedule: Schedule = "one-cycle",
    noise: float = 0.0,
    p_clean: float = 1.0,
    check: Check | None = None,
    progress=None,
) -> list[dict]:
    """Fit ``model(x) ≈ target`` (``[n, C, *grid]`` each, standardised, on the model's device) by MSE."""

    def loss(idx: Tensor) -> Tensor:
        return (model(_noised(x[idx], noise, p_clean, generator)) - target[idx]).pow(2).mean()

    return _fit(
        model.parameters(), loss, len(x), steps, batch, lr, generator, check, progress, "direct closure", schedule
    )


@torch.no_grad()
def _chunked(fn: Callable[[Tensor], Tensor], x: Tensor, chunk: int = 1024) -> Tensor:
    return torch.cat([fn(x[i : i + chunk]) for i in range(0, len(x), chunk)])


def train_multiscale(
    model: MultiscaleClosure,
    x: Tensor,
    targets: Sequence[Tensor],
    *,
    steps: Sequence[int],
    batch: int,
    lr: float,
    generator: torch.Generator,
    mode: str = "sequential",
    schedule: Schedule = "one-cycle",
    noise: float = 0.0,
    p_clean: float = 1.0,
    check: Check | None = None,
    progress=None,
) -> list[dict]:
    """Fit a multiscale closure: ``targets[k]`` (``[n, C, n_k(, n_k)]``) is the closure at level ``k``.

    ``mode="sequential"``: net ``k`` is trained for ``steps[k]`` steps with nets ``< k`` frozen (their predictions
    computed once for the whole set when there is no noise injection); its loss is the MSE of ``p_k``.
    ``mode="joint"``: every net at once for ``sum(steps)`` steps on the sum of the level MSEs."""
    K = len(model.levels)
    if len(targets) != K or len(steps) != K or mode not in ("sequential", "joint"):
        raise ValueError(
            f"train_multiscale needs one target and one step count per level ({K}) and mode "
            f"'sequential' or 'joint'; got {len(targets)} targets, {len(steps)} step counts, {mode!r}"
        )
    if mode == "joint":

        def joint(idx: Tensor) -> Tensor:
            preds = model.levels_forward(_noised(x[idx], noise, p_clean, generator))
            return sum((p - t[idx]).pow(2).mean() for p, t in zip(preds, targets))

        return _fit(
            model.parameters(),
            joint,
            len(x),
            sum(steps),
            batch,
            lr,
            generator,
            check,
            progress,
            "multiscale closure (joint)",
            schedule,
        )
    log = []
    for k in range(K):
        for j, net in enumerate(model.nets):
            net.requires_grad_(j == k)
        if noise <= 0:  # frozen lower levels: their predictions and the level-k input, computed once
            lower = [_chunked(lambda xb, j=j: model.levels_forward(xb, upto=j)[j], x) for j in range(k)]
            inputs = model.level_inputs(x, k, lower)
            base = model.resample(lower[k - 1], model.levels[k]) if k else None

            def loss(idx: Tensor, k=k, inputs=inputs, base=base) -> Tensor:
                y = model.nets[k](inputs[idx])
                p = model.resample(y, model.levels[0]) if k == 0 else base[idx] + y
                return (p - targets[k][idx]).pow(2).mean()
        else:

            def loss(idx: Tensor, k=k) -> Tensor:
                xb = _noised(x[idx], noise, p_clean, generator)
                with torch.no_grad():
                    lower = model.levels_forward(xb, upto=k - 1) if k else []
                return (model.level_output(k, model.level_inputs(xb, k, lower), lower) - targets[k][idx]).pow(2).mean()

        log += _fit(
            model.nets[k].parameters(),
            loss,
            len(x),
            steps[k],
            batch,
            lr,
            generator,
            check,
            progress,
            f"multiscale level {k} (n = {model.levels[k]})",
            schedule,
        )
    for net in model.nets:
        net.requires_grad_(True)
    return log


# ----------------------------------------------------------------------------------------------- online
class NetClosure:
    """A closure net trained on standardised fields as a float64 tendency: ``ū -> out_scale · net(ū / in_scale)``
    (scales: numbers or per-channel tensors), evaluated in ``dtype`` without gradients."""

    def __init__(self, net: nn.Module, in_scale, out_scale, dtype: torch.dtype = torch.float32):
        self.net, self.dtype = net, dtype
        self.in_scale, self.out_scale = torch.as_tensor(in_scale, dtype=DTYPE), torch.as_tensor(out_scale, dtype=DTYPE)

    @torch.no_grad()
    def __call__(self, u: Tensor) -> Tensor:
        x = (u / self.in_scale.to(u.device)).to(self.dtype)
        return self.net(x).to(DTYPE) * self.out_scale.to(u.device)


def band_mask(n: int, dims: int, device=None) -> Tensor:
    """The 2/3-rule band of an ``n``-point grid in rfft layout: ``|m| < n/3`` on every axis."""
    kx = torch.arange(n // 2 + 1, device=device)
    if dims == 1:
        return kx < n / 3
    ky = torch.fft.fftfreq(n, 1.0 / n, device=device).abs()
    return (kx[None, :] < n / 3) & (ky[:, None] < n / 3)


@dataclass
class CoupledSolver:
    """``∂_t ū = F_coarse(ū) + closure(ū)``: the coarse ETDRK4 solver with the closure as an extra explicit term,
    evaluated at each of the four stages of a step. ``closure`` maps physical ``[B, C, *grid]`` float64 states to
    tendencies of the same shape (``None``: the plain coarse solver). ``band_limit`` keeps only the closure's
    2/3-rule band (where the true closure lives for the ``sharp`` operator). Works for KS1D, NS2D (diagonal
    linear part) and QG2L (2x2 blocks, through its own ``to_hat``/``from_hat``)."""

    solver: object
    closure: Callable[[Tensor], Tensor] | None = None
    band_limit: bool = False

    def __post_init__(self) -> None:
        s = self.solver
        self.calls = 0
        device = getattr(s, "device", "cpu")
        if isinstance(s, KS1D):
            self.dims, n = 1, s.N
            self._to = lambda u: torch.fft.rfft(u.to(DTYPE), dim=-1)
            self._from = lambda v: torch.fft.irfft(v, n=n, dim=-1)
        elif isinstance(s, NS2D):
            self.dims, n = 2, s.N
            self._to = lambda u: torch.fft.rfft2(u.to(DTYPE))
            self._from = lambda v: torch.fft.irfft2(v, s=(n, n))
        elif hasattr(s, "to_hat") and hasattr(s, "linear_matrix"):
            self.dims, n = 2, s.N
            self._to, self._from = s.to_hat, s.from_hat
        else:
            raise TypeError(f"CoupledSolver needs a KS1D, an NS2D or a QG2L; got {type(s).__name__}")
        self._mask = band_mask(n, self.dims, device=device) if self.band_limit else None
        if hasattr(s, "linear_matrix"):  # QG2L: the ETDRK4 weights are 2x2 matrices
            from theorylab.data.qg import etdrk4_coefficients_2x2, etdrk4_step_2x2

            c = etdrk4_coefficients_2x2(s.linear_matrix.cpu(), s.dt, s.contour_points)
            self._step = etdrk4_step_2x2
        else:
            c = etdrk4_coefficients(s.linear.cpu(), s.dt)
            self._step = etdrk4_step
        self._c = {k: v.to(device) for k, v in c.items()}

    def nonlinear(self, v: Tensor) -> Tensor:
        out = self.solver.nonlinear(v)
        if self.closure is None:
            return out
        self.calls += 1
        extra = self._to(self.closure(self._from(v)))
        return out + (extra * self._mask if self._mask is not None else extra)

    def step_hat(self, v: Tensor) -> Tensor:
        return self._step(v, self._c, self.nonlinear)

    def step(self, u: Tensor, n: int = 1) -> Tensor:
        """``n`` coupled steps from physical states ``u``."""
        v = self._to(u)
        for _ in range(n):
            v = self.step_hat(v)
        return self._from(v)


def coupled_rollout(
    solver: CoupledSolver, u0: Tensor, n_steps: int, record_every: int = 1, limit: float = 1e3
) -> tuple[Rollout, Tensor]:
    """``(rollout, blow-up step [B])``: ``n_steps // record_every`` records of ``record_every`` coupled steps from
    ``u0`` (``rollout.times`` in solver steps). The blow-up step is the first recorded step whose state is
    non-finite or has rms above ``limit`` (-1: none); a trajectory is frozen at NaN once non-finite."""
    run = rollout(lambda u: solver.step(u, record_every), u0, n_steps // record_every)
    run.times = run.times * record_every
    rms = run.states.flatten(2).double().pow(2).mean(-1).sqrt()  # [B, n_records]; NaN counts as over
    over = ~(rms <= limit)
    blow = torch.where(over.any(-1), run.times[over.float().argmax(-1)], torch.full((len(u0),), -1))
    return run, blow
