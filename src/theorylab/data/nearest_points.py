"""Nearest- and farthest-point tasks on the sphere (Amsel, Yehudai, Bruna, arXiv 2407.16153, Sec. 2).

A set ``X = (x_1, ..., x_N)`` of i.i.d. uniform points on ``S^{d-1}`` (normalised Gaussians), fresh
for every set. Two query modes:

- ``"self_farthest"``: every point queries the set; the target is the point farthest from it,
  ``f(X)_i = x_{j*(i)}``, ``j*(i) = argmin_j <x_i, x_j>`` (the paper's task);
- ``"separate_nearest"``: separate queries ``y_i`` on the sphere; the target is the nearest point
  of the set, ``argmax_j <y_i, x_j>`` (the variant in the authors' code).

Loss and metric: d·MSE = mean over queries of ``|f_hat(X)_i - f(X)_i|^2`` (the targets are unit
vectors, so the zero predictor scores exactly 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

QueryMode = Literal["self_farthest", "separate_nearest"]


def sphere_points(
    batch: int,
    n: int,
    d: int,
    generator: torch.Generator,
    *,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """``(batch, n, d)`` i.i.d. uniform points on the unit sphere ``S^{d-1}``."""
    z = torch.randn(batch, n, d, generator=generator, device=device, dtype=dtype)
    return z / z.norm(dim=-1, keepdim=True)


@dataclass(frozen=True)
class NearestPointSets:
    """A batch of sets with their queries and targets.

    ``points`` (B, N, d); ``queries`` (B, M, d) (the points themselves in self-query mode);
    ``index`` (B, M) the target's position in the set; ``targets`` (B, M, d).
    """

    points: Tensor
    queries: Tensor
    index: Tensor
    targets: Tensor
    mode: QueryMode

    @property
    def sequence(self) -> Tensor:
        """The model's input: the set itself (self-query), or set then queries (separate), (B, T, d)."""
        if self.mode == "self_farthest":
            return self.points
        return torch.cat([self.points, self.queries], dim=1)

    @property
    def query_positions(self) -> slice:
        """Where the predictions for the queries sit in the model's output sequence."""
        n = self.points.shape[1]
        return slice(0, n) if self.mode == "self_farthest" else slice(n, n + self.queries.shape[1])


def nearest_point_sets(
    d: int,
    n_points: int,
    batch: int,
    generator: torch.Generator,
    *,
    mode: QueryMode = "self_farthest",
    n_queries: int | None = None,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> NearestPointSets:
    """Draw ``batch`` fresh sets of ``n_points`` points in dimension ``d`` (see the module docstring)."""
    if d < 1 or n_points < 1 or batch < 1:
        raise ValueError(f"d, n_points and batch must be >= 1; got {d}, {n_points}, {batch}")
    points = sphere_points(batch, n_points, d, generator, device=device, dtype=dtype)
    if mode == "self_farthest":
        if n_queries is not None and n_queries != n_points:
            raise ValueError("self-query mode: every point is a query, so n_queries must equal n_points or be None")
        queries = points
        index = (queries @ points.transpose(1, 2)).argmin(dim=-1)  # (B, N)
    elif mode == "separate_nearest":
        queries = sphere_points(batch, n_queries or n_points, d, generator, device=device, dtype=dtype)
        index = (queries @ points.transpose(1, 2)).argmax(dim=-1)  # (B, M)
    else:
        raise ValueError(f"unknown mode '{mode}'; allowed: self_farthest, separate_nearest")
    targets = torch.gather(points, 1, index[..., None].expand(-1, -1, d))
    return NearestPointSets(points, queries, index, targets, mode)


def d_mse(prediction: Tensor, target: Tensor) -> Tensor:
    """d·MSE: squared error summed over coordinates, averaged over queries and sets (zero predictor: 1)."""
    return (prediction - target).pow(2).sum(-1).mean()
