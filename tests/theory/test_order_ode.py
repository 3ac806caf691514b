"""theory.order_ode: the matrix ODE runner against closed forms (logistic flow, linear ODE, the t_k(d) integral)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.linalg import expm

from theorylab.theory.multi_index import escape_rhs_1d, escape_time
from theorylab.theory.order_ode import run_order_ode


@pytest.mark.parametrize("d", [1e2, 1e4])
def test_logistic_k1_closed_form(d):
    # dm/dt = 2(1 - m^2) m  <=>  s = m^2 logistic: s(t) = s0 e^{4t} / (1 - s0 + s0 e^{4t})
    s0 = 1 / d
    t_eval = np.linspace(0, 5, 41)
    res = run_order_ode(
        escape_rhs_1d(1), np.array([[d**-0.5]]), 5.0, {"half": lambda t, M: abs(M[0, 0]) - 0.5}, t_eval=t_eval
    )
    exact = np.sqrt(s0 * np.exp(4 * t_eval) / (1 - s0 + s0 * np.exp(4 * t_eval)))
    assert np.abs(res.states[:, 0, 0] - exact).max() < 1e-8
    assert res.events["half"] == pytest.approx(math.log((d - 1) / 3) / 4, rel=1e-7)


@pytest.mark.parametrize("method", ["LSODA", "Radau"])
def test_linear_matrix_ode(method):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3)) - 2 * np.eye(3)
    M0 = rng.standard_normal((3, 3))
    res = run_order_ode(lambda t, M: A @ M, M0, 2.0, method=method, t_eval=np.array([0.0, 1.0, 2.0]))
    assert res.states.shape == (3, 3, 3)
    assert np.abs(res.final - expm(2 * A) @ M0).max() < 1e-7


@pytest.mark.parametrize(("k", "d"), [(2, 100.0), (2, 1e4), (3, 300.0), (3, 1e4)])
def test_escape_time_integral_and_ode(k, d):
    # independent reference: quad in s itself (not in log s), and the ODE's event time
    direct, _ = quad(
        lambda s: 1 / (4 * k * (1 - s) * s**k),
        1 / d,
        0.25,
        epsabs=0,
        epsrel=1e-12,
        limit=500,
        points=[10 / d, 100 / d] if 100 / d < 0.25 else None,
    )
    assert escape_time(k, d) == pytest.approx(direct, rel=1e-8)
    if k == 2:  # antiderivative -1/s + ln s - ln(1 - s)
        assert escape_time(2, d) == pytest.approx((d - 4 + math.log((d - 1) / 3)) / 8, rel=1e-10)
    res = run_order_ode(
        escape_rhs_1d(k),
        np.array([[d**-0.5]]),
        2 * direct,
        {"half": lambda t, M: abs(M[0, 0]) - 0.5},
        terminal=["half"],
    )
    assert res.events["half"] == pytest.approx(direct, rel=1e-6)
    assert res.t[-1] == pytest.approx(res.events["half"])  # terminal: stopped there


def test_events_never_and_already():
    res = run_order_ode(
        lambda t, M: -M,
        np.array([[1.0]]),
        1.0,
        {"never": lambda t, M: M[0, 0] - 2, "already": lambda t, M: M[0, 0] - 0.5},
    )
    assert math.isnan(res.events["never"]) and res.events["already"] == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="t_max"):
        run_order_ode(lambda t, M: M, np.eye(2), 0.0)
    with pytest.raises(ValueError, match="terminal"):
        run_order_ode(lambda t, M: M, np.eye(2), 1.0, {"a": lambda t, M: 1.0}, terminal=["b"])
    with pytest.raises(ValueError, match="finite"):
        run_order_ode(lambda t, M: M, np.array([[np.nan]]), 1.0)
