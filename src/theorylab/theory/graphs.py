"""Exact facts about graph tokenizations (no training): srg walk counts, Laplacian reconstruction, eigen-ambiguity.

Bechler-Speicher et al., *Lost in Tokenization*, arXiv 2605.22471 (2026); the facts below are the ones its
separations rest on, in our reconstruction (study card ``graph-tokenization``):

- strongly regular graphs srg(n, k, λ, μ) satisfy ``A² = kI + λA + μ(J - I - A)``, so ``A^t = a_t I + b_t A + c_t J``
  with integer coefficients fixed by (k, λ, μ) (:func:`srg_walk_coefficients`); hence ``(A^t)_ii = a_t + c_t`` and the
  random-walk return probabilities ``(P^t)_ii = (A^t)_ii / k^t`` are the same at every vertex of every graph with
  those parameters: RW tokens are lossy (:func:`srg_return_probabilities`);
- spectral tokens are lossless: ``L = U Λ Uᵀ`` (:func:`laplacian_from_spectral`), but ``U`` is defined only up to a
  rotation inside each eigenspace (:func:`rotate_eigenspace`);
- the eigenvalues ``μ`` of ``P = D^{-1} A`` are those of ``D^{-1/2} A D^{-1/2}`` (similar matrices), the eigenvalue 1
  has multiplicity = number of components, and ``tr(P^t) = Σ μ^t`` (:func:`walk_eigenvalues`).
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import Tensor


def srg_walk_coefficients(k: int, lam: int, mu: int, t: int) -> tuple[int, int, int]:
    """Integers ``(a_t, b_t, c_t)`` with ``A^t = a_t I + b_t A + c_t J`` for any srg(n, k, λ, μ).

    From ``A² = (k - μ) I + (λ - μ) A + μ J`` and ``AJ = kJ``: ``A^{t+1} = a A + b A² + c kJ`` gives
    ``a' = b (k - μ)``, ``b' = a + b (λ - μ)``, ``c' = b μ + c k``, starting at ``A^0 = I``.
    """
    if t < 0:
        raise ValueError(f"t must be >= 0; got {t}")
    a, b, c = 1, 0, 0
    for _ in range(t):
        a, b, c = b * (k - mu), a + b * (lam - mu), b * mu + c * k
    return a, b, c


def srg_closed_walks(k: int, lam: int, mu: int, t: int) -> int:
    """``(A^t)_ii = a_t + c_t`` (A has a zero diagonal, J a unit one): closed walks of length t at any vertex."""
    a, _, c = srg_walk_coefficients(k, lam, mu, t)
    return a + c


def srg_return_probabilities(k: int, lam: int, mu: int, steps: int) -> Tensor:
    """``[(P^t)_ii, t = 1..steps] = [(A^t)_ii / k^t]``: the RW token of every vertex of every srg(n, k, λ, μ)."""
    return torch.tensor([srg_closed_walks(k, lam, mu, t) / k**t for t in range(1, steps + 1)], dtype=torch.float64)


def srg_parameters(A: Tensor) -> tuple[int, int, int, int] | None:
    """``(n, k, λ, μ)`` if ``A`` is strongly regular (checked entrywise on A²), else None."""
    A = A.to(torch.float64)
    n = A.shape[-1]
    deg = A.sum(-1)
    if not bool((deg == deg[0]).all()):
        return None
    A2 = A @ A
    off = ~torch.eye(n, dtype=torch.bool)
    adj, non = (A > 0.5) & off, (A < 0.5) & off
    if not adj.any() or not non.any():
        return None
    lam, mu = A2[adj].unique(), A2[non].unique()
    if len(lam) != 1 or len(mu) != 1:
        return None
    return n, int(deg[0]), int(lam[0]), int(mu[0])


def laplacian_from_spectral(U: Tensor, lam: Tensor) -> Tensor:
    """``L = U diag(λ) Uᵀ`` from the spectral tokens' eigenvectors (..., n, k) and eigenvalues (..., k)."""
    return (U * lam[..., None, :]) @ U.transpose(-1, -2)


def adjacency_entry_terms(U: Tensor, lam: Tensor, i: int, j: int) -> Tensor:
    """The n terms ``-λ_k U_ik U_jk`` whose sum is ``A_ij`` (i != j): a single edge needs every eigenpair."""
    return -lam * U[..., i, :] * U[..., j, :]


def eigenspaces(lam: Tensor, tol: float = 1e-8) -> list[tuple[int, int]]:
    """``[start, stop)`` index ranges of the eigenspaces of ascending eigenvalues ``lam`` (one graph)."""
    out, start, n = [], 0, lam.shape[-1]
    while start < n:
        stop = start + 1
        while stop < n and float(lam[stop] - lam[start]) <= tol:
            stop += 1
        out.append((start, stop))
        start = stop
    return out


def rotate_eigenspace(U: Tensor, columns: tuple[int, int], angle: float) -> Tensor:
    """``U`` with columns ``(p, q)`` (two eigenvectors of one eigenvalue) rotated by ``angle``: another orthonormal
    eigenbasis of the same Laplacian."""
    p, q = columns
    c, s = math.cos(angle), math.sin(angle)
    out = U.clone()
    out[..., p], out[..., q] = c * U[..., p] - s * U[..., q], s * U[..., p] + c * U[..., q]
    return out


def walk_eigenvalues(A: Tensor) -> Tensor:
    """Eigenvalues of ``P = D^{-1} A`` computed from the symmetric ``D^{-1/2} A D^{-1/2}`` (isolated nodes: 0)."""
    A = A.to(torch.float64)
    deg = A.sum(-1)
    inv = torch.where(deg > 0, deg.clamp_min(1e-300).rsqrt(), torch.zeros_like(deg))
    return torch.linalg.eigvalsh(inv[..., :, None] * A * inv[..., None, :])


def walk_traces(A: Tensor, steps: int) -> Tensor:
    """``tr(P^t)`` for t = 1..steps by matrix powers of ``P = D^{-1} A``: (..., steps)."""
    A = A.to(torch.float64)
    deg = A.sum(-1, keepdim=True)
    P = torch.where(deg > 0, A / deg.clamp_min(1), torch.zeros_like(A))
    out, Pt = [], P
    for _ in range(steps):
        out.append(torch.diagonal(Pt, dim1=-2, dim2=-1).sum(-1))
        Pt = Pt @ P
    return torch.stack(out, -1)


def neighbourhood_components(A: Tensor) -> Tensor:
    """Per vertex, the number of connected components of the subgraph induced on its neighbours G[N(i)] (one graph,
    plain BFS): 1 on the Shrikhande graph (a 6-cycle), 2 on the 4x4 rook's graph (two triangles)."""
    n = A.shape[-1]
    adj = [set(torch.nonzero(A[i] > 0.5).flatten().tolist()) for i in range(n)]
    out = []
    for i in range(n):
        left, comps = set(adj[i]), 0
        while left:
            comps += 1
            stack = [left.pop()]
            while stack:
                v = stack.pop()
                nxt = adj[v] & left
                left -= nxt
                stack.extend(nxt)
        out.append(comps)
    return torch.tensor(out)


def clique4_count(A: Tensor) -> int:
    """Number of 4-cliques by brute force over all 4-subsets (an oracle for small graphs)."""
    n = A.shape[-1]
    B = (A > 0.5).tolist()
    return sum(all(B[a][b] for a, b in itertools.combinations(q, 2)) for q in itertools.combinations(range(n), 4))
