"""MSIMNet: forward against the numpy MSIM with the same features, unit init, overlaps, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.data.msim import MSIM
from theorylab.nn.msim import MSIMNet


def test_forward_matches_numpy_model_and_init_is_unit():
    net = MSIMNet(4, 3, "quadratic", replicas=2, generator=torch.Generator().manual_seed(0)).double()
    with torch.no_grad():  # re-normalise in float64 (the init is float32)
        net.u /= net.u.norm(dim=-1, keepdim=True)
    assert torch.allclose(net.u.norm(dim=-1), torch.ones(2, 3, dtype=torch.float64))
    x = torch.randn(2, 6, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    y = net(x).detach().numpy()
    for s in range(2):
        model = MSIM(tuple(net.u[s].detach().numpy()), ("quadratic",) * 3)
        np.testing.assert_allclose(y[s], model(x[s].numpy()), rtol=1e-10)
    W = net.u.detach().clone()
    W[:, 0] *= -1
    assert torch.allclose(net.overlaps(W), torch.ones(2, 3, dtype=torch.float64))
    assert torch.allclose(net.signed_overlaps(W)[:, 0], -torch.ones(2, dtype=torch.float64))


def test_init_overlap_is_order_d_minus_half():
    net = MSIMNet(400, 2, replicas=200, generator=torch.Generator().manual_seed(2))
    w = torch.zeros(200, 2, 400)
    w[..., 0] = 1
    rms = net.overlaps(w).pow(2).mean().sqrt().item()
    assert abs(rms * 20 - 1) < 0.1


def test_bad_input():
    with pytest.raises(ValueError, match="d >= 2"):
        MSIMNet(1, 2)
    with pytest.raises(ValueError, match="one link per layer"):
        MSIMNet(4, 2, ("quadratic",))
    with pytest.raises(KeyError, match="unknown MSIM link"):
        MSIMNet(4, 2, "relu")
