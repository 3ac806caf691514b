"""Autoregressive rollouts of an emulator, batched over initial conditions, with an optional corrector.

``rollout(step, x0, n_steps, corrector=...)`` applies ``x <- step(x)`` (then ``x <- corrector(x, t)``
when given, e.g. a thermalizer's denoising) ``n_steps`` times under ``torch.no_grad()``, records every
``record_every``-th state, and stops a trajectory at its first non-finite value (``stop_on="nonfinite"``:
the trajectory is frozen at NaN from then on and its blow-up step logged; the others go on). The
corrector may return ``(x, info)`` with per-trajectory tensors (e.g. predicted noise levels, denoiser
calls), which are logged per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

import torch
from torch import Tensor


@dataclass
class Rollout:
    states: Tensor  # [B, n_records, C, *spatial]: the initial state, then every record_every-th step
    times: Tensor  # [n_records] steps at which states were recorded
    blowup_step: Tensor  # [B]: first step with a non-finite value, -1 when none
    logs: dict[str, Tensor] = field(default_factory=dict)  # name -> [n_steps, B] from the corrector


def rollout(step: Callable[[Tensor], Tensor], x0: Tensor, n_steps: int, *, corrector: Callable[[Tensor, int], Tensor | tuple[Tensor, dict]] | None = None,
            record_every: int = 1, stop_on: Literal["nonfinite", "never"] = "nonfinite") -> Rollout:
    if n_steps < 0 or record_every < 1:
        raise ValueError(f"rollout needs n_steps >= 0 and record_every >= 1; got {n_steps}, {record_every}")
    B = x0.shape[0]
    x = x0.clone()
    records, times = [x.clone()], [0]
    blowup = torch.full((B,), -1, dtype=torch.long)
    logs: dict[str, list[Tensor]] = {}
    with torch.no_grad():
        for t in range(1, n_steps + 1):
            x = step(x)
            if corrector is not None:
                out = corrector(x, t)
                if isinstance(out, tuple):
                    x, info = out
                    for name, value in info.items():
                        logs.setdefault(name, []).append(torch.as_tensor(value).detach().cpu().reshape(B))
                else:
                    x = out
            if stop_on == "nonfinite":
                bad = ~torch.isfinite(x.flatten(1)).all(1).cpu()
                new = bad & (blowup < 0)
                blowup[new] = t
                if bad.any():
                    x = torch.where(bad.to(x.device).view(B, *[1] * (x.ndim - 1)), torch.full_like(x, float("nan")), x)
            if t % record_every == 0:
                records.append(x.clone())
                times.append(t)
    return Rollout(torch.stack(records, 1), torch.tensor(times), blowup, {k: torch.stack(v) for k, v in logs.items()})
