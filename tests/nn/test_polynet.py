"""PolyNet: the network equals its symmetric tensor, the k = 2 round trip, and the parameter symmetries."""

from __future__ import annotations

import itertools

import pytest
import torch

from theorylab.nn.polynet import (
    PolyNet,
    flatten_params,
    poly_forward,
    poly_tensor,
    symmetry_directions,
    unflatten_params,
)

F = torch.float64


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_forward_is_tensor_contraction(k):
    g = torch.Generator().manual_seed(k)
    net = PolyNet(3, 4, k, generator=g)
    x = torch.randn(7, 3, generator=g, dtype=F)
    T = net.to_tensor()
    # brute force: <T, x^{(x)k}> summed entry by entry
    ref = torch.zeros(7, dtype=F)
    for idx in itertools.product(range(3), repeat=k):
        ref += T[idx] * torch.prod(torch.stack([x[:, i] for i in idx]), 0)
    assert torch.allclose(net(x), ref, atol=1e-12)


def test_k2_tensor_is_wt_diag_a_w_and_symmetric():
    g = torch.Generator().manual_seed(0)
    W, a = torch.randn(3, 5, generator=g, dtype=F), torch.randn(3, generator=g, dtype=F)
    A = poly_tensor(W, a, 2)
    assert torch.allclose(A, sum(a[i] * torch.outer(W[i], W[i]) for i in range(3)), atol=1e-14)
    T3 = poly_tensor(W, a, 3)
    assert torch.allclose(T3, T3.permute(1, 0, 2)) and torch.allclose(T3, T3.permute(2, 1, 0))


def test_from_tensor_round_trip():
    g = torch.Generator().manual_seed(1)
    W, a = torch.randn(2, 5, generator=g, dtype=F), torch.tensor([1.5, -0.7], dtype=F)
    A = poly_tensor(W, a, 2)
    net = PolyNet.from_tensor(A, 2)
    assert torch.allclose(net.to_tensor(), A, atol=1e-12)
    wide = PolyNet.from_tensor(A, 4)  # extra rows are zero
    assert torch.allclose(wide.to_tensor(), A, atol=1e-12) and float(wide.W.detach()[2:].abs().max()) == 0.0
    with pytest.raises(ValueError, match="k = 2"):
        PolyNet.from_tensor(A, 2, k=3)
    with pytest.raises(ValueError, match="symmetric"):
        PolyNet.from_tensor(torch.randn(3, 3, generator=g, dtype=F), 2)


@pytest.mark.parametrize("k", [2, 3])
def test_symmetry_directions_leave_the_tensor_fixed(k):
    g = torch.Generator().manual_seed(2)
    r, d = 3, 4
    W, a = torch.randn(r, d, generator=g, dtype=F), torch.randn(r, generator=g, dtype=F)
    dirs = symmetry_directions(W, a, k)
    assert dirs.shape == (r + (r * (r - 1) // 2 if k == 2 else 0), r * (d + 1))
    assert int(torch.linalg.matrix_rank(dirs)) == dirs.shape[0]
    theta = flatten_params(W, a)
    h = 1e-6
    for v in dirs:  # central finite difference of the tensor map along each direction vanishes
        Tp = poly_tensor(*unflatten_params(theta + h * v, r, d), k)
        Tm = poly_tensor(*unflatten_params(theta - h * v, r, d), k)
        assert float((Tp - Tm).abs().max()) / (2 * h) < 1e-8
    # and a generic direction does move it
    v = torch.randn(r * (d + 1), generator=g, dtype=F)
    Tp, Tm = (poly_tensor(*unflatten_params(theta + s * h * v, r, d), k) for s in (1, -1))
    assert float((Tp - Tm).abs().max()) / (2 * h) > 1e-3


def test_flatten_and_bad_input():
    W, a = torch.randn(2, 3, dtype=F), torch.randn(2, dtype=F)
    W2, a2 = unflatten_params(flatten_params(W, a), 2, 3)
    assert torch.equal(W, W2) and torch.equal(a, a2)
    with pytest.raises(ValueError, match="r\\(d \\+ 1\\)"):
        unflatten_params(torch.zeros(7, dtype=F), 2, 3)
    with pytest.raises(ValueError, match="W must be"):
        poly_forward(W, torch.randn(3, dtype=F), torch.randn(4, 3, dtype=F), 2)
    with pytest.raises(ValueError, match="d, r, k"):
        PolyNet(0, 2)
    with pytest.raises(ValueError, match="last dimension"):
        PolyNet(3, 2)(torch.randn(4, 5, dtype=F))
    with pytest.raises(ValueError, match="a_i != 0"):
        symmetry_directions(W, torch.tensor([1.0, 0.0], dtype=F), 2)
