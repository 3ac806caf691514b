"""Attention as a diffusion operator (Candanedo, arXiv 2604.09560; Coifman and Lafon 2006). Float64.

Scores ``s_ij = x_iᵀ M x_j / √d`` with ``M = S + A``; attention ``P = D⁻¹ K``, ``K = exp(s)``,
``D = diag(K 1)``: the random-walk normalisation of a kernel.

- Tied queries and keys (``M = βI``): ``exp(β x_iᵀx_j/√d) = w_i^{½} w_j^{½} exp(−β|x_i − x_j|²/(2√d))``
  with ``w_j = exp(β|x_j|²/√d)``, so ``P = rownorm(K_gauss diag(w))`` — the diffusion-map random walk
  with bandwidth ``ε = 2√d/β`` up to a diagonal reweighting (exactly it when all |x_i| are equal).
  P is then similar to the symmetric ``D^{-½} K D^{-½}``: real spectrum, detailed balance.
- Skew part A: the chain loses detailed balance; :func:`entropy_production`
  ``σ = ½ Σ_ij (π_i P_ij − π_j P_ji) ln(π_i P_ij / (π_j P_ji))`` is 0 iff detailed balance holds.
- :func:`poe_symmetrize` (``P ⊙ Pᵀ``), :func:`magnetic_laplacian` (Hermitian, gauge-invariant),
  :func:`diffusion_coordinates`.
- :func:`corrected_tied_attention` (tied QK with the per-key norm correction: exactly ``D⁻¹K_gauss``),
  :func:`right_eigenvectors` (diffusion coordinates of a random-walk operator), :func:`knn_bandwidth`,
  :func:`random_sym_skew`, :func:`random_attention_draw` and :func:`random_magnetic_draw` (the random
  operators of the checks).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from theorylab.data.manifolds import gaussian_points
from theorylab.theory.bilinear import split_sym_skew


def scores(X: Tensor, M: Tensor) -> Tensor:
    """``s_ij = x_iᵀ M x_j / √d`` for rows ``X`` ``(n, d)``."""
    return X @ M @ X.T / math.sqrt(X.shape[-1])


def attention_operator(X: Tensor, M: Tensor) -> Tensor:
    """``P = D⁻¹ exp(s)`` (row-stochastic; computed with a row-max shift)."""
    return torch.softmax(scores(X, M), dim=-1)


def gaussian_kernel(X: Tensor, eps: float) -> Tensor:
    """``exp(−|x_i − x_j|² / ε)``."""
    return torch.exp(-torch.cdist(X, X).pow(2) / eps)


def random_walk(K: Tensor) -> Tensor:
    """``D⁻¹ K``."""
    return K / K.sum(-1, keepdim=True)


def symmetric_normalized(K: Tensor) -> Tensor:
    """``D^{-½} K D^{-½}`` (similar to ``D⁻¹ K`` when K is symmetric)."""
    d = K.sum(-1).rsqrt()
    return d[:, None] * K * d[None, :]


def stationary(P: Tensor) -> Tensor:
    """The stationary law π (``π P = π``) by the left eigenvector of the largest eigenvalue.

    A full eigendecomposition: the reference the identity checks are budgeted on. For many large
    operators use :func:`stationary_solve` (one LU solve, ~100x faster at n = 1000)."""
    lam, vecs = torch.linalg.eig(P.T.to(torch.complex128))
    v = vecs[:, torch.argmax(lam.real)].real
    v = v / v.sum()
    return v.clamp(min=0) / v.clamp(min=0).sum()


def stationary_solve(P: Tensor, refine: int = 2) -> Tensor:
    """π with ``π P = π``, ``Σ π = 1`` for an irreducible row-stochastic ``P``, by one linear solve.

    ``(Pᵀ − I) π = 0`` with its last equation replaced by ``Σ π = 1`` (the replaced equation is
    implied by the others, since the columns of ``Pᵀ − I`` sum to zero), then ``refine`` power steps
    ``π ← π P`` (each shrinks what the solve left off the stationary direction by the chain's
    subdominant eigenvalue)."""
    n = P.shape[-1]
    A = P.T - torch.eye(n, dtype=P.dtype, device=P.device)
    A[-1] = 1.0
    b = torch.zeros(n, dtype=P.dtype, device=P.device)
    b[-1] = 1.0
    pi = torch.linalg.solve(A, b)
    for _ in range(refine):
        pi = pi @ P
        pi = pi / pi.sum()
    return pi


def entropy_production(P: Tensor, pi: Tensor | None = None) -> float:
    """``½ Σ_ij (π_i P_ij − π_j P_ji) ln(π_i P_ij / (π_j P_ji))`` over pairs with both fluxes positive (>= 0).

    π defaults to :func:`stationary_solve` (one solve, not an eigendecomposition: the entropy fit of
    attention-diffusion-map's paper preset evaluates 100 operators of n = 2000)."""
    pi = stationary_solve(P) if pi is None else pi
    flux = pi[:, None] * P
    back = flux.T
    ok = (flux > 0) & (back > 0)
    terms = torch.where(
        ok,
        (flux - back)
        * torch.log(torch.where(ok, flux / torch.where(ok, back, torch.ones_like(back)), torch.ones_like(flux))),
        torch.zeros_like(flux),
    )
    return float(0.5 * terms.sum())


def poe_symmetrize(P: Tensor) -> Tensor:
    """``P ⊙ Pᵀ``: symmetric; for attention it equals ``exp(2 x_iᵀ S x_j/√d)/(Z_i Z_j)`` — the skew part drops out."""
    return P * P.T


def diffusion_coordinates(K: Tensor, k: int = 2, t: int = 1) -> tuple[Tensor, Tensor]:
    """``(eigenvalues, coordinates)`` of the top ``k`` non-trivial modes of ``D⁻¹K`` via ``D^{-½}KD^{-½}`` (K
    symmetric).

    Coordinates are ``λ^t · D^{-½} v`` (Coifman-Lafon), shape ``(n, k)``.
    """
    A = symmetric_normalized(K)
    lam, V = torch.linalg.eigh((A + A.T) / 2)
    order = torch.argsort(lam, descending=True)
    lam, V = lam[order], V[:, order]
    psi = K.sum(-1).rsqrt()[:, None] * V
    return lam[1 : k + 1], psi[:, 1 : k + 1] * lam[1 : k + 1].pow(t)


def connection_laplacian(Ks: Tensor, theta: Tensor) -> Tensor:
    """``D_s − K_s ⊙ e^{iΘ}`` for a symmetric kernel ``K_s`` (its diagonal dropped) and antisymmetric phases ``Θ``."""
    Ks = Ks - torch.diag(torch.diag(Ks))
    Ds = torch.diag(Ks.sum(-1)).to(torch.complex128)
    return Ds - Ks.to(torch.complex128) * torch.exp(1j * theta.to(torch.complex128))


def magnetic_laplacian(X: Tensor, S: Tensor, A0: Tensor, eta: float) -> Tensor:
    """``L = D_s − K_s ⊙ e^{iΘ}`` with ``K_s = exp(x_iᵀ S x_j/√d)`` (zero diagonal), ``Θ_ij = 2η x_iᵀ A₀ x_j``:
    Hermitian, PSD.

    Pure-gauge phases ``Θ_ij = φ_i − φ_j`` give ``U L₀ U*`` (same spectrum); generic skew phases frustrate
    the cycles and lift the bottom of the spectrum above 0.
    """
    return connection_laplacian(torch.exp(scores(X, S)), 2 * eta * (X @ A0 @ X.T))


def canonical_correlations(U: Tensor, V: Tensor) -> Tensor:
    """Canonical correlations between the column spaces of centred ``U`` (n, p) and ``V`` (n, q), largest first."""
    qu, _ = torch.linalg.qr(U - U.mean(0))
    qv, _ = torch.linalg.qr(V - V.mean(0))
    return torch.linalg.svdvals(qu.T @ qv).clamp(max=1.0)


def corrected_tied_attention(X: Tensor, eps: float) -> Tensor:
    """Tied-QK attention with ``β = 2√d/ε`` and the per-key logit correction ``−β|x_j|²/(2√d)``: exactly ``D⁻¹K_gauss``.

    The correction removes the key weights ``w_j`` of the tied identity (Candanedo, arXiv 2604.09560;
    the Coifman-Lafon random walk of a Gaussian kernel with bandwidth ε).
    """
    d = X.shape[1]
    beta = 2 * math.sqrt(d) / eps
    logits = beta * X @ X.T / math.sqrt(d) - beta * X.pow(2).sum(-1)[None, :] / (2 * math.sqrt(d))
    return torch.softmax(logits, -1)


def right_eigenvectors(P: Tensor, k: int) -> Tensor:
    """The top ``k`` non-trivial right eigenvectors of a random-walk operator (real spectrum), shape ``(n, k)``.

    Ordered by the real part of the eigenvalue; the trivial constant vector (eigenvalue 1) is skipped.
    """
    lam, V = torch.linalg.eig(P)
    order = torch.argsort(lam.real, descending=True)
    return V[:, order[1 : k + 1]].real


def knn_bandwidth(X: Tensor, k: int = 10) -> float:
    """``2 · median_i |x_i − x_(k)|²``: twice the median squared distance to the k-th nearest neighbour (self = 0th)."""
    d2 = torch.cdist(X, X).pow(2)
    return 2 * float(d2.sort(dim=1).values[:, k].median())


def random_sym_skew(d: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """``(S, A₀)``: S the symmetric part of an N(0, 1/d) matrix; A₀ the antisymmetric part of an N(0, 1)
    matrix rescaled to ``‖A₀‖_F = ‖S‖_F`` (two draws from ``generator``, in that order)."""
    S, _ = split_sym_skew(torch.randn(d, d, generator=generator, dtype=torch.float64) / math.sqrt(d))
    _, A = split_sym_skew(torch.randn(d, d, generator=generator, dtype=torch.float64))
    return S, A * S.norm() / A.norm()


def random_attention_draw(n: int, d: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """``(X, S, A₀)``: ``n`` Gaussian points of norm ~3 (:func:`gaussian_points`), then :func:`random_sym_skew`."""
    X = gaussian_points(n, d, generator=generator)
    S, A0 = random_sym_skew(d, generator)
    return X, S, A0


def random_magnetic_draw(n: int, d: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(X, S, A₀, φ)`` for the magnetic-Laplacian checks: :func:`gaussian_points`, S and A₀ the symmetric and
    antisymmetric parts of two N(0, 1) matrices divided by √d, and pure-gauge phases ``φ ~ U[0, 2π)``."""
    X = gaussian_points(n, d, generator=generator)
    S, _ = split_sym_skew(torch.randn(d, d, generator=generator, dtype=torch.float64))
    _, A0 = split_sym_skew(torch.randn(d, d, generator=generator, dtype=torch.float64))
    S = S / math.sqrt(d)  # keeps exp(x S x/√d) in a few decades (N(0, 1) entries scaled so K_s is not one-hot)
    A0 = A0 / math.sqrt(d)
    phi = 2 * math.pi * torch.rand(n, generator=generator, dtype=torch.float64)
    return X, S, A0, phi
