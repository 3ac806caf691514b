"""Data laws ("metrics") for polynomial-network teacher-student problems: exact moment tensors and samples.

The population loss of a degree-k polynomial network under a data law D is the quadratic form
<T - T*, M_{2k} (T - T*)> with the moment tensor M_{2k} = E[x^{(x)2k}] (Arjevani et al., arXiv 2501.06074,
the "teacher metric" <A, B>_D = E[<A, x^{(x)k}><B, x^{(x)k}>]). Three laws: the standard Gaussian N(0, I_d), the
Rademacher law on {+-1}^d (moments by exact enumeration of the 2^d points), and a two-component Gaussian mixture
(a non-Gaussian law whose moments follow from Isserlis' theorem per component).
"""

from __future__ import annotations

import itertools
import string
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["GaussianLaw", "MixtureLaw", "RademacherLaw", "gaussian_moment_tensor", "metric_loss", "pair_partitions"]


def pair_partitions(m: int) -> list[list[tuple[int, ...]]]:
    """Set partitions of {0..m-1} into blocks of size 1 or 2 (the terms of Isserlis' theorem with a mean)."""

    def rec(items: tuple[int, ...]) -> list[list[tuple[int, ...]]]:
        if not items:
            return [[]]
        first, rest = items[0], items[1:]
        out = [[(first,)] + p for p in rec(rest)]
        for j, other in enumerate(rest):
            out += [[(first, other)] + p for p in rec(rest[:j] + rest[j + 1 :])]
        return out

    return rec(tuple(range(m)))


def gaussian_moment_tensor(mean: np.ndarray, cov: np.ndarray, order: int) -> np.ndarray:
    """E[x^{(x)order}] for x ~ N(mean, cov): sum over partitions into singletons (mean) and pairs (cov)."""
    mean, cov = np.asarray(mean, float), np.asarray(cov, float)
    d = mean.shape[0]
    if cov.shape != (d, d) or order < 0 or order > 10:
        raise ValueError(f"need mean (d,), cov (d, d), 0 <= order <= 10; got {mean.shape}, {cov.shape}, {order}")
    letters = string.ascii_lowercase[:order]
    out = np.zeros((d,) * order)
    for part in pair_partitions(order):
        ops, specs = [], []
        for block in part:
            specs.append("".join(letters[i] for i in block))
            ops.append(mean if len(block) == 1 else cov)
        out += np.einsum(",".join(specs) + "->" + letters, *ops) if ops else 1.0
    return out


def metric_loss(D, M4):
    """<D (x) D, M4> = E[(x^T D x)^2] for a symmetric D (..., d, d) (numpy or torch) and a 4th-moment tensor."""
    lib = torch if isinstance(D, torch.Tensor) else np
    return lib.einsum("...ij,...kl,ijkl->...", D, D, M4)


@dataclass(frozen=True)
class GaussianLaw:
    """x ~ N(0, I_d)."""

    d: int
    name: str = "gaussian"

    def __post_init__(self):
        if self.d < 1:
            raise ValueError(f"d must be >= 1; got {self.d}")

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal((n, self.d))

    def moment(self, order: int) -> np.ndarray:
        return gaussian_moment_tensor(np.zeros(self.d), np.eye(self.d), order)


@dataclass(frozen=True)
class RademacherLaw:
    """x uniform on {-1, +1}^d; moments by exact enumeration of the 2^d points (d <= 20)."""

    d: int
    name: str = "rademacher"

    def __post_init__(self):
        if not 1 <= self.d <= 20:
            raise ValueError(f"RademacherLaw needs 1 <= d <= 20 (exact enumeration); got {self.d}")

    def support(self) -> tuple[np.ndarray, np.ndarray]:
        pts = np.array(list(itertools.product((-1.0, 1.0), repeat=self.d)))
        return pts, np.full(len(pts), 1.0 / len(pts))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.choice((-1.0, 1.0), size=(n, self.d))

    def moment(self, order: int) -> np.ndarray:
        pts, w = self.support()
        letters = string.ascii_lowercase[:order]
        return np.einsum("n," + ",".join("n" + c for c in letters) + "->" + letters, w, *([pts] * order))


@dataclass(frozen=True)
class MixtureLaw:
    """x ~ (1/2) N(+shift u, scale^2 I) + (1/2) N(-shift u, scale^2 I), u = (1, ..., 1)/sqrt(d) unless given.

    Symmetric, non-Gaussian (its fourth cumulant along u is -2 shift^4 for scale fixed); ours, a simple
    two-component mixture for the card's "non-Gaussian metric".
    """

    d: int
    shift: float = 1.5
    scale: float = 0.5
    direction: tuple[float, ...] | None = None
    name: str = field(default="mixture")

    def __post_init__(self):
        if self.d < 1 or self.shift < 0 or self.scale <= 0:
            raise ValueError(
                f"MixtureLaw needs d >= 1, shift >= 0, scale > 0; got {self.d}, {self.shift}, {self.scale}"
            )
        if self.direction is not None and len(self.direction) != self.d:
            raise ValueError(f"direction must have d = {self.d} entries; got {len(self.direction)}")

    @property
    def u(self) -> np.ndarray:
        u = np.ones(self.d) if self.direction is None else np.asarray(self.direction, float)
        return u / np.linalg.norm(u)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        sign = rng.choice((-1.0, 1.0), size=(n, 1))
        return sign * self.shift * self.u + self.scale * rng.standard_normal((n, self.d))

    def moment(self, order: int) -> np.ndarray:
        cov = self.scale**2 * np.eye(self.d)
        m = self.shift * self.u
        return 0.5 * (gaussian_moment_tensor(m, cov, order) + gaussian_moment_tensor(-m, cov, order))
