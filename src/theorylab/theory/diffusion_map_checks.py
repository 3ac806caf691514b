"""Float64 identity checks of attention as a diffusion operator, each with its own rounding bound.

Candanedo, arXiv 2604.09560 (2026): with scores ``s_ij = x_iᵀ M x_j/√d``, ``M = S + A``, attention
``P = D⁻¹ exp(s)`` is a Markov operator; tied QK (``M = βI``) is the Coifman-Lafon random walk of a
Gaussian kernel up to key weights; a symmetric M gives detailed balance; ``P ⊙ Pᵀ`` is blind to A;
the magnetic Laplacian carries A as U(1) phases (the bidivergence split, the product-of-experts form and
the magnetic Laplacian are reconstructed forms, see :mod:`theorylab.theory.diffusion_maps`).

Each check returns residuals *and* the float64 tolerance that bounds them. The tolerances scale with the
size and the conditioning of the problem (Higham, "Accuracy and Stability of Numerical Algorithms",
ch. 3-4): a sum of m terms in any order is off by at most (m − 1)ε·Σ|terms|, and a backward-stable
eigensolver returns the exact eigenpairs of P + E with ‖E‖ <= nε‖P‖. Each bound is computed from the
inputs (sizes, norms), never from a residual.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from theorylab.theory.diffusion_maps import (
    attention_operator,
    connection_laplacian,
    entropy_production,
    gaussian_kernel,
    magnetic_laplacian,
    random_walk,
    scores,
    stationary,
)

EPS = torch.finfo(torch.float64).eps


def score_roundoff(X: Tensor, M: Tensor) -> float:
    """Rounding bound of any one score s_ij = x_iᵀMx_j/√d in float64: d²ε·max‖x‖²·‖M‖_F/√d
    (a d²-term sum in any order)."""
    d = X.shape[1]
    return d * d * EPS * float(X.pow(2).sum(-1).max()) * float(M.norm()) / math.sqrt(d)


def operator_identities(X: Tensor, S: Tensor, A0: Tensor, A_other: Tensor) -> dict[str, float]:
    """Residuals and tolerances of the Markov-operator identities of ``P = softmax(X(S + A₀)Xᵀ/√d)``.

    - row-stochastic P and its stationary law π (``πP = π``);
    - bidivergence split ``s_ij = −B_ij + ½s_ii + ½s_jj + a_ij``, ``B_ij = ½(x_i − x_j)ᵀS(x_i − x_j)/√d``,
      and its row-softmax reproducing P;
    - product of experts ``P ⊙ Pᵀ = exp(2x_iᵀSx_j/√d)/(Z_i Z_j)``, and ``s + sᵀ`` unchanged when A₀ is
      replaced by ``A_other``;
    - at A = 0: detailed balance, zero entropy production, real spectrum in [−1, 1] with top eigenvalue 1;
      at A = A₀ (η = 1) the largest |Im λ| (a non-real pair means a non-equilibrium chain).
    ``A_other`` must have ``‖A_other‖_F <= ‖A₀‖_F`` for ``tol_poe_blind`` to bound its scores.
    """
    n, d = X.shape
    s = scores(X, S + A0)
    P = attention_operator(X, S + A0)
    pi = stationary(P)
    r = score_roundoff(X, S + A0)  # ‖A0‖ = ‖S‖, so this also bounds the scores of S + A_other and of S
    # bidivergence split: s_ij = -B_ij + s_ii/2 + s_jj/2 + a_ij
    diff = X[:, None, :] - X[None, :, :]
    B = 0.5 * torch.einsum("ijk,kl,ijl->ij", diff, S, diff) / math.sqrt(d)
    a = scores(X, A0)
    rhs = -B + 0.5 * torch.diag(s)[:, None] + 0.5 * torch.diag(s)[None, :] + a
    P_rhs = torch.softmax(rhs, -1)
    # product of experts: P ⊙ Pᵀ = exp(2 x_i S x_j/√d)/(Z_i Z_j); A cancels in exp(s + sᵀ)
    Z = torch.logsumexp(s, -1)
    poe = P * P.T
    poe_formula = torch.exp(2 * scores(X, S) - Z[:, None] - Z[None, :])
    s_other = scores(X, S + A_other)
    # equilibrium at A = 0
    P0 = attention_operator(X, S)
    pi0 = stationary(P0)
    flux = pi0[:, None] * P0
    lam0 = torch.linalg.eigvals(P0)
    lam1 = torch.linalg.eigvals(attention_operator(X, S + A0))  # η = 1
    # tolerances: two n-term sums of positive numbers (softmax's normaliser and the check's re-sum); the
    # eigensolver's backward error nε‖P‖_F‖π‖₂ plus the n-term product πP; the split and PoE exponents sum at
    # most 5 scores' worth of rounding; Bauer-Fike for P0 = D^(-½)(sym)D^(½), whose eigenvector matrix has
    # condition sqrt(π_max/π_min).
    tol_pi = n * EPS * float(P.norm()) * float(pi.norm()) + n * EPS * float(pi.max())
    tol_db = (n * EPS * float(P0.norm()) * float(pi0.norm()) + n * EPS * float(pi0.max())) * float(
        P0.max()
    ) + 2 * EPS * float(flux.max())
    return dict(
        row_sum_error=float((P.sum(-1) - 1).abs().max()),
        min_entry=float(P.min()),
        pi_min=float(pi.min()),
        pi_sum_error=abs(float(pi.sum()) - 1),
        pi_fixed_error=float((pi @ P - pi).abs().max()),
        split_error=float((rhs - s).abs().max()),
        split_softmax_error=float((P_rhs - P).abs().max()),
        poe_asymmetry=float((poe - poe.T).abs().max()),
        poe_formula_error=float(((poe - poe_formula).abs() / poe_formula).max()),
        poe_a_blind_error=float(((s + s.T) - (s_other + s_other.T)).abs().max()),
        detailed_balance=float((flux - flux.T).abs().max()),
        sigma_symmetric=entropy_production(P0, pi0),
        eig_imag_symmetric=float(lam0.imag.abs().max()),
        eig_max_abs=float(lam0.abs().max()),
        eig_top=float(lam0.real.max()),
        eig_imag_eta1=float(lam1.imag.abs().max()),
        tol_rows=2 * n * EPS,
        tol_pi=tol_pi,
        tol_split=8 * r,
        tol_split_softmax=16 * r + 2 * n * EPS,
        tol_poe=8 * r + 8 * n * EPS,
        tol_poe_blind=8 * r,
        tol_detailed_balance=tol_db,
        tol_sigma=n * n * tol_db**2 / float(flux.min()),
        tol_eig=n * EPS * float(P0.norm()) * math.sqrt(float(pi0.max() / pi0.min())),
    )


def tied_identity(X: Tensor, beta: float) -> dict[str, float]:
    """Tied QK (``M = βI``) against the Gaussian random walk with ``ε = 2√d/β`` and key weights
    ``w_j = exp(β|x_j|²/(2√d))``: ``P = rownorm(K_gauss diag(w))`` (max relative error, and its tolerance).

    Also reported: the error against the wrong bandwidth ``√d/β`` and against the plain random walk
    ``D⁻¹K_gauss`` (exact only when all |x_i| are equal, as on a sphere).
    """
    n, d = X.shape
    eps = 2 * math.sqrt(d) / beta
    P = attention_operator(X, beta * torch.eye(d, dtype=torch.float64))
    w = torch.exp(beta * X.pow(2).sum(-1) / (2 * math.sqrt(d)))
    K = gaussian_kernel(X, eps)
    reference = random_walk(K * w[None, :])
    wrong = random_walk(gaussian_kernel(X, eps / 2) * w[None, :])  # √d instead of 2√d
    # relative tolerance: the exponents (β x_iᵀx_j/√d, |x_i − x_j|²/ε from cdist's |x|² + |y|² − 2xᵀy, β|x|²/(2√d))
    # each round to <= 2dε·β·max‖x‖²/√d, and both sides divide by an n-term sum (2nε each)
    tol = 8 * d * EPS * beta * float(X.pow(2).sum(-1).max()) / math.sqrt(d) + 4 * n * EPS
    return dict(
        error=float(((P - reference).abs() / reference).max()),
        wrong_bandwidth_error=float(((P - wrong).abs() / wrong).max()),
        plain_random_walk_error=float(((P - random_walk(K)).abs() / random_walk(K)).max()),
        tolerance=tol,
    )


def magnetic_identities(X: Tensor, S: Tensor, A0: Tensor, eta: float, phi: Tensor) -> tuple[dict[str, float], Tensor]:
    """Checks of the magnetic Laplacian ``L = D_s − K_s ⊙ e^{iΘ}`` (Θ = 2η XA₀Xᵀ) and the spectrum of its
    pure-gauge twin.

    Returns the row (Hermitian error, λ_min, λ_max, η = 0 against the graph Laplacian of K_s, the relative
    spectral change under pure-gauge phases ``φ_i − φ_j``, the frustration λ_min/λ_max, and tolerances:
    K_s is symmetric and Θ antisymmetric up to their rounding; eigvalsh is backward stable, |δλ| <= nε‖L‖,
    and the gauge phases add ~4πε) and the ascending eigenvalues of the pure-gauge Laplacian.
    """
    n, d = X.shape
    L = magnetic_laplacian(X, S, A0, eta)
    lam = torch.linalg.eigvalsh(L)
    L0 = magnetic_laplacian(X, S, A0, 0.0)
    Ks = torch.exp(scores(X, S))
    Ks = Ks - torch.diag(torch.diag(Ks))
    graph_lap = torch.diag(Ks.sum(-1)) - Ks
    gauge = connection_laplacian(torch.exp(scores(X, S)), phi[:, None] - phi[None, :])
    lam0 = torch.linalg.eigvalsh(L0)
    lam_g = torch.linalg.eigvalsh(gauge)
    row = dict(
        hermitian_error=float((L - L.conj().T).abs().max() / L.abs().max()),
        lam_min=float(lam.min()),
        lam_max=float(lam.max()),
        eta0_error=float((L0 - graph_lap).abs().max() / graph_lap.abs().max()),
        gauge_error=float((lam_g - lam0).abs().max() / lam0.abs().max()),
        frustration=float(lam.min() / lam.max()),
        tol_hermitian=4 * (score_roundoff(X, S) + 2 * eta * math.sqrt(d) * score_roundoff(X, A0)),
        tol_spectrum=4 * (n + 4) * EPS,
    )
    return row, lam_g
