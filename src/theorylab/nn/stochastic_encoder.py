"""Stochastic (diagonal-Gaussian) encoders, the beta-VAE and the variational information bottleneck.

Murphy, Dillavou & Bassett (*Comparing the information content of probabilistic representation spaces*,
TMLR 2025, arXiv 2405.21042) compare the latent channels of models whose encoder maps an input to a
diagonal Gaussian ``q(z | x) = N(mu(x), diag exp(log_var(x)))``:

* beta-VAE (Higgins et al., ICLR 2017; Kingma & Welling, arXiv 1312.6114): Bernoulli decoder on binary
  images, loss ``E_q[-log p(x | z)] + beta KL(q(z | x) || N(0, I))``;
* VIB (Alemi et al., *Deep Variational Information Bottleneck*, ICLR 2017): the same encoder and KL, but
  the decoder predicts a label, loss ``E_q[-log p(y | z)] + beta KL(q(z | x) || N(0, I))``.

Both losses use one reparametrised sample ``z = mu + exp(log_var / 2) * eps`` per input, with ``eps`` drawn
from an explicit ``torch.Generator``; every term is summed over pixels / latents and averaged over the batch.
The ``(mu, log_var)`` an encoder returns are what :mod:`theorylab.theory.info` reads as a channel.
"""

from __future__ import annotations

import math
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.core.rng import seeded


def _mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers between consecutive ``sizes`` with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _init(seed: int | None):
    # seed=None keeps torch's usual behaviour (default init from the global stream); a seed draws the weights
    # under core.rng.seeded, reproducibly and without moving the caller's stream.
    return nullcontext() if seed is None else seeded(seed)


def _check_sizes(**sizes: int) -> None:
    bad = {k: v for k, v in sizes.items() if v < 1}
    if bad:
        raise ValueError(f"sizes must be >= 1, got {bad}")


def kl_standard_normal(mu: Tensor, log_var: Tensor) -> Tensor:
    """Closed-form ``KL(N(mu, diag exp(log_var)) || N(0, I))`` per row, summed over the last dim:
    ``1/2 sum(mu^2 + exp(log_var) - log_var - 1)``; exactly 0 at ``mu = 0, log_var = 0``."""
    return 0.5 * (mu.pow(2) + log_var.exp() - log_var - 1).sum(-1)


def bernoulli_nll(logits: Tensor, x: Tensor) -> Tensor:
    """``-log p(x | logits)`` for Bernoulli pixels: BCE-with-logits summed over all but the first dim, then
    averaged over the batch (the per-image reconstruction term of the VAE bound, in nats)."""
    per_pixel = F.binary_cross_entropy_with_logits(logits, x, reduction="none")
    return per_pixel.flatten(1).sum(1).mean()


class StochasticEncoder(nn.Module):
    """MLP ``in_dim -> hidden (x depth, ReLU) -> 2 * latent_dim`` giving ``(mu, log_var)`` of a diagonal Gaussian.

    Inputs of any shape ``(B, ...)`` are flattened to ``(B, in_dim)``. ``seed`` makes the initial weights
    reproducible (drawn under :func:`theorylab.core.rng.seeded`); ``None`` uses the global stream.
    """

    def __init__(
        self, in_dim: int, latent_dim: int = 10, hidden: int = 256, depth: int = 2, *, seed: int | None = None
    ):
        super().__init__()
        _check_sizes(in_dim=in_dim, latent_dim=latent_dim, hidden=hidden, depth=depth)
        self.in_dim, self.latent_dim = in_dim, latent_dim
        with _init(seed):
            self.net = _mlp([in_dim] + [hidden] * depth + [2 * latent_dim])

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mu, log_var = self.net(x.flatten(1)).chunk(2, dim=-1)
        return mu, log_var

    @staticmethod
    def sample(mu: Tensor, log_var: Tensor, generator: torch.Generator | None) -> Tensor:
        """Reparametrised draw ``mu + exp(log_var / 2) * eps``, ``eps ~ N(0, I)`` from ``generator``
        (differentiable in ``mu`` and ``log_var``)."""
        eps = torch.randn(mu.shape, generator=generator, dtype=mu.dtype, device=mu.device)
        return mu + torch.exp(0.5 * log_var) * eps


class BetaVAE(nn.Module):
    """beta-VAE (Higgins et al. 2017) with a :class:`StochasticEncoder` and an MLP decoder
    ``latent_dim -> hidden (x depth) -> in_dim`` producing Bernoulli logits for flattened binary inputs."""

    def __init__(
        self,
        in_dim: int,
        latent_dim: int = 10,
        hidden: int = 256,
        beta: float = 1.0,
        depth: int = 2,
        *,
        seed: int | None = None,
    ):
        super().__init__()
        if beta < 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        self.beta = float(beta)
        # One seed for both halves: the decoder's seed is offset so the two nets do not share their first draws.
        self.encoder = StochasticEncoder(in_dim, latent_dim, hidden, depth, seed=seed)
        with _init(None if seed is None else seed + 1):
            self.decoder = _mlp([latent_dim] + [hidden] * depth + [in_dim])

    def decode(self, z: Tensor) -> Tensor:
        """Bernoulli logits (B, in_dim) of ``p(x | z)``."""
        return self.decoder(z)

    def forward(self, x: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """``(logits, mu, log_var)`` for one reparametrised sample per input."""
        mu, log_var = self.encoder(x)
        return self.decode(self.encoder.sample(mu, log_var, generator)), mu, log_var

    def loss(self, x: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """``(total, recon, kl)``: recon the Bernoulli NLL summed over pixels, kl the closed-form KL summed over
        latents, both averaged over the batch; ``total = recon + beta * kl`` (the negative ELBO at beta = 1)."""
        logits, mu, log_var = self(x, generator)
        recon = bernoulli_nll(logits, x.flatten(1))
        kl = kl_standard_normal(mu, log_var).mean()
        return recon + self.beta * kl, recon, kl


class VIB(nn.Module):
    """Variational information bottleneck (Alemi et al. 2017): a :class:`StochasticEncoder` and a linear
    classifier ``latent_dim -> n_classes`` on the sampled code (Alemi et al.'s softmax decoder)."""

    def __init__(
        self,
        in_dim: int,
        latent_dim: int,
        n_classes: int,
        beta: float = 1e-3,
        hidden: int = 256,
        depth: int = 2,
        *,
        seed: int | None = None,
    ):
        super().__init__()
        _check_sizes(n_classes=n_classes)
        if beta < 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        self.beta = float(beta)
        self.encoder = StochasticEncoder(in_dim, latent_dim, hidden, depth, seed=seed)
        with _init(None if seed is None else seed + 1):
            self.classifier = nn.Linear(latent_dim, n_classes)

    def forward(self, x: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """``(class logits, mu, log_var)`` for one reparametrised sample per input."""
        mu, log_var = self.encoder(x)
        return self.classifier(self.encoder.sample(mu, log_var, generator)), mu, log_var

    def loss(self, x: Tensor, y: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """``(total, ce, kl)``: cross-entropy of the labels ``y`` (nats, batch mean), the closed-form KL summed
        over latents (batch mean), ``total = ce + beta * kl``."""
        logits, mu, log_var = self(x, generator)
        ce = F.cross_entropy(logits, y)
        kl = kl_standard_normal(mu, log_var).mean()
        return ce + self.beta * kl, ce, kl

    @torch.no_grad()
    def predict(self, x: Tensor) -> Tensor:
        """Labels from the mean code ``z = mu`` (Alemi et al. average over samples; the mean is the cheap proxy)."""
        return self.classifier(self.encoder(x)[0]).argmax(-1)


def diagonal_gaussian_log_prob(z: Tensor, mu: Tensor, log_var: Tensor) -> Tensor:
    """``log N(z; mu, diag exp(log_var))`` summed over the last dim (for Monte Carlo checks of the KL)."""
    return -0.5 * (((z - mu) ** 2) / log_var.exp() + log_var + math.log(2 * math.pi)).sum(-1)
