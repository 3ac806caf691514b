"""Next-step forecasting of PDE fields: pairs from trajectories, NMSE training over several tasks, nRMSE.

The protocol of the PDE foundation-model papers (MPP, McCabe et al. 2023; CViT, Wang et al. 2024; the axial
networks of Kim et al., arXiv 2510.13665): a model sees ``history`` consecutive frames (stacked in the
channels, oldest first) and predicts the next one; the loss is the normalised MSE ``‖ŷ − y‖² / ‖y‖²`` per
sample, the metric the normalised RMSE ``‖ŷ − y‖ / ‖y‖`` per sample, averaged. Trajectories, not frames, are
split between training and test, so no test frame has a training neighbour in time.

:func:`train_forecaster` trains one model on one or more :class:`ForecastSet` s at once (round robin: step t
takes a mini-batch of set ``t mod K``), the mixed-dimension pretraining of the paper when the sets have
different numbers of axes; with ``eval_sets`` it records a test-nRMSE curve (fine-tuning curves), and
:func:`steps_to_reach` reads the first step a curve reaches a target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor, nn


@dataclass
class ForecastSet:
    """Inputs ``x [M, history·C, *n]`` and next frames ``y [M, C, *n]`` (float32) of one task."""

    name: str
    x: Tensor
    y: Tensor

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y) or len(self.x) == 0:
            raise ValueError(
                f"ForecastSet '{self.name}' needs as many inputs as targets, >= 1; got {len(self.x)}, {len(self.y)}"
            )

    @property
    def dims(self) -> int:
        return self.x.ndim - 2

    def __len__(self) -> int:
        return len(self.x)


def forecast_pairs(name: str, fields: Tensor, history: int = 1) -> ForecastSet:
    """Every window of ``history`` frames and the frame after it, from trajectories ``[n_traj, n_t, C, *n]``."""
    if fields.ndim < 4:
        raise ValueError(f"forecast_pairs needs trajectories [n_traj, n_t, C, *spatial]; got {tuple(fields.shape)}")
    n_t = fields.shape[1]
    if history < 1 or n_t <= history:
        raise ValueError(f"forecast_pairs needs 1 <= history < n_t; got history {history}, n_t {n_t}")
    f = fields.float()
    x = torch.stack([f[:, s : s + history].flatten(1, 2) for s in range(n_t - history)], 1)  # (n_traj, W, h·C, ..)
    y = f[:, history:]  # (n_traj, W, C, ..)
    return ForecastSet(name, x.flatten(0, 1), y.flatten(0, 1))


def split_trajectories(fields: Tensor, test_fraction: float, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random split of trajectories (dim 0) into (train, test); at least one of each."""
    n = len(fields)
    if n < 2 or not 0 < test_fraction < 1:
        raise ValueError(
            f"split_trajectories needs >= 2 trajectories and 0 < test_fraction < 1; got {n}, {test_fraction}"
        )
    n_test = min(n - 1, max(1, round(test_fraction * n)))
    perm = torch.randperm(n, generator=generator)
    return fields[perm[n_test:]], fields[perm[:n_test]]


def nmse(pred: Tensor, target: Tensor) -> Tensor:
    """Per-sample ``‖pred − target‖² / ‖target‖²`` over all but the batch axis."""
    return (pred - target).flatten(1).pow(2).sum(1) / target.flatten(1).pow(2).sum(1).clamp_min(1e-12)


@torch.no_grad()
def nrmse(model: nn.Module, data: ForecastSet, batch: int = 64, device: torch.device | str = "cpu") -> float:
    """Mean over samples of ``‖model(x) − y‖ / ‖y‖`` (the papers' NRMSE, one step)."""
    model.eval()
    total = 0.0
    for s in range(0, len(data), batch):
        pred = model(data.x[s : s + batch].to(device))
        total += nmse(pred, data.y[s : s + batch].to(device)).sqrt().sum().item()
    model.train()
    return total / len(data)


def persistence_nrmse(data: ForecastSet, channels: int) -> float:
    """nRMSE of predicting the last input frame (no model): the floor a forecaster must beat."""
    return nmse(data.x[:, -channels:], data.y).sqrt().mean().item()


def train_forecaster(
    model: nn.Module,
    sets: Sequence[ForecastSet],
    steps: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    check: Callable[..., None] | None = None,
    device: torch.device | str = "cpu",
    eval_sets: Sequence[ForecastSet] = (),
    eval_every: int = 0,
    weight_decay: float = 0.0,
) -> dict[str, list]:
    """Adam on the mean NMSE for ``steps`` steps, round robin over ``sets`` (one mini-batch of ``batch`` samples
    drawn with ``generator`` per step). Returns ``{"loss": [...], "curve": [(step, {name: nrmse}), ...]}``; the
    curve (when ``eval_sets`` and ``eval_every``) starts at step 0 and ends at ``steps``. ``check(what, value, step)``
    (a RunContext's ``check_finite``) marks a diverged run; without it a NaN loss raises FloatingPointError."""
    if steps < 0 or batch < 1 or lr <= 0 or not sets:
        raise ValueError(
            f"train_forecaster needs steps >= 0, batch >= 1, lr > 0 and >= 1 set; got {steps}, {batch}, "
            f"{lr}, {len(sets)}"
        )
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    out: dict[str, list] = {"loss": [], "curve": []}

    def record(step: int) -> None:
        out["curve"].append((step, {s.name: nrmse(model, s, device=device) for s in eval_sets}))

    if eval_sets and eval_every:
        record(0)
    for t in range(steps):
        data = sets[t % len(sets)]
        idx = torch.randint(len(data), (min(batch, len(data)),), generator=generator)
        loss = nmse(model(data.x[idx].to(device)), data.y[idx].to(device)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()
        if check is not None:
            check("forecast NMSE loss", value, t)
        elif not math.isfinite(value):
            raise FloatingPointError(f"forecast NMSE loss is {value} at step {t}")
        out["loss"].append(value)
        if eval_sets and eval_every and ((t + 1) % eval_every == 0 or t + 1 == steps):
            if not out["curve"] or out["curve"][-1][0] != t + 1:
                record(t + 1)
    return out


def steps_to_reach(curve: Sequence[tuple[int, dict[str, float]]], name: str, target: float) -> int | None:
    """The first recorded step whose nRMSE on ``name`` is <= ``target`` (None: never)."""
    for step, values in curve:
        if values[name] <= target:
            return step
    return None
