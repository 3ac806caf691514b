"""The linear-Gaussian case of self-consistent stochastic interpolants, solved exactly.

Modi, Han, Vanden-Eijnden, Bruna (arXiv 2512.10857): the self-consistent transport T satisfies
``A_# (T_# nu_obs) = nu_obs``. For x ~ N(m, S) and the channel A(x) = x + sigma * eps the
deconvolution is unique: the clean law is N(m, S) with ``m = E y`` and ``S = Cov(y) - sigma^2 I``,
and one transport realising it is the linear map

    T*(y) = m + S^{1/2} (S + sigma^2 I)^{-1/2} (y - m),

which sends N(m, S + sigma^2 I) to N(m, S). These are the oracle values the trained transport is
held against.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.linalg import sqrtm


def deconvolved_moments(y: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Moment estimates of the clean law from observations ``y`` (n, d): ``(E y, Cov(y) - sigma^2 I)``."""
    y = np.asarray(y, dtype=np.float64)
    return y.mean(0), np.cov(y, rowvar=False) - sigma**2 * np.eye(y.shape[1])


def oracle_transport(mean: np.ndarray, cov: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """``(M, c)`` with ``T*(y) = M y + c``, ``M = S^{1/2} (S + sigma^2 I)^{-1/2}``, ``c = m - M m``."""
    s = np.asarray(cov, dtype=np.float64)
    root = np.real(sqrtm(s))
    inv_root = np.linalg.inv(np.real(sqrtm(s + sigma**2 * np.eye(len(s)))))
    m_map = root @ inv_root
    return m_map, np.asarray(mean) - m_map @ np.asarray(mean)


def covariance_error(x: np.ndarray, cov: np.ndarray) -> float:
    """``||Cov(x) - S||_F / ||S||_F``."""
    return float(np.linalg.norm(np.cov(np.asarray(x, dtype=np.float64), rowvar=False) - cov) / np.linalg.norm(cov))


def self_consistency_residual(recorrupted: np.ndarray, observed: np.ndarray) -> float:
    """``R(T) = ||Cov(A(T(y))) - Cov(y)||_F / ||Cov(y)||_F`` (second moments of the re-corrupted law)."""
    c_obs = np.cov(np.asarray(observed, dtype=np.float64), rowvar=False)
    return float(
        np.linalg.norm(np.cov(np.asarray(recorrupted, dtype=np.float64), rowvar=False) - c_obs) / np.linalg.norm(c_obs)
    )


def oracle_fixed_point_checks(
    y: np.ndarray, sigma: float, recorrupt: Callable[[np.ndarray], np.ndarray], mean: np.ndarray, cov: np.ndarray
) -> list[dict]:
    """Training-free check of the fixed point on observations ``y`` of N(mean, cov) under noise ``sigma``:
    the exact transport T* built from the deconvolved moments of ``y``, and the do-nothing map.

    For each map (``oracle`` first, then ``identity``): the mapped samples' mean error ``|mean(T y) - m|``,
    covariance error (:func:`covariance_error`) and self-consistency residual R against ``y`` after
    ``recorrupt`` (one fresh channel draw, e.g. ``A``) of the mapped samples. T* is a fixed point
    (R ~ 0), the identity is not (R ~ sigma^2 / |Cov(y)|)."""
    m_hat, s_hat = deconvolved_moments(y, sigma)
    mat, shift = oracle_transport(m_hat, s_hat, sigma)
    rows = []
    for name, mapped in (("oracle", y @ mat.T + shift), ("identity", y)):
        again = recorrupt(mapped)
        rows.append(
            dict(
                map=name,
                mean_error=float(np.linalg.norm(mapped.mean(0) - mean)),
                cov_error=covariance_error(mapped, cov),
                residual=self_consistency_residual(again, y),
                samples=len(y),
            )
        )
    return rows


def covariance_ellipse(cov: np.ndarray, mean: np.ndarray, scale: float = 2.0, points: int = 200) -> np.ndarray:
    """``points`` points (2, points) of the ``scale``-sigma ellipse ``{mean + S^1/2 u : |u| = scale}`` of N(mean, S)."""
    vals, vecs = np.linalg.eigh(cov)
    angle = np.linspace(0, 2 * np.pi, points)
    circle = np.stack([np.cos(angle), np.sin(angle)])
    return mean[:, None] + vecs @ (scale * np.sqrt(np.maximum(vals, 0))[:, None] * circle)
