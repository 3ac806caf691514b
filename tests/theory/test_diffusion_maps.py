"""Attention as a diffusion operator: the tied-QK identity, detailed balance, coordinates, magnetic Laplacian."""

from __future__ import annotations

import math

import numpy as np
import torch

from theorylab.data.manifolds import circle, gaussian_points, sphere, swiss_roll
from theorylab.theory.bilinear import split_sym_skew
from theorylab.theory.diffusion_maps import (
    attention_operator,
    diffusion_coordinates,
    entropy_production,
    gaussian_kernel,
    magnetic_laplacian,
    poe_symmetrize,
    random_walk,
    stationary,
    stationary_solve,
    symmetric_normalized,
)


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_tied_qk_attention_on_a_sphere_is_the_diffusion_map_operator():
    d, beta = 16, 2.0
    X = 3.0 * sphere(200, d, generator=_g())
    P = attention_operator(X, beta * torch.eye(d, dtype=torch.float64))
    eps = 2 * math.sqrt(d) / beta
    Pdm = random_walk(gaussian_kernel(X, eps))
    assert torch.allclose(P, Pdm, atol=1e-12)  # equal norms: exactly the random walk
    # similar to a symmetric matrix: real spectrum equal to D^-1/2 K D^-1/2's
    K = torch.exp(X @ X.T * beta / math.sqrt(d))
    lam_sym = torch.linalg.eigvalsh(symmetric_normalized(K)).sort().values
    lam_P = torch.linalg.eigvals(P)
    assert lam_P.imag.abs().max() < 1e-8
    assert torch.allclose(lam_P.real.sort().values, lam_sym, atol=1e-6)


def test_entropy_production_zero_for_symmetric_and_grows_with_skew():
    d = 8
    X = sphere(60, d, generator=_g(1)) * 2
    S, _ = split_sym_skew(torch.randn(d, d, generator=_g(2), dtype=torch.float64))
    _, A = split_sym_skew(torch.randn(d, d, generator=_g(3), dtype=torch.float64))
    sig = [entropy_production(attention_operator(X, S + a * A)) for a in (0.0, 0.25, 0.5, 1.0)]
    assert abs(sig[0]) < 1e-12 and sig[1] > 0 and sig[1] < sig[2] < sig[3]
    assert 3.0 < sig[2] / sig[1] < 5.0  # O(|A|^2) for small skew
    P = attention_operator(X, S + A)
    pi = stationary(P)
    assert torch.allclose(pi @ P, pi, atol=1e-12)
    # the solve agrees with the eigenvector to rounding, and so does the entropy production
    fast = stationary_solve(P)
    assert (fast - pi).abs().max() <= 1e-12 * pi.max() and abs(fast.sum() - 1) < 1e-14
    assert math.isclose(entropy_production(P, pi), entropy_production(P, fast), rel_tol=1e-10)
    Q = poe_symmetrize(P)
    assert torch.allclose(Q, Q.T)


def test_diffusion_coordinates_recover_the_circle_angle():
    X, theta = circle(300, 16, generator=_g(4))
    _, coords = diffusion_coordinates(gaussian_kernel(X, 1.8), k=2)
    angle = torch.atan2(coords[:, 1], coords[:, 0])
    # up to rotation/reflection: the circular correlation of recovered vs true angle is ~1
    z = torch.exp(1j * (angle - theta)).mean().abs()
    z2 = torch.exp(1j * (angle + theta)).mean().abs()
    assert max(float(z), float(z2)) > 0.99


def test_swiss_roll_first_coordinate_follows_the_roll():
    X, uv = swiss_roll(800, 16, generator=_g(5))
    d2 = torch.cdist(X, X).pow(2)
    eps = 2 * float(d2.sort(dim=1).values[:, 10].median())
    _, coords = diffusion_coordinates(gaussian_kernel(X, eps), k=1)
    rho = torch.corrcoef(
        torch.stack([coords[:, 0].argsort().argsort().double(), uv[:, 0].argsort().argsort().double()])
    )[0, 1]
    assert abs(float(rho)) > 0.9  # Spearman correlation with the roll parameter t


def test_magnetic_laplacian_hermitian_psd_and_gauge_invariant():
    d = 6
    X = sphere(40, d, generator=_g(6))
    S, _ = split_sym_skew(torch.randn(d, d, generator=_g(7), dtype=torch.float64))
    _, A0 = split_sym_skew(torch.randn(d, d, generator=_g(8), dtype=torch.float64))
    L = magnetic_laplacian(X, S, A0, 0.7)
    assert torch.allclose(L, L.conj().T)
    lam = torch.linalg.eigvalsh(L)
    assert float(lam.min()) > -1e-10
    L0 = magnetic_laplacian(X, S, torch.zeros_like(A0), 0.0)
    assert float(torch.linalg.eigvalsh(L0).min()) < 1e-10 < float(lam.min())  # frustration lifts the bottom
    phi = torch.randn(40, generator=_g(9), dtype=torch.float64)
    U = torch.diag(torch.exp(1j * phi.to(torch.complex128)))
    assert torch.allclose(torch.linalg.eigvalsh(U @ L @ U.conj().T), lam, atol=1e-10)  # pure gauge


def test_corrected_tied_attention_is_the_gaussian_random_walk():
    from theorylab.theory.diffusion_maps import corrected_tied_attention, random_attention_draw

    X, _, _ = random_attention_draw(100, 8, _g(10))  # unequal norms: the correction is what makes it exact
    assert torch.allclose(corrected_tied_attention(X, 2.0), random_walk(gaussian_kernel(X, 2.0)), rtol=1e-10, atol=0)


def test_right_eigenvectors_are_eigenvectors_below_the_trivial_one():
    from theorylab.theory.diffusion_maps import right_eigenvectors

    X, _ = circle(80, 4, generator=_g(11))
    P = random_walk(gaussian_kernel(X, 2.0))
    V = right_eigenvectors(P, 3)
    lam = torch.linalg.eigvals(P).real.sort(descending=True).values[1:4]
    assert V.shape == (80, 3)
    for j in range(3):
        assert torch.allclose(P @ V[:, j], lam[j] * V[:, j], atol=1e-10)
    assert V.std(0).min() > 1e-6  # not the constant vector


def test_knn_bandwidth_matches_brute_force():
    from theorylab.theory.diffusion_maps import knn_bandwidth

    X = torch.randn(60, 3, generator=_g(12), dtype=torch.float64)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1).numpy()
    kth = np.sort(d2, axis=1)[:, 5]
    # 60 rows: torch's median is the lower middle value
    assert math.isclose(knn_bandwidth(X, 5), 2 * float(np.sort(kth)[29]), rel_tol=1e-10)
    assert knn_bandwidth(X, 5) > knn_bandwidth(X, 2)


def test_random_draws_have_their_symmetries_and_scales():
    from theorylab.theory.diffusion_maps import random_attention_draw, random_magnetic_draw, random_sym_skew

    S, A = random_sym_skew(7, _g(13))
    assert torch.equal(S, S.T) and torch.equal(A, -A.T)
    assert math.isclose(float(A.norm()), float(S.norm()), rel_tol=1e-12)
    X, S2, A2 = random_attention_draw(5, 7, _g(14))
    g = _g(14)
    X_ref = gaussian_points(5, 7, generator=g)  # the points first, then the matrices, from one stream
    S_ref, A_ref = random_sym_skew(7, g)
    assert torch.equal(X, X_ref) and torch.equal(S2, S_ref) and torch.equal(A2, A_ref)
    big = gaussian_points(20_000, 9, radius=2.0, generator=_g(16))
    assert abs(float(big.pow(2).sum(-1).mean()) - 4.0) < 0.05  # E|x|² = radius² (Monte Carlo, sd ~0.02)
    Xm, Sm, Am, phi = random_magnetic_draw(9, 7, _g(15))
    assert torch.equal(Sm, Sm.T) and torch.equal(Am, -Am.T) and Xm.shape == (9, 7)
    assert ((phi >= 0) & (phi < 2 * math.pi)).all()
