"""Distances between sample sets and rank correlation, batched."""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import ArrayLike


def paired_mse(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """||a_i - b_i||^2 / d for paired rows: (m, d), (m, d) -> (m,)."""
    return ((a - b) ** 2).mean(-1)


def nearest_mse(queries: torch.Tensor, references: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """min_j ||q_i - r_j||^2 / d for each query row, in chunks of queries: (m, d), (N, d) -> (m,)."""
    d = queries.shape[-1]
    ref_sq = (references**2).sum(-1)
    out = []
    for start in range(0, queries.shape[0], chunk):
        q = queries[start : start + chunk]
        dist = (q**2).sum(-1, keepdim=True) - 2.0 * q @ references.T + ref_sq  # (m, N)
        out.append(dist.min(-1).values.clamp_min(0) / d)
    return torch.cat(out)


def spearman(x: ArrayLike, y: ArrayLike, permutations: int = 0, rng: np.random.Generator | None = None) -> tuple[float, float | None]:
    """Spearman rank correlation, and a one-sided permutation p-value (P[rho_perm >= rho]) if asked."""
    from scipy.stats import rankdata

    rx = rankdata(np.asarray(x, dtype=np.float64))
    ry = rankdata(np.asarray(y, dtype=np.float64))
    rho = float(np.corrcoef(rx, ry)[0, 1])
    if not permutations:
        return rho, None
    rng = rng or np.random.default_rng(0)
    perms = np.argsort(rng.random((permutations, ry.size)), axis=1)
    ry_c = ry - ry.mean()
    rx_c = rx - rx.mean()
    null = (ry_c[perms] @ rx_c) / (np.linalg.norm(rx_c) * np.linalg.norm(ry_c))
    return rho, float((1 + np.sum(null >= rho)) / (1 + permutations))
