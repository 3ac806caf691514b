"""Calibration of a diffusion model's noise-level classifier: clean fields are diffused to known levels and
classified again. :func:`classify_levels` for one field (the thermalizer's ŝ; Pedersen, Zanna, Bruna, arXiv
2503.18731), :func:`classify_pair_levels` for a pair of frames each at its own level (the self-refining
surrogate's ŝ_1, ŝ_2; Liu, Zanna, Bruna, arXiv 2603.17750)."""

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


def classify_pair_levels(model, pairs: Tensor, alpha_bars: Tensor, levels: Tensor, generator: torch.Generator):
    """Diffuse frame k of each pair ``pairs`` (B, 2, ...) to its level ``levels[:, k]`` (B, 2) with noise from
    ``generator`` and classify both frames with ``model(x) -> (ε̂, level logits (B, 2, L))``. Returns
    ``predicted`` (B, 2), the levels read from the diffused pair, and ``clean_predicted`` (B, 2), from the clean
    pair (ideally at or near 0)."""
    e = torch.randn(pairs.shape, generator=generator)
    a = alpha_bars.float()[levels].view(*levels.shape, *([1] * (pairs.dim() - 2)))
    with torch.no_grad():
        predicted = model(a.sqrt() * pairs + (1 - a).sqrt() * e)[1].argmax(-1)
        clean_predicted = model(pairs)[1].argmax(-1)
    return dict(predicted=predicted, clean_predicted=clean_predicted)
