"""Calibration of a diffusion model's noise-level classifier (the thermalizer's ŝ; Pedersen, Zanna, Bruna,
arXiv 2503.18731): clean fields are diffused to known levels and classified again."""

from __future__ import annotations

import torch
from torch import Tensor

from theorylab.nn.unet import diffuse


def classify_levels(
    model, clean: Tensor, alpha_bars: Tensor, levels: int, generator: torch.Generator
) -> dict[str, Tensor]:
    """Diffuse each row of ``clean`` to a level s ~ U{0..levels−1} (from ``generator``: the levels, then the
    noise) and classify it with ``model(x) -> (ε̂, level logits)``. Returns ``level`` (s), ``predicted`` (ŝ of
    the diffused field) and ``clean_predicted`` (ŝ of the clean field, ideally <= a few levels)."""
    s = torch.randint(0, levels, (len(clean),), generator=generator)
    e = torch.randn(clean.shape, generator=generator)
    with torch.no_grad():
        predicted = model(diffuse(clean, alpha_bars.float()[s], e))[1].argmax(-1)
        clean_predicted = model(clean)[1].argmax(-1)
    return dict(level=s, predicted=predicted, clean_predicted=clean_predicted)
