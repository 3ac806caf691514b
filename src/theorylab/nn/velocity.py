"""Velocity fields ``b(x, t [, latent])`` for transport by ODE (stochastic interpolants, flows).

- :class:`TimeMLP`: vectors; an MLP on ``[x, sinusoidal(t), latent]`` (Modi et al., arXiv
  2512.10857, App. on 2-D experiments: SiLU, depth 3).
- :class:`UNet8`: small images (8x8 digits); a two-level conv U-Net whose blocks receive the time
  embedding, with the latent (e.g. a mask) stacked as extra input channels.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_embedding(t: Tensor, dim: int, max_period: float = 1000.0) -> Tensor:
    """``[cos(t w_k), sin(t w_k)]`` with log-spaced frequencies ``w_k`` (Vaswani et al.; DDPM): (n, dim)."""
    if dim % 2:
        raise ValueError(f"embedding dimension must be even, got {dim}")
    half = dim // 2
    freq = torch.exp(-math.log(max_period) * torch.arange(half, dtype=t.dtype, device=t.device) / half)
    angle = (t.reshape(-1, 1) * max_period) * freq  # t in [0, 1]: spread over the frequencies
    return torch.cat([angle.cos(), angle.sin()], dim=-1)


class TimeMLP(nn.Module):
    """``b(x, t, latent) = MLP([x, emb(t), latent])``: SiLU, ``depth`` hidden layers of ``width``."""

    def __init__(self, dim: int, width: int = 128, depth: int = 3, time_dim: int = 16, latent_dim: int = 0):
        super().__init__()
        self.dim, self.time_dim, self.latent_dim = dim, time_dim, latent_dim
        layers: list[nn.Module] = []
        size = dim + time_dim + latent_dim
        for _ in range(depth):
            layers += [nn.Linear(size, width), nn.SiLU()]
            size = width
        layers.append(nn.Linear(size, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor, t: Tensor, latent: Tensor | None = None) -> Tensor:
        parts = [x, sinusoidal_embedding(t, self.time_dim).to(x.dtype)]
        if self.latent_dim:
            if latent is None:
                raise ValueError("this velocity field was built with latent_dim > 0: pass the channel latent")
            parts.append(latent.reshape(len(x), -1).to(x.dtype))
        return self.net(torch.cat(parts, dim=-1))


class _Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, time_dim: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.time = nn.Linear(time_dim, c_out)
        self.norm1, self.norm2 = nn.GroupNorm(min(8, c_out), c_out), nn.GroupNorm(min(8, c_out), c_out)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()
        self.act = nn.SiLU()

    def forward(self, x: Tensor, emb: Tensor) -> Tensor:
        h = self.act(self.norm1(self.conv1(x))) + self.time(emb)[:, :, None, None]
        return self.skip(x) + self.act(self.norm2(self.conv2(h)))


class UNet8(nn.Module):
    """A small U-Net for ``(n, C, 8, 8)`` images: 8x8 -> 4x4 -> 8x8 with a skip connection.

    ``latent_channels`` extra input channels carry the channel latent (e.g. the mask)."""

    def __init__(self, channels: int = 1, width: int = 64, time_dim: int = 64, latent_channels: int = 0):
        super().__init__()
        self.time_dim, self.latent_channels = time_dim, latent_channels
        self.time_mlp = nn.Sequential(nn.Linear(time_dim, time_dim), nn.SiLU(), nn.Linear(time_dim, time_dim))
        self.down = _Block(channels + latent_channels, width, time_dim)
        self.mid = _Block(width, 2 * width, time_dim)
        self.up = _Block(3 * width, width, time_dim)
        self.out = nn.Conv2d(width, channels, 1)

    def forward(self, x: Tensor, t: Tensor, latent: Tensor | None = None) -> Tensor:
        emb = self.time_mlp(sinusoidal_embedding(t, self.time_dim).to(x.dtype))
        inp = x if not self.latent_channels else torch.cat([x, latent.to(x.dtype)], dim=1)
        h1 = self.down(inp, emb)
        h2 = self.mid(nn.functional.avg_pool2d(h1, 2), emb)
        up = nn.functional.interpolate(h2, scale_factor=2, mode="nearest")
        return self.out(self.up(torch.cat([up, h1], dim=1), emb))
