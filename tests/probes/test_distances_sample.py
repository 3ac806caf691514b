"""Sample distances against closed forms."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.probes.distances import mmd_rbf, psnr, sliced_w2


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_sliced_w2_of_a_shift():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(20000, 4, generator=g, dtype=torch.float64)
    shift = torch.tensor([2.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    # E_theta (theta . v)^2 = |v|^2 / d on the unit sphere: SW2 of a pure shift is |v| / sqrt(d).
    d = sliced_w2(a, a + shift, directions=2000, generator=torch.Generator().manual_seed(1))
    assert abs(d - 2.0 / math.sqrt(4)) < 0.03
    assert sliced_w2(a, a.flip(0), generator=torch.Generator().manual_seed(2)) < 1e-12
    b = torch.randn(15000, 4, generator=g, dtype=torch.float64)
    assert sliced_w2(a, b, generator=torch.Generator().manual_seed(3)) < 0.05  # unequal sizes, same law


def test_mmd_and_psnr():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(800, 3, generator=g), torch.randn(800, 3, generator=g)
    assert abs(mmd_rbf(a, b)) < 0.01 and mmd_rbf(a, b + 1.0) > 0.1
    x = torch.zeros(3, 1, 8, 8)
    y = x + 0.1
    assert torch.allclose(psnr(y, x), torch.full((3,), 10 * math.log10(4 / 0.01), dtype=torch.float64))


def test_ssim_properties_and_a_closed_form():
    from theorylab.probes.distances import ssim

    g = torch.Generator().manual_seed(0)
    u = torch.linspace(0, 3.14, 32)
    # smooth (4, 1, 32, 32)
    x = torch.stack([torch.sin(k * u)[:, None] * torch.cos(u)[None, :] for k in (1.0, 2.0, 3.0, 4.0)])[:, None]
    assert torch.allclose(ssim(x, x), torch.ones(4, dtype=torch.float64))
    noisy = x + 0.3 * torch.randn(x.shape, generator=g)
    noisier = x + 0.8 * torch.randn(x.shape, generator=g)
    assert (ssim(noisier, x) < ssim(noisy, x)).all() and (ssim(noisy, x) < 1).all()
    assert torch.allclose(ssim(noisy, x), ssim(x, noisy))
    # Constant images a and b: no variance, SSIM = (2ab + C1) / (a^2 + b^2 + C1).
    a, b, c1 = 0.5, -0.2, (0.01 * 2) ** 2
    got = ssim(torch.full((1, 8, 8), a), torch.full((1, 8, 8), b))
    assert abs(float(got) - (2 * a * b + c1) / (a * a + b * b + c1)) < 1e-6


def test_biased_mmd_is_nonnegative_and_equal_law_pairs_agree():
    from theorylab.probes.distances import median_bandwidth

    g = torch.Generator().manual_seed(0)
    a, b, c = (torch.randn(300, 4, generator=g) for _ in range(3))
    h = median_bandwidth(torch.cat([a, b]))
    same1, same2 = mmd_rbf(a, b, h, biased=True), mmd_rbf(a, c, h, biased=True)
    assert same1 > 0 and same2 > 0 and 0.5 < same1 / same2 < 2
    assert mmd_rbf(a, b + 0.5, h, biased=True) > 3 * same1
