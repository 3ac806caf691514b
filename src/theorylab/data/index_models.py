"""Gaussian single- and multi-index models ``y = g(W*^T x) + noise``, ``x ~ N(0, I_d)``.

``W*`` (d, r) has orthonormal columns (a point of the Stiefel manifold), drawn uniformly (QR of a
Gaussian matrix, signs fixed) or given. Links come from a registry of named functions of the
latent ``z = W*^T x`` (n, r) and can be any user callable. Samples are drawn in one piece
(:meth:`IndexModel.sample`) or streamed in batches for online SGD (:meth:`IndexModel.stream`),
without holding n x d in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

LinkFn = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Link:
    """A link ``g: R^r -> R`` acting on the latent ``z`` (n, r), with what theory says about it."""

    name: str
    fn: LinkFn
    r: int
    description: str = ""
    info_exponent: int | None = None  # single-index: smallest k >= 1 with a nonzero Hermite coefficient
    generative_exponent: int | None = None  # k* (single index) or the generative leap (multi-index)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        if z.ndim != 2 or z.shape[1] != self.r:
            raise ValueError(f"link '{self.name}' takes z of shape (n, {self.r}); got {z.shape}")
        return np.asarray(self.fn(z), dtype=np.float64)


def _relu(t: np.ndarray) -> np.ndarray:
    return np.maximum(t, 0.0)


LINKS: dict[str, Link] = {
    link.name: link
    for link in (
        Link("he1", lambda z: z[:, 0], 1, "He_1(z1) = z1", 1, 1),
        Link("he2", lambda z: z[:, 0] ** 2 - 1, 1, "He_2(z1) = z1^2 - 1", 2, 2),
        Link("he3", lambda z: z[:, 0] ** 3 - 3 * z[:, 0], 1, "He_3(z1) = z1^3 - 3 z1", 3, 1),
        Link("he4", lambda z: z[:, 0] ** 4 - 6 * z[:, 0] ** 2 + 3, 1, "He_4(z1)", 4, 2),
        Link("sign", lambda z: np.sign(z[:, 0]), 1, "sign(z1)", 1, 1),
        Link("abs", lambda z: np.abs(z[:, 0]), 1, "|z1|", 2, 2),
        Link("relu", lambda z: _relu(z[:, 0]), 1, "ReLU(z1)", 1, 1),
        Link("z1+z1z2", lambda z: z[:, 0] + z[:, 0] * z[:, 1], 2, "z1 + z1 z2 (survey link A)", None, 1),
        Link("z1z2", lambda z: z[:, 0] * z[:, 1], 2, "z1 z2 (survey link C)", None, 2),
        Link("z1z2z3", lambda z: z[:, 0] * z[:, 1] * z[:, 2], 3, "z1 z2 z3: information exponent 3, leap 2 (M3)", None,
             2),
        Link("parity3", lambda z: np.sign(z[:, 0] * z[:, 1] * z[:, 2]), 3, "sign(z1 z2 z3): Gaussian 3-parity, "
            "leap 3 (P3)", None, 3),
        Link("parity4", lambda z: np.sign(z[:, 0] * z[:, 1] * z[:, 2] * z[:, 3]), 4, "sign(z1 z2 z3 z4): leap 4 (P4)",
             None, 4),
        Link("relu-diff", lambda z: _relu(z[:, 0]) - _relu(z[:, 1]), 2, "ReLU(z1) - ReLU(z2)", None, 1),
        Link("relu-sum-abs", lambda z: _relu(z[:, 0] + z[:, 1]) + np.abs(z[:, 0] - z[:, 1]), 2, "ReLU(z1 + z2) + "
            "|z1 - z2|", None, 1),
    )
}


def get_link(link: str | Link | LinkFn, r: int | None = None) -> Link:
    """A registered link by name, a :class:`Link`, or a user callable (give its ``r``)."""
    if isinstance(link, Link):
        return link
    if isinstance(link, str):
        if link not in LINKS:
            raise KeyError(f"unknown link '{link}'; known: {', '.join(sorted(LINKS))}")
        return LINKS[link]
    if callable(link):
        if r is None:
            raise ValueError("a callable link needs its number of directions r")
        return Link(getattr(link, "__name__", "custom"), link, r, "user callable")
    raise TypeError(f"link must be a name, a Link or a callable; got {type(link).__name__}")


def random_stiefel(d: int, r: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random (d, r) matrix with orthonormal columns (Haar: QR with the sign fix)."""
    if not 1 <= r <= d:
        raise ValueError(f"need 1 <= r <= d; got r = {r}, d = {d}")
    q, rr = np.linalg.qr(rng.standard_normal((d, r)))
    return q * np.sign(np.diag(rr))


@dataclass
class IndexModel:
    """``y = link(W^T x) + noise * eps`` with ``x ~ N(0, I_d)``; ``W`` random unless given."""

    d: int
    link: Link
    noise: float = 0.0
    W: np.ndarray = field(default=None)  # type: ignore[assignment]

    @classmethod
    def make(cls, d: int, link: str | Link | LinkFn, rng: np.random.Generator, *, r: int | None = None,
             noise: float = 0.0, W: np.ndarray | None = None) -> "IndexModel":
        lk = get_link(link, r)
        if W is None:
            W = random_stiefel(d, lk.r, rng)
        W = np.asarray(W, dtype=np.float64)
        if W.shape != (d, lk.r):
            raise ValueError(f"W must have shape ({d}, {lk.r}); got {W.shape}")
        if not np.allclose(W.T @ W, np.eye(lk.r), atol=1e-8):
            raise ValueError("W must have orthonormal columns")
        if noise < 0:
            raise ValueError(f"noise must be >= 0; got {noise}")
        return cls(d, lk, noise, W)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(X (n, d), y (n,), z (n, r))``."""
        x = rng.standard_normal((n, self.d))
        z = x @ self.W
        y = self.link(z)
        if self.noise > 0:
            y = y + self.noise * rng.standard_normal(n)
        return x, y, z

    def stream(self, batch: int, rng: np.random.Generator, total: int | None = None) -> Iterator[tuple[np.ndarray,
        np.ndarray, np.ndarray]]:
        """Fresh batches for online SGD (``total`` samples in all, or forever)."""
        drawn = 0
        while total is None or drawn < total:
            size = batch if total is None else min(batch, total - drawn)
            yield self.sample(size, rng)
            drawn += size
