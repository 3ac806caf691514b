"""Points on low-dimensional manifolds embedded in R^d by a seeded random orthonormal frame.

Used to check that attention-as-diffusion recovers intrinsic coordinates (Candanedo, arXiv
2604.09560; Coifman and Lafon 2006). Each returns ``(X (n, d) float64, intrinsic coordinates)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def _frame(d: int, k: int, generator: torch.Generator) -> Tensor:
    if d < k:
        raise ValueError(f"ambient dimension d={d} must be >= {k}")
    q, _ = torch.linalg.qr(torch.randn(d, k, generator=generator, dtype=torch.float64))
    return q  # (d, k), orthonormal columns


def circle(
    n: int = 400, d: int = 16, radius: float = 3.0, noise: float = 0.01, *, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """Angles ``θ ~ U[0, 2π)`` on a circle of ``radius``, plus isotropic noise; returns ``(X, θ)``."""
    theta = 2 * math.pi * torch.rand(n, generator=generator, dtype=torch.float64)
    pts = radius * torch.stack([theta.cos(), theta.sin()], dim=-1)
    X = pts @ _frame(d, 2, generator).T + noise * torch.randn(n, d, generator=generator, dtype=torch.float64)
    return X, theta


def swiss_roll(n: int = 1000, d: int = 16, *, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """``t ~ U[1.5π, 4.5π]``, height ``~ U[0, 5]``; returns ``(X, (t, height))``."""
    t = math.pi * (1.5 + 3 * torch.rand(n, generator=generator, dtype=torch.float64))
    h = 5 * torch.rand(n, generator=generator, dtype=torch.float64)
    pts = torch.stack([t * t.cos(), h, t * t.sin()], dim=-1)
    return pts @ _frame(d, 3, generator).T, torch.stack([t, h], dim=-1)


def sphere(n: int, d: int, *, generator: torch.Generator) -> Tensor:
    """Uniform points on the unit sphere in R^d."""
    X = torch.randn(n, d, generator=generator, dtype=torch.float64)
    return X / X.norm(dim=-1, keepdim=True)


def gaussian_points(n: int, d: int, radius: float = 3.0, *, generator: torch.Generator) -> Tensor:
    """``n`` points with i.i.d. N(0, radius²/d) coordinates, so ``|x| ≈ radius`` with unequal norms."""
    return torch.randn(n, d, generator=generator, dtype=torch.float64) * math.sqrt(radius**2 / d)
