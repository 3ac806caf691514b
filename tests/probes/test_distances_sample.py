"""Sample distances against closed forms."""

from __future__ import annotations

import math

import torch

from theorylab.probes.distances import mmd_rbf, psnr, sliced_w2


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
