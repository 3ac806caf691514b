"""First crossing of a level against a plain loop."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.theory.level_crossings import first_point_above


def test_first_point_above_against_a_loop():
    rng = np.random.default_rng(0)
    for _ in range(200):
        steps = np.sort(rng.choice(1000, size=12, replace=False))
        y = rng.normal(size=12).round(1)
        for inclusive in (False, True):
            expect = next((int(s) for s, v in zip(steps, y) if (v >= 0.5 if inclusive else v > 0.5)), None)
            got = first_point_above(steps, y, 0.5, inclusive=inclusive)
            assert got == expect and (got is None or type(got) is int)


def test_first_point_above_edges():
    assert first_point_above([0, 50, 100], [0.0, 0.5, 0.7], 0.5) == 100
    assert first_point_above([0, 50, 100], [0.0, 0.5, 0.7], 0.5, inclusive=True) == 50
    assert first_point_above([0, 50], [np.nan, -1.0], 0.0) is None
    with pytest.raises(ValueError, match="1-d"):
        first_point_above([0, 1], [0.0], 0.0)
