"""probes.hessian against dense autograd, finite differences and hand-made spectra."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.nn.polynet import flatten_params, poly_tensor, symmetry_directions, unflatten_params
from theorylab.probes.hessian import (
    gradient,
    hessian,
    hvp,
    inertia,
    orthonormal_complement,
    project_out,
    signature,
)
from theorylab.theory import polynomial_nets as pn

F = torch.float64


def _mlp_loss(theta):
    """A small two-layer tanh network's squared loss on fixed data: theta = (W1 3x2, w2 3)."""
    x = torch.linspace(-1, 1, 8, dtype=F).reshape(4, 2)
    y = torch.tensor([0.3, -0.1, 0.7, 0.2], dtype=F)
    W1, w2 = theta[:6].reshape(3, 2), theta[6:]
    return ((torch.tanh(x @ W1.T) @ w2 - y) ** 2).mean()


def test_hessian_matches_dense_autograd_and_finite_differences():
    theta = torch.randn(9, dtype=F, generator=torch.Generator().manual_seed(0))
    H = hessian(_mlp_loss, theta)
    ref = torch.autograd.functional.hessian(_mlp_loss, theta)
    assert torch.allclose(H, ref, atol=1e-12)
    h = 1e-6
    fd = torch.stack(
        [
            (gradient(_mlp_loss, theta + h * e) - gradient(_mlp_loss, theta - h * e)) / (2 * h)
            for e in torch.eye(9, dtype=F)
        ]
    )
    assert torch.allclose(H, fd, atol=1e-7)


def test_hvp_matches_dense_product_single_and_batched():
    g = torch.Generator().manual_seed(1)
    theta = torch.randn(9, dtype=F, generator=g)
    V = torch.randn(4, 9, dtype=F, generator=g)
    H = hessian(_mlp_loss, theta)
    assert torch.allclose(hvp(_mlp_loss, theta, V[0]), H @ V[0], atol=1e-12)
    assert torch.allclose(hvp(_mlp_loss, theta, V), V @ H, atol=1e-12)
    with pytest.raises(ValueError, match="v must be"):
        hvp(_mlp_loss, theta, torch.zeros(3, dtype=F))


def test_inertia_counts_with_tolerance():
    H = torch.diag(torch.tensor([-2.0, -1e-9, 0.0, 1e-9, 3.0, 5.0], dtype=F))
    assert {k: v for k, v in inertia(H, 1e-8).items() if k != "eigenvalues"} == dict(negative=1, zero=3, positive=2)
    assert inertia(H, 0.5, relative=True)["zero"] == 4  # 0.5 * 5 = 2.5 cuts -2 too
    Q, _ = torch.linalg.qr(torch.randn(6, 6, dtype=F, generator=torch.Generator().manual_seed(2)))
    assert inertia(Q @ H @ Q.T, 1e-8)["negative"] == 1  # basis-free
    with pytest.raises(ValueError, match="square"):
        inertia(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="tol"):
        inertia(H, -1.0)


def test_project_out_removes_the_symmetry_zero_mode():
    # f(x, y) = (x^2 + y^2 - 1)^2 is rotation invariant: at (1, 0) the Hessian is diag(8, 0)
    f = lambda t: (t @ t - 1) ** 2  # noqa: E731
    theta = torch.tensor([1.0, 0.0], dtype=F)
    H = hessian(f, theta)
    assert torch.allclose(H, torch.diag(torch.tensor([8.0, 0.0], dtype=F)), atol=1e-12)
    rot = torch.tensor([[0.0, 1.0]], dtype=F)  # d/dphi (cos phi, sin phi) at phi = 0
    R = project_out(H, rot)
    assert R.shape == (1, 1) and torch.allclose(R, torch.tensor([[8.0]], dtype=F))
    Q = orthonormal_complement(torch.tensor([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0]], dtype=F), 3)
    assert Q.shape == (3, 2) and torch.allclose(Q.T @ Q, torch.eye(2, dtype=F), atol=1e-12)
    assert torch.allclose(torch.tensor([1.0, 1.0, 0.0], dtype=F) @ Q, torch.zeros(2, dtype=F), atol=1e-12)


def test_signature_at_polynet_critical_points_matches_the_fibre():
    """The k = 2 global minimum: index 0, nullity r(r+1)/2 = the symmetry directions; projected: definite."""
    d, r = 5, 2
    rng = np.random.default_rng(3)
    lam = np.sort(rng.uniform(-2, 2, d))
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    At = torch.tensor((V * lam) @ V.T)

    def f(theta):
        W, a = unflatten_params(theta, r, d)
        D = poly_tensor(W, a, 2) - At
        return 2 * (D**2).sum() + torch.trace(D) ** 2

    W, a = (torch.tensor(x) for x in pn.realise(lam, V, pn.global_minimum(lam, r)["S"], r))
    sig = signature(f, flatten_params(W, a), symmetry_directions(W, a, 2))
    assert sig["grad_norm"] < 1e-12
    assert (sig["negative"], sig["zero"]) == (0, pn.fibre_dimension(d, 2, r))
    assert (sig["reduced_negative"], sig["reduced_zero"]) == (0, 0) and sig["reduced_min_abs"] > 1e-3


def test_bad_theta():
    with pytest.raises(ValueError, match="1-d floating"):
        hessian(_mlp_loss, torch.zeros(3, 3, dtype=F))
    with pytest.raises(ValueError, match="1-d floating"):
        gradient(_mlp_loss, torch.arange(9))
