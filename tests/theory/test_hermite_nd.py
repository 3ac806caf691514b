"""theory.hermite.gauss_hermite_nd: closed Gaussian moments and a Monte Carlo reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from theorylab.theory.hermite import gauss_hermite, gauss_hermite_nd


def test_shapes_and_mass():
    p, w = gauss_hermite_nd(3, 7)
    assert p.shape == (343, 3) and w.shape == (343,)
    assert abs(w.sum() - 1) < 1e-13
    z, w1 = gauss_hermite(7)
    assert np.allclose(np.sort(np.unique(p[:, 2])), np.sort(z)) and w.max() == pytest.approx(w1.max() ** 3)


@pytest.mark.parametrize(
    ("powers", "moment"),
    [((2, 0, 0), 1), ((4, 0, 0), 3), ((2, 2, 2), 1), ((6, 0, 2), 15), ((1, 1, 0), 0), ((3, 1, 0), 0), ((4, 4, 0), 9)],
)
def test_closed_moments_exact(powers, moment):
    # E z^(2j) = (2j - 1)!!: products of independent coordinates; exact for degree < 2 * nodes per axis
    p, w = gauss_hermite_nd(3, 5)
    val = (w * np.prod(p ** np.array(powers), axis=1)).sum()
    assert abs(val - moment) < 1e-12


def test_characteristic_function():
    # E cos(a.z) = exp(-|a|^2 / 2) for a non-polynomial integrand: converges fast in the number of nodes
    a = np.array([0.7, -1.1])
    p, w = gauss_hermite_nd(2, 30)
    assert abs((w * np.cos(p @ a)).sum() - math.exp(-a @ a / 2)) < 1e-12


def test_matches_monte_carlo():
    def f(z):
        return np.exp(z[:, 0] / 2) * z[:, 1] ** 2 + np.sin(z[:, 2]) ** 2

    p, w = gauss_hermite_nd(3, 40)
    quad = (w * f(p)).sum()
    z = np.random.default_rng(0).standard_normal((400_000, 3))
    vals = f(z)
    # closed form: E exp(z/2) = e^(1/8); E sin^2 z = (1 - e^-2)/2
    exact = math.exp(1 / 8) + (1 - math.exp(-2)) / 2
    assert abs(quad - exact) < 1e-12
    assert abs(vals.mean() - quad) < 4 * vals.std() / math.sqrt(len(vals))


def test_bad_input():
    with pytest.raises(ValueError, match="r"):
        gauss_hermite_nd(0, 5)
    with pytest.raises(ValueError, match="nodes"):
        gauss_hermite_nd(4, 100)
