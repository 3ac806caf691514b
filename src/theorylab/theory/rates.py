"""Rates read off curves: power-law exponents with bootstrap confidence intervals, log-log slopes per
group and where such slopes change sign."""

from __future__ import annotations

import numpy as np
import pandas as pd


def fit_power_law(
    t: np.ndarray,
    y: np.ndarray,
    window: tuple[float, float] | None = None,
    *,
    relative_to_first: bool = True,
    n_boot: int = 200,
    seed: int = 0,
) -> tuple[float, tuple[float, float], np.ndarray]:
    """Fit ``y ~ C t^{-c}`` by least squares in log-log on the points with ``y / y_0`` in ``window``.

    Returns ``(c, (low, high) 95% bootstrap interval, mask of points used)``. With fewer than 3
    points in the window, ``c`` is NaN.
    """
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ref = y[0] if relative_to_first else 1.0
    mask = (t > 0) & (y > 0)
    if window is not None:
        mask &= (y >= window[0] * ref) & (y <= window[1] * ref)
    if mask.sum() < 3:
        return float("nan"), (float("nan"), float("nan")), mask
    lt, ly = np.log(t[mask]), np.log(y[mask])
    slope = np.polyfit(lt, ly, 1)[0]
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(lt), len(lt))
        if np.ptp(lt[idx]) > 0:
            boots.append(np.polyfit(lt[idx], ly[idx], 1)[0])
    low, high = np.percentile(-np.array(boots), [2.5, 97.5]) if boots else (np.nan, np.nan)
    return float(-slope), (float(low), float(high)), mask


def fit_inverse_width(widths: np.ndarray, gaps: np.ndarray) -> float:
    """Exponent beta in ``gap ~ m^{-beta}`` (least squares in log-log; non-positive gaps dropped)."""
    widths, gaps = np.asarray(widths, dtype=np.float64), np.asarray(gaps, dtype=np.float64)
    keep = gaps > 0
    if keep.sum() < 2 or len(np.unique(widths[keep])) < 2:
        return float("nan")
    return float(-np.polyfit(np.log(widths[keep]), np.log(gaps[keep]), 1)[0])


def first_crossing(x: np.ndarray, y: np.ndarray, level: float) -> float | None:
    """The first ``x`` (ascending grid) at which ``y`` reaches ``level``, interpolated linearly in
    ``log x`` between the grid points around it; ``x[0]`` if ``y`` starts at or above ``level``;
    None if it never gets there."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    above = np.flatnonzero(y >= level)
    if len(above) == 0:
        return None
    k = above[0]
    if k == 0:
        return float(x[0])
    t = (level - y[k - 1]) / (y[k] - y[k - 1])
    return float(np.exp(np.log(x[k - 1]) + t * (np.log(x[k]) - np.log(x[k - 1]))))


def loglog_slopes(table: pd.DataFrame, group: str, x: str, y: str) -> pd.DataFrame:
    """Per value of ``group``: the least-squares slope of ``log mean(y)`` against ``log x`` (``y`` averaged
    over repeats at each ``x``) and ``max_over_min`` of those means (1 for a flat curve).

    Columns ``<group>, slope, max_over_min``, one row per group in sorted order. DeepNet's update law
    (Wang et al. 2022) is read this way: the slope in depth N of the relative update, per init exponent p.
    """
    rows = []
    for key, g in table.groupby(group):
        m = g.groupby(x)[y].mean()
        slope = np.polyfit(np.log(m.index.to_numpy(float)), np.log(m.to_numpy()), 1)[0]
        rows.append({group: key, "slope": slope, "max_over_min": float(m.max() / m.min())})
    return pd.DataFrame(rows)


def zero_crossing(x: np.ndarray, y: np.ndarray) -> float | None:
    """The first ``x`` (ascending grid) where ``y`` goes from positive to non-positive, interpolated linearly
    between the two grid points around it; None if it never does."""
    x, y = np.asarray(x), np.asarray(y)
    for i in range(len(x) - 1):
        if y[i] > 0 >= y[i + 1]:
            return float(x[i] + (x[i + 1] - x[i]) * y[i] / (y[i] - y[i + 1]))
    return None
