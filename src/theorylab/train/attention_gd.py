"""Full-batch gradient descent on the one-layer attention-only model of Chen, Lin, Xu & Luo (arXiv 2605.01199),
built as a :class:`~theorylab.nn.ToyTransformer`, on S members (seeds) in lockstep.

The card's model: ``e_s = E[x_s]``, ``α_{t,s} = softmax_{s<=t}(e_tᵀ W_Q W_Kᵀ e_s / √d)``, ``o_t = Σ_s α_{t,s} W_Vᵀ e_s``
(``+ e_t`` with a residual stream), ``logits = Uᵀ o_t``; no MLP, norm, bias or W_O; every weight i.i.d. N(0, ε²).
:func:`build_members` draws it as a ToyTransformer (``init="normal"``, ``output_projection=False``).

Training reads the members' weights into stacked tensors in the card's notation (E (S, V, d), W_Q and W_K (S, d, r),
W_V (S, d, d), U (S, d, V)) and runs plain GD on them. For small vocabularies the forward pass is written through the
token tables ``S = E W_Q W_Kᵀ Eᵀ / √d`` and ``M = E W_V U`` (V x V): the same function (checked against the
ToyTransformer's forward and gradients in float64 in the tests), several times cheaper on CPU than per-position
projections, because the (N, T, d) work becomes gathers from a V x V table. Large vocabularies use the embedding
form. Both are batched over members without vmap (vmap of the module was ~3x slower here).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from theorylab.nn import ToyTransformer
from theorylab.nn.token_losses import pad_classes

TABLE_VOCAB = 64  # token-table forward up to this vocabulary; the (N, T, V) mass tensor grows with V beyond it


def build_members(
    vocab_size: int, d_model: int, init_std: float, residual: bool, seeds: list[int]
) -> list[ToyTransformer]:
    """One ToyTransformer per seed: one layer, one head (rank d), causal, no MLP/norm/bias/W_O, N(0, ε²) weights."""
    return [
        ToyTransformer(
            vocab_size=vocab_size,
            d_model=d_model,
            n_heads=1,
            mlp_width=0,
            norm="none",
            residual=residual,
            bias=False,
            causal=True,
            attention_kernel="explicit",
            init="normal",
            init_std=init_std,
            output_projection=False,
            seed=s,
        )
        for s in seeds
    ]


def card_weights(models: list[ToyTransformer]) -> dict[str, Tensor]:
    """The members' weights in the card's notation, stacked on a leading member axis (copies)."""
    attn = [m.blocks[0].attn for m in models]
    return dict(
        E=torch.stack([m.embed.weight.detach() for m in models]),  # (S, V, d)
        Q=torch.stack([a.W_Q[0].detach().T for a in attn]),  # (S, d, r): the card's W_Q; ToyTransformer's q = W_Q e
        K=torch.stack([a.W_K[0].detach().T for a in attn]),  # (S, d, r)
        W=torch.stack([a.W_V[0].detach().T for a in attn]),  # (S, d, d): the card's W_V (o = W_Vᵀ e)
        U=torch.stack([m.readout.weight.detach().T for m in models]),  # (S, d, V)
    )


@torch.no_grad()
def load_member(model: ToyTransformer, weights: dict[str, Tensor], member: int) -> ToyTransformer:
    """Write member ``member`` of stacked card weights back into ``model`` (for hook-based probes)."""
    a = model.blocks[0].attn
    model.embed.weight.copy_(weights["E"][member])
    a.W_Q[0].copy_(weights["Q"][member].T)
    a.W_K[0].copy_(weights["K"][member].T)
    a.W_V[0].copy_(weights["W"][member].T)
    model.readout.weight.copy_(weights["U"][member].T)
    return model


def causal_bias(length: int, dtype: torch.dtype, device) -> Tensor:
    """0 on and below the diagonal, -inf above: (T, T)."""
    return torch.zeros(length, length, dtype=dtype, device=device).masked_fill(
        torch.ones(length, length, dtype=torch.bool, device=device).triu(1), float("-inf")
    )


def forward(w: dict[str, Tensor], x: Tensor, residual: bool, *, table: bool | None = None) -> tuple[Tensor, Tensor]:
    """Logits (S, N, T, V) and attention pattern (S, N, T, T) of every member on its own tokens ``x`` (S, N, T)."""
    S, N, T = x.shape
    E, Q, K, W, U = w["E"], w["Q"], w["K"], w["W"], w["U"]
    V = E.shape[1]
    scale = 1.0 / math.sqrt(Q.shape[-1])  # the ToyTransformer's 1/sqrt(head_rank) = the card's 1/sqrt(d)
    neg = causal_bias(T, E.dtype, E.device)
    flat = x + V * torch.arange(S, device=x.device)[:, None, None]  # member s's token v -> row s*V + v
    if table is None:
        table = V <= TABLE_VOCAB
    if table:
        scores_vv = scale * (E @ Q) @ (E @ K).transpose(-1, -2)  # (S, V, V): query token i, key token j
        pair = flat[:, :, :, None] * V + x[:, :, None, :]  # (S, N, T, T): entry (query x_t, key x_s) of the table
        a = (scores_vv.reshape(-1).index_select(0, pair.reshape(-1)).reshape(S, N, T, T) + neg).softmax(-1)
        idx = x[:, :, None, :].expand(S, N, T, T)
        mass = torch.zeros(S, N, T, V, dtype=E.dtype, device=E.device).scatter_add(-1, idx, a)  # per token id
        logits = (mass.reshape(S, N * T, V) @ (E @ W @ U)).reshape(S, N, T, V)  # M = E W_V U: (S, V, V)
        if residual:
            logits = logits + (E @ U).reshape(S * V, V)[flat]
        return logits, a
    e = E.reshape(S * V, -1)[flat]  # (S, N, T, d)
    q, k, v = e @ Q[:, None], e @ K[:, None], e @ W[:, None]  # (S, N, T, r), (S, N, T, r), (S, N, T, d)
    a = (scale * q @ k.transpose(-1, -2) + neg).softmax(-1)  # (S, N, T, T)
    o = a @ v + (e if residual else 0)
    return o @ U[:, None], a


def member_losses(logits: Tensor, y: Tensor) -> Tensor:
    """Mean next-token cross-entropy per member: (S,). The card's V = 10 classes are padded to 16 where that is
    several times faster (:func:`theorylab.nn.token_losses.pad_classes`)."""
    S = logits.shape[0]
    padded = pad_classes(logits)
    losses = F.cross_entropy(padded.reshape(-1, padded.shape[-1]), y.reshape(-1), reduction="none")
    return losses.reshape(S, -1).mean(-1)


def train_gd(
    w: dict[str, Tensor],
    x: Tensor,
    y: Tensor,
    *,
    lr: float,
    steps: int,
    evaluate_every: int,
    residual: bool,
    log: Callable[[int, dict[str, Tensor], Tensor, Tensor], None],
    progress: Callable = iter,
) -> dict[str, Tensor]:
    """Full-batch GD ``w <- w - lr ∇L`` for every member at once (the summed loss has each member's own gradient).

    ``log(step, weights, losses (S,), pattern (S, N, T, T))`` is called at step 0, every ``evaluate_every`` steps
    and at ``steps``, with the weights *before* that step's update (so the step-0 entry is the initialisation).
    """
    params = {k: t.detach().clone().requires_grad_(True) for k, t in w.items()}
    names = list(params)
    for step in progress(range(steps + 1)):
        logits, a = forward(params, x, residual)
        losses = member_losses(logits, y)
        if step % evaluate_every == 0 or step == steps:
            log(step, {k: p.detach() for k, p in params.items()}, losses.detach(), a.detach())
        if step == steps:
            break
        grads = torch.autograd.grad(losses.sum(), [params[k] for k in names])
        with torch.no_grad():
            for k, g in zip(names, grads):
                params[k] -= lr * g
    return {k: p.detach() for k, p in params.items()}
