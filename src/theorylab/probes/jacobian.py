"""Local gain of a token-wise map by projected gradient ascent (Emadi, arXiv 2602.18849).

``local_gain(f, X)`` estimates ``max_Δ N(f(X + Δ) − f(X)) / N(Δ)`` at a small radius ``‖Δ‖ = eps``:
a lower estimate of the local Lipschitz constant, to be compared with an upper bound. The default
geometry is the block-∞/RMS norm ``N(Y) = max_t ‖y_t‖₂/√d`` (the largest token RMS), in which the
paper's attention bounds do not depend on the sequence length T. Its unit ball is a product of
per-token balls, so the maximiser sits where every token is at full radius: the projection puts
each token of Δ on its sphere. Restarts run as one batch.

:func:`attention_gain_vs_length` puts the measurement beside the paper's first-order bound (no T in
it) and a T-dependent control, for one attention layer at several sequence lengths.
"""

from __future__ import annotations

import math
from typing import Callable, Literal

import pandas as pd
import torch
from torch import Tensor, nn

from theorylab.theory.softmax import attention_gain_bound, theta_upper

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


def local_gain(
    f: Callable[[Tensor], Tensor],
    X: Tensor,
    *,
    eps: float = 1e-4,
    restarts: int = 5,
    steps: int = 50,
    out_norm: Norm = "block_inf_rms",
    generator: torch.Generator | None = None,
) -> tuple[float, Tensor]:
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


def attention_pattern(attn: nn.Module, X: Tensor) -> Tensor:
    """The attention pattern ``(H, T, T)`` of a :class:`~theorylab.nn.toy_transformer.MultiHeadAttention`
    on one sequence ``X: (T, d)``, read at its ``hook_pattern``."""
    pattern = {}
    handle = attn.hook_pattern.register_forward_hook(lambda m, a, out: pattern.__setitem__("p", out))
    try:
        attn(X[None])
    finally:
        handle.remove()
    return pattern["p"][0]


def attention_gain_vs_length(
    attn: nn.Module,
    lengths,
    *,
    eps: float,
    restarts: int,
    steps: int,
    control_restarts: int,
    generator: torch.Generator,
    progress: Callable | None = None,
) -> pd.DataFrame:
    """Local gain of a multi-head attention layer against the sequence length T (Emadi, arXiv 2602.18849).

    For each T: X with T random tokens at RMS 1 (float64, drawn from ``generator``); the
    block-∞/RMS gain (:func:`local_gain`, ``restarts`` restarts), the first-order bound
    :func:`~theorylab.theory.softmax.attention_gain_bound` with per-head value-output maps
    W_h = W_O,h W_V,h, score operators M_h = scale·W_Q,hᵀ W_K,h, R = √d and θ_max,h bounded by
    :func:`~theorylab.theory.softmax.theta_upper` over the rows of X's pattern, and the control gain
    with the output in ℓ2 over the whole sequence (``control_restarts``), which grows like √T.
    Columns ``T, gain, bound, gain_sequence_l2, theta_max_bound, value_norm_sum, score_norm_max``.
    """
    value_norms = torch.linalg.matrix_norm(attn.W_O @ attn.W_V, ord=2)
    score_norms = torch.linalg.matrix_norm(attn.cfg.scale * attn.W_Q.transpose(1, 2) @ attn.W_K, ord=2)
    d = attn.W_Q.shape[-1]
    rows = []
    for T in lengths if progress is None else progress(lengths, "local gain vs T"):
        X = torch.randn(T, d, dtype=torch.float64, generator=generator)
        X = X / X.pow(2).mean(-1, keepdim=True).sqrt()  # every token at RMS 1
        with torch.no_grad():
            pattern = attention_pattern(attn, X)
        theta_max = theta_upper(pattern).amax((-1, -2))  # per head, over rows
        bound = float(attention_gain_bound(value_norms, score_norms, math.sqrt(d), theta_max))
        g_block, _ = local_gain(attn, X, eps=eps, restarts=restarts, steps=steps, generator=generator)
        g_seq, _ = local_gain(
            attn, X, eps=eps, restarts=control_restarts, steps=steps, out_norm="sequence_rms", generator=generator
        )
        rows.append(
            dict(
                T=T,
                gain=g_block,
                bound=bound,
                gain_sequence_l2=g_seq,
                theta_max_bound=float(theta_max.max()),
                value_norm_sum=float(value_norms.sum()),
                score_norm_max=float(score_norms.max()),
            )
        )
    return pd.DataFrame(rows)
