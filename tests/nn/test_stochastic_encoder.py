"""Stochastic encoders, beta-VAE and VIB (the channels Murphy et al. 2025 compare): the closed-form KL and
Bernoulli reconstruction against references, and a short beta-VAE fit on procedural shapes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from theorylab.data.shapes2d import shapes2d
from theorylab.nn.stochastic_encoder import (
    VIB,
    BetaVAE,
    StochasticEncoder,
    bernoulli_nll,
    diagonal_gaussian_log_prob,
    kl_standard_normal,
)


def test_closed_form_kl_matches_monte_carlo():
    g = torch.Generator().manual_seed(0)
    mu = torch.randn(3, 5, generator=g, dtype=torch.float64)
    log_var = torch.randn(3, 5, generator=g, dtype=torch.float64)
    z = StochasticEncoder.sample(mu.expand(200_000, 3, 5), log_var.expand(200_000, 3, 5), g)
    terms = diagonal_gaussian_log_prob(z, mu, log_var) - diagonal_gaussian_log_prob(
        z, torch.zeros_like(mu), torch.zeros_like(log_var)
    )
    estimate, se = terms.mean(0), terms.std(0) / len(terms) ** 0.5
    assert ((estimate - kl_standard_normal(mu, log_var)).abs() < 4 * se).all()


def test_kl_is_zero_exactly_at_the_prior_and_positive_elsewhere():
    zeros = torch.zeros(4, 7)
    assert torch.equal(kl_standard_normal(zeros, zeros), torch.zeros(4))
    assert (kl_standard_normal(zeros + 0.1, zeros) > 0).all() and (kl_standard_normal(zeros, zeros - 0.1) > 0).all()


def test_bernoulli_nll_matches_torch_on_a_hand_case():
    logits = torch.tensor([[[0.0, 2.0], [-1.0, 3.0]], [[1.5, -2.0], [0.5, 0.0]]])
    x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 0.0]]])
    by_hand = -(x * F.logsigmoid(logits) + (1 - x) * F.logsigmoid(-logits)).sum() / 2
    reference = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / 2
    torch.testing.assert_close(bernoulli_nll(logits, x), reference)
    torch.testing.assert_close(bernoulli_nll(logits, x), by_hand)


def test_output_shapes_seeded_init_and_loss_decomposition():
    x = torch.rand(8, 4, 4).round()
    enc = StochasticEncoder(16, latent_dim=3, hidden=32, seed=0)
    mu, log_var = enc(x)
    assert mu.shape == log_var.shape == (8, 3)
    same = StochasticEncoder(16, latent_dim=3, hidden=32, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(enc.parameters(), same.parameters()))
    vae = BetaVAE(16, latent_dim=3, hidden=32, beta=4.0, seed=1)
    logits, mu, log_var = vae(x, torch.Generator().manual_seed(0))
    assert logits.shape == (8, 16) and mu.shape == (8, 3)
    total, recon, kl = vae.loss(x, torch.Generator().manual_seed(0))
    torch.testing.assert_close(total, recon + 4.0 * kl)
    torch.testing.assert_close(kl, kl_standard_normal(mu, log_var).mean())
    torch.testing.assert_close(recon, bernoulli_nll(logits, x.flatten(1)))
    vib = VIB(16, latent_dim=3, n_classes=5, beta=0.1, hidden=32, seed=2)
    y = torch.arange(8) % 5
    total, ce, kl = vib.loss(x, y, torch.Generator().manual_seed(0))
    torch.testing.assert_close(total, ce + 0.1 * kl)
    assert vib(x)[0].shape == (8, 5) and vib.predict(x).shape == (8,)
    with pytest.raises(ValueError):
        BetaVAE(16, beta=-1.0)
    with pytest.raises(ValueError):
        StochasticEncoder(16, latent_dim=0)


def test_beta_vae_learns_shapes_beyond_the_mean_image():
    # 200 full-batch Adam steps on 256 images of 16 x 16 (about 1.5 s on one core). The loss of the best
    # latent-free model is the summed entropy of the per-pixel marginals; beating it by 2 nats means the code
    # carries information about the image (observed margin about 4-5 nats, start about 178 nats).
    x, _ = shapes2d(256, 16, generator=torch.Generator().manual_seed(1))
    p = x.flatten(1).mean(0).clamp(1e-6, 1 - 1e-6)
    mean_image_nll = float(-(p * p.log() + (1 - p) * (1 - p).log()).sum())
    vae = BetaVAE(256, latent_dim=6, hidden=128, beta=1.0, seed=0)
    opt = torch.optim.Adam(vae.parameters(), lr=5e-3)
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        start = float(vae.loss(x, g)[0])
    for _ in range(200):
        total = vae.loss(x, g)[0]
        opt.zero_grad()
        total.backward()
        opt.step()
    with torch.no_grad():  # average the single-sample loss over a few draws to judge the end point
        end = sum(float(vae.loss(x, g)[0]) for _ in range(8)) / 8
    assert end < 0.25 * start and end < mean_image_nll - 2.0
