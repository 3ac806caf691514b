"""Rates read off mean-field runs: exact answers on synthetic curves, brute-force groupings, invariances."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.theory.mean_field_rates import (
    exponents_in_dimension,
    growth_over_start,
    halving_shrink_factors,
    loss_decay_summary,
    pooled_inverse_width,
    power_law_through_window,
    root_loss_integral,
    spread_across,
    sup_of_seed_mean,
    sup_over_time,
    width_for_sup_gap,
)


def _grid(beta_by_t: dict[float, float], widths=(32, 64, 128, 256), seeds=3):
    """gap = (1 + t) m^-beta(t), the same for every seed."""
    rows = [(t, m, (1 + t) * m**-b) for t, b in beta_by_t.items() for m in widths for _ in range(seeds)]
    return map(np.array, zip(*rows))


def test_pooled_inverse_width_recovers_a_common_exponent_with_per_checkpoint_intercepts():
    t, m, gap = _grid({0.0: 1.0, 1.0: 1.0, 2.0: 1.0})
    pooled, per = pooled_inverse_width(t, m, gap)
    assert pooled == pytest.approx(1.0, abs=1e-12) and set(per) == {0.0, 1.0, 2.0}
    assert all(b == pytest.approx(1.0, abs=1e-12) for b in per.values())
    # pooling is the average of per-checkpoint slopes when every checkpoint has the same widths
    t, m, gap = _grid({0.0: 0.8, 1.0: 1.2})
    pooled, per = pooled_inverse_width(t, m, gap)
    assert pooled == pytest.approx(1.0, abs=1e-12) and per[0.0] == pytest.approx(0.8) and per[1.0] == pytest.approx(1.2)
    # a checkpoint with a non-positive mean gap is dropped; none left gives NaN
    gap2 = np.where(t == 1.0, -1.0, gap)
    assert pooled_inverse_width(t, m, gap2)[0] == pytest.approx(0.8, abs=1e-12)
    assert np.isnan(pooled_inverse_width(t, m, -np.abs(gap))[0])


def test_root_loss_integral_is_exact_for_a_linear_root_and_matches_scipy():
    from scipy.integrate import cumulative_trapezoid

    t = np.linspace(0, 3, 31)
    assert root_loss_integral(t, (1 + t) ** 2)[-1] == pytest.approx(3 + 4.5, abs=1e-12)  # int_0^3 (1 + t) dt
    loss = np.exp(-t) - 0.01
    ref = cumulative_trapezoid(np.sqrt(np.maximum(loss, 0)), t, initial=0.0)
    assert np.allclose(root_loss_integral(t, loss), ref, rtol=0, atol=1e-14)


def test_loss_decay_summary_on_an_exact_power_law():
    t = np.linspace(0, 200, 4001)
    pure = np.concatenate([[1.0], t[1:] ** -2.0])  # L(0) = 1, then t^-2: the window [1e-3, 1e-1] is t in [3.2, 32]
    s = loss_decay_summary(t, pure, (1e-3, 1e-1))
    assert s["c"] == pytest.approx(2.0, abs=1e-9)
    assert s["c_low"] == pytest.approx(2.0) and s["c_high"] == pytest.approx(2.0)
    assert s["window_points"] == int(((pure >= 1e-3) & (pure <= 1e-1)).sum())
    assert s["L0"] == 1.0 and s["LT"] == pure[-1] and s["beta_pred"] == pytest.approx(2.0 / 6)
    loss = (1 + t) ** -2.0
    s = loss_decay_summary(t, loss, (1e-3, 1e-1))
    assert s["I_T"] == pytest.approx(np.log(201), rel=1e-4)  # int_0^T (1 + t)^-1 dt = log(1 + T)
    assert s["I_half"] == pytest.approx(np.log(101), rel=1e-4)
    assert np.isnan(loss_decay_summary(t, np.ones_like(t), (1e-3, 1e-1))["beta_pred"])  # no decay: no c


def test_sup_over_time_and_sup_of_seed_mean_against_brute_force():
    rng = np.random.default_rng(1)
    t = np.repeat([0.0, 1.0, 2.0, 4.0], 3)
    gap = rng.random(len(t))
    means = {tt: gap[t == tt].mean() for tt in np.unique(t)}
    s = sup_over_time(t, gap, 64)
    assert s["sup_gap"] == pytest.approx(max(means.values()))
    assert s["early_m_gap"] == pytest.approx(64 * max(v for k, v in means.items() if k <= 2))
    assert s["late_m_gap"] == pytest.approx(64 * max(v for k, v in means.items() if k >= 2))
    widths = np.array([32] * len(t) + [64] * len(t))
    sup = sup_of_seed_mean(widths, np.concatenate([t, t]), np.concatenate([gap, 2 * gap]))
    assert list(sup.index) == [32, 64] and sup[64] == pytest.approx(2 * sup[32])
    assert sup[32] == pytest.approx(s["sup_gap"])


def test_width_for_sup_gap_inverts_an_inverse_width_law():
    t, m, gap = _grid({0.0: 1.0, 1.0: 1.0})  # sup_t gap = 2 / m
    assert width_for_sup_gap(t, m, gap, 1e-3) == pytest.approx(2 / 1e-3)


def test_growth_over_start():
    t, m, gap = _grid({0.0: 1.0, 1.0: 1.0, 3.0: 1.0})  # (1 + t) / m: m * gap grows 4x by t = 3
    assert growth_over_start(t, m, m * gap) == pytest.approx(4.0)
    assert growth_over_start(t, m, m * gap / (1 + t)) == pytest.approx(1.0)


def test_exponents_in_dimension_and_spread():
    values = {(d, k): 3.0 * d ** (k / 2) for d in (16, 32, 64) for k in (2, 4)}
    values[(128, 4)] = 3.0 * 128**2
    assert exponents_in_dimension(values) == pytest.approx([1.0, 2.0])
    assert exponents_in_dimension({(16, 2): 1.0, (16, 4): 2.0}) == []  # one dimension: nothing to fit
    assert spread_across({(16, 0.1): 1.0, (16, 0.05): 1.3, (32, 0.1): 0.9, (32, 0.05): np.nan}) == pytest.approx(0.3)


def test_halving_shrink_factors_read_the_order_of_the_scheme():
    etas = np.array([0.05, 0.2, 0.1])  # any order: sorted largest first
    first = halving_shrink_factors(etas, (etas * 3) ** 2)  # distance O(eta)
    second = halving_shrink_factors(etas, (etas**2) ** 2)  # distance O(eta^2)
    assert first == pytest.approx([2.0, 2.0]) and second == pytest.approx([4.0, 4.0])


def test_power_law_through_window_passes_through_the_window_middle():
    t = np.linspace(0.1, 50, 500)
    y = 5 * t**-1.5
    tt, line = power_law_through_window(t, y, 1.5, (1e-2, 1e-1), y[0])
    inside = (y >= 1e-2 * y[0]) & (y <= 1e-1 * y[0])
    assert np.array_equal(tt, t[inside]) and np.allclose(line, y[inside], rtol=1e-12)
