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
    return float(np.linalg.norm(np.cov(np.asarray(recorrupted, dtype=np.float64), rowvar=False) - c_obs) / np.linalg.norm(c_obs))
