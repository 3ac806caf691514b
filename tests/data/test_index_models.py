"""Gaussian index models: shapes, Stiefel directions, reproducibility, streaming and link validation."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.data.index_models import LINKS, IndexModel, get_link, random_stiefel


def test_stiefel_directions_are_orthonormal_and_seeded():
    a = random_stiefel(10, 3, np.random.default_rng(0))
    np.testing.assert_allclose(a.T @ a, np.eye(3), atol=1e-12)
    np.testing.assert_array_equal(a, random_stiefel(10, 3, np.random.default_rng(0)))


def test_sample_follows_the_link_and_noise():
    rng = np.random.default_rng(1)
    model = IndexModel.make(8, "z1z2", rng, noise=0.0)
    X, y, z = model.sample(500, rng)
    np.testing.assert_allclose(z, X @ model.W)
    np.testing.assert_allclose(y, z[:, 0] * z[:, 1])
    noisy = IndexModel.make(8, "z1z2", rng, noise=0.5, W=model.W)
    _, y2, z2 = noisy.sample(20_000, rng)
    assert np.std(y2 - z2[:, 0] * z2[:, 1]) == pytest.approx(0.5, rel=0.03)


def test_stream_yields_fresh_batches_up_to_total():
    rng = np.random.default_rng(2)
    model = IndexModel.make(6, "he2", rng)
    sizes = [len(y) for _, y, _ in model.stream(64, rng, total=200)]
    assert sizes == [64, 64, 64, 8]


def test_links_registry_and_user_callables():
    assert {"he2", "he3", "z1+z1z2", "z1z2", "parity3", "parity4", "z1z2z3"} <= set(LINKS)
    custom = get_link(lambda z: np.tanh(z[:, 0] + z[:, 1]), r=2)
    assert custom.r == 2
    with pytest.raises(KeyError, match="unknown link"):
        get_link("nope")
    with pytest.raises(ValueError, match="r"):
        get_link(lambda z: z[:, 0])
    with pytest.raises(ValueError, match="orthonormal"):
        IndexModel.make(4, "he2", np.random.default_rng(0), W=np.ones((4, 1)))
