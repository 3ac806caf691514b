"""The two-timescale Grassmann flow of Gaussian multi-index models and its r x r overlap ODE.

Bietti, Bruna & Pillaud-Vivien, *On learning Gaussian multi-index models with gradient flow*, arXiv 2310.19793
(CPAM 78(12), 2025). Target ``F(x) = f*(W*^T x)``, ``x ~ N(0, I_d)``, ``W*`` (d, r) orthonormal; student subspace
``W`` (d, r) orthonormal; overlap ``M = W*^T W`` (r x r, rows: teacher directions, columns: student directions).

Convention (fixed here and tested): with ``u = W*^T x`` and ``z = W^T x``, ``Cov(u, z) = M`` so ``u | z ~
N(Mz, I - M M^T)`` and ``E[f*(u) | z] = (A_M f*)(z)`` with the averaging operator

    A_M g(z) = E_xi g(M z + (I - M M^T)^{1/2} xi),   xi ~ N(0, I_r),  ||M||_op <= 1.

Then ``A_{M1} A_{M2} = A_{M2 M1}`` (semigroup) and on Hermite tensors ``A_M <C, He_k> = <(M^T)^{⊗k} C, He_k>``
(1-D: ``A_m He_k = m^k He_k``). A link ``f* = sum_k <C_k, He_k>`` is given by a dict ``{k: C_k}`` of symmetric
tensors (or a :class:`theorylab.data.index_models.HermiteLink`).

- Two-timescale loss (the link refitted infinitely fast, so it equals ``A_M f*``; reconstructed from the paper's
  summary): ``Phi(M) = ||f*||^2 - ||A_M f*||^2`` with ``||A_M f*||^2 = sum_k k! <C_k, (M M^T)^{⊗k} C_k>``.
- Grassmann flow ``dW/dt = -(I - W W^T) grad_W Phi`` closes as ``dM/dt = -(I - M M^T) grad_M Phi(M)``.
- Planted flow (link fixed to f*): loss ``2||f*||^2 - 2 sum_k k! <C_k, M^{⊗k} C_k>`` with the same projection.
- r = 1, pure ``He_k/sqrt(k!)``: ``dm/dt = 2k (1 - m^2) m^(2k-1)``; the time from ``m0 = d^{-1/2}`` to 1/2 is
  ``t_k(d) = int_{1/d}^{1/4} ds / (4k (1 - s) s^k)``.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

import numpy as np
from scipy.integrate import quad

from theorylab.theory.hermite import gauss_hermite_nd, hermite_tensor

Coeffs = Mapping[int, np.ndarray]


def _coeffs(link) -> dict[int, np.ndarray]:
    """``{k: C_k}`` (k >= 1: the constant is always learnt and never enters Phi) from a dict or a HermiteLink."""
    c = getattr(link, "coeffs", link)
    return {int(k): np.asarray(v, dtype=np.float64) for k, v in c.items() if int(k) >= 1}


def contract(C: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``(M^T)^{⊗k} C``: ``T_{b1..bk} = sum_a C_{a1..ak} M_{a1 b1} ... M_{ak bk}``."""
    T = np.asarray(C, dtype=np.float64)
    for _ in range(T.ndim):
        T = np.tensordot(T, M, axes=([0], [0]))  # contracts the leading axis, appends the new one: order kept
    return T


def link_norm2(link) -> float:
    """``||f*||^2 - f*_0^2 = sum_{k>=1} k! ||C_k||_F^2``."""
    return float(sum(math.factorial(k) * np.sum(C**2) for k, C in _coeffs(link).items()))


def _unfolded(link) -> list[tuple[int, float, np.ndarray]]:
    """``(k, k!, C_k unfolded as (r, r^(k-1)))`` per order: with it ``U_k = C_(1) (M^{⊗(k-1)})`` is one matmul."""
    return [
        (k, float(math.factorial(k)), C.reshape(C.shape[0], -1) if k > 1 else C.reshape(-1, 1))
        for k, C in _coeffs(link).items()
    ]


def _partials(M: np.ndarray, unfolded) -> list[tuple[int, float, np.ndarray]]:
    """``(k, k!, U_k)`` with ``U_{a,(b2..bk)} = sum C_{a,a2..ak} M_{a2 b2} ... M_{ak bk}`` (Kronecker powers of M)."""
    out, kron, power = [], None, 0
    for k, fact, C1 in sorted(unfolded, key=lambda x: x[0]):
        while power < k - 1:  # C-order Kronecker products index (a2..ak) as C's unfolding does
            kron, power = (M if kron is None else np.kron(kron, M)), power + 1
        out.append((k, fact, C1 if kron is None else C1 @ kron))
    return out


def averaged_norm2(M: np.ndarray, link) -> float:
    """``||A_M f*||^2 - f*_0^2 = sum_k k! ||(M^T)^{⊗k} C_k||^2 = sum_k k! <C_k, (M M^T)^{⊗k} C_k>``."""
    M = np.asarray(M, dtype=np.float64)
    return float(sum(fact * np.sum((M.T @ U) ** 2) for k, fact, U in _partials(M, _unfolded(link))))


def phi(M: np.ndarray, link) -> float:
    """Two-timescale population loss ``Phi(M) = ||f*||^2 - ||A_M f*||^2`` (arXiv 2310.19793, Sec. 3; reconstructed)."""
    return link_norm2(link) - averaged_norm2(M, link)


def _grad(M: np.ndarray, unfolded) -> np.ndarray:
    g = np.zeros_like(M)
    for k, fact, U in _partials(M, unfolded):
        g -= fact * 2 * k * (U @ (U.T @ M))  # d/dM ||M^T U||^2 over the k symmetric slots of C_k
    return g


def grad_phi(M: np.ndarray, link) -> np.ndarray:
    """``grad_M Phi = -sum_k 2k k! U_k U_k^T M`` in closed form (C_k symmetric; ``U_k`` as in :func:`_partials`)."""
    return _grad(np.asarray(M, dtype=np.float64), _unfolded(link))


def grassmann_rhs(link) -> Callable[[float, np.ndarray], np.ndarray]:
    """``dM/dt = -(I - M M^T) grad_M Phi(M)``: the r x r closure of the two-timescale Grassmann flow."""
    unfolded = _unfolded(link)

    def rhs(t: float, M: np.ndarray) -> np.ndarray:
        return -(np.eye(len(M)) - M @ M.T) @ _grad(M, unfolded)

    return rhs


def planted_loss(M: np.ndarray, link) -> float:
    """Loss with the link fixed to f*: ``E (f*(u) - f*(z))^2 = 2||f*||^2 - 2 sum_k k! <C_k, M^{⊗k} C_k>``."""
    M = np.asarray(M, dtype=np.float64)
    cross = sum(math.factorial(k) * np.sum(C * contract(C, M)) for k, C in _coeffs(link).items())
    return 2 * link_norm2(link) - 2 * float(cross)


def grad_planted(M: np.ndarray, link) -> np.ndarray:
    """``grad_M`` of :func:`planted_loss`: ``-2 sum_k k! k U_k C_(1)^T`` (``U_k`` as in :func:`_partials`)."""
    M = np.asarray(M, dtype=np.float64)
    unfolded = _unfolded(link)
    g = np.zeros_like(M)
    for (k, fact, U), (_, _, C1) in zip(_partials(M, unfolded), sorted(unfolded, key=lambda x: x[0])):
        g -= 2 * fact * k * (U @ C1.T)
    return g


def planted_rhs(link) -> Callable[[float, np.ndarray], np.ndarray]:
    """The planted flow ``dM/dt = -(I - M M^T) grad_M L_planted(M)``."""
    coeffs = _coeffs(link)

    def rhs(t: float, M: np.ndarray) -> np.ndarray:
        return -(np.eye(len(M)) - M @ M.T) @ grad_planted(M, coeffs)

    return rhs


def _sqrt_psd(A: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh((A + A.T) / 2)
    return (vecs * np.sqrt(np.clip(vals, 0, None))) @ vecs.T


def average(g: Callable[[np.ndarray], np.ndarray], M: np.ndarray, z: np.ndarray, nodes: int = 20) -> np.ndarray:
    """``(A_M g)(z)`` for points ``z`` (n, r) by tensor Gauss-Hermite quadrature (exact for polynomial ``g`` of
    degree < 2*nodes per coordinate). ``g`` maps (m, r) to (m,)."""
    M = np.asarray(M, dtype=np.float64)
    z = np.atleast_2d(np.asarray(z, dtype=np.float64))
    r = M.shape[0]
    if np.linalg.norm(M, 2) > 1 + 1e-12:
        raise ValueError(f"A_M needs ||M||_op <= 1; got {np.linalg.norm(M, 2):.6g}")
    xi, w = gauss_hermite_nd(r, nodes)
    S = _sqrt_psd(np.eye(r) - M @ M.T)
    args = (z @ M.T)[:, None, :] + (xi @ S.T)[None, :, :]  # (n, q, r)
    vals = np.asarray(g(args.reshape(-1, r)), dtype=np.float64).reshape(len(z), len(w))
    return vals @ w


def averaged_link(M: np.ndarray, link, z: np.ndarray) -> np.ndarray:
    """``(A_M f*)(z) = sum_k <(M^T)^{⊗k} C_k, He_k(z)>`` in closed form (k <= 4; constant included)."""
    M = np.asarray(M, dtype=np.float64)
    z = np.atleast_2d(np.asarray(z, dtype=np.float64))
    c = getattr(link, "coeffs", link)
    out = np.full(len(z), float(np.asarray(c.get(0, 0.0))))
    for k, C in _coeffs(link).items():
        T = contract(C, M)
        out += np.tensordot(hermite_tensor(k, z), T, axes=k)
    return out


# --- escape times (r = 1, pure He_k) --------------------------------------------------------------


def escape_time(k: int, d: float, target: float = 0.5) -> float:
    """``t_k(d) = int_{1/d}^{target^2} ds / (4k (1 - s) s^k)``: the time ``dm/dt = 2k(1 - m^2) m^(2k-1)`` takes from
    ``m0 = d^{-1/2}`` to ``target`` (integrated in ``log s`` so that ``s^-k`` over decades stays accurate)."""
    if k < 1 or d <= 1 / target**2:
        raise ValueError(f"escape_time needs k >= 1 and d > 1/target^2; got k = {k}, d = {d}")

    def f(u):  # s = e^u, ds = s du
        s = math.exp(u)
        return s ** (1 - k) / (4 * k * (1 - s))

    val, _ = quad(f, -math.log(d), 2 * math.log(target), epsabs=0, epsrel=1e-13, limit=500)
    return float(val)


def escape_time_asymptotic(k: int, d: float) -> float:
    """``t_1 = ln((d - 1)/3)/4`` (exact, logistic) and ``t_k ~ d^(k-1) / (4k(k - 1))`` for k >= 2."""
    if k == 1:
        return math.log((d - 1) / 3) / 4
    return d ** (k - 1) / (4 * k * (k - 1))


def escape_rhs_1d(k: int) -> Callable[[float, np.ndarray], np.ndarray]:
    """``dm/dt = 2k (1 - m^2) m^(2k-1)`` (the Grassmann flow of pure He_k/sqrt(k!), r = 1) on a (1, 1) state."""

    def rhs(t: float, m: np.ndarray) -> np.ndarray:
        return 2 * k * (1 - m**2) * m ** (2 * k - 1)

    return rhs
