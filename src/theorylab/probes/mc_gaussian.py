"""Monte Carlo dropout representations as diagonal Gaussians.

Gal & Ghahramani (ICML 2016) keep dropout switched on at test time, so that one input gives a distribution
of outputs. :func:`mc_gaussian` runs ``n_pass`` such forward passes and fits, for each output feature, a
Gaussian: the sample mean and the sample variance over the passes. The result is the
``(mu, var)`` channel that :mod:`theorylab.theory.info` compares. For the study
``distributional-similarity``, these are token representations of a self-trained language model.
Only the dropout modules are put in training mode. Every other module runs in eval mode, so batch norm
uses its running statistics and never updates them. Each module's ``training`` flag is restored
afterwards, even if a pass raises.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Callable

import torch
from torch import Tensor, nn
from torch.nn.modules.dropout import _DropoutNd

from theorylab.core.rng import seeded


def dropout_modules(model: nn.Module) -> list[nn.Module]:
    """The modules of ``model`` that drop at random in training mode: every ``nn.Dropout*`` (including
    ``AlphaDropout`` and ``FeatureAlphaDropout``)."""
    return [m for m in model.modules() if isinstance(m, _DropoutNd)]


@torch.no_grad()
def mc_gaussian(
    model: nn.Module,
    x,
    n_pass: int,
    *,
    seed: int | None = None,
    unbiased: bool = True,
    features: Callable[[object], Tensor] | None = None,
) -> tuple[Tensor, Tensor]:
    """``(mean, var)`` of ``model``'s output over ``n_pass`` MC-dropout passes on ``x``, per feature.

    Both have the shape of one output, ``features(model(x))`` when ``features`` is given (e.g. to pick
    hidden states out of a structured output), otherwise ``model(x)``. ``var`` is the sample variance
    over the passes, with divisor ``n_pass - 1`` (``unbiased=True``) or ``n_pass``. Both are float64. Sums
    are accumulated in float64 and shifted by the first pass, so they stay accurate when the variance is
    tiny next to the mean. ``seed`` fixes the dropout masks through :func:`theorylab.core.rng.seeded`, which leaves the
    caller's random stream untouched. ``None`` draws the masks from the global stream. A feature that
    no mask touches gets a variance of exactly 0, so floor it before computing Bhattacharyya
    coefficients.
    """
    if n_pass < 2:
        raise ValueError(f"n_pass must be >= 2 to fit a variance, got {n_pass}")
    drops = dropout_modules(model)
    if not drops:
        raise ValueError("model has no dropout module: every MC-dropout pass would give the same output")
    flags = [(m, m.training) for m in model.modules()]
    pick = features if features is not None else (lambda out: out)
    try:
        model.eval()
        for m in drops:
            m.train()
        with seeded(seed) if seed is not None else nullcontext():
            first = pick(model(x)).detach().to(torch.float64)
            s1 = torch.zeros_like(first)
            s2 = torch.zeros_like(first)
            for _ in range(n_pass - 1):
                out = pick(model(x)).detach()
                if out.shape != first.shape:
                    raise ValueError(f"pass outputs changed shape: {tuple(first.shape)} then {tuple(out.shape)}")
                dev = out.to(torch.float64) - first
                s1 += dev
                s2 += dev.square()
    finally:
        for m, flag in flags:
            m.training = flag
    mean = first + s1 / n_pass
    var = (s2 - s1.square() / n_pass).clamp_min(0.0) / (n_pass - 1 if unbiased else n_pass)
    return mean, var
