"""Theory of attention-indexed models (AIMs): exact Isserlis moments, the Gaussian reduction, the overlap algebra.

Xu, Sagitova, Zdeborová & Krzakala, arXiv 2609.03858. The loss depends on the tokens only through the bilinear forms
``G_ij(S) = x_i^T S x_j / sqrt(d)`` with ``x ~ N(0, C ⊗ I_d)``. Their first two moments are exact at every d
(Isserlis), their higher cumulants are traces of matrix products (so non-Gaussianity is O(1/d) for delocalised S),
and the population loss of a single-token model reduces to a 2-d Gaussian integral over ``(G, G*)`` whose covariance
is set by the overlaps ``q_kl = Tr(S_k S_l)/d`` (Corollary 1), evaluated with
:func:`theorylab.theory.hermite.gauss_hermite_nd`. The paper's moment ODE over words (eq. 11) and its truncation
(eq. 13) are in :mod:`theorylab.theory.moment_words`; :func:`words` here enumerates the same state.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

from theorylab.theory.hermite import gauss_hermite_nd

_LINKS = {
    "h1": lambda z: z,
    "h2": lambda z: (z * z - 1) / math.sqrt(2),
    "h3": lambda z: (z**3 - 3 * z) / math.sqrt(6),
}


def _np(a) -> np.ndarray:
    return a.detach().cpu().double().numpy() if hasattr(a, "detach") else np.asarray(a, dtype=np.float64)


def bilinear_moments(C, mats: Sequence, d: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean (K, L, L) and covariance (K, L, L, K, L, L) of the uncentred ``G_ij(S_k) = x_i^T S_k x_j/sqrt(d)``.

    Isserlis (paper, Sec. 2): ``E G_ij(S) = C_ij Tr S / sqrt(d)`` and ``Cov(G_ij(S), G_i'j'(S')) = C_ii' C_jj' Ω +
    C_ij' C_ji' Ψ`` with ``Ω = Tr(S S'^T)/d`` and ``Ψ = Tr(S S')/d``; valid for any (also non-symmetric) S.
    """
    C = _np(C)
    M = np.stack([_np(S) for S in mats])
    d = M.shape[-1] if d is None else d
    tr = np.trace(M, axis1=1, axis2=2)
    mean = C[None] * tr[:, None, None] / math.sqrt(d)
    omega = np.einsum("kab,lab->kl", M, M) / d  # Tr(S_k S_l^T)/d
    psi = np.einsum("kab,lba->kl", M, M) / d  # Tr(S_k S_l)/d
    cov = np.einsum("ik,jl,ab->aijbkl", C, C, omega) + np.einsum("il,jk,ab->aijbkl", C, C, psi)
    return mean, cov


def excess_kurtosis(S) -> float:
    """Exact excess kurtosis ``12 Tr(S^4) / Tr(S^2)^2`` of the single-token ``G(S)`` (symmetric S; any d)."""
    S = _np(S)
    S2 = S @ S
    return float(12 * np.trace(S2 @ S2) / np.trace(S2) ** 2)


def quadratic_form_cumulant(mats: Sequence) -> float:
    """Joint cumulant of the quadratic forms ``x^T A_k x`` (symmetric A_k, x ~ N(0, I)), k >= 2.

    ``κ(Q_1..Q_k) = 2^(k-1) Σ_σ Tr(A_1 A_σ(2) ... A_σ(k))`` over the (k-1)! orderings of the others; k = 2 gives
    ``2 Tr(A_1 A_2)``, and one matrix four times gives ``48 Tr A^4`` (hence :func:`excess_kurtosis`).
    """
    A = [_np(a) for a in mats]
    if len(A) < 2:
        raise ValueError("quadratic_form_cumulant needs at least two matrices")
    total = 0.0
    for perm in itertools.permutations(range(1, len(A))):
        P = A[0]
        for i in perm:
            P = P @ A[i]
        total += np.trace(P)
    return float(2 ** (len(A) - 1) * total)


def exact_loss_h2(S, S_star) -> float:
    """Exact finite-d population loss ``E ½(h2(G) - h2(G*))²`` of the single-token model (centred forms).

    ``¼ [E G^4 + E G*^4 - 2 E G² G*²]`` with the Gaussian parts from the overlaps and the fourth cumulants from
    :func:`quadratic_form_cumulant`: the O(1/d) non-Gaussian correction to :func:`gaussian_loss`, in closed form.
    """
    S, T = _np(S), _np(S_star)
    d = S.shape[0]
    a, b, c = (2 * np.trace(X @ Y) / d for X, Y in ((S, S), (T, T), (S, T)))
    k = lambda *m: quadratic_form_cumulant(m) / d**2  # noqa: E731
    e4, e4s = 3 * a * a + k(S, S, S, S), 3 * b * b + k(T, T, T, T)
    e22 = a * b + 2 * c * c + k(S, S, T, T)
    return float((e4 + e4s - 2 * e22) / 4)


def overlaps(mats: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """``t_k = Tr S_k / d`` (K,) and ``q_kl = Tr(S_k S_l)/d`` (K, K) of symmetric matrices."""
    M = np.stack([_np(S) for S in mats])
    d = M.shape[-1]
    return np.trace(M, axis1=1, axis2=2) / d, np.einsum("kab,lba->kl", M, M) / d


def structural(t: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``p_kl = q_kl - t_k t_l``: the overlaps of the traceless parts."""
    return np.asarray(q) - np.outer(t, t)


def rho(t: np.ndarray, q: np.ndarray, k: int = 0, l: int = 1) -> float:
    """Normalised overlap ``ρ = p_kl / sqrt(p_kk p_ll)``: the cosine between the traceless parts of S_k and S_l."""
    p = structural(t, q)
    return float(p[k, l] / math.sqrt(p[k, k] * p[l, l]))


def gaussian_loss(q11, q12, q22, link: str, nodes: int = 40) -> np.ndarray:
    """Gaussian reduction (Corollary 1): ``Φ = E ½(h(G) - h(G*))²``, ``(G, G*) ~ N(0, 2[[q11, q12], [q12, q22]])``.

    Exact for h1 at every d; for nonlinear links the true loss differs by O(1/d) (fourth cumulants). Vectorised
    over arrays of overlaps; 2-d tensor Gauss-Hermite with ``nodes`` per axis (exact for polynomial links of degree
    < 2 nodes).
    """
    if link not in _LINKS:
        raise ValueError(f"unknown link '{link}'; valid: {', '.join(_LINKS)}")
    q11, q12, q22 = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (q11, q12, q22)))
    z, w = gauss_hermite_nd(2, nodes)
    a, c, b = 2 * q11[..., None], 2 * q12[..., None], 2 * q22[..., None]
    sb = np.sqrt(b)
    g_star = sb * z[:, 0]
    slope = c / sb
    g = slope * z[:, 0] + np.sqrt(np.maximum(a - slope**2, 0.0)) * z[:, 1]
    h = _LINKS[link]
    return ((0.5 * (h(g) - h(g_star)) ** 2) * w).sum(-1)


def gaussian_loss_grad(q11, q12, q22, link: str, nodes: int = 40, eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """``(∂Φ/∂q11, ∂Φ/∂q12)`` by central differences of :func:`gaussian_loss` (Φ is polynomial in q for h1..h3)."""
    f = lambda a, c: gaussian_loss(a, c, q22, link, nodes)  # noqa: E731
    d11 = (f(q11 + eps, q12) - f(q11 - eps, q12)) / (2 * eps)
    d12 = (f(q11, q12 + eps) - f(q11, q12 - eps)) / (2 * eps)
    return d11, d12


def initial_rho_slope(
    t1: float,
    q11: float,
    q12: float,
    t2: float,
    q22: float,
    link: str,
    alpha: float,
    d: int,
    parametrisation: str = "tied",
    kappa: float = 0.5,
) -> float:
    """Population drift ``dρ/dn`` at ρ = 0 (per sample, step α per sample) of the tied or direct student.

    Direct S (``dS = -α ∇_S Φ``, ``∇_S Φ = (2/d) Φ_11 S + (1/d) Φ_12 S*``): ``dp12/dn = -(α/d) Φ_12 p22``.
    Tied S = κ W W^T (``dS = -2ακ (∇Φ S + S ∇Φ)``), with S and S* asymptotically free at ρ = 0
    (``Tr(S S*²)/d ≈ t1 q22``, ``q12 ≈ t1 t2``): ``dp12/dn = -(4ακ/d) Φ_12 t1 p22`` — the paper's tied
    weak-recovery slope ``∝ -[∇Φ]_12 t1(0) p22``, nonzero because a PSD student has ``t1 > 0``. Divided by
    ``sqrt(p11 p22)`` for ρ. For even links ``Φ_12 ∝ q12 ≈ t1 t2``, so a trace-free direct start has zero drift.
    """
    _, phi12 = gaussian_loss_grad(q11, q12, q22, link)
    p11, p22 = q11 - t1 * t1, q22 - t2 * t2
    if parametrisation == "tied":
        dp = -(4 * alpha * kappa / d) * float(phi12) * t1 * p22
    elif parametrisation == "direct":
        dp = -(alpha / d) * float(phi12) * p22
    else:
        raise ValueError(f"parametrisation must be 'tied' or 'direct'; got '{parametrisation}'")
    return dp / math.sqrt(p11 * p22)


def words(M: int, alphabet: Sequence[int] = (1, 2)) -> list[tuple[int, ...]]:
    """The moment-ODE state of the paper (Sec. 4): words over ``alphabet`` of length 1..M, i.e. the normalised
    traces ``Tr(S_{w1} ... S_{wk})/d``. Over {1, 2} there are ``2^(M+1) - 2`` of them (510 at M = 8)."""
    if M < 1:
        raise ValueError(f"M must be >= 1; got {M}")
    return [w for k in range(1, M + 1) for w in itertools.product(alphabet, repeat=k)]


def trace_moments(mats: Sequence, M: int) -> dict[tuple[int, ...], float]:
    """``Tr(S_{w1} ... S_{wk})/d`` for every word of length <= M (indices 1-based into ``mats``)."""
    A = [_np(S) for S in mats]
    d = A[0].shape[0]
    out = {}
    for w in words(M, tuple(range(1, len(A) + 1))):
        P = A[w[0] - 1]
        for i in w[1:]:
            P = P @ A[i - 1]
        out[w] = float(np.trace(P) / d)
    return out
