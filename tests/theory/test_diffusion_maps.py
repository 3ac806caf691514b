"""Attention as a diffusion operator: the tied-QK identity, detailed balance, coordinates, magnetic Laplacian."""

from __future__ import annotations

import math

import torch

from theorylab.data.manifolds import circle, sphere, swiss_roll
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
    rho = torch.corrcoef(torch.stack([coords[:, 0].argsort().argsort().double(), uv[:, 0].argsort().argsort().double()]))[0, 1]
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
