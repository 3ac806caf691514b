"""Probe a learned low-dimensional function on a grid (e.g. an MPNN's message function against x + w)."""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import Tensor


def function_grid(f: Callable[[Tensor], Tensor], ranges: Sequence[Tensor]) -> tuple[list[Tensor], Tensor]:
    """Evaluate ``f`` on the product grid of ``ranges``: returns the meshgrid and ``f``'s values (grid shape + f's
    trailing shape).

    ``f`` takes points of shape ``(M, len(ranges))``.
    """
    mesh = torch.meshgrid(*ranges, indexing="ij")
    points = torch.stack([m.flatten() for m in mesh], dim=-1)
    with torch.no_grad():
        values = f(points)
    return list(mesh), values.reshape(*mesh[0].shape, *values.shape[1:])
