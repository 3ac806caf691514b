"""Statistics of attention patterns read through a model's hook points.

Patterns are ``(B, H, T_q, T_k)`` tensors of attention weights (rows sum to one), as the
``hook_pattern`` points of :class:`~theorylab.nn.ToyTransformer` give them.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor, nn


def attention_entropy(pattern: Tensor) -> Tensor:
    """Mean entropy (nats) of each head's attention rows: (H,). 0 for one-hot rows, log T_k for uniform."""
    p = pattern.clamp_min(0)
    plogp = torch.where(p > 0, p * p.log(), torch.zeros_like(p))
    return -plogp.sum(-1).mean(dim=(0, 2))


def argmax_hit_rate(pattern: Tensor, index: Tensor) -> Tensor:
    """Per head, the fraction of queries whose top-weighted key is ``index``: (H,).

    ``index``: (B, T_q) the key each query should attend to (e.g. the farthest point).
    """
    top = pattern.argmax(dim=-1)  # (B, H, T_q)
    return (top == index[:, None, :]).to(torch.float64).mean(dim=(0, 2))


@torch.no_grad()
def attention_patterns(model: nn.Module, x: Tensor) -> dict[int, Tensor]:
    """Every layer's pattern for input ``x``: ``{layer: (B, H, T, T)}`` (through ``run_with_cache``)."""
    _, cache = model.run_with_cache(x, names=lambda name: name.endswith("attn.hook_pattern"))
    return {int(name.split(".")[1]): t for name, t in cache.items()}


def row_theta(pattern: Tensor, min_keys: int = 16, exact_up_to: int = 20) -> pd.DataFrame:
    """θ(p) of every attention row with at least ``min_keys`` non-zero keys, per (batch, head, row).

    θ(p) = max_S 4 p(S)(1 − p(S)) is the softmax Jacobian's ∞→1 norm times the temperature
    (:mod:`theorylab.theory.softmax`). Rows with at most ``exact_up_to`` keys are solved exactly;
    longer rows get the subset-sum DP's attained value (a lower bound) and its rigorous upper bound,
    and the vectorised greedy lower bound. Columns: ``batch, head, row, keys, theta_lo, theta_hi,
    greedy, exact`` (``theta_lo == theta_hi`` where exact). Causal rows with few keys are trivially
    unbalanced (the first row is one-hot), hence ``min_keys``.
    """
    from theorylab.theory.softmax import theta_dp, theta_exact, theta_greedy

    P = pattern.detach().to(torch.float64)
    greedy = theta_greedy(P)
    keys = (P > 0).sum(-1)
    rows = []
    for b, h, r in torch.nonzero(keys >= min_keys).tolist():
        p = P[b, h, r]
        p = p[p > 0].numpy()
        if len(p) <= exact_up_to:
            lo = hi = theta_exact(p)
        else:
            lo, hi = theta_dp(p)
        rows.append(
            dict(
                batch=b,
                head=h,
                row=r,
                keys=len(p),
                theta_lo=lo,
                theta_hi=hi,
                greedy=float(greedy[b, h, r]),
                exact=len(p) <= exact_up_to,
            )
        )
    return pd.DataFrame(rows, columns=["batch", "head", "row", "keys", "theta_lo", "theta_hi", "greedy", "exact"])


def head_theta_summary(model: nn.Module, batch: Tensor, min_keys: int = 16) -> pd.DataFrame:
    """Per (layer, head) of a Hugging Face model (``output_attentions=True``): the mean and 10th percentile
    of the greedy lower bound on θ(p) (:func:`~theorylab.theory.softmax.theta_greedy`, float64) over the
    attention rows with at least ``min_keys`` non-zero keys, and how many rows that is. Emadi (arXiv
    2602.18849) reports θ ≈ 1 throughout training. Columns ``layer, head, mean, p10, rows``."""
    from theorylab.theory.softmax import theta_greedy

    with torch.no_grad():
        attentions = model(batch, output_attentions=True).attentions
    rows = []
    for layer, a in enumerate(attentions):
        a = a.double()
        keys = (a > 0).sum(-1)  # (B, H, T)
        th = theta_greedy(a)
        use = keys >= min_keys
        for h in range(a.shape[1]):
            vals = th[:, h][use[:, h]]
            rows.append(
                dict(
                    layer=layer, head=h, mean=float(vals.mean()), p10=float(vals.quantile(0.1)), rows=int(vals.numel())
                )
            )
    return pd.DataFrame(rows)


def checkpoint_theta(
    path: str,
    text: str,
    min_keys: int,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
    max_chars: int = 200_000,
    max_context: int = 256,
) -> pd.DataFrame:
    """:func:`head_theta_summary` of a local Hugging Face causal-LM checkpoint (never downloaded; eager
    attention) on 8 random windows of its own tokenisation of ``text[:max_chars]``, of length
    min(``max_context``, the model's positions)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from theorylab.data.text import random_windows

    local = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, attn_implementation="eager")
    local = local.to(device).eval()
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    ids = tok(text[:max_chars], return_tensors="pt").input_ids[0]
    batch = random_windows(ids, 8, min(max_context, local.config.n_positions), generator).to(device)
    return head_theta_summary(local, batch, min_keys)
