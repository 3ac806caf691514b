"""Crossings of a level per dimension and the fitted exponent of n in d."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from theorylab.theory.sample_complexity import crossings_by_dimension, crossings_from_table, fitted_exponent


def test_crossing_is_log_linear_interpolation_and_scales_by_d():
    x = np.array([1.0, 4.0, 16.0])
    curves = {10: (x, np.array([0.0, 0.25, 0.75])), 20: (x, np.array([0.0, 0.1, 0.2]))}
    out = crossings_by_dimension(curves, 0.5)
    assert out == {10: pytest.approx(8.0)}  # halfway between 4 and 16 in log x
    assert crossings_by_dimension(curves, 0.5, times_dimension=True) == {10: pytest.approx(80.0)}


def test_started_curves_are_kept_or_skipped():
    curves = {5: (np.array([1.0, 2.0]), np.array([0.6, 0.9]))}
    assert crossings_by_dimension(curves, 0.5) == {5: 1.0}
    assert crossings_by_dimension(curves, 0.5, skip_started=True) == {}


def test_exponent_of_an_exact_power_law_and_the_table_form():
    ds = [16, 32, 64, 128]
    assert fitted_exponent({d: 3.0 * d**1.5 for d in ds}) == pytest.approx(1.5)
    assert fitted_exponent({16: 1.0}) is None
    # seed-mean curves that cross 0.5 at n = 2 d^1.5 exactly (linear in log n around the crossing)
    rows = []
    for d in ds:
        for c in (0.5, 1.0, 4.0, 8.0):
            n = c * d**1.5
            for seed, jitter in enumerate((-0.05, 0.05)):
                rows.append(dict(d=d, n=n, seed=seed, overlap=0.5 + np.log(c / 2.0) / np.log(4.0) + jitter))
    cross = crossings_from_table(pd.DataFrame(rows), "n", "overlap")
    assert cross == {d: pytest.approx(2.0 * d**1.5) for d in ds}
    assert fitted_exponent(cross) == pytest.approx(1.5)
