"""The fast-slow CTMC toy against independent references: expm, an explicit ODE solve, finite differences, and the
orders in eps the singular-perturbation theory predicts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm, null_space

from theorylab.theory.fastslow import (
    FastSlowToy,
    correction_errors,
    ctmc_generator,
    ctmc_stationary,
    fit_variational_phi,
    frozen_chain_limit,
    loglog_slope,
    manifold_errors,
    simulate_fast_slow,
    stationary_derivative,
    tikhonov_correction,
)


@pytest.fixture(scope="module")
def toy():
    return FastSlowToy.draw(np.random.default_rng(7))


def test_generator_rows_sum_to_zero_and_rates_match(toy):
    q = ctmc_generator(toy.a, toy.b, 0.7)
    assert np.allclose(q.sum(1), 0, atol=1e-14)
    i, j = 1, 3
    assert q[i, j] == pytest.approx(toy.a[i, j] * np.exp(toy.b[i, j] * 0.7), rel=1e-14)
    assert (q[~np.eye(4, dtype=bool)] > 0).all()


@pytest.mark.parametrize("y", [-2.0, -0.3, 0.0, 1.1, 2.0])
def test_stationary_is_the_null_vector_and_the_long_time_limit(toy, y):
    q = toy.Q(y)
    p = ctmc_stationary(q)
    ns = null_space(q.T)[:, 0]
    assert np.abs(p - ns / ns.sum()).sum() < 1e-12  # SciPy's null space, normalised
    x, t_end = frozen_chain_limit(q, 50.0)
    assert np.abs(p - x).sum() < 1e-10
    sol = solve_ivp(lambda _t, z: q.T @ z, (0, t_end), np.full(4, 0.25), method="DOP853", rtol=1e-12, atol=1e-14)
    assert np.abs(sol.y[:, -1] - p).sum() < 1e-9  # an explicit solver of the master equation agrees
    assert (p >= 0).all() and p.sum() == pytest.approx(1.0, abs=1e-14)


def test_stationary_rejects_a_non_generator():
    with pytest.raises(ValueError, match="rows must sum to 0"):
        ctmc_stationary(np.ones((3, 3)))
    with pytest.raises(ValueError, match="positive"):
        ctmc_generator(np.zeros((3, 3)), np.zeros((3, 3)), 0.0)


def test_stationary_derivative_matches_finite_differences(toy):
    h = 1e-6
    fd = (ctmc_stationary(toy.Q(0.4 + h)) - ctmc_stationary(toy.Q(0.4 - h))) / (2 * h)
    assert np.abs(stationary_derivative(toy, 0.4) - fd).max() < 1e-8


def test_correction_solves_its_equation(toy):
    y = -0.8
    x1 = tikhonov_correction(toy, y)
    dp_dt = stationary_derivative(toy, y) * (toy.c @ ctmc_stationary(toy.Q(y)) - y)
    assert np.abs(toy.Q(y).T @ x1 - dp_dt).max() < 1e-12 and abs(x1.sum()) < 1e-14


@pytest.mark.slow  # four stiff solves at rtol 1e-10: ~5 s
def test_orders_in_eps(toy):
    eps = [0.03, 0.01, 0.003]
    errs = [manifold_errors(toy, simulate_fast_slow(toy, e, n_points=91)) for e in eps]
    e0, e1 = np.array(errs).T
    assert 0.9 <= loglog_slope(eps, e0) <= 1.1
    assert 1.8 <= loglog_slope(eps, e1) <= 2.2


@pytest.mark.slow
def test_broken_corrections_are_first_order(toy):
    rows = [correction_errors(toy, simulate_fast_slow(toy, e, n_points=91)) for e in (0.03, 0.01)]
    for key in ("e1_flipped", "e1_unnormalised"):
        assert loglog_slope([0.03, 0.01], [r[key] for r in rows]) < 1.3


def test_simulation_conserves_probability(toy):
    path = simulate_fast_slow(toy, 0.01, n_points=51)
    assert np.abs(path.x.sum(1) - 1).max() < 1e-8 and (path.x > -1e-10).all()
    with pytest.raises(ValueError, match="eps"):
        simulate_fast_slow(toy, 0.0)


def test_variational_phi_learns_the_stationary_law(toy):
    phi, losses = fit_variational_phi(toy, seed=0, steps=300)
    ys = np.linspace(-2, 2, 41)
    exact = np.stack([ctmc_stationary(toy.Q(y)) for y in ys])
    assert losses[-1] < losses[0] / 10
    assert np.abs(phi(ys) - exact).sum(1).max() < np.abs(phi.untrained(ys) - exact).sum(1).max() / 3
    assert np.allclose(phi(ys).sum(1), 1.0)


def test_expm_reference_is_not_trivially_the_answer():
    # a chain whose long-time limit is known in closed form: two states, rates a (0 -> 1) and b (1 -> 0)
    a, b = 2.0, 0.5
    q = np.array([[-a, a], [b, -b]])
    assert np.allclose(ctmc_stationary(q), [b / (a + b), a / (a + b)], atol=1e-14)
    x, t_end = frozen_chain_limit(q, 50.0)
    assert t_end == pytest.approx(50 / (a + b)) and np.allclose(x, expm(q.T * t_end) @ [0.5, 0.5])
