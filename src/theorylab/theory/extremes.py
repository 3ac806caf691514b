"""Expected maximum of N i.i.d. standard normals, ``e_N = E[max_i Z_i]``, by quadrature.

``e_N = ∫ x · N φ(x) Φ(x)^{N-1} dx``. Used by the best-of-N random-search law of the local-perturbation-geometry
study: for ``δ_i ~ N(0, s² I)`` and a locally linear loss, ``E[max_i (−ΔL(δ_i))] ≈ s ‖∇L‖ e_N``
(Piontkovskaia & Nikolenko, arXiv 2606.10929, reconstructed). e_4 = 1.0294, e_16 = 1.7660, e_64 = 2.3437.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, stats


def expected_max_normal(n: int) -> float:
    """``E[max of n i.i.d. N(0, 1)]`` (``e_1 = 0``, ``e_2 = 1/√π``)."""
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    n = int(n)
    if n == 1:
        return 0.0

    def density(x: float) -> float:
        return x * n * math.exp(stats.norm.logpdf(x) + (n - 1) * stats.norm.logcdf(x))

    val, _ = integrate.quad(
        density, -12.0, 12.0, points=[0.0, math.sqrt(2 * math.log(n))], epsabs=1e-13, epsrel=1e-12, limit=200
    )
    return float(val)


def sd_max_normal(n: int) -> float:
    """Standard deviation of the max of ``n`` i.i.d. standard normals (for Monte Carlo error bars)."""
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    n = int(n)
    m2, _ = integrate.quad(
        lambda x: x * x * n * math.exp(stats.norm.logpdf(x) + (n - 1) * stats.norm.logcdf(x)),
        -12.0,
        12.0,
        epsabs=1e-13,
        epsrel=1e-12,
        limit=200,
    )
    return float(np.sqrt(max(m2 - expected_max_normal(n) ** 2, 0.0)))
