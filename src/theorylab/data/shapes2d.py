"""Procedural dSprites-like images: binary 2-D shapes with five independent, uniformly drawn factors.

Murphy, Dillavou & Bassett (*Comparing the information content of probabilistic representation spaces*,
TMLR 2025, arXiv 2405.21042) compare the latent channels of beta-VAEs trained on dSprites (Matthey et al.
2017, https://github.com/google-deepmind/dsprites-dataset): 3 shapes x 6 scales x 40 orientations x 32 x 32
positions. This module renders the same factor grid procedurally instead of downloading the archive, at any
image ``size`` (dSprites is 64):

* shapes: 0 square, 1 ellipse, 2 triangle. The triangle replaces dSprites' heart so that every shape has its
  centroid at its anchor point (a rotated heart's centroid moves with the orientation), which lets a test
  read the position factor back from the pixel centroid alone;
* scale ``s`` in ``linspace(0.5, 1, n_scales)`` (dSprites' range) multiplies a base radius ``0.2 * size``;
* orientation in ``2 pi k / n_orientations``, ``k < n_orientations``, i.e. 40 angles over [0, 2 pi);
* x (column) and y (row) positions on ``linspace(R, size - 1 - R, n_positions)`` in pixel-centre coordinates,
  ``R = 0.2 * size`` the radius at scale 1, so no shape is ever clipped by the border.

In units of the scaled radius ``r = 0.2 * size * s`` every shape lies in the unit disk: the square has half
side 0.7 (area ``1.96 r^2``), the ellipse semi-axes (1, 0.5) (area ``pi r^2 / 2``), the equilateral triangle
circumradius 1 (area ``3 sqrt(3) / 4 r^2``). A pixel is 1 when its centre is inside the shape, so for
``size >= 16`` the smallest shape (``r >= 1.6``) holds a disk of diameter > sqrt(2) and always covers a pixel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

FACTOR_NAMES: tuple[str, ...] = ("shape", "scale", "orientation", "pos_x", "pos_y")
SHAPE_NAMES: tuple[str, ...] = ("square", "ellipse", "triangle")

_CHUNK = 4096  # images rasterised at once: bounds the (chunk, size, size) float temporaries


@dataclass(frozen=True)
class Shapes2DFactors:
    """The factors of a batch of :func:`shapes2d` images.

    ``indices`` (n, 5) int64: per image the index of each factor, in the order of ``names``;
    ``values``: per factor name, the float64 table of that factor's values (shape index, scale multiplier,
    angle in radians, column / row of the shape's centre in pixel-centre coordinates), so
    ``values[name][indices[:, j]]`` is the physical value (see :meth:`value`).
    """

    indices: torch.Tensor
    names: tuple[str, ...]
    values: dict[str, torch.Tensor]

    def value(self, name: str) -> torch.Tensor:
        """The physical value of factor ``name`` for every image: (n,) float64."""
        if name not in self.names:
            raise ValueError(f"unknown factor '{name}' (one of {', '.join(self.names)})")
        return self.values[name][self.indices[:, self.names.index(name)]]

    @property
    def sizes(self) -> tuple[int, ...]:
        """How many values each factor takes, in the order of ``names``."""
        return tuple(len(self.values[name]) for name in self.names)


def _check(size: int, n_scales: int, n_orientations: int, n_positions: int) -> None:
    if size < 8:
        raise ValueError(f"size must be >= 8, got {size}")
    if min(n_scales, n_orientations, n_positions) < 1:
        raise ValueError(
            f"need n_scales, n_orientations, n_positions >= 1; got {n_scales}, {n_orientations}, {n_positions}"
        )


def factor_values(
    size: int = 32, *, n_scales: int = 6, n_orientations: int = 40, n_positions: int = 32
) -> dict[str, torch.Tensor]:
    """The float64 value table of each factor (see the module docstring for the grid)."""
    _check(size, n_scales, n_orientations, n_positions)
    margin = 0.2 * size
    positions = torch.linspace(margin, size - 1 - margin, n_positions, dtype=torch.float64)
    return {
        "shape": torch.arange(len(SHAPE_NAMES), dtype=torch.float64),
        "scale": torch.linspace(0.5, 1.0, n_scales, dtype=torch.float64),
        "orientation": 2 * math.pi * torch.arange(n_orientations, dtype=torch.float64) / n_orientations,
        "pos_x": positions,
        "pos_y": positions.clone(),
    }


def _inside(shape: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Inside test in the shape's own frame (unit = scaled radius): ``shape`` (n, 1, 1), ``u``, ``v`` (n, H, W)."""
    square = torch.maximum(u.abs(), v.abs()) <= 0.7
    ellipse = u**2 + (v / 0.5) ** 2 <= 1.0
    # Equilateral triangle of circumradius 1 (inradius 1/2): inside all three half-planes n_k . p <= 1/2 with
    # outward normals at -90, 30 and 150 degrees, so a vertex points along +v.
    triangle = torch.ones_like(square)
    for angle in (-math.pi / 2, math.pi / 6, 5 * math.pi / 6):
        triangle &= math.cos(angle) * u + math.sin(angle) * v <= 0.5
    return torch.where(shape == 0, square, torch.where(shape == 1, ellipse, triangle))


def render_shapes2d(
    indices: torch.Tensor, size: int = 32, *, n_scales: int = 6, n_orientations: int = 40, n_positions: int = 32
) -> torch.Tensor:
    """Rasterise given factor indices (n, 5) (order :data:`FACTOR_NAMES`) to float32 images (n, size, size) in
    {0, 1}: each pixel centre is mapped into the shape's frame by the inverse translation, rotation and scale."""
    values = factor_values(size, n_scales=n_scales, n_orientations=n_orientations, n_positions=n_positions)
    indices = torch.as_tensor(indices, dtype=torch.long)
    if indices.ndim != 2 or indices.shape[1] != len(FACTOR_NAMES):
        raise ValueError(f"indices must have shape (n, {len(FACTOR_NAMES)}), got {tuple(indices.shape)}")
    limits = torch.tensor([len(values[name]) for name in FACTOR_NAMES])
    if len(indices) and ((indices < 0).any() or (indices >= limits).any()):
        raise ValueError(f"factor indices out of range (sizes {tuple(limits.tolist())})")
    rows, cols = torch.meshgrid(
        torch.arange(size, dtype=torch.float64), torch.arange(size, dtype=torch.float64), indexing="ij"
    )
    out = torch.empty(len(indices), size, size, dtype=torch.float32)
    for start in range(0, len(indices), _CHUNK):
        idx = indices[start : start + _CHUNK]

        def col(name: str, idx: torch.Tensor = idx) -> torch.Tensor:
            return values[name][idx[:, FACTOR_NAMES.index(name)]][:, None, None]

        radius = 0.2 * size * col("scale")
        theta = col("orientation")
        dx, dy = cols - col("pos_x"), rows - col("pos_y")
        # Inverse rotation R(-theta), then divide by the radius: the shape's frame where the tests are fixed.
        u = (torch.cos(theta) * dx + torch.sin(theta) * dy) / radius
        v = (-torch.sin(theta) * dx + torch.cos(theta) * dy) / radius
        out[start : start + _CHUNK] = _inside(col("shape"), u, v).float()
    return out


def shapes2d(
    n: int,
    size: int = 32,
    *,
    generator: torch.Generator,
    n_scales: int = 6,
    n_orientations: int = 40,
    n_positions: int = 32,
) -> tuple[torch.Tensor, Shapes2DFactors]:
    """``n`` images with every factor drawn independently and uniformly from ``generator``.

    Returns ``(images, factors)``: images float32 (n, size, size) in {0, 1}; ``factors`` a
    :class:`Shapes2DFactors` with int64 ``indices`` (n, 5) in the order :data:`FACTOR_NAMES`.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    values = factor_values(size, n_scales=n_scales, n_orientations=n_orientations, n_positions=n_positions)
    columns = [torch.randint(len(values[name]), (n,), generator=generator) for name in FACTOR_NAMES]
    indices = torch.stack(columns, dim=1) if n else torch.zeros(0, len(FACTOR_NAMES), dtype=torch.long)
    images = render_shapes2d(indices, size, n_scales=n_scales, n_orientations=n_orientations, n_positions=n_positions)
    return images, Shapes2DFactors(indices, FACTOR_NAMES, values)


def shapes2d_grid(
    size: int = 32, *, n_scales: int = 6, n_orientations: int = 40, n_positions: int = 32
) -> tuple[torch.Tensor, Shapes2DFactors]:
    """Every factor combination once, in row-major order of :data:`FACTOR_NAMES` (the dSprites layout):
    ``3 * n_scales * n_orientations * n_positions**2`` images, e.g. 737,280 at the defaults
    (3 GB of float32 at size 32)."""
    values = factor_values(size, n_scales=n_scales, n_orientations=n_orientations, n_positions=n_positions)
    axes = [torch.arange(len(values[name])) for name in FACTOR_NAMES]
    indices = torch.cartesian_prod(*axes)
    images = render_shapes2d(indices, size, n_scales=n_scales, n_orientations=n_orientations, n_positions=n_positions)
    return images, Shapes2DFactors(indices, FACTOR_NAMES, values)
