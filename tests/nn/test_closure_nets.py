"""Closure networks: periodic convolutions against FFT convolution, GZ-FCNN sizes, the multiscale chain."""

from __future__ import annotations

import pytest
import torch

from theorylab.data.pde import SpectralCoarsen, resample_spectral
from theorylab.nn.closure import (
    GZFCNN,
    DirectClosure,
    MultiscaleClosure,
    PeriodicConv1d,
    PeriodicConv2d,
    matched_width,
    parameter_count,
)


def _fft_conv1d(x, w, b):
    """Circular cross-correlation y[o, i] = b[o] + Σ_c Σ_j w[o, c, j] x[c, i + j − p] by the convolution theorem:
    the kernel as an N-periodic signal g[(p − j) mod N] = w[j], then y = irfft(rfft(x) rfft(g))."""
    N, k = x.shape[-1], w.shape[-1]
    p = k // 2
    g = torch.zeros(*w.shape[:2], N, dtype=x.dtype)
    for j in range(k):
        g[..., (p - j) % N] += w[..., j]
    xh, gh = torch.fft.rfft(x, dim=-1), torch.fft.rfft(g, dim=-1)  # [B, C, m], [O, C, m]
    return torch.fft.irfft(torch.einsum("bcm,ocm->bom", xh, gh), n=N, dim=-1) + b[None, :, None]


def _fft_conv2d(x, w, b):
    N, k = x.shape[-1], w.shape[-1]
    p = k // 2
    g = torch.zeros(*w.shape[:2], N, N, dtype=x.dtype)
    for i in range(k):
        for j in range(k):
            g[..., (p - i) % N, (p - j) % N] += w[..., i, j]
    xh, gh = torch.fft.rfft2(x), torch.fft.rfft2(g)
    return torch.fft.irfft2(torch.einsum("bcyx,ocyx->boyx", xh, gh), s=(N, N)) + b[None, :, None, None]


def test_periodic_conv_equals_fft_convolution():
    g = torch.Generator().manual_seed(0)
    conv = PeriodicConv1d(3, 4, 5).double()
    x = torch.randn(2, 3, 16, generator=g, dtype=torch.float64)
    assert torch.allclose(conv(x), _fft_conv1d(x, conv.weight.detach(), conv.bias.detach()), atol=1e-12)
    conv2 = PeriodicConv2d(2, 3, 3).double()
    x2 = torch.randn(2, 2, 8, 8, generator=g, dtype=torch.float64)
    assert torch.allclose(conv2(x2), _fft_conv2d(x2, conv2.weight.detach(), conv2.bias.detach()), atol=1e-12)
    # periodic: a shift of the input shifts the output (zero padding would break this at the edges)
    assert torch.allclose(conv(torch.roll(x, 5, -1)), torch.roll(conv(x), 5, -1), atol=1e-12)
    zero_padded = torch.nn.Conv1d(3, 4, 5, padding=2).double()
    zero_padded.load_state_dict(conv.state_dict())
    assert not torch.allclose(zero_padded(x), conv(x), atol=1e-3)  # negative control
    with pytest.raises(ValueError, match="odd"):
        PeriodicConv1d(1, 1, 4)


def test_gz_fcnn_sizes_and_the_cards_parameter_counts():
    assert parameter_count(GZFCNN.quick(1, 1, 32)) == 10_657  # card: direct, 32 channels
    ms = MultiscaleClosure([32, 64], [GZFCNN.quick(1, 1, 23), GZFCNN.quick(2, 1, 23)])
    assert parameter_count(ms) == 11_295  # card: two nets of 23 channels
    for size, (k1, k2) in {"small": (5, 3), "medium": (9, 5), "large": (11, 7)}.items():
        net = GZFCNN.paper(size, 2, 2)
        convs = [m for m in net.modules() if isinstance(m, PeriodicConv2d)]
        assert [c.out_channels for c in convs] == [128, 64, 32, 32, 32, 32, 32, 2]
        assert [c.kernel_size[0] for c in convs] == [k1, k1] + [k2] * 6
        assert sum(isinstance(m, torch.nn.ReLU) for m in net.modules()) == 7  # none after the last layer
        assert net(torch.randn(1, 2, 16, 16)).shape == (1, 2, 16, 16)
    quick = GZFCNN.quick(1, 1, 8)
    assert sum(isinstance(m, torch.nn.GELU) for m in quick.modules()) == 3
    # one circular pad by the summed halos equals padding layer by layer (1-D and 2-D; small grids fall back)
    x = torch.randn(3, 1, 32)
    assert torch.allclose(quick(x), quick.net(x), atol=1e-6)
    small = GZFCNN.paper("small", 2, 2)
    y = torch.randn(1, 2, 16, 16)
    assert torch.allclose(small(y), small.net(y), atol=1e-6)
    z = torch.randn(1, 2, 8, 8)  # halo 2 + 2 + 6 = 10 > 8 points
    assert torch.equal(small(z), small.net(z))
    with pytest.raises(ValueError):
        GZFCNN.paper("huge")


def test_direct_budget_matches_the_multiscale_one_within_ten_percent():
    for size in ("small", "medium", "large"):
        ms = sum(GZFCNN.count(2, 2 * (1 + k), GZFCNN.paper_layers(size, 2)) for k in range(3))
        assert ms == sum(parameter_count(GZFCNN.paper(size, 2 * (1 + k), 2)) for k in range(3))  # count = built
        w = matched_width(lambda w, size=size: GZFCNN.count(2, 2, GZFCNN.paper_layers(size, 2, w)), ms)
        assert abs(parameter_count(GZFCNN.paper(size, 2, 2, w)) - ms) <= 0.1 * ms
    with pytest.raises(ValueError):
        matched_width(lambda w: 10, 1000)


class _Zero(torch.nn.Module):
    def forward(self, x):
        return torch.zeros_like(x[:, :1])


class _First(torch.nn.Module):
    def forward(self, x):
        return x[:, :1] * 2.0


def test_multiscale_chain_is_a_residual_buildup_over_resampled_levels():
    L = 22.0
    down = lambda x, n: SpectralCoarsen(n, length=L)(x).to(x.dtype)  # noqa: E731
    x = torch.randn(3, 1, 32, dtype=torch.float64)
    ms = MultiscaleClosure([8, 16, 32], [_First(), _Zero(), _Zero()], downsample=down)
    p = ms.levels_forward(x)
    assert [q.shape[-1] for q in p] == [8, 16, 32]
    assert torch.allclose(p[0], 2 * down(x, 8), atol=1e-12)  # net 0 sees ū resampled to n_0
    # zero buildup nets: each level is the level below, spectrally upsampled (a residual)
    assert torch.allclose(p[1], resample_spectral(p[0], 16), atol=1e-12)
    assert torch.allclose(p[2], resample_spectral(p[0], 32), atol=1e-12)
    assert torch.equal(ms(x), p[-1])
    # buildup inputs: ū at n_k and every lower prediction upsampled there
    inp = ms.level_inputs(x, 2, p)
    assert inp.shape == (3, 3, 32) and torch.allclose(inp[:, 1:2], resample_spectral(p[0], 32), atol=1e-12)
    # "full": net 0 runs at N_c and its output is coarsened to n_0
    full = MultiscaleClosure([8, 16, 32], [_First(), _Zero(), _Zero()], downscale_input="full", downsample=down)
    assert torch.allclose(full.levels_forward(x)[0], down(2 * x, 8), atol=1e-12)
    direct = DirectClosure(_First(), 32)
    assert [q.shape[-1] for q in direct.levels_forward(x)] == [32]
    with pytest.raises(ValueError):
        MultiscaleClosure([16, 8], [_Zero(), _Zero()])
    with pytest.raises(ValueError, match="points"):
        ms(torch.randn(1, 1, 16))


def test_matrix_resampling_equals_the_fft_path():
    ms = MultiscaleClosure([8, 16], [_Zero(), _Zero()])
    x = torch.randn(2, 1, 16, dtype=torch.float64)
    assert torch.allclose(ms.resample(x, 8), resample_spectral(x, 8), atol=1e-13)
    assert torch.allclose(
        ms.resample(resample_spectral(x, 8), 16), resample_spectral(resample_spectral(x, 8), 16), atol=1e-13
    )
    ms2 = MultiscaleClosure([8, 16], [_Zero(), _Zero()], dims=2)
    y = torch.randn(2, 1, 16, 16, dtype=torch.float64)
    assert torch.allclose(ms2.resample(y, 8), resample_spectral(y, 8, dims=2), atol=1e-13)
