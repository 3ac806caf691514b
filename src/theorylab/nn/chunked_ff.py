"""A cache-friendly feed-forward block: token chunks forward, and a backward that recomputes each chunk's hidden.

Why: in a small transformer the FF hidden activation (tokens x width floats: 4096 x 2048 = 32 MB at the attention-rank
paper's Fig. 1 point) is written and read several times per training step, so the step is bound by memory traffic,
not by its matrix products. Here the block ``W_2 act(W_1 x + b_1) + b_2`` runs over chunks of ``chunk`` tokens: the
forward keeps only the input, and the backward recomputes one chunk's pre-activation at a time, so the wide hidden
never leaves cache. Gradients equal the plain block's to fp32 rounding (``tests/nn/test_chunked_ff.py``); the
speed-up is measured by ``benchmarks/chunked_ff.py`` (one process, both paths).

The function is written for ``torch.func`` (``generate_vmap_rule``): the stacked trainer's ``vmap(functional_call)``
over seeds runs it as it runs the plain block.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

ACTIVATIONS = ("relu", "gelu")


def _act(pre: Tensor, activation: str) -> Tensor:
    return torch.relu(pre) if activation == "relu" else F.gelu(pre)


def _act_grad(grad_h: Tensor, pre: Tensor, activation: str) -> Tensor:
    if activation == "relu":
        return grad_h * (pre > 0)
    return torch.ops.aten.gelu_backward(grad_h, pre)  # exact erf GELU, the one nn.GELU() computes


def _linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    y = x @ weight.mT
    return y if bias is None else y + bias


class _ChunkedFF(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, w1, b1, w2, b2, activation: str, chunk: int):  # x (..., N, d); w1 (m, d); w2 (d_out, m)
        outs = [
            _linear(_act(_linear(x[..., s : s + chunk, :], w1, b1), activation), w2, b2)
            for s in range(0, x.shape[-2], chunk)
        ]
        return torch.cat(outs, -2)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w1, b1, w2, b2, activation, chunk = inputs
        ctx.save_for_backward(x, w1, b1, w2)
        ctx.activation, ctx.chunk, ctx.has_b2 = activation, chunk, b2 is not None

    @staticmethod
    def backward(ctx, grad_out):
        x, w1, b1, w2 = ctx.saved_tensors
        c, activation = ctx.chunk, ctx.activation
        grad_x, grad_w1, grad_b1, grad_w2 = [], None, None, None
        for s in range(0, x.shape[-2], c):
            xc, gc = x[..., s : s + c, :], grad_out[..., s : s + c, :]
            pre = _linear(xc, w1, b1)  # (..., c, m): recomputed, never stored for the whole sequence
            gw2 = gc.mT @ _act(pre, activation)
            gh = _act_grad(gc @ w2, pre, activation)
            gw1, gb1 = gh.mT @ xc, gh.sum(-2)
            grad_w2 = gw2 if grad_w2 is None else grad_w2 + gw2
            grad_w1 = gw1 if grad_w1 is None else grad_w1 + gw1
            grad_b1 = gb1 if grad_b1 is None else grad_b1 + gb1
            grad_x.append(gh @ w1)
        grad_b2 = grad_out.sum(-2) if ctx.has_b2 else None
        return torch.cat(grad_x, -2), grad_w1, grad_b1 if b1 is not None else None, grad_w2, grad_b2, None, None


def chunked_ff(
    x: Tensor,
    w1: Tensor,
    b1: Tensor | None,
    w2: Tensor,
    b2: Tensor | None,
    activation: str = "relu",
    chunk: int = 256,
) -> Tensor:
    """``W_2 act(W_1 x + b_1) + b_2`` over token chunks of ``chunk`` (x: (..., N, d), tokens on the second-to-last
    axis; w1 (m, d), w2 (d_out, m) as ``nn.Linear`` stores them); ``activation`` 'relu' or 'gelu' (exact erf)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if x.dim() < 2:
        raise ValueError(f"x must have a token axis and a feature axis, got shape {tuple(x.shape)}")
    return _ChunkedFF.apply(x, w1, b1, w2, b2, activation, chunk)
