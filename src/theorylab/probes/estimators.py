"""Monte Carlo estimators with their standard errors: running means, variances, regression slopes.

- :class:`RunningMoments`: mean and standard error of the mean over draws that arrive in batches.
- :func:`variance_with_se`: the unbiased variance over draws and its standard error from the spread of
  the squared deviations (the fourth central moment); trailing ``event_dims`` axes are summed first,
  giving the total variance E‖X − EX‖² of vector draws.
- :func:`slope_through_origin`: the least-squares slope of y on x without intercept and its standard
  error (e.g. a per-step factor x_{t+1} ≈ m x_t from a trajectory).
"""

from __future__ import annotations

import numpy as np
from torch import Tensor


class RunningMoments:
    """Running sums for means and variances over draws (float64): ``add(batch)`` with draws on axis 0."""

    def __init__(self) -> None:
        self.count = 0
        self.total: np.ndarray | float = 0.0
        self.squares: np.ndarray | float = 0.0

    def add(self, batch: np.ndarray) -> None:
        self.count += batch.shape[0]
        self.total = self.total + batch.sum(0)
        self.squares = self.squares + (batch * batch).sum(0)

    @property
    def mean(self) -> np.ndarray:
        return np.asarray(self.total) / self.count

    @property
    def se(self) -> np.ndarray:
        """Standard error of the mean, from the unbiased variance of the draws."""
        var = (np.asarray(self.squares) - self.count * self.mean**2) / (self.count - 1)
        return np.sqrt(np.maximum(var, 0) / self.count)


def variance_with_se(samples: np.ndarray, event_dims: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased variance over axis 0 and its standard error from the fourth central moment.

    With ``event_dims = k`` the last k axes form one vector draw: the squared deviations are summed over
    them, so the result is the total variance E‖X − EX‖² (the trace of the covariance)."""
    dev2 = (samples - samples.mean(0)) ** 2
    if event_dims:
        dev2 = dev2.sum(tuple(range(-event_dims, 0)))
    b = samples.shape[0]
    return dev2.sum(0) / (b - 1), dev2.std(0, ddof=1) / np.sqrt(b)


def slope_through_origin(x: Tensor, y: Tensor, dim: int | tuple[int, ...] = 0) -> tuple[Tensor, Tensor]:
    """``(m, se)``: m = Σ x y / Σ x² over ``dim`` (the least-squares fit y ≈ m x) and its standard error
    √(mean (y − m x)² / Σ x²) (residuals independent of x)."""
    sxx = x.pow(2).sum(dim)
    m = (x * y).sum(dim) / sxx
    se = ((y - m * x).pow(2).mean(dim) / sxx).sqrt()
    return m, se
