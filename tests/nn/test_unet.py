"""Periodic U-Nets: shapes, exact shift equivariance, residual form, classifier head; noise schedules."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.nn.unet import UNet, noise_schedule


@pytest.mark.parametrize("dims, shape", [(1, (3, 1, 64)), (2, (2, 1, 16, 16))])
def test_shapes_and_periodic_shift_equivariance(dims, shape):
    torch.manual_seed(0)
    net = UNet(dims, width=8, levels=2, classes=5).double().eval()
    x = torch.randn(*shape, dtype=torch.float64)
    y, logits = net(x, return_logits=True)
    assert y.shape == x.shape and logits.shape == (shape[0], 5)
    axes = tuple(range(2, x.ndim))
    shifted = net(torch.roll(x, shifts=(4,) * len(axes), dims=axes))
    # shifts by multiples of 2^levels
    assert torch.allclose(shifted, torch.roll(y, shifts=(4,) * len(axes), dims=axes), atol=1e-12)
    _, shifted_logits = net(torch.roll(x, shifts=(4,) * len(axes), dims=axes), return_logits=True)
    assert torch.allclose(shifted_logits, logits, atol=1e-12)  # the classifier is shift invariant


def test_residual_form_and_bad_inputs():
    net = UNet(1, width=4, levels=1, residual=True)
    with torch.no_grad():
        net.out.weight.zero_()
        net.out.bias.zero_()
    x = torch.randn(2, 1, 8)
    assert torch.equal(net(x), x)  # x + 0
    with pytest.raises(ValueError, match="divisible"):
        net(torch.randn(1, 1, 7))
    with pytest.raises(ValueError, match="classifier"):
        net(x, return_logits=True)
    with pytest.raises(ValueError, match="residual"):
        UNet(2, in_channels=2, out_channels=1, residual=True)


def test_noise_schedules():
    betas, abar = noise_schedule(1000, "linear")
    assert betas[0] == pytest.approx(1e-4) and betas[-1] == pytest.approx(0.02)
    assert float(abar[-1]) == pytest.approx(float(torch.prod(1 - betas)))
    betas, abar = noise_schedule(1000, "cosine")
    t = 500
    f = lambda u: math.cos((u + 0.008) / 1.008 * math.pi / 2) ** 2  # noqa: E731
    assert float(abar[t - 1]) == pytest.approx(f(t / 1000) / f(0), rel=1e-10)
    assert bool((abar[1:] < abar[:-1]).all()) and float(betas.max()) <= 0.999
    with pytest.raises(ValueError):
        noise_schedule(0)


def test_denoiser_mlp_shapes_and_noise_blindness():
    from theorylab.nn.unet import DenoiserMLP

    net = DenoiserMLP(16, width=32, blocks=2, levels=7)
    x = torch.randn(5, 1, 16)
    eps, logits = net(x)
    assert eps.shape == x.shape and logits.shape == (5, 7)
    eps3, _ = net(x, 3)
    assert torch.equal(eps, eps3)  # no time embedding: the level argument is ignored


def test_periodic_cnn_is_residual_and_shift_equivariant():
    from theorylab.nn.unet import PeriodicCNN

    torch.manual_seed(0)
    net = PeriodicCNN(1, 1, 8, 3).double()
    x = torch.randn(2, 1, 32, dtype=torch.float64)
    assert torch.allclose(net(torch.roll(x, 5, -1)), torch.roll(net(x), 5, -1), atol=1e-12)  # any shift: no pooling
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
    assert torch.equal(net(x), x)


def test_diffuse_is_the_ddpm_forward_process():
    from theorylab.nn.unet import diffuse

    x, e = torch.randn(3, 1, 4, 4), torch.randn(3, 1, 4, 4)
    a = torch.tensor([1.0, 0.0, 0.25])
    y = diffuse(x, a, e)
    assert torch.equal(y[0], x[0]) and torch.equal(y[1], e[1])
    assert torch.allclose(y[2], 0.5 * x[2] + 0.75**0.5 * e[2])
    # unit-variance data stays at unit variance at every level
    big = torch.randn(200_000, 2, generator=torch.Generator().manual_seed(0))
    noise = torch.randn(200_000, 2, generator=torch.Generator().manual_seed(1))
    assert abs(float(diffuse(big, torch.full((200_000,), 0.3), noise).var()) - 1) < 0.01


def test_forward_with_bottleneck_is_forward_and_feeds_the_classifier():
    torch.manual_seed(0)
    net = UNet(dims=1, in_channels=2, out_channels=2, width=8, levels=2, classes=5, residual=True)
    x = torch.randn(3, 2, 16)
    y, pooled = net.forward_with_bottleneck(x)
    assert torch.equal(y, net(x)) and pooled.shape == (3, 8 * 2**2)
    y2, logits = net(x, return_logits=True)
    assert torch.equal(y2, y) and torch.equal(logits, net.classifier(pooled))
