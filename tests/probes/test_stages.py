"""probes.stages: plateaus of synthetic curves with known stages (sums of logistic drops, as in small-init loss
curves), relative-slope arithmetic and the longest-run helper."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.probes.stages import detect_plateaus, longest_true_run, relative_slope


def _staircase(steps, drops):
    """2.3 - Σ_k h_k σ((x - c_k) / w_k): flat shelves between sharp drops at c_k."""
    y = np.full(steps.shape, 2.3)
    for c, h, w in drops:
        y -= h / (1 + np.exp(-(steps - c) / w))
    return y


def test_staircase_plateaus_are_found_where_they_are():
    x = np.arange(0, 4001, 10.0)
    y = _staircase(x, [(500, 0.1, 15), (2000, 0.2, 20)])
    found = detect_plateaus(y, x, rel_tol=1e-5, min_length=200)
    assert len(found) == 3
    # the shelves: [0, ~500), (~500, ~2000), (~2000, 4000]; edges within a few widths of the drop centres
    assert found[0].start == 0 and 350 <= found[0].end <= 500
    assert 500 <= found[1].start <= 650 and 1800 <= found[1].end <= 2000
    assert 2000 <= found[2].start <= 2200 and found[2].end == 4000
    for p, level in zip(found, (2.3, 2.2, 2.0)):
        assert abs(p.level - level) < 5e-3
        assert p.length == p.end - p.start


def test_min_length_and_tolerance_filter():
    x = np.arange(0, 1001, 10.0)
    y = _staircase(x, [(300, 0.5, 10), (400, 0.5, 10)])  # a short shelf of ~60 steps between two drops
    spans = [(p.start, p.end) for p in detect_plateaus(y, x, rel_tol=1e-5, min_length=150)]
    assert all(not (300 < s < 400) for s, _ in spans)  # the short shelf is too short
    assert detect_plateaus(np.linspace(1, 2, 101), rel_tol=1e-4, min_length=5) == []  # a steady ramp: 1 %/step
    assert len(detect_plateaus(np.linspace(1, 2, 101), rel_tol=0.02, min_length=5)) == 1  # tolerant enough


def test_noise_needs_smoothing():
    rng = np.random.default_rng(0)
    x = np.arange(0, 2001, 10.0)
    y = _staircase(x, [(1000, 0.3, 10)]) + 2e-4 * rng.standard_normal(len(x))
    raw = detect_plateaus(y, x, rel_tol=2e-6, min_length=300)
    smooth = detect_plateaus(y, x, rel_tol=2e-6, min_length=300, smooth=21)
    assert len(smooth) == 2 and len(raw) < 2


def test_relative_slope_by_hand_and_bad_input():
    np.testing.assert_allclose(relative_slope([2.0, 1.0, 1.0], [0, 10, 30]), [0.05, 0.0])
    with pytest.raises(ValueError, match="increase"):
        relative_slope([1.0, 2.0], [1, 1])
    with pytest.raises(ValueError, match="smooth"):
        detect_plateaus([1.0, 1.0], smooth=2)
    with pytest.raises(ValueError, match="rel_tol"):
        detect_plateaus([1.0, 1.0], rel_tol=0)
    assert detect_plateaus([1.0]) == []
    y = np.ones(50)
    y[25] = np.nan  # a non-finite point splits the plateau
    assert [(p.first, p.last) for p in detect_plateaus(y, min_length=10)] == [(0, 24), (26, 49)]


def test_longest_true_run():
    assert longest_true_run([False, True, True, False, True]) == (1, 2)
    assert longest_true_run([True, False, True, True], x=[0, 100, 110, 120]) == (2, 3)
    assert longest_true_run([True, False, True, True], x=[0, 1000, 1010, 1020]) == (2, 3)
    assert longest_true_run([True, True, False, True, True], x=[0, 500, 510, 520, 530]) == (0, 1)  # by span
    assert longest_true_run([False, False]) is None


def test_zigzag_finds_the_moves_of_a_curve_beyond_its_hysteresis():
    from theorylab.probes.stages import moving_average, zigzag

    y = np.array([1.0, 0.5, 0.2, 0.4, 0.6, 0.9, 0.5, 0.1])
    assert [(s, i, j) for s, i, j, _ in zigzag(y, 0.1)] == [(-1, 0, 2), (1, 2, 5), (-1, 5, 7)]
    assert [m[:3] for m in zigzag(y, 0.8)] == [(-1, 0, 7)]  # the rise of 0.7 is below it: one fall to the end
    assert zigzag(np.ones(5), 0.1) == []
    wiggly = np.linspace(1, 0, 50) + 0.01 * np.sin(np.arange(50) * 3.0)
    assert [m[0] for m in zigzag(wiggly, 0.05)] == [-1]  # wiggles below tol never end the fall
    np.testing.assert_allclose(moving_average([1.0, 2.0, 3.0, 4.0], 3), [1.5, 2.0, 3.0, 3.5])
