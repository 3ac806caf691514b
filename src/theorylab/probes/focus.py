"""Focus and dilution of attention on frequent tokens (Chen, Lin, Xu & Luo, "Focus and Dilution: The Multi-stage
Learning Process of Attention", arXiv 2605.01199).

- :func:`focus_ratio` F: attention mass on a token set (the most frequent tokens), divided by the set's share of the
  prefix; uniform causal attention gives F = 1 exactly. (The card's definition, reconstructed from the abstract.)
- :func:`token_mass`: each token id's attention mass (the heat map of focus over training).
- :func:`late_entropy`: attention entropy over query positions t >= ``min_position`` (early rows have few keys).
- :func:`singular_ratio`, :func:`count_above` and :func:`~theorylab.probes.spectra.stable_rank`: the condensation of
  the embedding and readout to rank one.
- :func:`key_scores` and :func:`key_frequency_spearman`: does a token's key score follow its frequency?

Patterns are ``(B, H, T, T)`` causal attention weights (rows sum to one over keys s <= t), tokens ``(B, T)`` ids.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from theorylab.probes.attention_stats import attention_entropy
from theorylab.probes.spectra import stable_rank

__all__ = [
    "count_above",
    "focus_ratio",
    "key_frequency_spearman",
    "key_scores",
    "late_entropy",
    "singular_ratio",
    "stable_rank",
    "token_mass",
    "top_tokens",
]


def _check(pattern: Tensor, tokens: Tensor, min_position: int) -> None:
    if (
        pattern.ndim != 4
        or tokens.ndim != 2
        or pattern.shape[0] != tokens.shape[0]
        or pattern.shape[-1] != tokens.shape[1]
        or pattern.shape[-2] != tokens.shape[1]
    ):
        raise ValueError(
            f"pattern must be (B, H, T, T) and tokens (B, T) with matching B and T; got "
            f"{tuple(pattern.shape)} and {tuple(tokens.shape)}"
        )
    if not 0 <= min_position < tokens.shape[1]:
        raise ValueError(f"min_position must lie in [0, T - 1] = [0, {tokens.shape[1] - 1}]; got {min_position}")


def top_tokens(pi, fraction: float = 0.25) -> np.ndarray:
    """The ``max(1, floor(fraction * V))`` most frequent token ids under ``pi`` (ties: the lower id first)."""
    p = np.asarray(pi, dtype=np.float64)
    k = max(1, int(fraction * len(p)))
    return np.argsort(-p, kind="stable")[:k]


def focus_ratio(pattern: Tensor, tokens: Tensor, top, min_position: int = 4) -> Tensor:
    """F per head: (H,).

    ``F = mean_{b, t >= t0} Σ_{s<=t} α_{t,s} 1[x_s ∈ Top]  /  mean_{b, t >= t0} (1/(t+1)) Σ_{s<=t} 1[x_s ∈ Top]``.
    """
    _check(pattern, tokens, min_position)
    member = torch.zeros(int(tokens.max()) + 1, dtype=torch.bool, device=tokens.device)
    top_t = torch.as_tensor(np.asarray(top), dtype=torch.long, device=tokens.device)
    member[top_t[top_t < len(member)]] = True
    m = member[tokens].to(pattern.dtype)  # (B, T)
    mass = (pattern[:, :, min_position:, :] * m[:, None, None, :]).sum(-1)  # (B, H, T - t0)
    t = torch.arange(tokens.shape[1], device=tokens.device, dtype=pattern.dtype)
    share = (m.cumsum(-1) / (t + 1))[:, min_position:]  # (B, T - t0): Top's share of the prefix s <= t
    return mass.mean(dim=(0, 2)) / share.mean()


def token_mass(pattern: Tensor, tokens: Tensor, vocab: int, min_position: int = 4) -> Tensor:
    """Mean attention mass on each token id over sequences and query positions t >= ``min_position``: (H, V)."""
    _check(pattern, tokens, min_position)
    B, H, T, _ = pattern.shape
    rows = pattern[:, :, min_position:, :]  # (B, H, T', T)
    idx = tokens[:, None, None, :].expand(B, H, T - min_position, T)
    per_token = torch.zeros(B, H, T - min_position, vocab, dtype=pattern.dtype, device=pattern.device)
    per_token.scatter_add_(-1, idx, rows)  # (B, H, T', V)
    return per_token.mean(dim=(0, 2))


def late_entropy(pattern: Tensor, min_position: int = 4) -> Tensor:
    """Mean attention entropy (nats) of rows t >= ``min_position``, per head: (H,)."""
    if not 0 <= min_position < pattern.shape[-2]:
        raise ValueError(f"min_position must lie in [0, {pattern.shape[-2] - 1}]; got {min_position}")
    return attention_entropy(pattern[:, :, min_position:, :])


def singular_ratio(W: Tensor) -> Tensor:
    """``σ₂ / σ₁`` (0 for a rank-one matrix); batched over leading axes."""
    s = torch.linalg.svdvals(W.double())
    return s[..., 1] / s[..., 0]


def count_above(W: Tensor, fraction: float = 0.3) -> Tensor:
    """How many singular values exceed ``fraction * σ₁``: the number of open directions; batched."""
    s = torch.linalg.svdvals(W.double())
    return (s > fraction * s[..., :1]).sum(-1)


def key_scores(scores: Tensor, pi) -> Tensor:
    """Per key token j, its score averaged over query tokens drawn from ``pi``: ``Σ_i π_i S_ij``: (V,).

    ``scores``: the (V, V) token-level score table ``S_ij = e_iᵀ W_Q W_Kᵀ e_j / √d`` (query i, key j). A row's
    softmax ignores a constant added to the row, so only differences between keys matter.
    """
    p = torch.as_tensor(np.asarray(pi), dtype=scores.dtype, device=scores.device)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1] or len(p) != scores.shape[0]:
        raise ValueError(f"scores must be (V, V) and pi (V,); got {tuple(scores.shape)} and {tuple(p.shape)}")
    return p @ scores


def key_frequency_spearman(key_score, pi) -> float:
    """Spearman rank correlation between each token's key score and its frequency π (scipy.stats.spearmanr)."""
    from scipy.stats import spearmanr

    k = np.asarray(key_score.detach().cpu() if isinstance(key_score, Tensor) else key_score, dtype=np.float64)
    rho = spearmanr(k, np.asarray(pi, dtype=np.float64)).statistic
    return float(rho)
