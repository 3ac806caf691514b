"""Stage (plateau) detection on training curves: loss, weight norms, attention statistics, any series.

Small-initialisation training moves in stages: long plateaus where a curve barely changes, separated by fast
transitions (Chen, Lin, Xu & Luo, "Focus and Dilution", arXiv 2605.01199; Chen & Luo, arXiv 2510.06954). A plateau
here is a maximal window of consecutive log points over which the *relative slope* of the curve,
``|y_{i+1} - y_i| / ((x_{i+1} - x_i) * max(|y_i|, floor))``, stays at or below ``rel_tol`` (per unit of x, e.g. per
step), and whose span ``x_end - x_start`` is at least ``min_length``. The detector works on any curve and knows
nothing about the model that produced it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Plateau:
    """One plateau: ``x`` span ``[start, end]``, the indices of its first and last points, the curve's mean on it."""

    start: float
    end: float
    first: int
    last: int
    level: float

    @property
    def length(self) -> float:
        return self.end - self.start


def relative_slope(curve, x=None, floor: float = 1e-12) -> np.ndarray:
    """``|Δy| / (Δx * max(|y|, floor))`` between consecutive points: (n - 1,)."""
    y = np.asarray(curve, dtype=np.float64)
    xs = np.arange(len(y), dtype=np.float64) if x is None else np.asarray(x, dtype=np.float64)
    if y.ndim != 1 or xs.shape != y.shape:
        raise ValueError(f"curve and x must be 1-D of the same length; got shapes {y.shape} and {xs.shape}")
    dx = np.diff(xs)
    if (dx <= 0).any():
        raise ValueError("x must increase strictly")
    return np.abs(np.diff(y)) / (dx * np.maximum(np.abs(y[:-1]), floor))


def detect_plateaus(
    curve, x=None, *, rel_tol: float = 1e-4, min_length: float = 100.0, smooth: int = 1, floor: float = 1e-12
) -> list[Plateau]:
    """Every plateau of ``curve`` (sampled at increasing ``x``, default 0, 1, ...), in order.

    ``rel_tol``: the largest relative slope per unit of x inside a plateau (1e-4 per step: the curve changes by at
    most 1 % over 100 steps); ``min_length``: the shortest span in x units; ``smooth``: a centred moving average of
    this many points (odd) applied first, for noisy curves (1: none); ``floor``: guards the division near y = 0.
    Non-finite points break a plateau.
    """
    if rel_tol <= 0 or min_length < 0:
        raise ValueError(f"need rel_tol > 0 and min_length >= 0; got rel_tol={rel_tol}, min_length={min_length}")
    if smooth < 1 or smooth % 2 == 0:
        raise ValueError(f"smooth must be an odd window >= 1; got {smooth}")
    y = np.asarray(curve, dtype=np.float64)
    xs = np.arange(len(y), dtype=np.float64) if x is None else np.asarray(x, dtype=np.float64)
    if len(y) < 2:
        return []
    if smooth > 1:
        pad = smooth // 2
        padded = np.pad(y, pad, mode="edge")
        y = np.convolve(padded, np.ones(smooth) / smooth, mode="valid")
    flat = relative_slope(y, xs, floor) <= rel_tol  # NaN compares False: a non-finite point breaks the run
    out, i, n = [], 0, len(flat)
    while i < n:
        if not flat[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and flat[j + 1]:
            j += 1
        first, last = i, j + 1  # intervals i..j join points i..j+1
        if xs[last] - xs[first] >= min_length:
            out.append(Plateau(float(xs[first]), float(xs[last]), first, last, float(np.mean(y[first : last + 1]))))
        i = j + 1
    return out


def longest_true_run(mask, x=None) -> tuple[int, int] | None:
    """Indices ``(first, last)`` of the longest run of consecutive True entries (by x span), or None if none."""
    m = np.asarray(mask, dtype=bool)
    xs = np.arange(len(m), dtype=np.float64) if x is None else np.asarray(x, dtype=np.float64)
    best, i = None, 0
    while i < len(m):
        if not m[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(m) and m[j + 1]:
            j += 1
        if best is None or xs[j] - xs[i] > xs[best[1]] - xs[best[0]]:
            best = (i, j)
        i = j + 1
    return best


def moving_average(y, points: int) -> np.ndarray:
    """Centred moving average of ``y`` over ``points`` log points (shorter windows at the ends)."""
    import pandas as pd

    return pd.Series(np.asarray(y, dtype=float)).rolling(points, center=True, min_periods=1).mean().to_numpy()


def zigzag(y, tol: float) -> list[tuple[int, int, int, float]]:
    """The moves of a curve with hysteresis ``tol``: ``(sign, from index, to index, size)`` with alternating signs;
    a move ends only when the curve turns back by at least ``tol`` (or at the end of the curve). A curve that falls,
    rises and falls again by more than ``tol`` each gives three moves ``-, +, -`` (Focus and Dilution's attention
    entropy over a cycle, arXiv 2605.01199); wiggles smaller than ``tol`` never end a move."""
    y = np.asarray(y, dtype=float)
    moves: list[tuple[int, int, int, float]] = []
    trend, lo, hi, pivot, ext = 0, 0, 0, 0, 0
    for i in range(1, len(y)):
        if trend == 0:
            lo, hi = (i if y[i] < y[lo] else lo), (i if y[i] > y[hi] else hi)
            if y[i] - y[lo] >= tol:
                trend, pivot, ext = 1, lo, i
            elif y[hi] - y[i] >= tol:
                trend, pivot, ext = -1, hi, i
            continue
        if (y[i] - y[ext]) * trend > 0:
            ext = i
        elif (y[ext] - y[i]) * trend >= tol:
            moves.append((trend, pivot, ext, abs(y[ext] - y[pivot])))
            trend, pivot, ext = -trend, ext, i
    if trend != 0:
        moves.append((trend, pivot, ext, abs(y[ext] - y[pivot])))
    return moves
