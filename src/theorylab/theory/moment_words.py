"""The moment ODE over words of tied attention, truncated at word length M (paper eq. 11 and eq. 13).

Xu, Sagitova, Zdeborová & Krzakala, *High-dimensional learning dynamics of attention-indexed models*, arXiv
2609.03858, Sec. 3.1. For tied matrices ``S_k = W_k W_k^T`` trained by online SGD with per-sample step ``α_d``, the
moments over words ``α = (k_1, ..., k_w)``

    μ_α = Tr[S_k1 S_k2 ... S_kw] / d                                                          (eq. 8)

obey, on the time ``t = n · 4α_d / d`` (n samples), the hierarchy (eq. 11)

    dμ_α/dt = - Σ_{i: k_i trainable} Σ_l Γ_{k_i l}(q) (μ_{α with l inserted before k_i} + μ_{α with l inserted after
              k_i}) - (γ/2) |α|_K μ_α,

driven by the potential ``Φ(q)`` (the Gaussian population loss, eq. 10) through ``Γ = ∇Φ(q)`` with the convention
``Γ_kk = ∂Φ/∂q_kk`` and ``Γ_kl = ½ ∂Φ/∂q_kl`` (k ≠ l, the symmetric ``q_kl = q_lk`` counted once), so that
``∇_{S_k} Φ = (2/d) Σ_l Γ_kl S_l`` and the matrix flow is ``dS_k/dt = -Σ_l Γ_kl (S_l S_k + S_k S_l) - (γ/2) S_k``.
Check (App. D.3): ``Φ = 2 q11 + 2 q22 - 4 q12`` gives ``Γ11 = 2, Γ12 = -2``. The second moments ``q_kl = μ_(k,l)``
feed Φ, the words of length w feed those of length w - 1: the hierarchy does not close. The degree-M truncation
(eq. 13) keeps the words of length <= M and sets the longer ones to 0; Corollary 2 bounds its error by
``c (C*²/s0)^(M+1) s0^|α|``. Letters are 0-based here (letter 0 is the paper's index 1).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Callable, Sequence

import numpy as np
from scipy.integrate import solve_ivp

from theorylab.theory.hermite import gauss_hermite_nd

Potential = Callable[[np.ndarray], float]


class WordAlgebra:
    """The truncated hierarchy (eq. 13) as linear operators on the vector of moments over words of length 1..M.

    ``K`` letters, of which ``trainable`` evolve (the others, e.g. a teacher, are fixed). ``insert[(k, l)]`` is the
    (N, N) matrix of the insertion ``Σ_{i: k_i = k} (μ_{..l k_i..} + μ_{..k_i l..})``; words longer than M drop out.
    """

    def __init__(self, M: int, K: int = 2, trainable: Sequence[int] = (0,)):
        if M < 2:
            raise ValueError(f"the truncation degree M must be >= 2 (Φ needs the words of length 2); got {M}")
        if not set(trainable) <= set(range(K)) or not trainable:
            raise ValueError(f"trainable must be a non-empty subset of 0..{K - 1}; got {trainable}")
        self.M, self.K, self.trainable = M, K, tuple(sorted(set(trainable)))
        self.words = [w for n in range(1, M + 1) for w in itertools.product(range(K), repeat=n)]
        self.index = {w: i for i, w in enumerate(self.words)}
        N = len(self.words)
        self.insert = {}
        for k in self.trainable:
            for l in range(K):
                A = np.zeros((N, N))
                for a, w in enumerate(self.words):
                    for i, letter in enumerate(w):
                        if letter != k:
                            continue
                        for new in (w[:i] + (l,) + w[i:], w[: i + 1] + (l,) + w[i + 1 :]):
                            b = self.index.get(new)  # None: longer than M, truncated to 0
                            if b is not None:
                                A[a, b] += 1.0
                self.insert[k, l] = A
        self.n_trainable = np.array([sum(c in self.trainable for c in w) for w in self.words], dtype=float)
        self._q_index = np.array([[self.index[(k, l)] for l in range(K)] for k in range(K)])

    def __len__(self) -> int:
        return len(self.words)

    def q(self, mu: np.ndarray) -> np.ndarray:
        """The second moments ``q_kl = μ_(k,l)`` (K, K) of a moment vector (or (..., N) stack: (..., K, K))."""
        return np.asarray(mu)[..., self._q_index]

    def moments(self, mats: Sequence) -> np.ndarray:
        """The exact ``μ_α = Tr[S_k1 ... S_kw]/d`` of matrices ``mats`` (K of them) for every word of length <= M."""
        A = [np.asarray(S.detach().cpu().double() if hasattr(S, "detach") else S, dtype=np.float64) for S in mats]
        if len(A) != self.K:
            raise ValueError(f"need {self.K} matrices; got {len(A)}")
        d = A[0].shape[0]
        prods: dict[tuple[int, ...], np.ndarray] = {}
        out = np.empty(len(self.words))
        for a, w in enumerate(self.words):  # words are ordered by length: the prefix product is already there
            P = A[w[0]] if len(w) == 1 else prods[w[:-1]] @ A[w[-1]]
            if len(w) < self.M:
                prods[w] = P
            out[a] = np.trace(P) / d
        return out

    def rhs(self, mu: np.ndarray, gamma: np.ndarray, weight_decay: float = 0.0) -> np.ndarray:
        """Right side of eq. 11 (truncated) for the moment vector ``mu`` and ``Γ = ∇Φ`` (K, K)."""
        out = -0.5 * weight_decay * self.n_trainable * mu
        for (k, l), A in self.insert.items():
            if gamma[k, l] != 0:
                out -= gamma[k, l] * (A @ mu)
        return out


def gamma_from_potential(phi: Potential, q: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """``Γ = ∇Φ(q)`` (K, K) by central differences: ``Γ_kk = ∂Φ/∂q_kk``, ``Γ_kl = ½ ∂Φ/∂q_kl`` (q_kl = q_lk moved
    together), the paper's convention (App. D.3: ``Φ = 2q11 + 2q22 - 4q12`` gives ``Γ11 = 2``, ``Γ12 = -2``)."""
    q = np.asarray(q, dtype=np.float64)
    K = q.shape[0]
    g = np.zeros((K, K))
    for k in range(K):
        for l in range(k, K):
            E = np.zeros((K, K))
            E[k, l] = E[l, k] = eps
            deriv = (phi(q + E) - phi(q - E)) / (2 * eps)
            g[k, l] = g[l, k] = deriv if k == l else 0.5 * deriv
    return g


def integrate(
    alg: WordAlgebra,
    mu0: np.ndarray,
    phi: Potential,
    times: np.ndarray,
    weight_decay: float = 0.0,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    blow_up_at: float = 1e3,
) -> np.ndarray:
    """Integrate the truncated eq. 11 from ``mu0`` (the words of ``alg``) to ``times`` (t = n 4α_d/d): (T, N).

    LSODA (SciPy; a truncated system can turn stiff). A truncated trajectory that leaves the PSD cone of q is
    evaluated with the potential's own clipping; one whose moments pass ``blow_up_at`` in size stops there (NaN from
    then on).
    """
    times = np.asarray(times, dtype=np.float64)
    mu0 = np.asarray(mu0, dtype=np.float64)
    if mu0.shape != (len(alg),):
        raise ValueError(f"mu0 must have one entry per word ({len(alg)}); got {mu0.shape}")

    def f(_t, mu):
        return alg.rhs(mu, gamma_from_potential(phi, alg.q(mu)), weight_decay)

    def blow_up(_t, mu):
        return blow_up_at - np.abs(mu).max()

    blow_up.terminal = True
    sol = solve_ivp(f, (0.0, float(times[-1])), mu0, t_eval=times, rtol=rtol, atol=atol, method="LSODA", events=blow_up)
    out = np.full((len(times), len(alg)), np.nan)
    out[: sol.y.shape[1]] = sol.y.T
    return out


def matrix_flow(
    mats: Sequence[np.ndarray],
    phi: Potential,
    times: np.ndarray,
    trainable: Sequence[int] = (0,),
    weight_decay: float = 0.0,
) -> list[list[np.ndarray]]:
    """The finite-d matrix flow ``dS_k/dt = -Σ_l Γ_kl (S_l S_k + S_k S_l) - (γ/2) S_k`` (k trainable) that eq. 11
    describes exactly (every word kept): the reference the truncation must approach. Returns the matrices per time."""
    A = [np.asarray(S, dtype=np.float64) for S in mats]
    K, d = len(A), A[0].shape[0]

    def q_of(Ss):
        return np.array([[np.trace(Ss[k] @ Ss[l]) / d for l in range(K)] for k in range(K)])

    def f(_t, y):
        Ss = list(y.reshape(K, d, d))
        g = gamma_from_potential(phi, q_of(Ss))
        out = np.zeros_like(y).reshape(K, d, d)
        for k in trainable:
            out[k] = -sum(g[k, l] * (Ss[l] @ Ss[k] + Ss[k] @ Ss[l]) for l in range(K)) - 0.5 * weight_decay * Ss[k]
        return out.reshape(-1)

    times = np.asarray(times, dtype=np.float64)
    sol = solve_ivp(f, (0.0, float(times[-1])), np.stack(A).reshape(-1), t_eval=times, rtol=1e-10, atol=1e-12)
    return [list(y.reshape(K, d, d)) for y in sol.y.T]


@functools.lru_cache(maxsize=8)
def _nodes(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    return gauss_hermite_nd(2, nodes)


def softmax2_potential(q: np.ndarray, nodes: int = 40) -> float:
    """Φ(q) of the L = 2 softmax model with MSE (tokens ``N(0, I_2 ⊗ I_d)``, centred forms, K = 2: student, teacher).

    The loss ``½ ‖softmax(G_1) - softmax(G_2)‖_F²`` of the row-wise softmax of the 2×2 forms ``G_k`` equals
    ``(σ(a_1) - σ(a_2))² + (σ(b_1) - σ(b_2))²`` with ``a_k = G_11k - G_12k``, ``b_k = G_21k - G_22k``; under the
    covariance of eq. 10 (C = I: Var G_iik = 2 q_kk, Var G_12k = q_kk, G symmetric) both pairs are
    ``N(0, 3 q)``, so ``Φ = 2 E[(σ(a_1) - σ(a_2))²]``, ``(a_1, a_2) ~ N(0, 3 q)``: a 2-d Gauss-Hermite integral.
    """
    q = np.asarray(q, dtype=np.float64)
    z, w = _nodes(nodes)
    a11, a12, a22 = 3 * q[0, 0], 3 * q[0, 1], 3 * q[1, 1]
    s2 = math.sqrt(max(a22, 1e-300))
    a2 = s2 * z[:, 0]
    slope = a12 / s2
    a1 = slope * z[:, 0] + math.sqrt(max(a11 - slope * slope, 0.0)) * z[:, 1]
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    return float(2 * ((sig(a1) - sig(a2)) ** 2 * w).sum())
