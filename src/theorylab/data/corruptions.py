"""Corruption channels: plain callables ``A(x, generator) -> (y, latents)``.

Modi, Han, Vanden-Eijnden, Bruna (arXiv 2512.10857) learn a clean generative model from
corrupted samples and a *black-box* channel: the method only ever calls ``A``. Every channel here
is such a callable; a user's own simulator (any function with this signature) works the same.
``latents`` is what the channel reveals besides ``y`` (e.g. the mask), or ``None``.

Shapes: ``x`` is ``(n, ...)``; channels act per sample. Every call takes an explicit
``torch.Generator`` (fresh noise each call), never the global RNG.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

Channel = Callable[[Tensor, torch.Generator], tuple[Tensor, Optional[Tensor]]]


def _noise(like: Tensor, generator: torch.Generator) -> Tensor:
    return torch.randn(like.shape, generator=generator, dtype=like.dtype).to(like.device)


@dataclass(frozen=True)
class GaussianNoise:
    """``y = x + sigma * eps``."""

    sigma: float

    def __call__(self, x: Tensor, generator: torch.Generator) -> tuple[Tensor, None]:
        return x + self.sigma * _noise(x, generator), None


@dataclass(frozen=True)
class RandomMask:
    """Each coordinate (pixel) independently hidden with probability ``ratio`` and replaced by
    ``fill_std * N(0, 1)`` noise; the mask (1 = observed) is returned as the latent."""

    ratio: float
    fill_std: float = 1.0

    def __call__(self, x: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        keep = (torch.rand(x.shape, generator=generator) >= self.ratio).to(x.dtype).to(x.device)
        return keep * x + (1 - keep) * self.fill_std * _noise(x, generator), keep


@dataclass(frozen=True)
class GaussianBlur:
    """Separable Gaussian blur of width ``sigma_blur`` pixels on images ``(n, C, H, W)`` (reflect
    padding), plus ``sigma_noise`` white noise."""

    sigma_blur: float
    sigma_noise: float = 0.0

    def kernel(self, dtype: torch.dtype = torch.float64) -> Tensor:
        radius = max(1, int(math.ceil(3 * self.sigma_blur)))
        t = torch.arange(-radius, radius + 1, dtype=dtype)
        k = torch.exp(-0.5 * (t / self.sigma_blur) ** 2)
        return k / k.sum()

    def blur(self, x: Tensor) -> Tensor:
        if x.dim() != 4:
            raise ValueError(f"GaussianBlur needs images (n, C, H, W), got shape {tuple(x.shape)}")
        k = self.kernel(x.dtype).to(x.device)
        r, c = len(k) // 2, x.shape[1]
        h = F.conv2d(F.pad(x, (r, r, 0, 0), mode="reflect"), k.view(1, 1, 1, -1).expand(c, 1, 1, -1), groups=c)
        return F.conv2d(F.pad(h, (0, 0, r, r), mode="reflect"), k.view(1, 1, -1, 1).expand(c, 1, -1, 1), groups=c)

    def __call__(self, x: Tensor, generator: torch.Generator) -> tuple[Tensor, None]:
        y = self.blur(x)
        return (y + self.sigma_noise * _noise(y, generator) if self.sigma_noise > 0 else y), None


@dataclass(frozen=True)
class Saturate:
    """A non-linear channel: ``y = scale * tanh(x / scale) + sigma * eps`` (a saturating sensor)."""

    scale: float = 1.0
    sigma: float = 0.0

    def __call__(self, x: Tensor, generator: torch.Generator) -> tuple[Tensor, None]:
        y = self.scale * torch.tanh(x / self.scale)
        return (y + self.sigma * _noise(y, generator) if self.sigma > 0 else y), None


@dataclass(frozen=True)
class Quantise:
    """A non-linear channel: noise of std ``sigma``, then rounding to a grid of step ``step``."""

    step: float
    sigma: float = 0.0

    def __call__(self, x: Tensor, generator: torch.Generator) -> tuple[Tensor, None]:
        z = x + self.sigma * _noise(x, generator) if self.sigma > 0 else x
        return self.step * torch.round(z / self.step), None


def compose(*channels: Channel) -> Channel:
    """Apply channels left to right; the last non-``None`` latent is returned."""

    def composed(x: Tensor, generator: torch.Generator) -> tuple[Tensor, Optional[Tensor]]:
        latent = None
        for channel in channels:
            x, lat = channel(x, generator)
            latent = lat if lat is not None else latent
        return x, latent

    return composed
