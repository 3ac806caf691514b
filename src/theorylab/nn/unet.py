"""Periodic U-Nets for fields on 1-D and 2-D tori, and diffusion noise schedules (the PDE kit).

:class:`UNet` (``dims=1`` or ``2``) maps ``[B, C_in, *spatial]`` to ``[B, C_out, *spatial]``: circular
3-wide (3x3) convolutions, GroupNorm and GELU, ``levels`` downsamplings by 2 with skip connections,
and optionally a classifier head on the bottleneck (global average pool and a linear layer) for
the thermalizer's noise-level classifier (Pedersen, Zanna, Bruna, arXiv 2503.18731). Circular
padding keeps it exactly equivariant to periodic shifts by multiples of 2^levels. ``residual=True``
returns ``x + net(x)`` (a residual emulator; needs C_in = C_out). Spatial sizes must be divisible by
2^levels.

:func:`noise_schedule`: DDPM's linear β schedule (Ho et al. 2020) or the cosine ᾱ schedule (Nichol &
Dhariwal 2021), as ``(betas, alpha_bars)``; :func:`diffuse`: the forward process q(x_s | x_0).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor, nn


def _conv(dims: int, c_in: int, c_out: int) -> nn.Module:
    cls = nn.Conv1d if dims == 1 else nn.Conv2d
    return cls(c_in, c_out, 3, padding=1, padding_mode="circular")


class _Block(nn.Module):
    def __init__(self, dims: int, c_in: int, c_out: int, groups: int):
        super().__init__()
        self.net = nn.Sequential(
            _conv(dims, c_in, c_out),
            nn.GroupNorm(min(groups, c_out), c_out),
            nn.GELU(),
            _conv(dims, c_out, c_out),
            nn.GroupNorm(min(groups, c_out), c_out),
            nn.GELU(),
        )
        self.skip = (nn.Conv1d if dims == 1 else nn.Conv2d)(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x) + self.skip(x)


class UNet(nn.Module):
    def __init__(
        self,
        dims: Literal[1, 2],
        in_channels: int = 1,
        out_channels: int = 1,
        width: int = 32,
        levels: int = 3,
        groups: int = 8,
        classes: int = 0,
        residual: bool = False,
    ):
        super().__init__()
        if dims not in (1, 2) or levels < 1 or width < 1:
            raise ValueError(f"UNet needs dims 1 or 2, levels >= 1, width >= 1; got {dims}, {levels}, {width}")
        if residual and in_channels != out_channels:
            raise ValueError("a residual UNet needs in_channels == out_channels")
        self.dims, self.levels, self.residual = dims, levels, residual
        pool = nn.AvgPool1d if dims == 1 else nn.AvgPool2d
        chans = [width * 2**i for i in range(levels + 1)]
        self.inp = _Block(dims, in_channels, chans[0], groups)
        self.down = nn.ModuleList(_Block(dims, chans[i], chans[i + 1], groups) for i in range(levels))
        self.pool = pool(2)
        self.up = nn.ModuleList(
            _Block(dims, chans[i + 1] + chans[i], chans[i], groups) for i in reversed(range(levels))
        )
        self.out = (nn.Conv1d if dims == 1 else nn.Conv2d)(chans[0], out_channels, 1)
        self.classifier = nn.Linear(chans[-1], classes) if classes else None

    def forward_with_bottleneck(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``(output, pooled bottleneck [B, width·2^levels])``: what :meth:`forward` returns, and the deepest block's
        features averaged over space (what a class or noise-level head reads)."""
        factor = 2**self.levels
        if any(s % factor for s in x.shape[2:]):
            raise ValueError(f"spatial sizes {tuple(x.shape[2:])} must be divisible by 2^levels = {factor}")
        h = self.inp(x)
        skips = [h]
        for block in self.down:
            h = block(self.pool(h))
            skips.append(h)
        bottleneck = h
        for block, skip in zip(self.up, reversed(skips[:-1])):
            h = nn.functional.interpolate(h, scale_factor=2, mode="nearest")
            h = block(torch.cat([h, skip], dim=1))
        y = self.out(h)
        if self.residual:
            y = x + y
        return y, bottleneck.mean(dim=tuple(range(2, bottleneck.ndim)))

    def forward(self, x: Tensor, return_logits: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        y, pooled = self.forward_with_bottleneck(x)
        if return_logits:
            if self.classifier is None:
                raise ValueError("this UNet has no classifier head (classes=0)")
            return y, self.classifier(pooled)
        return y


def noise_schedule(
    steps: int,
    kind: Literal["linear", "cosine"] = "cosine",
    beta_start: float = 1e-4,
    beta_end: float = 0.02,
    s: float = 0.008,
) -> tuple[Tensor, Tensor]:
    """``(betas, alpha_bars)``, each ``[steps]`` (float64): DDPM's linear betas, or ᾱ_t = f(t)/f(0) with
    f(t) = cos²((t/T + s)/(1 + s)·π/2), betas clipped at 0.999 (Nichol & Dhariwal 2021, eq. 17)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if kind == "linear":
        betas = torch.linspace(beta_start, beta_end, steps, dtype=torch.float64)
        return betas, torch.cumprod(1 - betas, 0)
    if kind == "cosine":
        t = torch.arange(steps + 1, dtype=torch.float64) / steps
        f = torch.cos((t + s) / (1 + s) * math.pi / 2) ** 2
        alpha_bar = f / f[0]
        betas = (1 - alpha_bar[1:] / alpha_bar[:-1]).clamp(max=0.999)
        return betas, torch.cumprod(1 - betas, 0)
    raise ValueError(f"kind must be 'linear' or 'cosine', got {kind!r}")


def diffuse(x: Tensor, alpha_bar: Tensor, noise: Tensor) -> Tensor:
    """DDPM's forward process ``x_s = √ᾱ_s x + √(1 − ᾱ_s) ε`` (Ho et al. 2020, eq. 4): ``alpha_bar`` holds
    one ᾱ per sample ``[B]`` (broadcast over the other axes of ``x``), ``noise`` is ε, shaped like ``x``."""
    a = alpha_bar.view(-1, *[1] * (x.ndim - 1))
    return a.sqrt() * x + (1 - a).sqrt() * noise


class DenoiserMLP(nn.Module):
    """A noise-blind ε-predictor with a noise-level classifier head, for small 1-D fields (thermalizer
    card, quick preset): a residual MLP (``blocks`` x [LayerNorm, Linear, GELU, Linear], width ``width``)
    on the flattened field; no time embedding. ``forward(x, s=None)`` returns ``(ε̂ [same shape as x],
    level logits [B, levels])``; ``s`` is accepted and ignored (noise-blind)."""

    def __init__(self, n: int, width: int = 256, blocks: int = 3, levels: int = 200):
        super().__init__()
        self.inp = nn.Linear(n, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))
            for _ in range(blocks)
        )
        self.norm = nn.LayerNorm(width)
        self.eps = nn.Linear(width, n)
        self.level = nn.Linear(width, levels)

    def forward(self, x: Tensor, s: int | None = None) -> tuple[Tensor, Tensor]:
        h = self.inp(x.flatten(1))
        for block in self.blocks:
            h = h + block(h)
        h = self.norm(h)
        return self.eps(h).view_as(x), self.level(h)


class PeriodicCNN(nn.Module):
    """A small residual emulator ``x + net(x)`` of circular convolutions (thermalizer card, quick scale:
    3 layers of 32 channels), for fields ``[B, C, N]`` (``dims=1``) or ``[B, C, N, N]`` (``dims=2``)."""

    def __init__(self, dims: Literal[1, 2] = 1, channels: int = 1, width: int = 32, layers: int = 3):
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        sizes = [channels] + [width] * (layers - 1) + [channels]
        mods: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            mods.append(_conv(dims, a, b))
            if i < layers - 1:
                mods.append(nn.GELU())
        self.net = nn.Sequential(*mods)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.net(x)
