"""Interpolant pieces and the self-consistent loop's mechanics."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from theorylab.data.corruptions import GaussianNoise, RandomMask
from theorylab.nn.velocity import TimeMLP, UNet8, sinusoidal_embedding
from theorylab.train.interpolants import EMA, interpolant_loss, interpolate, train_self_consistent, transport


def test_interpolant_endpoints_and_exact_velocity_has_zero_loss():
    g = torch.Generator().manual_seed(0)
    x0, x1 = torch.randn(6, 2, generator=g), torch.randn(6, 2, generator=g)
    for t, expect in ((0.0, x0), (1.0, x1)):
        assert torch.allclose(interpolate(x0, x1, torch.full((6,), t))[0], expect)

    class Exact(nn.Module):  # b(I_t, t) = x1 - x0 for a deterministic pair: recovered from I_t and t
        def forward(self, x, t, latent=None):
            return x1 - x0

    assert float(interpolant_loss(Exact(), x0, x1, torch.rand(6, generator=g))) == 0.0


def test_transport_of_a_constant_velocity_is_a_shift():
    class Const(nn.Module):
        def forward(self, x, t, latent=None):
            return torch.ones_like(x)

    x = torch.zeros(3, 2)
    assert torch.allclose(transport(Const(), x, steps=7), -torch.ones(3, 2))  # t = 1 -> 0
    assert torch.allclose(transport(Const(), x, steps=7, backward=False), torch.ones(3, 2))


def test_ema_follows_its_formula():
    model = nn.Linear(2, 1)
    ema = EMA(model, decay=0.9, every=1)
    start = ema.shadow.weight.detach().clone()
    with torch.no_grad():
        model.weight.add_(1.0)
    ema.update(model, step=1)
    assert torch.allclose(ema.shadow.weight, 0.9 * start + 0.1 * model.weight)


def test_loop_calls_evaluate_and_reports_divergence():
    g = torch.Generator().manual_seed(0)
    y = torch.randn(64, 2, generator=g)
    seen = []
    model = TimeMLP(2, 16, 2, 8)
    train_self_consistent(
        model, y, GaussianNoise(0.5), steps=10, batch=16, lr=1e-3, generator=g, evaluate=seen.append, evaluate_every=4
    )
    assert seen == [0, 4, 8, 10]

    def poisoned(x, generator):
        return x * float("nan"), None

    log = train_self_consistent(TimeMLP(2, 16, 2, 8), y, poisoned, steps=5, batch=16, lr=1e-3, generator=g, alpha=1.0)
    assert log.diverged_at == 0


def test_velocity_nets_shapes_and_latents():
    assert sinusoidal_embedding(torch.rand(5), 16).shape == (5, 16)
    with pytest.raises(ValueError, match="even"):
        sinusoidal_embedding(torch.rand(5), 15)
    mlp = TimeMLP(2, 32, 3, 16, latent_dim=2)
    out = mlp(torch.randn(4, 2), torch.rand(4), torch.ones(4, 2))
    assert out.shape == (4, 2)
    with pytest.raises(ValueError, match="latent"):
        mlp(torch.randn(4, 2), torch.rand(4))
    x = torch.randn(3, 1, 8, 8)
    y, keep = RandomMask(0.5)(x, torch.Generator().manual_seed(0))
    unet = UNet8(1, 16, 16, latent_channels=1)
    assert unet(y, torch.rand(3), keep).shape == (3, 1, 8, 8)


def test_stochastic_interpolant_velocity_is_the_time_derivative():
    g = torch.Generator().manual_seed(0)
    x0, x1, z = (torch.randn(5, 3, generator=g, dtype=torch.float64) for _ in range(3))
    t = torch.rand(5, generator=g, dtype=torch.float64)
    h = 1e-6
    plus, _ = interpolate(x0, x1, t + h, 0.7, z)
    minus, _ = interpolate(x0, x1, t - h, 0.7, z)
    _, v = interpolate(x0, x1, t, 0.7, z)
    assert torch.allclose((plus - minus) / (2 * h), v, atol=1e-8)
    with pytest.raises(ValueError, match="latent noise"):
        interpolate(x0, x1, t, 0.7)


def test_generate_draws_new_samples_through_the_channel():
    from theorylab.train.interpolants import generate

    class Shrink(nn.Module):  # b(x, t) = x: the backward transport shrinks by e^-1 (Euler: (1 - 1/K)^K)
        def forward(self, x, t, latent=None):
            return x

    g = torch.Generator().manual_seed(0)
    y = torch.randn(50, 2, generator=g)
    new = generate(Shrink(), y, GaussianNoise(1.0), 30, g, steps=10)
    cleaned = transport(Shrink(), y, steps=10)
    assert new.shape == (30, 2)
    assert not any(torch.allclose(v, c) for v in new for c in cleaned)  # fresh channel noise: not a cleaned data point
