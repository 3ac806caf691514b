"""Local gain of a token-wise map by projected gradient ascent (Emadi, arXiv 2602.18849).

``local_gain(f, X)`` estimates ``max_Δ N(f(X + Δ) − f(X)) / N(Δ)`` at a small radius ``‖Δ‖ = eps``:
a lower estimate of the local Lipschitz constant, to be compared with an upper bound. The default
geometry is the block-∞/RMS norm ``N(Y) = max_t ‖y_t‖₂/√d`` (the largest token RMS), in which the
paper's attention bounds do not depend on the sequence length T. Its unit ball is a product of
per-token balls, so the maximiser sits where every token is at full radius: the projection puts
each token of Δ on its sphere. Restarts run as one batch.
"""

from __future__ import annotations

import math
from typing import Callable, Literal

import torch
from torch import Tensor

Norm = Literal["block_inf_rms", "sequence_rms"]


def token_norm(Y: Tensor, kind: Norm) -> Tensor:
    """``block_inf_rms``: ``max_t ‖y_t‖/√d``; ``sequence_rms``: ``‖Y‖_F/√d`` (ℓ2 over the whole
    sequence, which grows like √T for a per-token change of fixed size). ``Y``: ``(..., T, d)`` -> ``(...)``."""
    d = Y.shape[-1]
    if kind == "block_inf_rms":
        return Y.norm(dim=-1).amax(-1) / math.sqrt(d)
    if kind == "sequence_rms":
        return Y.flatten(-2).norm(dim=-1) / math.sqrt(d)
    raise ValueError(f"norm must be 'block_inf_rms' or 'sequence_rms', got {kind!r}")


def _project(delta: Tensor, radius: float) -> Tensor:
    """Every token of ``delta`` onto the sphere of RMS ``radius`` (the block-∞ ball's extreme points)."""
    d = delta.shape[-1]
    return delta * (radius * math.sqrt(d) / delta.norm(dim=-1, keepdim=True).clamp_min(1e-300))


def local_gain(f: Callable[[Tensor], Tensor], X: Tensor, *, eps: float = 1e-4, restarts: int = 5, steps: int = 50, out_norm: Norm = "block_inf_rms",
               generator: torch.Generator | None = None) -> tuple[float, Tensor]:
    """``(best gain, gain per restart)`` for ``f: (R, T, d) -> (R, T, d')`` at ``X: (T, d)``.

    Input perturbations live in the block-∞/RMS ball of radius ``eps``; the output is measured with
    ``out_norm`` (the same norm, or ``sequence_rms`` as a T-dependent control). Each step moves every
    token of Δ along its own normalised gradient (steepest ascent for this norm) and projects back.
    """
    if eps <= 0 or restarts < 1 or steps < 0:
        raise ValueError(f"local_gain needs eps > 0, restarts >= 1, steps >= 0; got {eps}, {restarts}, {steps}")
    Xb = X.detach()[None].expand(restarts, *X.shape)
    with torch.no_grad():
        base = f(Xb)
    delta = _project(torch.randn(Xb.shape, dtype=X.dtype, device=X.device, generator=generator), eps)
    best = torch.zeros(restarts, dtype=X.dtype, device=X.device)
    for _ in range(steps + 1):
        delta = delta.detach().requires_grad_(True)
        gain = token_norm(f(Xb + delta) - base, out_norm) / eps
        best = torch.maximum(best, gain.detach())
        (grad,) = torch.autograd.grad(gain.sum(), delta)
        # steepest ascent in the block-∞ geometry: every token towards its own gradient direction at
        # full radius (a power-iteration step for a linear map), plus the current Δ as momentum
        delta = _project(delta.detach() + 2 * _project(grad, eps), eps)
    return float(best.max()), best
