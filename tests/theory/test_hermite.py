"""Hermite polynomials, tensors and exponents against closed forms and explicit constructions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from theorylab.data.index_models import LINKS
from theorylab.theory.hermite import (
    gauss_hermite,
    generative_exponent,
    hermite,
    hermite_all,
    hermite_coefficients,
    hermite_tensor,
    information_exponent,
    multi_index_leap,
)


def test_polynomials_match_closed_forms_and_are_orthogonal():
    z = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(hermite(2, z), z**2 - 1)
    np.testing.assert_allclose(hermite(3, z), z**3 - 3 * z)
    np.testing.assert_allclose(hermite(4, z), z**4 - 6 * z**2 + 3)
    nodes, weights = gauss_hermite(60)
    h = hermite_all(6, nodes)
    gram = (h[:, None, :] * h[None, :, :] * weights).sum(-1)
    np.testing.assert_allclose(gram, np.diag([math.factorial(k) for k in range(7)]), atol=1e-9)


def test_coefficients_of_known_links():
    # z^3 = He_3 + 3 He_1; sign(z): c_1 = sqrt(2/pi); relu: c_0 = 1/sqrt(2 pi), c_1 = 1/2, c_2 = 1/(2 sqrt(2 pi)).
    np.testing.assert_allclose(hermite_coefficients(lambda z: z**3, 5)[:5], [0, 3, 0, 1, 0], atol=1e-12)
    assert hermite_coefficients(np.sign, 3, nodes=2000)[1] == pytest.approx(math.sqrt(2 / math.pi), abs=2e-3)
    c = hermite_coefficients(lambda z: np.maximum(z, 0), 2, nodes=2000)
    np.testing.assert_allclose(c, [1 / math.sqrt(2 * math.pi), 0.5, 1 / (2 * math.sqrt(2 * math.pi))], atol=2e-3)


@pytest.mark.parametrize("name", ["he1", "he2", "he3", "he4", "sign", "abs", "relu"])
def test_exponents_of_registered_single_index_links(name):
    link = LINKS[name]

    def g(z):
        return link.fn(z[:, None])

    assert information_exponent(g) == link.info_exponent
    assert generative_exponent(g) == link.generative_exponent


def test_generative_exponent_is_at_most_the_information_exponent_and_two_for_polynomials():
    for k in range(1, 7):
        gen = generative_exponent(lambda z, k=k: hermite(k, z))
        assert gen <= min(k, 2)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_hermite_tensors_are_orthogonal_with_the_right_norm(k):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((400_000, 3))
    t = hermite_tensor(k, x).reshape(len(x), -1)
    # E He_k = 0 and E |He_k|_F^2 = k! d^k / ... : for d = 3, E|He_k(x)|^2 = k! * 3^k? No: sum over index tuples of E
    # He_k(x)_I^2.
    assert np.abs(t.mean(0)).max() < 0.05 * math.sqrt(math.factorial(k) * 10)
    lower = hermite_tensor(k - 1, x).reshape(len(x), -1)
    assert np.abs(t.T @ lower / len(x)).max() < 0.2  # orthogonal to the previous order
    # He_k of a coordinate vector's multiple reduces to the 1-D polynomial on the diagonal entry.
    z = np.array([1.7, 0.0, 0.0])
    assert hermite_tensor(k, z)[(0,) * k] == pytest.approx(hermite(k, np.array(1.7)))


def test_multi_index_leap_on_parity_and_monomial():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((200_000, 3))
    k_parity, scores = multi_index_leap(z, np.sign(z.prod(1)), kmax=4, chunk=30_000)
    assert k_parity == 3 and scores[1] < 4 and scores[2] < 4
    k_mono, _ = multi_index_leap(z, z.prod(1), kmax=3)
    assert k_mono == 2


def test_monte_carlo_tensor_coefficients_of_a_product_link():
    from theorylab.theory.hermite import hermite_tensor_coefficients

    c2, se = hermite_tensor_coefficients(lambda z: z[:, 0] * z[:, 1], 2, 2, 400_000, np.random.default_rng(0))
    expected = np.array([[0.0, 0.5], [0.5, 0.0]])  # z1 z2 = (He_2(z)_12 + He_2(z)_21) / 2
    assert np.all(np.abs(c2 - expected) <= 5 * se + 1e-12)
    c1, se1 = hermite_tensor_coefficients(lambda z: z[:, 0] * z[:, 1], 2, 1, 400_000, np.random.default_rng(1))
    assert np.all(np.abs(c1) <= 5 * se1)
