"""Corruption channels against their definitions."""

from __future__ import annotations

import torch

from theorylab.data.corruptions import GaussianBlur, GaussianNoise, Quantise, RandomMask, Saturate, compose


def test_gaussian_noise_and_mask_statistics():
    g = torch.Generator().manual_seed(0)
    x = torch.zeros(20000, 2, dtype=torch.float64)
    y, lat = GaussianNoise(0.6)(x, g)
    assert lat is None and abs(float(y.std()) - 0.6) < 0.01
    x = torch.full((20000, 2), 3.0, dtype=torch.float64)
    y, keep = RandomMask(0.5)(x, g)
    assert abs(float(keep.mean()) - 0.5) < 0.01
    assert torch.equal(y[keep.bool()], x[keep.bool()])
    hidden = y[~keep.bool()]
    assert abs(float(hidden.mean())) < 0.03 and abs(float(hidden.std()) - 1) < 0.03
    assert not torch.equal(RandomMask(0.5)(x, g)[1], keep)  # fresh noise on every call


def test_blur_kernel_preserves_constants_and_smooths():
    blur = GaussianBlur(1.0)
    assert abs(float(blur.kernel().sum()) - 1) < 1e-12
    const = torch.full((2, 1, 8, 8), 0.7, dtype=torch.float64)
    assert torch.allclose(blur.blur(const), const)
    spike = torch.zeros(1, 1, 9, 9, dtype=torch.float64)
    spike[0, 0, 4, 4] = 1
    out = blur.blur(spike)
    k = blur.kernel()
    r = len(k) // 2
    assert torch.allclose(out[0, 0, 4, 4], k[r] ** 2) and abs(float(out.sum()) - 1) < 1e-12


def test_nonlinear_channels_and_compose():
    g = torch.Generator().manual_seed(1)
    x = torch.linspace(-5, 5, 101)[:, None]
    y, _ = Saturate(scale=0.8)(x, g)
    assert float(y.abs().max()) < 0.8 and torch.all(y[1:] >= y[:-1])
    q, _ = Quantise(step=0.5)(x, g)
    assert torch.allclose(q / 0.5, torch.round(q / 0.5))
    both = compose(GaussianNoise(0.0), RandomMask(1.0, fill_std=0.0))
    y, lat = both(x, g)
    assert torch.equal(y, torch.zeros_like(x)) and torch.equal(lat, torch.zeros_like(x))
