"""Sample complexity read off recovery curves: where each curve crosses a level, and the exponent of n in d.

Claims of the form ``n = Theta(d^p)`` (Bruna & Hsu, arXiv 2504.05426; Damian, Lee, Bruna, arXiv
2506.05500) are read off curves of a seed-mean overlap against a sample-size grid, one curve per
dimension ``d``: the sample size at which each curve first reaches a level (interpolated in log x by
:func:`theorylab.theory.rates.first_crossing`), then a least-squares slope of ``log n`` against ``log d``.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from theorylab.theory.rates import first_crossing


def crossings_by_dimension(
    curves: Mapping[int, tuple[np.ndarray, np.ndarray]],
    level: float = 0.5,
    *,
    times_dimension: bool = False,
    skip_started: bool = False,
) -> dict[int, float]:
    """Per ``d``, the first grid value ``x`` at which ``curves[d] = (x ascending, y)`` reaches ``level``.

    ``times_dimension``: the grid is ``n/d``, report ``n = x d``. ``skip_started``: leave out a
    ``d`` whose curve is already at the level on its first grid point (no crossing was seen).
    Dimensions whose curve never reaches the level are left out.
    """
    out = {}
    for d, (x, y) in curves.items():
        if skip_started and y[0] >= level:
            continue
        cross = first_crossing(x, y, level)
        if cross is not None:
            out[int(d)] = cross * d if times_dimension else cross
    return out


def crossings_from_table(
    table,
    x: str,
    value: str,
    level: float = 0.5,
    *,
    dimension: str = "d",
    times_dimension: bool = False,
    skip_started: bool = False,
) -> dict[int, float]:
    """:func:`crossings_by_dimension` of a tidy table (a pandas DataFrame, one row per seed and grid
    point): per ``dimension``, the seed-mean of ``value`` against the sorted grid ``x``."""
    curves = {}
    for d, g in table.groupby(dimension):
        m = g.groupby(x)[value].mean().sort_index()
        curves[d] = (m.index.to_numpy(), m.to_numpy())
    return crossings_by_dimension(curves, level, times_dimension=times_dimension, skip_started=skip_started)


def fitted_exponent(crossings: Mapping[int, float]) -> float | None:
    """Least-squares slope ``p`` of ``log n = p log d + c`` over the crossings (None with fewer than 2)."""
    if len(crossings) < 2:
        return None
    ds, ns = zip(*sorted(crossings.items()))
    return float(np.polyfit(np.log(ds), np.log(ns), 1)[0])
