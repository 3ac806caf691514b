"""EDM kit against independent references: the EDM formulas, the closed-form Gaussian denoiser and its exact
PF-ODE map (theorylab.nn.denoisers), and Monte Carlo moments."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from theorylab.core.errors import MissingResource
from theorylab.nn.denoisers import LinearDenoiser, linear_sampling_map
from theorylab.nn.edm import (
    EDMPrecond,
    FourierMLP,
    edm_coefficients,
    edm_heun_sampler,
    edm_loss,
    edm_sigmas,
    make_backbone,
)


def _gaussian(d=5, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((d, d))
    q, _ = np.linalg.qr(a)
    lam = np.geomspace(1.5, 0.05, d)
    cov = (q * lam) @ q.T
    mu = rng.standard_normal(d) * 0.3
    return torch.as_tensor(mu), torch.as_tensor(cov)


class ExactBackbone(nn.Module):
    """F solved from D = c_skip x + c_out F(c_in x): F(x_in, c_noise) = (D(x; sigma) - c_skip x) / c_out, with sigma
    and x recovered from c_noise = ln(sigma)/4 and x_in = c_in x."""

    def __init__(self, linear: LinearDenoiser, sigma_data=0.5):
        super().__init__()
        self.linear, self.sd = linear, sigma_data

    def forward(self, x_in, c_noise):
        sigma = torch.exp(4 * c_noise)
        c_skip, c_out, c_in, _ = edm_coefficients(sigma, self.sd)
        x = x_in / c_in[:, None]
        return (self.linear(x, sigma) - c_skip[:, None] * x) / c_out[:, None]


def test_coefficients_match_edm_table():
    sigma = torch.tensor([0.002, 0.1, 0.5, 3.0, 80.0], dtype=torch.float64)
    c_skip, c_out, c_in, c_noise = edm_coefficients(sigma, 0.5)
    for k, s in enumerate(sigma.tolist()):
        assert c_skip[k].item() == pytest.approx(0.25 / (s * s + 0.25), rel=1e-12)
        assert c_out[k].item() == pytest.approx(s * 0.5 / math.sqrt(s * s + 0.25), rel=1e-12)
        assert c_in[k].item() == pytest.approx(1 / math.sqrt(s * s + 0.25), rel=1e-12)
        assert c_noise[k].item() == pytest.approx(math.log(s) / 4, rel=1e-12)
    # EDM's design rule: the backbone's target (y - c_skip (y + sigma n)) / c_out has unit variance when Var y = sd^2
    var = ((1 - c_skip) ** 2 * 0.25 + c_skip**2 * sigma**2) / c_out**2
    assert torch.allclose(var, torch.ones_like(var), rtol=1e-12)
    # and the loss weight lambda = 1/c_out^2
    assert torch.allclose((sigma**2 + 0.25) / (sigma * 0.5) ** 2, 1 / c_out**2, rtol=1e-12)


def test_precond_with_exact_backbone_reproduces_linear_denoiser():
    mu, cov = _gaussian()
    lin = LinearDenoiser(mu, cov)
    pre = EDMPrecond(ExactBackbone(lin))
    x = torch.randn(7, 5, dtype=torch.float64) * 3
    sigma = torch.tensor([0.002, 0.01, 0.3, 1.0, 5.0, 40.0, 80.0], dtype=torch.float64)
    assert torch.allclose(pre(x, sigma), lin(x, sigma), atol=1e-10)
    assert torch.allclose(pre(x, 0.7), lin(x, 0.7), atol=1e-10)  # scalar sigma broadcasts


def test_sigmas_formula():
    s = edm_sigmas(18)
    assert len(s) == 19 and s[-1] == 0 and s[0].item() == pytest.approx(80) and s[-2].item() == pytest.approx(0.002)
    i = 5
    ref = (80 ** (1 / 7) + i / 17 * (0.002 ** (1 / 7) - 80 ** (1 / 7))) ** 7
    assert s[i].item() == pytest.approx(ref, rel=1e-12)
    assert bool((s[:-1].diff() < 0).all())
    with pytest.raises(ValueError):
        edm_sigmas(1)


def test_heun_counts_evaluations():
    calls = []

    def den(x, s):
        calls.append(len(x))
        return torch.zeros_like(x)

    edm_heun_sampler(den, torch.randn(4, 3, dtype=torch.float64), edm_sigmas(18))
    assert len(calls) == 35 and set(calls) == {4}


def test_heun_with_exact_denoiser_matches_closed_form_map_at_order_two():
    mu, cov = _gaussian()
    lin = LinearDenoiser(mu, cov)
    z = torch.randn(64, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    errs = []
    for steps in (8, 16, 32, 64):
        sig = edm_sigmas(steps)[:-1]  # stop at sigma_min: every step is a Heun step
        x = edm_heun_sampler(lin, 80 * z, sig)
        exact = linear_sampling_map(lin, 80 * z, 80.0, sigma=0.002)
        errs.append(float((x - exact).norm(dim=1).max()))
    orders = [math.log2(a / b) for a, b in zip(errs[:-1], errs[1:])]
    assert all(1.7 <= o <= 2.5 for o in orders[1:]), (errs, orders)
    assert errs[-1] < 0.02 and errs[0] > 16 * errs[-1] * 0.5
    # The standard schedule (final Euler step into 0) at 18 steps is close to the exact sigma=0 map.
    x18 = edm_heun_sampler(lin, 80 * z, edm_sigmas(18))
    assert float((x18 - linear_sampling_map(lin, 80 * z)).norm(dim=1).max()) < 0.2


def test_heun_with_exact_denoiser_samples_the_gaussian():
    mu, cov = _gaussian()
    lin = LinearDenoiser(mu, cov)
    m = 20000
    z = torch.randn(m, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    x = edm_heun_sampler(lin, 80 * z, edm_sigmas(64))  # discretisation error (~0.008) well below the MC error
    mean, c = x.mean(0), torch.cov(x.T)
    se_mean = torch.sqrt(torch.diag(cov) / m)
    assert bool(((mean - mu).abs() <= 4 * se_mean).all()), (mean - mu) / se_mean
    # entrywise SE of a sample covariance: sqrt((S_ii S_jj + S_ij^2)/m)
    se_cov = torch.sqrt((torch.outer(torch.diag(cov), torch.diag(cov)) + cov**2) / m)
    assert bool(((c - cov).abs() <= 4.5 * se_cov + 2e-3).all())


def test_loss_is_the_weighted_dsm_loss():
    mu, cov = _gaussian()
    pre = EDMPrecond(ExactBackbone(LinearDenoiser(mu, cov)))
    y = torch.randn(6, 5, dtype=torch.float64)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    loss = edm_loss(pre, y, g1)
    sigma = torch.exp(-1.2 + 1.2 * torch.randn(6, generator=g2, dtype=torch.float64))
    n = torch.randn(6, 5, generator=g2, dtype=torch.float64)
    w = (sigma**2 + 0.25) / (sigma * 0.5) ** 2
    ref = (w[:, None] * (pre(y + sigma[:, None] * n, sigma) - y) ** 2).mean()
    assert loss.item() == pytest.approx(ref.item(), rel=1e-12)


def test_exact_denoiser_minimises_the_loss_over_the_gaussian():
    # On data from N(mu, Sigma) the closed-form denoiser has lower expected loss than a perturbed one.
    mu, cov = _gaussian()
    lin = LinearDenoiser(mu, cov)
    y = (
        mu
        + torch.randn(40000, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
        @ torch.linalg.cholesky(cov).T
    )
    good = edm_loss(EDMPrecond(ExactBackbone(lin)), y, torch.Generator().manual_seed(5)).item()
    worse = edm_loss(
        EDMPrecond(ExactBackbone(LinearDenoiser(mu + 0.2, cov * 1.3))), y, torch.Generator().manual_seed(5)
    ).item()
    assert good < worse


def test_fourier_mlp_shapes_and_noise_dependence():
    net = FourierMLP(64, 32)
    x = torch.randn(10, 64)
    out = net(x, torch.linspace(-1.5, 1.1, 10))
    assert out.shape == (10, 64)
    a, b = net(x, torch.full((10,), -1.0)), net(x, torch.full((10,), 1.0))
    assert not torch.allclose(a, b)
    assert sum(p.numel() for p in FourierMLP(64, 256).inp.parameters()) == 64 * 256 + 256 + 2 * (256 * 256 + 256)
    pre = EDMPrecond(net)
    assert pre(x, torch.full((10,), 2.0)).shape == (10, 64)


def test_image_backbones_need_diffusers_or_run():
    try:
        import diffusers  # noqa: F401
    except ImportError:
        with pytest.raises(MissingResource, match="pip install diffusers"):
            make_backbone("unet", 64, (8, 8))
        return
    net = EDMPrecond(make_backbone("unet", 64, (8, 8), unet_channels=8))
    assert net(torch.randn(3, 64), torch.tensor([0.1, 1.0, 10.0])).shape == (3, 64)


def test_unknown_backbone():
    with pytest.raises(ValueError, match="unknown backbone"):
        make_backbone("rnn", 4, (2, 2))
