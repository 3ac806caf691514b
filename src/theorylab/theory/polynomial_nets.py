"""Closed forms for shallow polynomial networks (Arjevani, Bruna, Kileel, Polak & Trager, arXiv 2501.06074).

k = 2 and Gaussian data: E[(x^T B x)^2] = 2||B||_F^2 + (tr B)^2, so the teacher-student loss of A = W^T diag(a) W is
L(A) = 2||A - A*||_F^2 + (tr(A - A*))^2 with function-space gradient G = 4(A - A*) + 2 tr(A - A*) I. For a teacher
A* with distinct eigenpairs (lambda_j, v_j), the critical points with nonzero output weights are (our derivation,
the card's reconstruction of the paper's Eckart-Young variant) A_S = sum_{i in S} (lambda_i + t_S) v_i v_i^T with
t_S = sum_{j not in S} lambda_j / (s + 2) and L(S) = 2 sum_{j not in S} lambda_j^2 + 2 (sum_{j not in S}
lambda_j)^2 / (s + 2), s = |S|.

General k: the dimension of the set of rank-<= r symmetric tensors (Alexander-Hirschowitz) and a numerical check of
it, the rank of the Jacobian of theta -> (sum_i a_i <w_i, x_n>^k)_n at random points (Terracini).
"""

from __future__ import annotations

import itertools
from math import comb

import numpy as np

__all__ = [
    "AH_EXCEPTIONS",
    "ah_dimension",
    "critical_points",
    "critical_value",
    "derived_index",
    "expected_dimension",
    "fibre_dimension",
    "gaussian_gradient",
    "gaussian_loss",
    "gaussian_quadratic_moment",
    "generic_rank",
    "global_minimum",
    "jacobian_rank",
    "polynomial_jacobian",
    "rademacher_quadratic_moment",
    "realise",
    "saddle_slopes",
    "t_shift",
]

AH_EXCEPTIONS = frozenset({(3, 4, 5), (4, 4, 9), (5, 4, 14), (5, 3, 7)})
"""(d, k, r) with d variables, degree k >= 3 and rank r where the dimension is one less than expected."""


def gaussian_quadratic_moment(B: np.ndarray) -> np.ndarray:
    """E[(x^T B x)^2] for x ~ N(0, I) and symmetric B (..., d, d): 2||B||_F^2 + (tr B)^2."""
    B = np.asarray(B, float)
    return 2 * (B**2).sum(axis=(-1, -2)) + np.trace(B, axis1=-2, axis2=-1) ** 2


def rademacher_quadratic_moment(B: np.ndarray) -> np.ndarray:
    """E[(x^T B x)^2] for x uniform on {+-1}^d and symmetric B: (tr B)^2 + 2 sum_{i != j} B_ij^2."""
    B = np.asarray(B, float)
    diag = np.diagonal(B, axis1=-2, axis2=-1)
    return np.trace(B, axis1=-2, axis2=-1) ** 2 + 2 * ((B**2).sum(axis=(-1, -2)) - (diag**2).sum(-1))


def gaussian_loss(A: np.ndarray, A_star: np.ndarray) -> np.ndarray:
    """L(A) = E[(x^T (A - A*) x)^2], x ~ N(0, I)."""
    return gaussian_quadratic_moment(np.asarray(A, float) - np.asarray(A_star, float))


def gaussian_gradient(A: np.ndarray, A_star: np.ndarray) -> np.ndarray:
    """Function-space gradient G = 4(A - A*) + 2 tr(A - A*) I."""
    D = np.asarray(A, float) - np.asarray(A_star, float)
    return 4 * D + 2 * np.trace(D) * np.eye(D.shape[-1])


def _check_spectrum(lam: np.ndarray) -> np.ndarray:
    lam = np.asarray(lam, float)
    if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)):
        raise ValueError(f"eigenvalues must be a finite non-empty 1-d array; got shape {lam.shape}")
    return lam


def t_shift(lam: np.ndarray, S) -> float:
    """t_S = sum_{j not in S} lambda_j / (|S| + 2)."""
    lam = _check_spectrum(lam)
    out = np.ones(lam.size, bool)
    out[list(S)] = False
    return float(lam[out].sum() / (len(S) + 2))


def critical_value(lam: np.ndarray, S) -> float:
    """L(S) = 2 sum_{j not in S} lambda_j^2 + 2 (sum_{j not in S} lambda_j)^2 / (|S| + 2)."""
    lam = _check_spectrum(lam)
    out = np.ones(lam.size, bool)
    out[list(S)] = False
    return float(2 * (lam[out] ** 2).sum() + 2 * lam[out].sum() ** 2 / (len(S) + 2))


def critical_points(lam: np.ndarray, r: int) -> list[dict]:
    """Every index set S with |S| <= r: S, s, t_S, the coefficients alpha_i = lambda_i + t_S and L(S)."""
    lam = _check_spectrum(lam)
    if r < 0:
        raise ValueError(f"r must be >= 0; got {r}")
    rows = []
    for s in range(min(r, lam.size) + 1):
        for S in itertools.combinations(range(lam.size), s):
            t = t_shift(lam, S)
            rows.append(dict(S=S, s=s, t=t, alpha=tuple(float(lam[i] + t) for i in S), loss=critical_value(lam, S)))
    return rows


def global_minimum(lam: np.ndarray, r: int) -> dict:
    """The critical point of smallest L(S) over |S| = min(r, d)."""
    lam = _check_spectrum(lam)
    top = [p for p in critical_points(lam, r) if p["s"] == min(r, lam.size)]
    return min(top, key=lambda p: p["loss"])


def saddle_slopes(lam: np.ndarray, S) -> np.ndarray:
    """First-order change of L per unit eps along A_S + eps v_j v_j^T, for every j not in S: -4(lambda_j + t_S)."""
    lam = _check_spectrum(lam)
    t = t_shift(lam, S)
    return np.array([-4 * (lam[j] + t) for j in range(lam.size) if j not in set(S)])


def derived_index(lam: np.ndarray, S) -> int:
    """Hessian index at A_S with |S| = r (ours, not the paper's transcribed formula): on the rank-r manifold the
    second variation is block-diagonal, positive on the span of {v_i, i in S} (L is convex there) and equal to
    8 alpha_i (lambda_i - lambda_j) c_ij^2 on the mixing direction (i in S, j not in S), alpha_i = lambda_i + t_S.
    So the index is #{(i, j): i in S, j not in S, (lambda_i + t_S)(lambda_i - lambda_j) < 0}."""
    lam = _check_spectrum(lam)
    t = t_shift(lam, S)
    inside = set(S)
    return int(sum((lam[i] + t) * (lam[i] - lam[j]) < 0 for i in S for j in range(lam.size) if j not in inside))


def realise(lam: np.ndarray, V: np.ndarray, S, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Parameters of A_S at width r: rows sqrt|alpha_i| v_i^T with a_i = sign(alpha_i) for i in S, then zero rows
    with a = 1."""
    lam = _check_spectrum(lam)
    if len(S) > r:
        raise ValueError(f"|S| = {len(S)} exceeds the width r = {r}")
    t = t_shift(lam, S)
    W = np.zeros((r, lam.size))
    a = np.ones(r)
    for row, i in enumerate(S):
        alpha = lam[i] + t
        W[row] = np.sqrt(abs(alpha)) * V[:, i]
        a[row] = np.sign(alpha) if alpha != 0 else 1.0
    return W, a


# --- dimensions (Alexander-Hirschowitz) -----------------------------------------------------------------------------


def _check_dkr(d: int, k: int, r: int) -> None:
    if d < 1 or k < 1 or r < 0:
        raise ValueError(f"need d >= 1, k >= 1, r >= 0; got d={d}, k={k}, r={r}")


def expected_dimension(d: int, k: int, r: int) -> int:
    """min(r d, binom(d + k - 1, k))."""
    _check_dkr(d, k, r)
    return min(r * d, comb(d + k - 1, k))


def ah_dimension(d: int, k: int, r: int) -> int:
    """Dimension of the rank-<= r symmetric d^k tensors (the function space of width-r, degree-k networks)."""
    _check_dkr(d, k, r)
    if k == 1:
        return d if r >= 1 else 0
    if k == 2:
        return r * d - r * (r - 1) // 2 if r <= d else comb(d + 1, 2)
    return expected_dimension(d, k, r) - ((d, k, r) in AH_EXCEPTIONS)


def generic_rank(d: int, k: int) -> int:
    """Smallest r whose rank-<= r set is full-dimensional (the complex generic rank; the paper's thick threshold).

    For k >= 3 this is ceil(binom(d + k - 1, k) / d), plus one at the AH exceptions; for k = 2 it is d. Over the
    reals a larger width may be needed to fill the whole space (typical ranks)."""
    full = comb(d + k - 1, k)
    r = 1
    while ah_dimension(d, k, r) < full:
        r += 1
    return r


def fibre_dimension(d: int, k: int, r: int) -> int:
    """r(d + 1) - dim: the dimension of the generic parameter fibre (r(r + 1)/2 for k = 2, r <= d)."""
    return r * (d + 1) - ah_dimension(d, k, r)


def polynomial_jacobian(W: np.ndarray, a: np.ndarray, X: np.ndarray, k: int) -> np.ndarray:
    """d f(x_n) / d(W, a) for f = sum_i a_i <w_i, x>^k: (N, r(d + 1)), columns in ``flatten_params`` order."""
    Z = X @ W.T  # (N, r)
    dW = (k * a * Z ** (k - 1))[:, :, None] * X[:, None, :]  # (N, r, d)
    return np.concatenate([dW.reshape(len(X), -1), Z**k], axis=1)


def jacobian_rank(d: int, k: int, r: int, rng: np.random.Generator, extra: int = 40, rtol: float = 1e-9) -> dict:
    """Numerical rank (SVD, singular values > rtol * largest) of the Jacobian at a random point, evaluated at
    N = binom(d + k - 1, k) + extra random points on the sphere; also the largest rejected / smallest kept ratio."""
    _check_dkr(d, k, r)
    N = comb(d + k - 1, k) + extra
    X = rng.standard_normal((N, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    W = rng.standard_normal((r, d))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    a = rng.choice((-1.0, 1.0), size=r) if k % 2 == 0 else np.ones(r)
    sv = np.linalg.svd(polynomial_jacobian(W, a, X, k), compute_uv=False)
    rank = int((sv > rtol * sv[0]).sum())
    kept = sv[rank - 1] / sv[0] if rank else 0.0
    gap = sv[rank] / sv[0] if rank < len(sv) else 0.0
    return dict(d=d, k=k, r=r, points=N, rank=rank, smallest_kept=float(kept), largest_dropped=float(gap))
