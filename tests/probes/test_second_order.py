"""probes.second_order against dense autograd, finite differences and closed forms on small models."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from theorylab.nn import ToyTransformer
from theorylab.probes.second_order import (
    FlatModel,
    hutchinson_trace,
    hvp,
    jvp,
    loglog_slope,
    mixed_difference,
    per_example_grads,
    taylor_remainder,
)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = ToyTransformer(
        vocab_size=7,
        d_model=8,
        n_layers=1,
        n_heads=2,
        mlp_width=8,
        causal=True,
        positional="learned",
        max_len=4,
        final_norm=True,
        seed=3,
    ).double()
    x = torch.randint(0, 7, (5, 4), generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 7, (5,), generator=torch.Generator().manual_seed(2))
    return model, FlatModel(model), x, y


def test_flat_model_round_trip(tiny):
    model, fm, x, _ = tiny
    th = fm.theta
    assert th.shape == (sum(p.numel() for p in model.parameters()),) == (fm.dim,)
    assert torch.equal(fm(th, x), model(x))
    fm.load(th + 1.0)
    assert torch.allclose(fm.theta, th + 1.0)
    fm.load(th)
    with pytest.raises(ValueError, match="shape"):
        fm.unflatten(th[:-1])


def test_jvp_matches_dense_jacobian_and_finite_differences(tiny):
    _, fm, x, _ = tiny
    th = fm.theta
    f = lambda t: fm(t, x)[:, -1].reshape(-1)  # noqa: E731
    v = torch.randn(fm.dim, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    f0, jv = jvp(f, th, v)
    J = torch.autograd.functional.jacobian(f, th)  # dense reference (reverse mode, row by row)
    assert torch.allclose(f0, f(th))
    assert torch.allclose(jv, J @ v, rtol=1e-10, atol=1e-12)
    h = 1e-5
    fd = (f(th + h * v) - f(th - h * v)) / (2 * h)
    assert torch.allclose(jv, fd, rtol=1e-6, atol=1e-8)


def test_hvp_matches_dense_hessian(tiny):
    _, _, x, y = tiny
    small = ToyTransformer(
        vocab_size=7,
        d_model=4,
        n_layers=1,
        n_heads=2,
        mlp_width=4,
        causal=True,
        positional="learned",
        max_len=4,
        final_norm=True,
        seed=4,
    ).double()
    fm = FlatModel(small)  # D = 197: the dense reference Hessian stays fast
    L = lambda t: F.cross_entropy(fm(t, x)[:, -1], y)  # noqa: E731
    th = fm.theta
    v = torch.randn(fm.dim, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    H = torch.autograd.functional.hessian(L, th)
    assert torch.allclose(hvp(L, th, v), H @ v, rtol=1e-9, atol=1e-11)
    with pytest.raises(ValueError, match="shape"):
        hvp(L, th, v[:-1])


def test_per_example_grads_match_a_loop(tiny):
    _, fm, x, y = tiny
    th = fm.theta

    def one(t, xi, yi):
        return F.cross_entropy(fm(t, xi[None])[:, -1], yi[None])

    G = per_example_grads(one, th, x, y, chunk=2)
    loop = []
    for i in range(len(x)):
        t = th.clone().requires_grad_(True)
        loop.append(torch.autograd.grad(one(t, x[i], y[i]), t)[0])
    assert G.shape == (len(x), fm.dim)
    assert torch.allclose(G, torch.stack(loop), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="disagree"):
        per_example_grads(one, th, x, y[:-1])


def test_taylor_remainder_closed_form():
    # f(θ) = θ² elementwise: f(θ+tδ) − f(θ) = 2tθδ + t²δ², Jδ = 2θδ  =>  ε = t‖δ²‖ / ‖2θδ + tδ²‖
    g = torch.Generator().manual_seed(0)
    th, d = torch.randn(6, dtype=torch.float64, generator=g), torch.randn(6, dtype=torch.float64, generator=g)
    ts = [1e-3, 1e-2, 1e-1]
    got = taylor_remainder(lambda t: t**2, th, d, ts)
    want = [float((t * d**2).norm() / (2 * th * d + t * d**2).norm()) for t in ts]
    assert np.allclose(got, want, rtol=1e-8)
    assert abs(loglog_slope(ts, got) - 1) < 0.02
    # a linear map has no remainder
    A = torch.randn(4, 6, dtype=torch.float64, generator=g)
    assert np.all(taylor_remainder(lambda t: A @ t, th, d, ts) < 1e-12)
    with pytest.raises(ValueError, match="positive"):
        taylor_remainder(lambda t: t, th, d, [0.0])


def test_mixed_difference_and_trace_on_a_quadratic():
    g = torch.Generator().manual_seed(1)
    M = torch.randn(8, 8, dtype=torch.float64, generator=g)
    A = M @ M.T
    b = torch.randn(8, dtype=torch.float64, generator=g)
    L = lambda t: 0.5 * t @ A @ t + b @ t  # noqa: E731
    th, d1, d2 = (torch.randn(8, dtype=torch.float64, generator=g) for _ in range(3))
    assert mixed_difference(L, th, d1, d2) == pytest.approx(float(d1 @ A @ d2), rel=1e-9, abs=1e-12)
    assert torch.allclose(hvp(L, th, d1), A @ d1)
    est, se = hutchinson_trace(L, th, 400, generator=torch.Generator().manual_seed(2))
    assert abs(est - float(A.trace())) < 4 * se + 1e-9
    D = torch.diag(torch.arange(1.0, 9.0, dtype=torch.float64))
    est, se = hutchinson_trace(lambda t: 0.5 * t @ D @ t, th, 3)  # Rademacher is exact on a diagonal H
    assert est == pytest.approx(36.0) and se == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="probes"):
        hutchinson_trace(L, th, 1)


def test_loglog_slope():
    x = np.logspace(-3, 0, 6)
    assert loglog_slope(x, 5 * x**3) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="positive"):
        loglog_slope(x, -x)


def test_flat_model_needs_parameters():
    m = nn.Linear(2, 2)
    for p in m.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="trainable"):
        FlatModel(m)
