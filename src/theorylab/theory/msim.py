"""Theory of the multiscale single-index model: leading first-chaos coefficient, its first Edgeworth correction
(K = 2) and the spectral-recovery noise scales.

Bruna, *The Multiscale Single-Index Model*, arXiv 2607.03347 (2026): ``E[y x] = c^(K) w_K ⊗ ... ⊗ w_1 +
O(d^(-1/2))`` with ``c^(K) = prod_l E[sigma_l'(g)]`` (each layer's pre-activation is ~N(0, 1) when the links are
normalised, E sigma = 0, E sigma^2 = 1). The d^(-1/2) term (card's claim 1, our derivation, checked here):
for K = 2 with ``z = <w_2 ⊗ w_1, x>`` and ``s = sum_j w_{2,j} sigma_1(g_j)``, the pair (s, z) has covariance
[[1, c_1], [c_1, 1]] and third cumulants ``kappa_sss = S3 E[sigma_1^3]``, ``kappa_ssz = S3 E[sigma_1^2 g]``,
``kappa_szz = S3 E[sigma_1 g^2]``, ``kappa_zzz = 0`` with ``S3 = sum_j w_{2,j}^3``. The first Edgeworth term
``(1/6) sum kappa_abc E[d_abc f]`` for ``f = sigma_2(s) z`` gives

    E[y z] = c_1(sigma_1) c_1(sigma_2) + S3 [ E[sigma_1^2 g] E[sigma_2''] / 2
                                              + E[sigma_1^3] c_1(sigma_1) E[sigma_2''''] / 6 ] + O(1/d).

For a quadratic top link the expansion stops: ``E[y z]`` is exactly the two terms (no O(1/d)), which the tests
check against the closed form. Gaussian expectations of derivatives use Stein's identity
``E[sigma^(k)(g)] = E[sigma(g) He_k(g)]`` by Gauss-Hermite quadrature (``theory.hermite``).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from theorylab.theory.hermite import gauss_hermite, hermite

__all__ = [
    "balanced_noise_scale",
    "edgeworth_constant",
    "edgeworth_first_chaos",
    "leading_coefficient",
    "link_moments",
    "mode_noise_scale",
    "spectral_threshold",
]


def link_moments(link: Callable[[np.ndarray], np.ndarray], nodes: int = 200) -> dict[str, float]:
    """Gaussian moments of a link: mean, second moment, ``c1 = E sigma'``, ``E sigma''``, ``E sigma''''``
    (Stein: ``E sigma^(k) = E[sigma He_k]``), ``E[sigma^2 g]``, ``E[sigma^3]``, ``E[sigma g^2]``."""
    z, w = gauss_hermite(nodes)
    s = np.asarray(link(z), dtype=np.float64)
    return dict(
        mean=float(w @ s),
        second=float(w @ s**2),
        c1=float(w @ (s * z)),
        d2=float(w @ (s * hermite(2, z))),
        d4=float(w @ (s * hermite(4, z))),
        s2g=float(w @ (s**2 * z)),
        s3=float(w @ s**3),
        sg2=float(w @ (s * z**2)),
    )


def leading_coefficient(links: Sequence[Callable]) -> float:
    """``c^(K) = prod_l E[sigma_l'(g)]``: the spike of the first chaos (card, leading order)."""
    return float(np.prod([link_moments(f)["c1"] for f in links]))


def edgeworth_first_chaos(link1: Callable, link2: Callable, w2: np.ndarray) -> tuple[float, float]:
    """K = 2: (leading ``c1(sigma_1) c1(sigma_2)``, first Edgeworth correction) of ``E[y z]`` (module docstring)."""
    m1, m2 = link_moments(link1), link_moments(link2)
    s3 = float(np.sum(np.asarray(w2, dtype=np.float64) ** 3))
    lead = m1["c1"] * m2["c1"]
    corr = s3 * (0.5 * m1["s2g"] * m2["d2"] + m1["s3"] * m1["c1"] * m2["d4"] / 6)
    return lead, corr


def edgeworth_constant(link1: Callable, link2: Callable) -> float:
    """The constant ``a`` in ``E[y z]/(c1 c1) - 1 = a d^(-1/2) + O(1/d)`` for flat ``w_2`` (S3 = d^(-1/2)).
    For the card's quadratic link ``a = 1/sqrt(1.5) ≈ 0.8165``."""
    lead, corr = edgeworth_first_chaos(link1, link2, np.ones(1))
    return corr / lead


def mode_noise_scale(d: int, K: int, n: int, second_moment: float = 1.0) -> float:
    """Operator norm of the noise of a mode unfolding (d x d^(K-1)) of ``T_hat``: its entries have variance
    ``E[y^2]/n`` (``E[y^2 x_a x_b] = E[y^2] delta_ab + O(...)``), so ``(sqrt(d) + sqrt(d^(K-1))) sqrt(E y^2 / n)``
    (Bai-Yin)."""
    return (math.sqrt(d) + math.sqrt(d ** (K - 1))) * math.sqrt(second_moment / n)


def balanced_noise_scale(d: int, K: int, n: int, second_moment: float = 1.0) -> float:
    """Same for the balanced flattening (d^floor(K/2) x d^ceil(K/2))."""
    return (math.sqrt(d ** (K // 2)) + math.sqrt(d ** (K - K // 2))) * math.sqrt(second_moment / n)


def spectral_threshold(d: int, K: int, coefficient: float, balanced: bool = False) -> float:
    """The n at which the noise scale equals the spike ``c^(K)``: ``n* = (sqrt(r) + sqrt(c))^2 / c^(K)^2``; the
    top singular vector recovers the features once ``n >> n*`` (card: d^(K-1)/c^2 mode-wise, d^ceil(K/2)
    balanced)."""
    r, c = (d ** (K // 2), d ** (K - K // 2)) if balanced else (d, d ** (K - 1))
    return (math.sqrt(r) + math.sqrt(c)) ** 2 / coefficient**2
