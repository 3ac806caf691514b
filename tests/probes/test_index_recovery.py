"""Recovery of an index model's hidden space, one cell at a time and as sweeps."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.data.index_models import IndexModel
from theorylab.probes.index_recovery import (
    battery_captures,
    capture_sweep,
    first_direction_captures,
    k3_overlaps,
    nested_captures,
    order2_overlap,
    sequential_recovery,
    statsmodels_angles,
)


def test_nested_captures_use_nested_samples_and_see_the_right_directions():
    rng = np.random.default_rng(0)
    model = IndexModel.make(8, "he2", rng)
    rows = nested_captures(model, rng, (50.0, 400.0), ("ADE", "pHd"), 10)
    assert [(r["alpha"], r["estimator"]) for r in rows] == [
        (50.0, "ADE"),
        (50.0, "pHd"),
        (400.0, "ADE"),
        (400.0, "pHd"),
    ]
    phd = {r["alpha"]: r["capture"] for r in rows if r["estimator"] == "pHd"}
    assert phd[400.0] > 0.95


def test_battery_rows_carry_the_population_prediction_and_are_reproducible():
    kw = dict(d=6, links=("he2", "z1z2"), seeds=2, alphas=(30.0,), estimators=("ADE", "SAVE"), n_slices=5)
    a = battery_captures(**kw, rng_for=lambda key: np.random.default_rng(abs(hash(key)) % 2**32))
    b = battery_captures(**kw, rng_for=lambda key: np.random.default_rng(abs(hash(key)) % 2**32))
    assert a == b and len(a) == 2 * (2 + 4)  # he2: 1 direction x 2 estimators; z1z2: 2 x 2
    assert all(r["predicted"] == (r["estimator"] == "SAVE") for r in a)


def test_capture_sweep_keys_and_first_direction_captures():
    keys = []

    def rng_for(key):
        keys.append(key)
        return np.random.default_rng(len(keys))

    rows = capture_sweep("he3", ("SIR", "ADE"), (10, 20), (30.0,), 2, 10, rng_for)
    assert keys == ["10/30.0/0", "10/30.0/1", "20/30.0/0", "20/30.0/1"] and len(rows) == 8
    caps = first_direction_captures(10, "he3", 30.0, np.random.default_rng(1), ("SIR", "ADE"), 10)
    assert [r["capture"] for r in rows[:2]] == [caps["SIR"], caps["ADE"]] and caps["SIR"] > 0.8


def test_statsmodels_angles_agree():
    pytest.importorskip("statsmodels")
    rng = np.random.default_rng(3)
    X, y, _ = IndexModel.make(10, "z1+z1z2", rng).sample(1000, rng)
    rows = statsmodels_angles(X, y, 10)
    assert [r["method"] for r in rows] == ["SIR", "SAVE"] and max(r["max_angle"] for r in rows) <= 1e-6


def test_parity_needs_order_three_and_the_monomial_order_two():
    rng = np.random.default_rng(4)
    model = IndexModel.make(8, "parity3", rng)
    X, y, _ = model.sample(int(16 * 8**1.5), rng)
    ov = k3_overlaps(model, X, y)
    assert set(ov) == {"U", "V"} and ov["U"] > 0.8
    assert order2_overlap(model, X, y, lambda t: t) < 0.8
    m3 = IndexModel.make(8, "z1z2z3", rng)
    X, y, _ = m3.sample(3000, rng)
    assert order2_overlap(m3, X, y) > 0.9


def test_sequential_recovery_of_the_monomial():
    rng = np.random.default_rng(5)
    model = IndexModel.make(8, "z1z2z3", rng)
    X, y, _ = model.sample(4000, rng)
    row = sequential_recovery(model, X, y, seed=0)
    assert row["known"] == 2 and row["r"] == 3 and row["found"] == 3 and row["overlap"] > 0.9 and row["leap"] == 2
