"""Procedural dSprites-like shapes (Murphy et al. 2025's beta-VAE data): the rasteriser checked against the
drawn factors by independent pixel statistics (centroid, area)."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.data.shapes2d import FACTOR_NAMES, render_shapes2d, shapes2d, shapes2d_grid


def _centroids(images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = images.double()
    grid = torch.arange(images.shape[-1], dtype=torch.float64)
    area = x.sum((1, 2))
    return (x.sum(1) * grid).sum(1) / area, (x.sum(2) * grid).sum(1) / area


def test_shapes_dtypes_and_factor_ranges():
    images, factors = shapes2d(500, 20, generator=torch.Generator().manual_seed(0))
    assert images.shape == (500, 20, 20) and images.dtype == torch.float32
    assert set(images.unique().tolist()) <= {0.0, 1.0}
    assert factors.indices.shape == (500, 5) and factors.indices.dtype == torch.int64
    assert factors.names == FACTOR_NAMES == ("shape", "scale", "orientation", "pos_x", "pos_y")
    assert factors.sizes == (3, 6, 40, 32, 32)
    assert (factors.indices >= 0).all() and (factors.indices < torch.tensor(factors.sizes)).all()
    # Uniform draws: every shape and scale turns up, no image is empty, none touches the border (no clipping).
    assert len(factors.indices[:, 0].unique()) == 3 and len(factors.indices[:, 1].unique()) == 6
    assert (images.sum((1, 2)) > 0).all()
    border = torch.cat([images[:, 0], images[:, -1], images[:, :, 0], images[:, :, -1]], dim=1)
    assert border.sum() == 0
    angles = factors.value("orientation")
    assert angles.min() >= 0 and angles.max() < 2 * math.pi


def test_equal_generators_give_equal_images():
    a, fa = shapes2d(64, 16, generator=torch.Generator().manual_seed(3))
    b, fb = shapes2d(64, 16, generator=torch.Generator().manual_seed(3))
    c, _ = shapes2d(64, 16, generator=torch.Generator().manual_seed(4))
    assert torch.equal(a, b) and torch.equal(fa.indices, fb.indices) and not torch.equal(a, c)
    assert torch.equal(render_shapes2d(fa.indices, 16), a)


def test_pixel_centroid_recovers_the_drawn_position():
    # Every shape is centred on its anchor (the triangle replaces the heart for this), so the pixel centroid
    # reads the (x, y) factors back; discretisation moves it by well under a pixel.
    for size in (16, 32):
        images, factors = shapes2d(1000, size, generator=torch.Generator().manual_seed(size))
        cx, cy = _centroids(images)
        assert (cx - factors.value("pos_x")).abs().max() < 1.0
        assert (cy - factors.value("pos_y")).abs().max() < 1.0


def test_area_grows_with_scale_and_matches_the_continuous_shapes():
    size = 32
    images, factors = shapes2d(3000, size, generator=torch.Generator().manual_seed(1))
    area = images.sum((1, 2)).double()
    radius = 0.2 * size * factors.value("scale")
    exact = {0: 1.96, 1: math.pi / 2, 2: 3 * math.sqrt(3) / 4}  # area / r^2: square (side 1.4 r), ellipse, triangle
    for shape, k in exact.items():
        mask = factors.indices[:, 0] == shape
        ratio = area[mask] / (k * radius[mask] ** 2)
        assert abs(float(ratio.mean()) - 1) < 0.03  # pixel counting is unbiased on average
        assert ratio.min() > 0.7 and ratio.max() < 1.3  # and no single image is far off
        means = [float(area[mask & (factors.indices[:, 1] == s)].mean()) for s in range(6)]
        assert all(a < b for a, b in zip(means, means[1:]))


def test_a_square_at_scale_one_unrotated_has_side_squared_area():
    # Scale index 5 (s = 1), orientation 0, centred: half side 0.7 * 0.2 * 32 = 4.48 px; pixel centres at
    # integer offsets within 4.48 of a grid-aligned centre give a 9 x 9 block vs side^2 = 80.3.
    images = render_shapes2d(torch.tensor([[0, 5, 0, 0, 0]]), 32, n_positions=1)
    side = 2 * 0.7 * 0.2 * 32
    assert float(images.sum()) == 81 and abs(81 - side**2) / side**2 < 0.02
    # Rotating it by 45 degrees (orientation 5 of 40) keeps the area within the discretisation error.
    rotated = render_shapes2d(torch.tensor([[0, 5, 5, 0, 0]]), 32, n_positions=1)
    assert abs(float(rotated.sum()) - side**2) / side**2 < 0.1


def test_grid_enumerates_every_combination():
    images, factors = shapes2d_grid(16, n_scales=2, n_orientations=3, n_positions=2)
    assert images.shape == (3 * 2 * 3 * 2 * 2, 16, 16) and factors.sizes == (3, 2, 3, 2, 2)
    assert len({tuple(r) for r in factors.indices.tolist()}) == len(images)


def test_invalid_arguments_raise():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError):
        shapes2d(-1, generator=g)
    with pytest.raises(ValueError):
        shapes2d(4, 4, generator=g)
    with pytest.raises(ValueError):
        shapes2d(4, 16, generator=g, n_scales=0)
    with pytest.raises(ValueError):
        render_shapes2d(torch.tensor([[3, 0, 0, 0, 0]]), 16)
    with pytest.raises(ValueError):
        render_shapes2d(torch.zeros(2, 4, dtype=torch.long), 16)
    with pytest.raises(ValueError):
        shapes2d(2, 16, generator=g)[1].value("colour")
