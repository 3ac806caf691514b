"""Cross-split consistency of linear diffusion models (Wang, Zavatone-Veth, Pehlevan, arXiv 2602.02908): the
exact PF-ODE maps of linear denoisers fitted on two disjoint training sets, applied to the same noise seeds."""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import NDArray

from theorylab.nn.denoisers import linear_samples
from theorylab.probes.distances import nearest_mse, paired_mse


def linear_map_disagreement(
    train_a: NDArray[np.float64], train_b: NDArray[np.float64], x_T: torch.Tensor, sigma_T: float
) -> torch.Tensor:
    """Per-seed ||x_a(z) - x_b(z)||^2 / d between the linear maps fitted on ``train_a`` and ``train_b``."""
    return paired_mse(linear_samples(train_a, x_T, sigma_T), linear_samples(train_b, x_T, sigma_T))


def cross_split_samples(
    train_a: NDArray[np.float64], train_b: NDArray[np.float64], x_T: torch.Tensor, sigma_T: float
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """``(samples_a, samples_b, metrics)`` for the seeds ``x_T`` (m, d): the two maps' samples and, per seed,
    ``cross_mse`` (their disagreement) and ``nearest_mse_1`` / ``nearest_mse_2`` (each sample's distance to the
    nearest image of its own training set: what memorisation would make small)."""
    out_a, out_b = linear_samples(train_a, x_T, sigma_T), linear_samples(train_b, x_T, sigma_T)
    metrics = dict(
        cross_mse=paired_mse(out_a, out_b),
        nearest_mse_1=nearest_mse(out_a, torch.as_tensor(train_a)),
        nearest_mse_2=nearest_mse(out_b, torch.as_tensor(train_b)),
    )
    return out_a, out_b, metrics
