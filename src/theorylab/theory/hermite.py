"""Probabilists' Hermite polynomials and tensors, Hermite coefficients and the exponents of a link.

Conventions: ``He_k`` are the probabilists' Hermite polynomials (``He_0 = 1``, ``He_1 = z``,
``He_{k+1} = z He_k - k He_{k-1}``), orthogonal under N(0, 1) with ``E[He_j He_k] = k! delta_jk``.
A link ``g`` expands as ``g = sum_k c_k He_k`` with ``c_k = E[g(Z) He_k(Z)] / k!``.

- information exponent (Ben Arous, Gheissari, Jagannath 2021): the smallest ``k >= 1`` with ``c_k != 0``;
- generative exponent (Damian, Pillaud-Vivien, Lee, Bruna 2024, arXiv 2403.05529, Def. 2.3): the
  smallest ``k >= 1`` with ``E[zeta_k(Y)^2] > 0`` where ``zeta_k(y) = E[He_k(Z) | Y = y]``: the
  information exponent after the best label transformation;
- first-stage generative leap of a multi-index link (Damian, Lee, Bruna 2025, arXiv 2506.05500):
  the smallest ``k`` with ``E |E[He_k(z) | y]|^2 > 0`` for the Hermite tensor of ``z in R^r``
  (reconstructed; the paper's full definition is sequential, conditioning on recovered directions).
"""

from __future__ import annotations

import itertools
import math
from typing import Callable

import numpy as np
from scipy.special import roots_hermitenorm

from theorylab.theory.sdr import label_slices


def hermite_all(kmax: int, z: np.ndarray) -> np.ndarray:
    """``He_0(z), ..., He_kmax(z)`` stacked on a new first axis: (kmax + 1, *z.shape)."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty((kmax + 1, *z.shape))
    out[0] = 1.0
    if kmax >= 1:
        out[1] = z
    for k in range(1, kmax):
        out[k + 1] = z * out[k] - k * out[k - 1]
    return out


def hermite(k: int, z: np.ndarray) -> np.ndarray:
    """``He_k(z)``."""
    return hermite_all(k, z)[k]


def gauss_hermite(nodes: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights with ``sum w f(z) = E f(Z)``, Z ~ N(0, 1) (exact for polynomials of degree < 2*nodes)."""
    z, w = roots_hermitenorm(nodes)  # SciPy's is stable for many nodes (NumPy's overflows past ~300)
    return z, w / math.sqrt(2 * math.pi)


def hermite_coefficients(g: Callable[[np.ndarray], np.ndarray], kmax: int = 8, nodes: int = 200) -> np.ndarray:
    """``c_k = E[g(Z) He_k(Z)] / k!`` for ``k = 0..kmax`` by Gauss-Hermite quadrature.

    Exact for polynomial links; for non-smooth links (sign, ReLU) the error falls like
    ``nodes^(-1/2)`` or faster, so use a few hundred nodes.
    """
    z, w = gauss_hermite(nodes)
    values = np.asarray(g(z), dtype=np.float64)
    h = hermite_all(kmax, z)
    return (h * values * w).sum(axis=1) / np.array([math.factorial(k) for k in range(kmax + 1)])


def information_exponent(
    g: Callable[[np.ndarray], np.ndarray], kmax: int = 8, tol: float = 1e-8, nodes: int = 200
) -> int | None:
    """Smallest ``k >= 1`` with ``|c_k| > tol`` (None if none up to ``kmax``)."""
    c = hermite_coefficients(g, kmax, nodes)
    scale = max(1.0, float(np.sqrt((c**2 * [math.factorial(k) for k in range(kmax + 1)]).sum())))
    for k in range(1, kmax + 1):
        if abs(c[k]) > tol * scale:
            return k
    return None


def generative_exponent(
    g: Callable[[np.ndarray], np.ndarray], kmax: int = 8, tol: float = 1e-8, nodes: int = 400, bins: int = 400
) -> int | None:
    """Smallest ``k >= 1`` with ``E[E[He_k(Z) | g(Z)]^2] > tol`` (None if none up to ``kmax``).

    Computed on Gauss-Hermite nodes: nodes with equal ``y`` (to 1e-9) form exact groups (so
    symmetric links cancel exactly); when ``y`` takes more than ``bins`` values, nodes are grouped
    in ``bins`` weighted quantile bins of ``y``, which approximates the conditional expectation
    of a continuous label. Exact for links whose level sets are finite unions of node pairs.
    """
    z, w = gauss_hermite(nodes)
    y = np.asarray(g(z), dtype=np.float64)
    keys = np.round(y, 9)
    uniq, groups = np.unique(keys, return_inverse=True)
    if len(uniq) > bins:
        order = np.argsort(y)
        cum = np.cumsum(w[order])
        groups = np.empty(len(y), dtype=int)
        groups[order] = np.minimum((cum / cum[-1] * bins).astype(int), bins - 1)
    h = hermite_all(kmax, z)
    mass = np.bincount(groups, weights=w)
    for k in range(1, kmax + 1):
        cond = np.bincount(groups, weights=w * h[k]) / np.maximum(mass, 1e-300)
        if float((mass * cond**2).sum()) > tol * math.factorial(k):
            return k
    return None


# --- Hermite tensors ----------------------------------------------------------------------------


def hermite_tensor_coefficients(
    g: Callable[[np.ndarray], np.ndarray], r: int, k: int, n: int, rng: np.random.Generator, chunk: int = 100_000
) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo Hermite coefficient tensor of a multi-index link ``g: R^r -> R``:
    ``C_k = E[g(z) He_k(z)] / k!`` (r,)*k, so that ``g = sum_k <C_k, He_k(z)>``; returns ``(C_k, standard errors)``."""
    total = np.zeros((r,) * k)
    squares = np.zeros((r,) * k)
    done = 0
    while done < n:
        size = min(chunk, n - done)
        z = rng.standard_normal((size, r))
        prod = np.asarray(g(z), dtype=np.float64).reshape((size,) + (1,) * k) * hermite_tensor(k, z)
        total += prod.sum(0)
        squares += (prod**2).sum(0)
        done += size
    mean = total / n
    se = np.sqrt(np.maximum(squares / n - mean**2, 0) / n)
    return mean / math.factorial(k), se / math.factorial(k)


def hermite_tensor(k: int, x: np.ndarray) -> np.ndarray:
    """The order-``k`` Hermite tensor of ``x in R^d`` (``k <= 4``): (d,)*k, e.g. ``He_2 = x x^T - I``.

    ``He_3 = x⊗x⊗x - sym(x⊗I)`` (3 terms), ``He_4 = x^⊗4 - sym(x⊗x⊗I)`` (6 terms) ``+ sym(I⊗I)`` (3 terms).
    With ``x`` a batch (n, d) the result is (n, d, ..., d). Explicit, so only for small d (tests, oracles).
    """
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    eye = np.eye(d)
    if k == 0:
        return np.ones(x.shape[:-1])
    if k == 1:
        return x.copy()
    if k == 2:
        return np.einsum("...a,...b->...ab", x, x) - eye
    if k == 3:
        xxx = np.einsum("...a,...b,...c->...abc", x, x, x)
        sym = (
            np.einsum("...a,bc->...abc", x, eye)
            + np.einsum("...b,ac->...abc", x, eye)
            + np.einsum("...c,ab->...abc", x, eye)
        )
        return xxx - sym
    if k == 4:
        x4 = np.einsum("...a,...b,...c,...e->...abce", x, x, x, x)
        pairs = 0
        for (i, j), (p, q) in _pairings():
            idx = "abce"
            spec = f"...{idx[i]},...{idx[j]},{idx[p]}{idx[q]}->...abce"
            pairs = pairs + np.einsum(spec, x, x, eye)
        ii = (
            np.einsum("ab,ce->abce", eye, eye) + np.einsum("ac,be->abce", eye, eye) + np.einsum("ae,bc->abce", eye, eye)
        )
        return x4 - pairs + ii
    raise ValueError(f"hermite_tensor supports k <= 4, got {k}")


def _pairings() -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The 6 ways to split 4 indices into an x-pair and an identity-pair."""
    out = []
    for pair in itertools.combinations(range(4), 2):
        rest = tuple(i for i in range(4) if i not in pair)
        out.append((pair, rest))
    return out


def multi_index_leap(
    z: np.ndarray, y: np.ndarray, kmax: int = 4, bins: int = 20, z_threshold: float = 6.0, chunk: int = 50_000
) -> tuple[int | None, dict[int, float]]:
    """First-stage generative leap of a multi-index link from samples (reconstructed; see module doc).

    ``z``: (n, r) latent coordinates, ``y``: (n,) labels. For each ``k``, ``S_k = E |E[He_k(z) | y]|_F^2``
    is estimated from ``bins`` equal-count slices of ``y`` (discrete labels: one slice per value) as
    the between-slice sum of squares, minus its null bias ``(slices - 1) E|He_k|^2 / n``; its null
    standard error is ``sqrt(2 (slices - 1) r^k) (E|He_k|^2 / r^k) / n``. Returns the smallest ``k``
    whose corrected ``S_k`` exceeds ``z_threshold`` standard errors (the search stops there), and the
    z-score of every ``k`` examined. Tensors are built ``chunk`` rows at a time.
    """
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, r = z.shape
    slices = label_slices(y, bins)
    count = np.bincount(slices)
    m = len(count)
    scores: dict[int, float] = {}
    for k in range(1, kmax + 1):
        comps = r**k
        sums = np.zeros((m, comps))
        total = 0.0
        for start in range(0, n, chunk):
            h = hermite_tensor(k, z[start : start + chunk]).reshape(-1, comps)
            np.add.at(sums, slices[start : start + chunk], h)
            total += float((h**2).sum())
        total /= n
        means = sums / count[:, None]
        between = float((count[:, None] * means**2).sum() / n)
        bias = (m - 1) * total / n
        se = math.sqrt(2 * (m - 1) * comps) * total / comps / n
        scores[k] = (between - bias) / se
        if scores[k] > z_threshold:
            return k, scores
    return None, scores


def leap_scores(link, n: int, rng: np.random.Generator) -> list[dict]:
    """:func:`multi_index_leap` of a registered multi-index ``link`` (a :class:`theorylab.data.index_models.Link`)
    on ``n`` latent samples ``z ~ N(0, I_r)`` from ``rng``, searching up to ``max(4, known leap)``.
    One row per order examined: k, z_score, leap (-1: none found), known (the link's generative exponent)."""
    z = rng.standard_normal((n, link.r))
    found, scores = multi_index_leap(z, link(z), kmax=max(4, (link.generative_exponent or 0)))
    return [
        dict(k=k, z_score=score, leap=found if found is not None else -1, known=link.generative_exponent)
        for k, score in scores.items()
    ]


# --- r-dimensional quadrature ---------------------------------------------------------------------


def gauss_hermite_nd(r: int, nodes: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Tensor-product Gauss-Hermite rule for ``E f(Z)``, ``Z ~ N(0, I_r)``: points (nodes^r, r) and weights (nodes^r,).

    The product of ``r`` copies of :func:`gauss_hermite`, so ``sum w f(z)`` is exact for every polynomial of degree
    < 2*nodes in each coordinate (Bietti, Bruna & Pillaud-Vivien, arXiv 2310.19793, evaluate the averaging operator
    ``A_M`` this way). Memory grows like ``nodes^r``: meant for r <= 3 (r <= 6 allowed with few nodes).
    """
    if not 1 <= r <= 6:
        raise ValueError(f"gauss_hermite_nd needs 1 <= r <= 6; got r = {r}")
    if nodes < 1 or nodes**r > 5_000_000:
        raise ValueError(f"gauss_hermite_nd needs nodes >= 1 and nodes^r <= 5e6; got nodes = {nodes}, r = {r}")
    z, w = gauss_hermite(nodes)
    grids = np.meshgrid(*([z] * r), indexing="ij")
    points = np.stack([g.reshape(-1) for g in grids], axis=1)
    weights = np.ones(1)
    for _ in range(r):
        weights = np.multiply.outer(weights, w).reshape(-1)
    return points, weights
