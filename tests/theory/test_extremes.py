"""theory.extremes: e_N by quadrature against closed forms, the card's constants and Monte Carlo."""

from __future__ import annotations

import math

import numpy as np
import pytest

from theorylab.theory.extremes import expected_max_normal, sd_max_normal


def test_closed_forms_and_card_values():
    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-10)
    assert expected_max_normal(3) == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-10)
    assert sd_max_normal(2) == pytest.approx(math.sqrt(1 - 1 / math.pi), abs=1e-9)
    for n, e in ((4, 1.0294), (16, 1.7660), (64, 2.3437)):
        assert round(expected_max_normal(n), 4) == e


def test_monte_carlo():
    rng = np.random.default_rng(0)
    for n in (4, 16, 64):
        m = rng.standard_normal((40_000, n)).max(1)
        assert abs(m.mean() - expected_max_normal(n)) < 4 * m.std() / math.sqrt(len(m))
        assert sd_max_normal(n) == pytest.approx(m.std(), rel=0.02)


def test_bad_input():
    for bad in (0, 2.5, -1):
        with pytest.raises(ValueError, match="positive integer"):
            expected_max_normal(bad)
