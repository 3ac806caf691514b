"""Cross-split consistency of linear maps: exact zeros, symmetry, and the population map at large n."""

from __future__ import annotations

import numpy as np
import torch

from theorylab.nn.denoisers import LinearDenoiser, linear_sampling_map
from theorylab.probes.cross_split import cross_split_samples, linear_map_disagreement


def _gaussian(n, seed, d=5):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) * np.linspace(0.2, 1.0, d) + 0.5


def test_identical_sets_agree_and_disagreement_is_symmetric():
    a, b = _gaussian(40, 0), _gaussian(40, 1)
    x_T = 80.0 * torch.randn(16, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(linear_map_disagreement(a, a, x_T, 80.0).abs().max()) == 0.0
    ab, ba = linear_map_disagreement(a, b, x_T, 80.0), linear_map_disagreement(b, a, x_T, 80.0)
    assert torch.allclose(ab, ba) and bool((ab > 0).all())
    out_a, out_b, m = cross_split_samples(a, b, x_T, 80.0)
    assert torch.allclose(m["cross_mse"], ab) and out_a.shape == (16, 5)
    # nearest_mse is the distance to the closest training row, by brute force
    brute = ((out_a[:, None, :] - torch.as_tensor(a)[None]) ** 2).mean(-1).min(1).values
    assert torch.allclose(m["nearest_mse_1"], brute, atol=1e-9)


def test_maps_from_large_splits_approach_the_population_map():
    d = 5
    scale = np.linspace(0.2, 1.0, d)
    a, b = _gaussian(200_000, 2), _gaussian(200_000, 3)
    x_T = 80.0 * torch.randn(8, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    _, _, m = cross_split_samples(a, b, x_T, 80.0)
    population = linear_sampling_map(
        LinearDenoiser(torch.full((d,), 0.5, dtype=torch.float64), torch.diag(torch.as_tensor(scale**2))), x_T
    )
    out_a, _, _ = cross_split_samples(a, a, x_T, 80.0)
    assert float(m["cross_mse"].max()) < 1e-3 and float(((out_a - population) ** 2).mean()) < 1e-3
