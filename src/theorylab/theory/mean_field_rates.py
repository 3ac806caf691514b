"""Rates of propagation of chaos read off mean-field runs: width exponents, loss decay, the loss integral.

Glasgow, Wu, Bruna (arXiv 2504.13110) bound the function gap of a width-m network to its mean-field
limit by ``poly(d)/m`` over the whole run; Glasgow, Bruna (arXiv 2605.22010) make it uniform in time,
``sup_t gap <~ poly(d) m^{-min(1, c/6)}``, when ``L_MF(t) <~ t^-c`` and ``int_0^inf L_MF^{1/2} dt`` is finite.
These functions turn curves (NumPy arrays) into those exponents; pandas is imported only where a
grouped mean is taken, so the grouping matches a table's own ``groupby``.
"""

from __future__ import annotations

import numpy as np

from theorylab.theory.rates import fit_inverse_width, fit_power_law


def pooled_inverse_width(t: np.ndarray, width: np.ndarray, gap: np.ndarray) -> tuple[float, dict[float, float]]:
    """Exponent beta of ``gap ~ m^-beta`` pooled over checkpoints with one intercept per checkpoint, and each
    checkpoint's own slope (:func:`~theorylab.theory.rates.fit_inverse_width`).

    ``t``, ``width``, ``gap``: one entry per (checkpoint, network); gaps are averaged over the networks of a
    width first. A checkpoint whose mean gap is <= 0 at some width is left out of both; with none left, NaN."""
    import pandas as pd

    g = pd.DataFrame({"t": np.asarray(t), "width": np.asarray(width), "gap": np.asarray(gap)})
    means = g.groupby(["t", "width"])["gap"].mean().reset_index()
    xs, ys, per = [], [], {}
    for time, grp in means.groupby("t"):
        if (grp["gap"] <= 0).any():
            continue
        x, y = np.log(grp["width"].to_numpy(float)), np.log(grp["gap"].to_numpy())
        per[float(time)] = fit_inverse_width(grp["width"].to_numpy(), grp["gap"].to_numpy())
        xs.append(x - x.mean())
        ys.append(y - y.mean())
    if not xs:
        return float("nan"), per
    x, y = np.concatenate(xs), np.concatenate(ys)
    return float(-(x @ y) / (x @ x)), per


def root_loss_integral(t: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """``I(t) = int_0^t L^{1/2} ds`` at every grid point (trapezoid rule; negative losses count as 0):
    the quantity whose finiteness (``O(log d)``) is the premise of uniform-in-time propagation of chaos."""
    t, loss = np.asarray(t, dtype=np.float64), np.asarray(loss, dtype=np.float64)
    root = np.sqrt(np.maximum(loss, 0))
    return np.concatenate([[0.0], np.cumsum(0.5 * (root[1:] + root[:-1]) * np.diff(t))])


def loss_decay_summary(t: np.ndarray, loss: np.ndarray, window: tuple[float, float]) -> dict[str, float]:
    """The premises of Glasgow & Bruna's theorem read off one loss curve (``t`` ascending):

    - ``c`` of ``L ~ t^-c`` fitted where ``L/L(0)`` lies in ``window``, with its bootstrap interval
      ``c_low, c_high`` and the number of points used (:func:`~theorylab.theory.rates.fit_power_law`);
    - ``L0``, ``LT``: the loss at the first and last time;
    - ``I_T``, ``I_half``: :func:`root_loss_integral` at T and at the first grid time >= T/2;
    - ``beta_pred = min(1, c/6)``, the theorem's width exponent (NaN when c could not be fitted)."""
    t, loss = np.asarray(t, dtype=np.float64), np.asarray(loss, dtype=np.float64)
    c, (lo, hi), used = fit_power_law(t, loss, window)
    integral = root_loss_integral(t, loss)
    half = integral[np.searchsorted(t, t[-1] / 2)]
    return dict(
        c=c,
        c_low=lo,
        c_high=hi,
        window_points=int(used.sum()),
        L0=loss[0],
        LT=loss[-1],
        I_T=integral[-1],
        I_half=half,
        beta_pred=min(1.0, c / 6) if np.isfinite(c) else np.nan,
    )


def sup_over_time(t: np.ndarray, gap: np.ndarray, width: int) -> dict[str, float]:
    """For networks of one width: the sup over checkpoints ``t`` of the seed-mean gap, and ``m`` times that
    mean's max over the early (``t <= T/2``) and the late (``t >= T/2``) half of the run."""
    import pandas as pd

    mean = pd.DataFrame({"t": np.asarray(t), "gap": np.asarray(gap)}).groupby("t")["gap"].mean()
    horizon = mean.index.max()
    return dict(
        sup_gap=float(mean.max()),
        early_m_gap=float(width * mean[mean.index <= horizon / 2].max()),
        late_m_gap=float(width * mean[mean.index >= horizon / 2].max()),
    )


def width_for_sup_gap(t: np.ndarray, width: np.ndarray, gap: np.ndarray, eps: float) -> float:
    """The width needed to keep ``sup_t gap <= eps``, reading ``sup_t gap = C / m``: ``C`` is the mean over
    widths of ``m`` times the sup over checkpoints ``t`` of the seed-mean gap, and ``m_eps = C / eps``."""
    sup = sup_of_seed_mean(width, t, gap)
    return float((sup * sup.index).mean() / eps)


def growth_over_start(t: np.ndarray, width: np.ndarray, value: np.ndarray) -> float:
    """Largest ``max_t v_m(t) / v_m(t_0)`` over widths m, ``v_m`` the seed mean of ``value`` and ``t_0`` the first
    checkpoint: how far a width-scaled fluctuation (e.g. ``m · gap``) grows above its initial value."""
    import pandas as pd

    frame = pd.DataFrame({"width": np.asarray(width), "t": np.asarray(t), "v": np.asarray(value)})
    by = frame.groupby(["width", "t"])["v"].mean().unstack()
    return float((by.max(axis=1) / by[by.columns.min()]).max())


def exponents_in_dimension(values: dict[tuple[int, int], float]) -> list[float]:
    """``values[(d, k)]`` measured at several dimensions d for each k: for each k (ascending) with at least
    two dimensions, the exponent of ``values ~ d^e`` (least squares in log-log), the poly(d) test of
    Glasgow, Wu, Bruna (arXiv 2504.13110)."""
    dims = sorted({d for d, _ in values})
    slopes = []
    for k in sorted({k for _, k in values}):
        pts = [(d, values[(d, k)]) for d in dims if (d, k) in values]
        if len(pts) >= 2:
            slopes.append(float(np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0]))
    return slopes


def sup_of_seed_mean(key: np.ndarray, t: np.ndarray, gap: np.ndarray):
    """Per value of ``key`` (a width, a sample size): the sup over checkpoints ``t`` of the gap averaged over
    the networks (seeds) that share that key and checkpoint. A pandas Series indexed by key, ascending."""
    import pandas as pd

    g = pd.DataFrame({"key": np.asarray(key), "t": np.asarray(t), "gap": np.asarray(gap)})
    return g.groupby(["key", "t"])["gap"].mean().groupby("key").max()


def power_law_through_window(
    t: np.ndarray, y: np.ndarray, c: float, window: tuple[float, float], scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """The fitted ``y ~ t^-c`` over the points with ``y`` in ``window`` times ``scale`` (the fit window of
    :func:`loss_decay_summary`, relative to ``scale = L(0)``), drawn through the middle one of them:
    ``(t_window, line)``, for a figure."""
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    inside = (y >= window[0] * scale) & (y <= window[1] * scale)
    tt, yy = t[inside], y[inside]
    mid = len(tt) // 2
    return tt, yy[mid] * (tt / tt[mid]) ** (-c)


def spread_across(values: dict[tuple, float]) -> float:
    """``values[(group, setting)]``: the largest, over groups, range (max - min, NaNs ignored) across settings;
    e.g. how much a fitted exponent moves across step sizes at a fixed dimension."""
    groups = {g for g, _ in values}
    return max(
        float(
            np.nanmax([v for (g, _), v in values.items() if g == group])
            - np.nanmin([v for (g, _), v in values.items() if g == group])
        )
        for group in groups
    )


def halving_shrink_factors(etas: np.ndarray, squared_distances: np.ndarray) -> list[float]:
    """Discretisation order from runs at step sizes ``etas`` (each halving the previous): ``squared_distances[i]``
    is ``|f_eta_i - f_eta_i/2|^2`` at a fixed time. The factor by which the distance (its square root) shrinks
    per halving, largest eta first; 2 for a first-order scheme, 4 for a second-order one."""
    order = np.argsort(-np.asarray(etas, dtype=np.float64), kind="stable")
    dist = np.sqrt(np.asarray(squared_distances, dtype=np.float64)[order])
    return (dist[:-1] / dist[1:]).tolist()
