"""Slopes and zero crossings read off curves, against curves with known exponents and roots."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from theorylab.theory.rates import loglog_slopes, zero_crossing


def test_loglog_slopes_recover_exact_power_laws_averaged_over_repeats():
    rows = []
    for p, a in ((0.0, 0.5), (0.25, 0.0), (0.5, -0.5)):
        for N in (6, 12, 24, 48):
            for seed, noise in ((0, 0.9), (1, 1.1)):  # the mean over seeds is exactly N^a
                rows.append(dict(p=p, N=N, seed=seed, y=noise * N**a))
    s = loglog_slopes(pd.DataFrame(rows), group="p", x="N", y="y")
    assert list(s.columns) == ["p", "slope", "max_over_min"] and list(s["p"]) == [0.0, 0.25, 0.5]
    assert s["slope"].to_numpy() == pytest.approx([0.5, 0.0, -0.5], abs=1e-12)
    assert s["max_over_min"].to_numpy() == pytest.approx([8**0.5, 1.0, 8**0.5], rel=1e-12)


def test_zero_crossing_interpolates_the_first_sign_change_and_none_without_one():
    x = np.array([0.0, 0.125, 0.25, 0.375])
    assert zero_crossing(x, 0.2 - x) == pytest.approx(0.2, abs=1e-15)  # linear: the root exactly
    assert zero_crossing(x, np.array([1.0, 0.0, -1.0, 1.0])) == pytest.approx(0.125)  # reaching 0 counts
    assert zero_crossing(x, np.array([-1.0, 1.0, 2.0, 3.0])) is None  # rising through 0 is not a crossing
    assert zero_crossing(x, np.ones(4)) is None
