"""The 8x8 handwritten digits that ship with scikit-learn (no download), and their splits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class ImageSet:
    """Images as rows of ``x`` (N, d) in [-1, 1], with the shape of one image and, where the set has
    them, integer class labels ``y`` (N,) in the same row order (``None`` otherwise)."""

    x: NDArray[np.float64]
    image_shape: tuple[int, ...]
    y: NDArray[np.int64] | None = None

    def __post_init__(self):
        if self.y is not None and len(self.y) != len(self.x):
            raise ValueError(f"y has {len(self.y)} labels for {len(self.x)} images")

    @property
    def mean(self) -> NDArray[np.float64]:
        return self.x.mean(0)

    @property
    def covariance(self) -> NDArray[np.float64]:
        return np.cov(self.x, rowvar=False)


def digits(permutation_seed: int = 0) -> ImageSet:
    """sklearn's 1797 digits (d = 64), pixel values 0..16 scaled to [-1, 1], in one fixed permuted order;
    ``y`` holds the digit classes 0..9 permuted alike."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = data.data.astype(np.float64) / 8.0 - 1.0
    order = np.random.default_rng(permutation_seed).permutation(len(x))
    return ImageSet(x=x[order], image_shape=(8, 8), y=np.asarray(data.target, dtype=np.int64)[order])


def disjoint_splits(images: ImageSet, n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Split 1 is rows [0, n), split 2 is rows [n, 2n) of the (already permuted) set."""
    if not 1 <= n <= len(images.x) // 2:
        raise ValueError(f"n must be in [1, {len(images.x) // 2}] for two disjoint splits, got {n}")
    return images.x[:n], images.x[n : 2 * n]


def stratify_by_pc(
    images: ImageSet, k: int = 2, frac: float = 1 / 3, size: int | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Top and bottom groups of the set along its k-th principal component (k = 1 is the first).

    Each group holds the ``frac`` extreme fraction of images (or exactly ``size`` of them): a
    counterfactual pair of training sets whose moments differ systematically.
    """
    centered = images.x - images.mean
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    score = centered @ vt[k - 1]
    order = np.argsort(score)
    m = size if size is not None else int(len(order) * frac)
    if not 1 <= m <= len(order) // 2:
        raise ValueError("group size must be between 1 and half the set")
    return images.x[order[-m:]], images.x[order[:m]]
