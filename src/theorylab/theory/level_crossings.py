"""First crossings of a level by a measured curve: when a quantity first turns positive, first
reaches a bar.

Used to order two learning events in time, e.g. Chen, Bruna, Bietti (arXiv 2406.03068, Sec. 4):
t_FF, the first evaluation at which the feed-forward layer's margin for the noise token is > 0,
against t_ICL, the first at which in-context accuracy reaches 0.5.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def first_point_above(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, level: float, *, inclusive: bool = False
) -> int | float | None:
    """The first ``x`` (in the given order, e.g. increasing steps) at which ``y > level``
    (``y >= level`` when ``inclusive``), as a Python number; None if ``y`` never gets there.
    A grid point, not interpolated (for that: :func:`theorylab.theory.rates.first_crossing`)."""
    xs, ys = np.asarray(x), np.asarray(y)
    if xs.shape != ys.shape or xs.ndim != 1:
        raise ValueError(f"x and y must be 1-d of one length, got shapes {xs.shape} and {ys.shape}")
    hit = np.flatnonzero(ys >= level if inclusive else ys > level)
    return xs[hit[0]].item() if len(hit) else None
