"""The in-context linear-regression transformer of Dherin et al. (arXiv 2507.16003, Sec. 4).

Tokens are ``[x, y]`` of width ``dim + 1`` (no embedding); the model is a stack of vanilla blocks
(single-head attention, then ``W2 act(W1 · + b1) + b2``) without layer norm, and reads its prediction
of the query's label from the last coordinate of the query's output. Dherin et al. use one block.
"""

from __future__ import annotations

from theorylab.core.rng import seeded
from theorylab.nn.blocks import BlockStack, VanillaBlock


def in_context_regression_stack(
    dim: int, depth: int = 1, hidden_mult: int = 4, g_std: float = 0.1, *, seed: int
) -> BlockStack:
    """``depth`` vanilla blocks of width ``d = dim + 1``, MLP width ``hidden_mult · d``, one head, no layer
    norm, float64 weights drawn under ``seed`` (``g_std``: std of the norm-scale offsets and biases)."""
    if dim < 1 or depth < 1 or hidden_mult < 1:
        raise ValueError(f"need dim, depth, hidden_mult >= 1; got {dim}, {depth}, {hidden_mult}")
    d = dim + 1
    with seeded(seed):
        blocks = [VanillaBlock(d, hidden_mult * d, n_heads=1, g_std=g_std, layer_norm=False) for _ in range(depth)]
    return BlockStack(blocks)
