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


def spearman(
    x: ArrayLike, y: ArrayLike, permutations: int = 0, rng: np.random.Generator | None = None
) -> tuple[float, float | None]:
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


def sliced_w2(
    a: torch.Tensor, b: torch.Tensor, directions: int = 200, generator: torch.Generator | None = None
) -> float:
    """Sliced Wasserstein-2 between two samples (n, d) and (m, d): the root mean over ``directions``
    random unit vectors of the 1-D W2^2 of the projections (exact 1-D optimal transport by sorting;
    with n != m the quantile functions are compared on a common grid of max(n, m) levels)."""
    a, b = a.reshape(len(a), -1).double(), b.reshape(len(b), -1).double()
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"samples live in different dimensions: {a.shape[1]} vs {b.shape[1]}")
    theta = torch.randn(a.shape[1], directions, generator=generator, dtype=torch.float64)
    theta = theta / theta.norm(dim=0, keepdim=True)
    pa, pb = (a @ theta).sort(dim=0).values, (b @ theta).sort(dim=0).values
    if len(pa) != len(pb):
        levels = torch.linspace(0, 1, max(len(pa), len(pb)), dtype=torch.float64)
        pa = torch.quantile(pa, levels, dim=0)
        pb = torch.quantile(pb, levels, dim=0)
    return float(((pa - pb) ** 2).mean().sqrt())


def median_bandwidth(x: torch.Tensor) -> float:
    """The median pairwise distance of a sample (the usual RBF bandwidth heuristic)."""
    d = torch.pdist(x.reshape(len(x), -1).double())
    return float(d[d > 0].median()) if (d > 0).any() else 1.0


def mmd_rbf(a: torch.Tensor, b: torch.Tensor, bandwidth: float | None = None, biased: bool = False) -> float:
    """Squared MMD with a Gaussian kernel ``exp(-|x - y|^2 / (2 h^2))`` between samples (n, ...) and
    (m, ...); ``h`` defaults to the median pairwise distance of the pooled sample. Unbiased by
    default (can be slightly negative when the laws agree); ``biased=True`` gives the V-statistic
    (always >= 0, biased upwards by the same amount for equal sizes from equal laws), the form to
    use when comparing two MMDs as a ratio."""
    a, b = a.reshape(len(a), -1).double(), b.reshape(len(b), -1).double()
    pooled = torch.cat([a, b])
    d2 = torch.cdist(pooled, pooled).pow(2)
    if bandwidth is None:
        bandwidth = float(d2[d2 > 0].median().sqrt()) if (d2 > 0).any() else 1.0
    k = torch.exp(-d2 / (2 * bandwidth**2))
    n, m = len(a), len(b)
    kaa, kbb, kab = k[:n, :n], k[n:, n:], k[:n, n:]
    if biased:
        return float(kaa.mean() + kbb.mean() - 2 * kab.mean())
    return float(
        (kaa.sum() - kaa.diagonal().sum()) / (n * (n - 1))
        + (kbb.sum() - kbb.diagonal().sum()) / (m * (m - 1))
        - 2 * kab.mean()
    )


def psnr(estimate: torch.Tensor, reference: torch.Tensor, data_range: float = 2.0) -> torch.Tensor:
    """Per-sample peak signal-to-noise ratio in dB, ``10 log10(range^2 / MSE)`` (range 2 for [-1, 1] images)."""
    mse = (estimate - reference).reshape(len(estimate), -1).double().pow(2).mean(1)
    return 10 * torch.log10(data_range**2 / mse.clamp(min=1e-20))


def ssim(estimate: torch.Tensor, reference: torch.Tensor, data_range: float = 2.0, window: int = 7) -> torch.Tensor:
    """Per-image structural similarity (Wang et al. 2004) with a uniform ``window`` x ``window``
    window, sample covariances and K1 = 0.01, K2 = 0.03 (scikit-image's defaults), averaged over
    the valid windows and channels. Images (n, C, H, W) or (n, H, W); ``window`` <= min(H, W)."""
    x, y = estimate.double(), reference.double()
    if x.dim() == 3:
        x, y = x[:, None], y[:, None]
    n, c = x.shape[:2]
    if window > min(x.shape[-2:]):
        raise ValueError(f"SSIM window {window} exceeds the image size {tuple(x.shape[-2:])}")
    pool = lambda z: torch.nn.functional.avg_pool2d(z.reshape(n * c, 1, *z.shape[-2:]), window, stride=1)  # noqa: E731
    cov_norm = window * window / (window * window - 1)
    mx, my = pool(x), pool(y)
    vx, vy = cov_norm * (pool(x * x) - mx * mx), cov_norm * (pool(y * y) - my * my)
    vxy = cov_norm * (pool(x * y) - mx * my)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * mx * my + c1) * (2 * vxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.reshape(n, -1).mean(1)
