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
- :func:`bias_effect`, :func:`key_gradient_sums`, :func:`causal_key_support`, :func:`gauge_rank_changes`:
  the four identities measured on a model, as rows of a table (the query-key-asymmetry study's checks),
  with :func:`next_token_losses` as the loss and :func:`random_gauge` as G.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Sequence

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.probes.bilinear_operators import head_operators
from theorylab.probes.spectra import stable_rank
from theorylab.theory.bilinear import balanced_factorization


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
            rows.append(
                dict(
                    layer=layer,
                    head=h,
                    key_bias_grad=float(attn.b_K.grad[h].norm()),
                    query_bias_grad=float(attn.b_Q.grad[h].norm()),
                )
            )
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


def next_token_losses(model: nn.Module, tokens: Tensor) -> Tensor:
    """The cross-entropy at every position ``(B, T)`` of predicting ``tokens[:, 1:]`` from ``tokens[:, :-1]``."""
    logits = model(tokens[:, :-1])
    return F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")


@torch.no_grad()
def bias_effect(model: nn.Module, tokens: Tensor, side: str, norm: float, generator: torch.Generator) -> float:
    """Relative change ``‖f'(x) − f(x)‖/‖f(x)‖`` of the output logits when every head of every layer gets a
    random ``side`` (``"key"`` or ``"query"``) bias of norm ``norm`` (Gaussian direction from ``generator``,
    drawn in the bias's dtype); the biases are restored afterwards. 0 up to rounding for a key bias
    without RoPE (softmax over keys ignores the row constant q_i·b)."""
    base = model(tokens)
    saved = []
    for block in model.blocks:
        b = block.attn.b_K if side == "key" else block.attn.b_Q
        saved.append((b, b.clone()))
        noise = torch.randn(b.shape, generator=generator, dtype=b.dtype)
        b.add_(norm * noise / noise.norm(dim=-1, keepdim=True))
    try:
        return float((model(tokens) - base).norm() / base.norm())
    finally:
        for b, old in saved:
            b.copy_(old)


def key_gradient_sums(model: nn.Module, tokens: Tensor) -> list[dict]:
    """Per layer, sequence and head after one backward pass of the mean next-token loss: ``key_ratio`` =
    ‖Σ_j ∂L/∂k_j‖ / Σ_j ‖∂L/∂k_j‖ (0 in exact arithmetic: dS has zero row sums) and ``query_ratio``
    alike (not 0); ``dS_row_sum``, the largest |Σ_j dS_ij| relative to the largest Σ_j |dS_ij|; their
    float tolerances and the bias gradient norms ``key_bias_grad``, ``query_bias_grad``.

    Σ_j ∂L/∂k_j = scale·Σ_ij dS_ij q_i is a sum of T² terms that cancels exactly; its rounding is at most
    (2T)ε·Σ_ij |dS_ij|‖q_i‖·scale (two nested T-term sums), so relative to Σ_j ‖∂L/∂k_j‖ the tolerance
    ``key_tolerance = 2Tε·κ`` carries the condition number κ = Σ_ij |dS_ij|‖q_i‖ / Σ_j ‖Σ_i dS_ij q_i‖
    (Higham, ch. 4); ``row_sum_tolerance = 2Tε``. The model needs key and query biases."""
    saved = qk_gradients(model, lambda m: next_token_losses(m, tokens).mean())
    rows = []
    for layer, (block, rec) in enumerate(zip(model.blocks, saved)):
        bk, bq = block.attn.b_K.grad, block.attn.b_Q.grad
        dk, dq, dS, q = rec["dk"], rec["dq"], rec["dS"], rec["q"]
        k_ratio = dk.sum(2).norm(dim=-1) / dk.norm(dim=-1).sum(2)  # (B, H): ‖Σ_j ∂L/∂k_j‖ / Σ_j ‖∂L/∂k_j‖
        q_ratio = dq.sum(2).norm(dim=-1) / dq.norm(dim=-1).sum(2)
        row_sums = float(dS.sum(-1).abs().max() / dS.abs().sum(-1).max())  # relative to the largest Σ_j |dS_ij|
        terms = (dS.abs() * q.norm(dim=-1)[..., :, None]).sum((-1, -2))  # (B, H)
        kappa = terms / torch.einsum("bhij,bhir->bhjr", dS, q).norm(dim=-1).sum(-1)
        eps = torch.finfo(dS.dtype).eps
        T = dS.shape[-1]
        for b, h in itertools.product(range(k_ratio.shape[0]), range(k_ratio.shape[1])):
            rows.append(
                dict(
                    layer=layer,
                    batch=b,
                    head=h,
                    key_ratio=float(k_ratio[b, h]),
                    query_ratio=float(q_ratio[b, h]),
                    dS_row_sum=row_sums,
                    key_tolerance=2 * T * eps * float(kappa[b, h]),
                    row_sum_tolerance=2 * T * eps,
                    key_bias_grad=float(bk[h].norm()),
                    query_bias_grad=float(bq[h].norm()),
                )
            )
    return rows


def causal_key_support(model: nn.Module, tokens: Tensor, positions: Sequence[int]) -> list[dict]:
    """In a causal model, ∂L/∂k_j (summed next-token loss) comes only from the losses at positions >= j.
    Per j in ``positions`` and layer: ``full_norm`` = ‖∂L/∂k_j‖, ``before_norm`` = ‖∂L_{<j}/∂k_j‖ /
    full_norm (0) and ``after_gap`` = ‖∂L_{>=j}/∂k_j − ∂L/∂k_j‖ / full_norm (0)."""
    full = qk_gradients(model, lambda m: next_token_losses(m, tokens).sum())
    rows = []
    for j in positions:
        before = qk_gradients(model, lambda m, j=j: next_token_losses(m, tokens)[:, :j].sum())
        after = qk_gradients(model, lambda m, j=j: next_token_losses(m, tokens)[:, j:].sum())
        for layer in range(len(model.blocks)):
            scale = float(full[layer]["dk"][:, :, j].norm())
            dk = full[layer]["dk"][:, :, j]
            rows.append(
                dict(
                    j=j,
                    layer=layer,
                    full_norm=scale,
                    before_norm=float(before[layer]["dk"][:, :, j].norm()) / scale,
                    after_gap=float((after[layer]["dk"][:, :, j] - dk).norm()) / scale,
                )
            )
    return rows


def random_gauge(r: int, condition: float, generator: torch.Generator) -> Tensor:
    """A random ``r x r`` float64 matrix U diag(s) Vᵀ (U, V Haar-like from QR of Gaussians) with singular
    values log-uniform in [1, condition] and exactly ``condition`` as its condition number."""
    U, _ = torch.linalg.qr(torch.randn(r, r, generator=generator, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(r, r, generator=generator, dtype=torch.float64))
    s = torch.exp(torch.rand(r, generator=generator, dtype=torch.float64) * math.log(condition))
    s[0], s[-1] = 1.0, condition  # exactly this condition number
    return U @ torch.diag(s) @ V.T


def gauge_rank_changes(
    model: nn.Module, exact: nn.Module, tokens: Tensor, condition: float, generator: torch.Generator
) -> list[dict]:
    """Apply the same :func:`random_gauge` per head (drawn layer by layer, head by head) to ``model`` and to
    ``exact`` (its float64 copy): the logits of ``model`` (``logit_change``, relative: 0 up to rounding)
    and, on ``exact``, the relative moves of the stable ranks of W_Q and W_K (``q_rank_change``,
    ``k_rank_change``: large) and of the balanced factor of M = W_Qᵀ W_K (``balanced_rank_change``: 0).
    Float64 for the ranks: float32 rounding of the transformed weights alone moves a stable rank by ~1e-7."""
    heads = exact.blocks[0].attn.W_Q.shape[0]
    ops_before = head_operators(exact)
    before = [(a.W_Q.detach().clone(), a.W_K.detach().clone()) for a in (b.attn for b in exact.blocks)]
    with torch.no_grad():
        base = model(tokens)
        for block, block64 in zip(model.blocks, exact.blocks):
            for h in range(heads):
                G = random_gauge(block.attn.W_Q.shape[1], condition, generator)
                gauge_transform(block.attn, h, G)
                gauge_transform(block64.attn, h, G)
        change = float((model(tokens) - base).norm() / base.norm())
    ops_after = head_operators(exact)
    rows = []
    for layer, block in enumerate(exact.blocks):
        for h in range(heads):
            wq0, wk0 = before[layer][0][h], before[layer][1][h]
            wq1, wk1 = block.attn.W_Q[h].detach(), block.attn.W_K[h].detach()
            r = wq0.shape[0]
            bq0, _ = balanced_factorization(ops_before[layer * heads + h].M, r)
            bq1, _ = balanced_factorization(ops_after[layer * heads + h].M, r)
            rows.append(
                dict(
                    layer=layer,
                    head=h,
                    logit_change=change,
                    q_rank_change=abs(float(stable_rank(wq1) / stable_rank(wq0)) - 1),
                    k_rank_change=abs(float(stable_rank(wk1) / stable_rank(wk0)) - 1),
                    balanced_rank_change=abs(float(stable_rank(bq1) / stable_rank(bq0)) - 1),
                )
            )
    return rows
