"""EDM training loop: a short run on a 2-d Gaussian lowers the loss and moves the net towards the closed-form
optimal denoiser; streams are reproducible; the callback sees the losses; samples come back in order."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.nn.denoisers import LinearDenoiser
from theorylab.nn.edm import EDMPrecond, FourierMLP, edm_loss
from theorylab.train.edm import edm_samples, train_edm, train_edm_models

MU = torch.tensor([0.3, -0.2])
COV = torch.tensor([[0.30, 0.12], [0.12, 0.10]])


def _data(n=512, seed=0):
    g = torch.Generator().manual_seed(seed)
    return MU + torch.randn(n, 2, generator=g) @ torch.linalg.cholesky(COV).T


def _gap(net, lin, sigma):
    x = _data(400, seed=9) + sigma * torch.randn(400, 2, generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        return float(((net(x, sigma) - lin(x.double(), sigma).float()) ** 2).mean())


class _Optimal(torch.nn.Module):
    """The closed-form optimal denoiser of N(MU, COV), with the attribute edm_loss reads."""

    sigma_data = 0.5

    def __init__(self):
        super().__init__()
        self.lin = LinearDenoiser(MU.double(), COV.double())

    def forward(self, x, sigma):
        return self.lin(x.double(), sigma.double()).float()


def _eval_loss(net, data):
    with torch.no_grad():
        return edm_loss(net, data.repeat(40, 1), torch.Generator().manual_seed(2)).item()


def test_short_training_lowers_loss_and_approaches_the_optimal_denoiser():
    torch.manual_seed(0)
    data = _data()
    net = EDMPrecond(FourierMLP(2, 64, n_freqs=8))
    lin = LinearDenoiser(MU.double(), COV.double())  # population optimum; the 512-sample fit is close to it
    before = {s: _gap(net, lin, s) for s in (0.2, 1.0)}
    floor, start = _eval_loss(_Optimal(), data), _eval_loss(net, data)
    seen = []
    losses = train_edm(
        net,
        data,
        steps=300,
        batch=128,
        lr=3e-3,
        generator=torch.Generator().manual_seed(1),
        callback=lambda step, loss: seen.append((step, loss)),
        every=100,
    )
    assert losses.shape == (300,) and np.isfinite(losses).all()
    end = _eval_loss(net, data)
    # the excess loss over the optimal denoiser's (same noise draws) shrinks by more than half
    assert floor < end < start and end - floor < 0.5 * (start - floor), (floor, start, end)
    after = {s: _gap(net, lin, s) for s in (0.2, 1.0)}
    assert all(after[s] < 0.5 * before[s] for s in after), (before, after)
    assert [s for s, _ in seen] == [99, 199, 299]
    assert seen[-1][1] == pytest.approx(losses[-1])


def test_models_are_reproducible_and_independent():
    data = [_data(64, 0), _data(64, 1)]

    def run():
        gens = [torch.Generator().manual_seed(s) for s in (5, 6)]
        nets, losses = train_edm_models(lambda: FourierMLP(2, 16, n_freqs=4), data, 20, 16, 1e-3, gens)
        return nets, losses

    (n1, l1), (n2, l2) = run(), run()
    assert np.array_equal(l1[0], l2[0]) and np.array_equal(l1[1], l2[1])
    p1 = torch.cat([p.flatten() for p in n1[0].parameters()])
    assert torch.equal(p1, torch.cat([p.flatten() for p in n2[0].parameters()]))
    assert not torch.equal(p1, torch.cat([p.flatten() for p in n1[1].parameters()]))
    z = torch.randn(10, 2, dtype=torch.float64)
    s_all = edm_samples(n1[0], z, steps=6)
    s_chunked = edm_samples(n1[0], z, steps=6, chunk=3)
    assert s_all.dtype == torch.float64 and s_all.shape == (10, 2)
    assert torch.allclose(s_all, s_chunked, atol=1e-6)


def test_callback_can_stop_a_diverging_run():
    net = EDMPrecond(FourierMLP(2, 16, n_freqs=4))
    data = _data(32)
    data[0, 0] = float("nan")

    def check(step, loss):
        if not np.isfinite(loss):
            raise FloatingPointError(f"loss not finite at step {step}")

    with pytest.raises(FloatingPointError):
        train_edm(
            net, data, steps=50, batch=32, lr=1e-3, generator=torch.Generator().manual_seed(0), callback=check, every=10
        )
