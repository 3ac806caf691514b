"""Gaussian single- and multi-index models ``y = g(W*^T x) + noise``, ``x ~ N(0, I_d)``.

``W*`` (d, r) has orthonormal columns (a point of the Stiefel manifold), drawn uniformly (QR of a
Gaussian matrix, signs fixed) or given. Links come from a registry of named functions of the
latent ``z = W*^T x`` (n, r) and can be any user callable. Samples are drawn in one piece
(:meth:`IndexModel.sample`) or streamed in batches for online SGD (:meth:`IndexModel.stream`),
without holding n x d in memory.
"""

from __future__ import annotations

import itertools
import math
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
        Link(
            "z1z2z3", lambda z: z[:, 0] * z[:, 1] * z[:, 2], 3, "z1 z2 z3: information exponent 3, leap 2 (M3)", None, 2
        ),
        Link(
            "parity3",
            lambda z: np.sign(z[:, 0] * z[:, 1] * z[:, 2]),
            3,
            "sign(z1 z2 z3): Gaussian 3-parity, leap 3 (P3)",
            None,
            3,
        ),
        Link(
            "parity4",
            lambda z: np.sign(z[:, 0] * z[:, 1] * z[:, 2] * z[:, 3]),
            4,
            "sign(z1 z2 z3 z4): leap 4 (P4)",
            None,
            4,
        ),
        Link("relu-diff", lambda z: _relu(z[:, 0]) - _relu(z[:, 1]), 2, "ReLU(z1) - ReLU(z2)", None, 1),
        Link(
            "relu-sum-abs",
            lambda z: _relu(z[:, 0] + z[:, 1]) + np.abs(z[:, 0] - z[:, 1]),
            2,
            "ReLU(z1 + z2) + |z1 - z2|",
            None,
            1,
        ),
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
    def make(
        cls,
        d: int,
        link: str | Link | LinkFn,
        rng: np.random.Generator,
        *,
        r: int | None = None,
        noise: float = 0.0,
        W: np.ndarray | None = None,
    ) -> "IndexModel":
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

    def stream(
        self, batch: int, rng: np.random.Generator, total: int | None = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Fresh batches for online SGD (``total`` samples in all, or forever)."""
        drawn = 0
        while total is None or drawn < total:
            size = batch if total is None else min(batch, total - drawn)
            yield self.sample(size, rng)
            drawn += size


# --- links given by their Hermite coefficient tensors ---------------------------------------------


def _he_1d(kmax: int, t: np.ndarray) -> list[np.ndarray]:
    """``He_0(t), ..., He_kmax(t)`` (probabilists'), by the three-term recursion."""
    out = [np.ones_like(t), t.copy()]
    for k in range(1, kmax):
        out.append(t * out[k] - k * out[k - 1])
    return out[: kmax + 1]


def _multisets(r: int, k: int):
    """Every multi-index ``alpha`` (r,) with ``|alpha| = k`` and one index tuple that realises it."""
    for combo in itertools.combinations_with_replacement(range(r), k):
        yield np.bincount(np.array(combo, dtype=int), minlength=r), combo


@dataclass(frozen=True)
class HermiteLink:
    """A link ``f(z) = sum_k <C_k, He_k(z)>`` of ``z in R^r`` given by symmetric coefficient tensors ``C_k`` (r,)*k.

    ``He_k(z)`` is the order-k Hermite tensor (entry ``prod_i He_{alpha_i}(z_i)`` for an index tuple with
    multiplicities ``alpha``), so ``||f||^2 = E f(z)^2 = sum_k k! ||C_k||_F^2`` (the convention of Bietti, Bruna &
    Pillaud-Vivien, arXiv 2310.19793, Sec. 2). ``coeffs`` maps k to ``C_k``; k = 0 is the constant.
    """

    name: str
    r: int
    coeffs: dict
    description: str = ""

    def __post_init__(self):
        for k, c in self.coeffs.items():
            c = np.asarray(c, dtype=np.float64)
            if c.shape != (self.r,) * k:
                raise ValueError(f"link '{self.name}': C_{k} must have shape {(self.r,) * k}; got {c.shape}")
            for axis in range(1, k):
                if not np.allclose(c, np.swapaxes(c, 0, axis), atol=1e-12):
                    raise ValueError(f"link '{self.name}': C_{k} must be a symmetric tensor")

    @property
    def degree(self) -> int:
        return max((k for k, c in self.coeffs.items() if np.any(np.asarray(c) != 0)), default=0)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        if z.ndim != 2 or z.shape[1] != self.r:
            raise ValueError(f"link '{self.name}' takes z of shape (n, {self.r}); got {z.shape}")
        he = [_he_1d(max(self.degree, 1), z[:, i]) for i in range(self.r)]
        out = np.zeros(len(z))
        for k, c in self.coeffs.items():
            c = np.asarray(c, dtype=np.float64)
            for alpha, combo in _multisets(self.r, k):
                coef = c[combo] if k else float(c)
                if coef == 0:
                    continue
                mult = math.factorial(k) / np.prod([math.factorial(a) for a in alpha])  # tuples per multiset
                term = np.ones(len(z))
                for i, a in enumerate(alpha):
                    if a:
                        term = term * he[i][a]
                out += mult * coef * term
        return out

    def link(self) -> Link:
        """As a :class:`Link` (for :class:`IndexModel`)."""
        return Link(self.name, self.__call__, self.r, self.description)


def _pure(k: int) -> HermiteLink:
    c = {k: np.full((1,) * k, 1 / math.sqrt(math.factorial(k)))}
    return HermiteLink(f"pure-he{k}", 1, c, f"He_{k}(z)/sqrt({k}!): unit norm, information exponent {k}")


def _e(i: int, r: int = 2) -> np.ndarray:
    return np.eye(r)[i]


HERMITE_LINKS: dict[str, HermiteLink] = {
    link.name: link
    for link in (
        *(_pure(k) for k in (1, 2, 3, 4)),
        HermiteLink(
            "staircase",
            2,
            {1: _e(0), 2: 0.5 * (np.outer(_e(0), _e(1)) + np.outer(_e(1), _e(0)))},
            "z1 + z1 z2: C_1 = e1, C_2 = (e1 e2^T + e2 e1^T)/2 (arXiv 2310.19793's staircase)",
        ),
        HermiteLink(
            "non-staircase",
            2,
            {1: _e(0), 2: np.outer(_e(1), _e(1)) / math.sqrt(2)},
            "z1 + He_2(z2)/sqrt(2): C_1 = e1, C_2 = e2 e2^T/sqrt(2)",
        ),
        HermiteLink(
            "planted-trap",
            1,
            {3: np.full((1, 1, 1), 1 / math.sqrt(6))},
            "He_3(z)/sqrt(6), r = 1: the planted (fixed-link) flow from m0 < 0 stalls at m = 0 (reconstructed example)",
        ),
    )
}


def hermite_link(name: str | HermiteLink) -> HermiteLink:
    """A registered :class:`HermiteLink` by name (or the link itself)."""
    if isinstance(name, HermiteLink):
        return name
    if name not in HERMITE_LINKS:
        raise KeyError(f"unknown Hermite link '{name}'; known: {', '.join(sorted(HERMITE_LINKS))}")
    return HERMITE_LINKS[name]


def multi_index(
    d: int, link: str | HermiteLink, rng: np.random.Generator, *, noise: float = 0.0, W: np.ndarray | None = None
) -> IndexModel:
    """``y = f*(W*^T x) + noise``, ``x ~ N(0, I_d)``, ``W*`` Haar on St(d, r), ``f*`` a :class:`HermiteLink`."""
    return IndexModel.make(d, hermite_link(link).link(), rng, noise=noise, W=W)
