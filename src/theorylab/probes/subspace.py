"""How well an estimated subspace captures hidden directions.

``U`` (d, r) holds the true orthonormal directions; ``B`` (d, r_hat) spans the estimate (orthonormalised here).
"""

from __future__ import annotations

import numpy as np


def orthonormal(b: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the column span of ``b`` (d, k)."""
    q, _ = np.linalg.qr(np.asarray(b, dtype=np.float64))
    return q


def captures(b: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``c_i = |P_B u_i|^2`` for each true direction ``u_i``: (r,). 1 = fully captured, ~r_hat/d = chance."""
    q = orthonormal(b)
    return ((q.T @ np.asarray(u, dtype=np.float64)) ** 2).sum(axis=0)


def overlap(b: np.ndarray, u: np.ndarray) -> float:
    """``|P_B P_U|_F^2 / r``: the mean capture, in [0, 1]."""
    return float(captures(b, u).mean())


def principal_angles(b: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Principal angles (radians, ascending) between span(b) and span(u)."""
    s = np.linalg.svd(orthonormal(b).T @ orthonormal(u), compute_uv=False)
    return np.sort(np.arccos(np.clip(s, -1.0, 1.0)))


def projector_distance(b: np.ndarray, u: np.ndarray) -> float:
    """``|P_B - P_U|_F``."""
    qb, qu = orthonormal(b), orthonormal(u)
    return float(np.linalg.norm(qb @ qb.T - qu @ qu.T))
