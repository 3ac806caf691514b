"""Exact query/key asymmetries of softmax attention, measured on a model (query-key-asymmetry card).

With scores ``s_ij = q_i · k_j`` and a key bias ``b``, ``q_i · (k_j + b) = q_i · k_j + q_i · b``: the
added term is the same for every key j of row i, so softmax over j ignores it. Hence (no positional
rotation of keys) the key bias has no effect and *exactly zero gradient*: ``∂L/∂b = Σ_j ∂L/∂k_j`` and
the score gradient ``dS = A ⊙ (dA − rowsum(A ⊙ dA))`` has zero row sums. RoPE rotates the bias by the
relative position and breaks this; a query bias is never invariant. Separately, scores depend on
(W_Q, W_K) only through ``M = W_Qᵀ W_K``: ``(W_Q, W_K) -> (G W_Q, G⁻ᵀ W_K)`` changes nothing
(a gauge freedom), so statements about W_Q vs W_K alone describe the training path, not the function.

- :func:`bias_gradients`: per layer and head, ``(|∂L/∂b_K|, |∂L/∂b_Q|)`` of a :class:`ToyTransformer`
  built with ``bias=True``.
- :func:`gauge_transform`: apply ``(G W_Q, G⁻ᵀ W_K)`` to one head in place (scores unchanged).
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import torch
from torch import Tensor, nn


def bias_gradients(model: nn.Module, loss_fn: Callable[[nn.Module], Tensor]) -> pd.DataFrame:
    """Gradients of the query and key biases of every head after one backward pass of ``loss_fn(model)``."""
    params = [p for p in model.parameters()]
    for p in params:
        p.grad = None
    loss_fn(model).backward()
    rows = []
    for layer, block in enumerate(model.blocks):
        attn = block.attn
        if attn.b_Q is None or attn.b_K is None:
            raise ValueError("the model needs separate query and key biases (ToyTransformer(bias=True, qk='separate'))")
        for h in range(attn.b_Q.shape[0]):
            rows.append(dict(layer=layer, head=h, key_bias_grad=float(attn.b_K.grad[h].norm()), query_bias_grad=float(attn.b_Q.grad[h].norm())))
    return pd.DataFrame(rows)


@torch.no_grad()
def gauge_transform(attn: nn.Module, head: int, G: Tensor) -> None:
    """``W_Q[h] <- G W_Q[h]``, ``W_K[h] <- G⁻ᵀ W_K[h]`` (and the biases alike): every score is unchanged."""
    G = G.to(attn.W_Q.dtype)
    Ginv_T = torch.linalg.inv(G).T
    attn.W_Q[head] = G @ attn.W_Q[head]
    attn.W_K[head] = Ginv_T @ attn.W_K[head]
    if attn.b_Q is not None:
        attn.b_Q[head] = G @ attn.b_Q[head]
        attn.b_K[head] = Ginv_T @ attn.b_K[head]


def qk_gradients(model: nn.Module, loss_fn: Callable[[nn.Module], Tensor]) -> list[dict[str, Tensor]]:
    """Per layer of a :class:`ToyTransformer`: the queries and keys that meet in the scores (after RoPE),
    the scores, and the gradients of ``loss_fn(model)`` with respect to each: ``{q, k, dq, dk, dS}``
    with q, k ``(B, H, T, r)`` and dS ``(B, H, T, T)`` (the gradient of the pre-mask scores)."""
    saved: list[dict[str, Tensor]] = [dict() for _ in model.blocks]
    handles = []
    for i, block in enumerate(model.blocks):
        for name, point in (("q", block.attn.hook_q), ("k", block.attn.hook_k), ("S", block.attn.hook_scores)):
            def keep(_m, _a, out, i=i, name=name):
                saved[i][name] = out.detach()
                if out.requires_grad:
                    out.register_hook(lambda g, i=i, name=name: saved[i].__setitem__("d" + name, g.detach()))

            handles.append(point.register_forward_hook(keep))
    try:
        for p in model.parameters():
            p.grad = None
        loss_fn(model).backward()
    finally:
        for h in handles:
            h.remove()
    return saved
