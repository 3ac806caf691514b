"""The query-key bilinear operator of attention heads and its geometry (extraction from a model:
:mod:`theorylab.probes.bilinear_operators`).

Convention (stated in every output): tokens are row vectors entering as ``x`` (the residual stream
after the layer's pre-attention norm), and a head's pre-softmax score is

    s_ij = x_i M x_jᵀ   (equivalently x_iᵀ M x_j for column vectors),

*including* the 1/√d_head scale. With ``nn.Linear`` weights stored (out, in), ``q = x W_qᵀ`` and
``M = W_qᵀ W_k / √d_h``; with GPT-2's Conv1D weights stored (in, out), ``M = W_q W_kᵀ / √d_h``.
Grouped-query attention: one M per *query* head, with the key head it shares. RoPE makes M depend on
the relative position; :func:`~theorylab.probes.bilinear_operators.head_operators` then returns M at
zero offset and flags ``rope``.
Query/key biases add terms outside M: a key bias only a row constant (invisible to softmax), a query
bias ``b_q`` the key-side term ``(W_kᵀ b_q/√d_h) · x_j``, kept as ``HeadOperator.key_term``.

Measurements (arXiv 2607.06621, bilinear-attention-operator; query-key asymmetry): the symmetric /
skew split ``S = (M + Mᵀ)/2``, ``A = (M − Mᵀ)/2`` (‖M‖² = ‖S‖² + ‖A‖²), the symmetry score
``‖S‖²/‖M‖²``, the directionality score of the anchor code, the inertia of S, the rotation content
of M's eigenvalues, and the balanced factorisation (the canonical gauge of W_Q, W_K).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class HeadOperator:
    layer: int
    head: int
    M: Tensor  # (d, d): s_ij = x_i M x_jᵀ, scale included
    key_head: int
    rope: bool = False
    convention: str = "s_ij = x_i M x_j^T (row vectors), 1/sqrt(d_head) included"
    # (d,): the query bias seen through the keys, s_ij += key_term · x_j (None: no query bias)
    key_term: Tensor | None = None
    query: Tensor | None = None  # (d_h, d): with ``key``, M = queryᵀ key (the 1/√d_h scale folded into ``query``)
    key: Tensor | None = None  # (d_h, d)

    def scores(self, x: Tensor) -> Tensor:
        """``x M xᵀ + 1 (key_term · x)ᵀ`` for tokens ``x: (..., T, d)``: the module's logits up to a
        per-row constant (the key bias only adds ``q_i · b_k``, constant in j, which softmax ignores)."""
        s = x @ self.M @ x.transpose(-1, -2)
        return s if self.key_term is None else s + (x @ self.key_term)[..., None, :]


def split_sym_skew(M: Tensor) -> tuple[Tensor, Tensor]:
    """``(S, A)`` with ``M = S + A``, ``S = Sᵀ``, ``A = −Aᵀ`` (over the last two axes)."""
    Mt = M.transpose(-1, -2)
    return (M + Mt) / 2, (M - Mt) / 2


def symmetry_score(M: Tensor) -> Tensor:
    """``‖S‖_F² / ‖M‖_F²`` in [0, 1] (1: symmetric, 0: skew); invariant under M -> Qᵀ M Q for orthogonal Q."""
    S, _ = split_sym_skew(M)
    return S.pow(2).sum((-1, -2)) / M.pow(2).sum((-1, -2))


def directionality_score(M: Tensor, k: float = 2.0) -> Tensor:
    """The anchor code's score: excess of column norms vs row norms above mean + k·std, in [−1, 1].

    ``(excess_cols − excess_rows)/(excess_cols + excess_rows)``, 0 when neither has an excess.
    Transposing M (swapping queries and keys) flips its sign.
    """
    return _directionality_from_norms(M.norm(dim=-1), M.norm(dim=-2), k)


def _directionality_from_norms(r: Tensor, c: Tensor, k: float = 2.0) -> Tensor:
    def excess(v: Tensor) -> Tensor:
        thr = v.mean(-1, keepdim=True) + k * v.std(-1, keepdim=True)
        return (v - thr).clamp(min=0).sum(-1)

    er, ec = excess(r), excess(c)
    total = er + ec
    return torch.where(
        total > 0, (ec - er) / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(total)
    )


def inertia(M: Tensor, rel_tol: float = 1e-10) -> tuple[int, int, int]:
    """(positive, negative, zero) eigenvalue counts of the symmetric part (zero: |λ| <= rel_tol·max|λ|)."""
    S, _ = split_sym_skew(M.double())
    lam = torch.linalg.eigvalsh(S)
    tol = rel_tol * float(lam.abs().max()) if lam.numel() else 0.0
    return int((lam > tol).sum()), int((lam < -tol).sum()), int((lam.abs() <= tol).sum())


def rotation_content(M: Tensor) -> float:
    """Share of ``Σ|λ|`` carried by eigenvalues of M with ``|Im λ| > |Re λ|`` (rotation-like modes)."""
    lam = torch.linalg.eigvals(M.double())
    total = float(lam.abs().sum())
    return float(lam[lam.imag.abs() > lam.real.abs()].abs().sum()) / total if total > 0 else 0.0


def directionality_condition(M: Tensor, k: float = 2.0) -> float:
    """Condition number of :func:`directionality_score`: ``d·max(row, column norm) / (row excess + column excess)``.

    The score divides by the norms' excess above mean + k·std, so a rounding error of relative size
    ``δ`` in the norms moves it by about ``δ`` times this number. 0 when there is no excess (the
    score is then exactly 0).
    """
    r, c = M.norm(dim=-1), M.norm(dim=-2)

    def excess(v: Tensor) -> float:
        return float((v - (v.mean() + k * v.std())).clamp(min=0).sum())

    total = excess(r) + excess(c)
    return M.shape[0] * float(torch.maximum(r.max(), c.max())) / total if total > 0 else 0.0


def skew_quadratic_residual(A: Tensor, M: Tensor, samples: int = 16, seed: int = 0) -> float:
    """``max_i |x_iᵀ A x_i| / (‖x_i‖² ‖M‖_F)`` over ``samples`` Gaussian ``x_i`` (from ``seed``): 0 for a
    skew A (a skew part adds nothing to any token's score with itself)."""
    x = torch.randn(samples, A.shape[0], dtype=A.dtype, generator=torch.Generator().manual_seed(seed))
    q = ((x @ A) * x).sum(-1).abs() / (x.pow(2).sum(-1) * M.norm())
    return float(q.max())


def conjugate_pair_gap(eigenvalues: Tensor, scale: float, rel_tol: float = 1e-12) -> float:
    """Distance between the eigenvalues with Im > 0 and the conjugates of those with Im < 0 (both sorted),
    relative to ``scale`` (e.g. σ₁): 0 for a real matrix up to rounding; inf when the counts differ.
    Imaginary parts within ``rel_tol·scale`` of 0 count as real."""
    tol = rel_tol * scale
    up = eigenvalues[eigenvalues.imag > tol]
    down = eigenvalues[eigenvalues.imag < -tol].conj()
    if len(up) != len(down):
        return math.inf
    if not len(up):
        return 0.0

    def ordered(z: Tensor) -> Tensor:
        return z[torch.argsort(z.real * 1e6 + z.imag)]

    return float((ordered(up) - ordered(down)).abs().max()) / scale


def random_init_sigma1_bound(d: int, d_head: int, sigma2: float | None = None) -> float:
    """``σ²(√d + √d_h)²/√d_h``: the large-d bound on σ₁(M) for ``M = W_qᵀ W_k/√d_h`` at random init.

    ``W_q, W_k`` (d_h x d) have i.i.d. N(0, σ²) entries (σ² = 1/d by default); each has largest
    singular value ≈ σ(√d + √d_h) (Bai-Yin), and σ₁(AB) <= σ₁(A) σ₁(B).
    """
    sigma2 = 1.0 / d if sigma2 is None else sigma2
    return sigma2 * (math.sqrt(d) + math.sqrt(d_head)) ** 2 / math.sqrt(d_head)


def balanced_factorization(M: Tensor, rank: int | None = None) -> tuple[Tensor, Tensor]:
    """``(W_Q, W_K) = (U √Σ, V √Σ)`` with ``M = W_Q W_Kᵀ``: the canonical gauge (any (W_Q G, W_K G⁻ᵀ) gives the same
    M)."""
    U, s, Vh = torch.linalg.svd(M, full_matrices=False)
    r = s.numel() if rank is None else rank
    root = s[:r].sqrt()
    return U[:, :r] * root, Vh[:r].T * root


# --------------------------------------------------------------------------------------------
# Geometry from the factors, vectorised over heads
# --------------------------------------------------------------------------------------------


def _sqrt_psd(G: Tensor) -> Tensor:
    lam, U = torch.linalg.eigh(G)
    return (U * lam.clamp(min=0).sqrt()[..., None, :]) @ U.mT


def head_geometry(ops: list[HeadOperator], rel_tol: float = 1e-10):
    """Every head's symmetry, directionality, inertia of S, rotation content, stable and effective
    rank, computed from the factors M = Aᵀ B (A, B: d_h x d) in O(d·d_h²) per head and batched over
    heads, never forming the d x d matrix: ‖M‖² = ⟨AAᵀ, BBᵀ⟩, tr M² = tr (BAᵀ)², row norms
    ‖M_i·‖² = a_iᵀ (BBᵀ) a_i, the non-zero eigenvalues of M are those of BAᵀ, those of S = ½FᵀJF
    (F = [A; B], J = [[0, I], [I, 0]]) those of ½ G^{1/2} J G^{1/2} with G = FFᵀ, and the singular
    values of M the roots of the eigenvalues of (AAᵀ)^{1/2} BBᵀ (AAᵀ)^{1/2}. Same numbers as the
    per-matrix functions (tested); a 12-layer, 768-wide model takes well under a second.
    Returns a DataFrame with one row per head.
    """
    import pandas as pd

    if any(op.query is None or op.key is None for op in ops):
        raise ValueError(
            "head_geometry needs the factors (query, key) of every operator; use the per-matrix functions otherwise"
        )
    A = torch.stack([op.query for op in ops]).double()
    B = torch.stack([op.key for op in ops]).double()
    d, dh = A.shape[-1], A.shape[-2]
    GA, GB, C = A @ A.mT, B @ B.mT, B @ A.mT
    norm2 = (GA * GB).sum((-1, -2))
    trace_m2 = (C * C.mT).sum((-1, -2))
    symmetry = 0.5 * (norm2 + trace_m2) / norm2
    rows = (A * (GB @ A)).sum(-2).clamp(min=0).sqrt()  # ‖M_i·‖ for every i
    cols = (B * (GA @ B)).sum(-2).clamp(min=0).sqrt()
    direction = _directionality_from_norms(rows, cols)
    lam = torch.linalg.eigvals(C)  # the non-zero eigenvalues of M (plus d − d_h zeros)
    mag = lam.abs()
    rotation = torch.where(lam.imag.abs() > lam.real.abs(), mag, torch.zeros_like(mag)).sum(-1) / mag.sum(-1).clamp(
        min=1e-300
    )
    F = torch.cat([A, B], dim=-2)
    root = _sqrt_psd(F @ F.mT)
    J = torch.zeros(2 * dh, 2 * dh, dtype=A.dtype)
    J[:dh, dh:] = torch.eye(dh, dtype=A.dtype)
    J[dh:, :dh] = torch.eye(dh, dtype=A.dtype)
    s_eig = torch.linalg.eigvalsh(0.5 * root @ J @ root)
    tol = rel_tol * s_eig.abs().amax(-1, keepdim=True)
    pos, neg = (s_eig > tol).sum(-1), (s_eig < -tol).sum(-1)
    ra = _sqrt_psd(GA)
    sv = torch.linalg.eigvalsh(ra @ GB @ ra).clamp(min=0).sqrt().flip(-1)  # descending
    p = sv / sv.sum(-1, keepdim=True)
    effective = torch.exp(-(p * torch.log(p.clamp(min=1e-300))).sum(-1))
    return pd.DataFrame(
        dict(
            layer=[op.layer for op in ops],
            head=[op.head for op in ops],
            symmetry=symmetry.numpy(),
            directionality=direction.numpy(),
            inertia_pos=pos.numpy(),
            inertia_neg=neg.numpy(),
            inertia_zero=(d - pos - neg).numpy(),
            rotation=rotation.numpy(),
            stable_rank=(norm2 / sv[..., 0] ** 2).numpy(),
            effective_rank=effective.numpy(),
            sigma1=sv[..., 0].numpy(),
        )
    )
