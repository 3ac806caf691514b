"""Fixed-step ODE integration for transport maps: ``dX/dt = b(X, t)`` from ``t0`` to ``t1``.

Used to push samples through a learned velocity field (stochastic interpolants, flows) and by any
study that needs a cheap deterministic integrator. Forward (t1 > t0) and backward (t1 < t0)
integration share one code path; ``method`` is ``"euler"`` (order 1) or ``"heun"`` (order 2).
"""

from __future__ import annotations

from typing import Callable, Literal

import torch
from torch import Tensor

Velocity = Callable[[Tensor, Tensor], Tensor]


def integrate(
    velocity: Velocity, x: Tensor, t0: float, t1: float, steps: int, method: Literal["euler", "heun"] = "euler"
) -> Tensor:
    """``X(t1)`` for ``X(t0) = x`` under ``dX/dt = velocity(X, t)``, ``steps`` uniform steps.

    ``velocity(x, t)`` receives ``t`` as a tensor of shape ``(n,)`` (one time per sample)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if method not in ("euler", "heun"):
        raise ValueError(f"method must be 'euler' or 'heun', got {method!r}")
    h = (t1 - t0) / steps
    n = x.shape[0]
    for k in range(steps):
        t = torch.full((n,), t0 + k * h, dtype=x.dtype, device=x.device)
        v = velocity(x, t)
        if method == "euler":
            x = x + h * v
        else:
            x_pred = x + h * v
            x = x + 0.5 * h * (v + velocity(x_pred, t + h))
    return x
