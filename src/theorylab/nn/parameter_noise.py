"""Random perturbations of a model's parameters, for checks that must exercise every term.

Freshly initialised ToyTransformers and Hugging Face models start their biases at 0, so a check of
a formula with bias terms (e.g. the query bias's key-side term of the attention score, in
:func:`~theorylab.probes.qk_scores.operator_logit_errors`) would pass even with those terms wrong;
:func:`perturb_biases` makes them non-zero first.
"""

from __future__ import annotations

import torch
from torch import nn


def is_bias(name: str) -> bool:
    """Whether a parameter name is a bias: ``*.bias`` (nn.Linear, HF Conv1D), ``*.b_*``, ``b_*`` (ToyTransformer)."""
    return name.endswith("bias") or ".b_" in name or name.startswith("b_")


@torch.no_grad()
def perturb_biases(model: nn.Module, generator: torch.Generator, scale: float = 0.3) -> nn.Module:
    """Add ``scale`` times standard Gaussian noise (from ``generator``, in parameter order) to every bias, in place.

    Returns ``model``."""
    for name, p in model.named_parameters():
        if is_bias(name):
            p.add_(scale * torch.randn(p.shape, generator=generator, dtype=p.dtype))
    return model
