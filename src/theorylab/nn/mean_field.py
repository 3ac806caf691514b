"""Two-layer networks in mean-field scaling, as torch modules (for sample-based training and probes).

``f(x) = (1/m) sum_i a_i sigma(<w_i, x>)`` with ``sigma = sum_j c_j He_j / sqrt(j!)`` given by its
Hermite coefficients. Neurons live on the sphere (``sphere=True``: use :class:`SphericalSGD`, which
projects gradients on the tangent space and renormalises) or in R^d; the second layer is fixed
(a buffer, ``a_i = 1``) or trained. On the sphere with a fixed second layer the population loss
against ``sigma(<w*, x>)`` is exact through the kernel (:mod:`theorylab.theory.mean_field`); in
every case :meth:`MeanFieldNet.empirical_loss` uses finite samples.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from theorylab.nn.activations import HermiteActivation, hermite_activation_torch


class MeanFieldNet(nn.Module):
    """``m`` neurons ``w_i`` (rows of ``weight``, (m, d)) and second layer ``a`` (m,), output ``mean_i a_i sigma(<w_i,
    x>)``."""

    def __init__(
        self,
        m: int,
        d: int,
        act: HermiteActivation,
        *,
        sphere: bool = True,
        train_second_layer: bool = False,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float64,
    ):
        super().__init__()
        w = torch.randn(m, d, generator=generator, dtype=dtype)
        if sphere:
            w = w / w.norm(dim=1, keepdim=True)
        else:
            w = w / math.sqrt(d)
        self.weight = nn.Parameter(w)
        a = torch.ones(m, dtype=dtype)
        if train_second_layer:
            self.a = nn.Parameter(a)
        else:
            self.register_buffer("a", a)
        self.act, self.sphere, self.m = act, sphere, m

    def forward(self, x: Tensor) -> Tensor:
        """x: (n, d) -> (n,)."""
        return hermite_activation_torch(self.act, x @ self.weight.T) @ self.a / self.m

    def empirical_loss(self, x: Tensor, y: Tensor) -> Tensor:
        return 0.5 * (self(x) - y).pow(2).mean()

    def population_loss(self, w_star: Tensor) -> Tensor:
        """Exact ``1/2 E (f(x) - sigma(<w*, x>))^2``; needs unit neurons and a fixed second layer."""
        if not self.sphere or isinstance(self.a, nn.Parameter):
            raise ValueError(
                "the closed-form loss needs neurons on the sphere and a fixed second layer; use empirical_loss"
            )
        c = self.a / self.m
        w = self.weight
        one = torch.ones((), dtype=w.dtype, device=w.device)
        self_term = c @ self.act.kernel(w @ w.T) @ c
        return 0.5 * (self_term - 2 * c @ self.act.kernel(w @ w_star) + self.act.kernel(one))


class SphericalSGD(torch.optim.Optimizer):
    """Projected gradient descent for parameters whose rows live on the unit sphere:
    ``g <- g - <g, w> w`` row-wise, ``w <- normalise(w - lr g)``. Parameters in a group with
    ``sphere=False`` take plain SGD steps. With ``lr = eta * m`` on a mean-field net, one step is the
    mean-field step of :func:`theorylab.theory.mean_field.projected_step`. ``maximize=True`` ascends instead
    (the correlation objective of the multiscale single-index model, :mod:`theorylab.train.spherical_sgd`)."""

    def __init__(self, params, lr: float, sphere: bool = True, maximize: bool = False):
        if not lr > 0:
            raise ValueError(f"SphericalSGD: lr must be > 0; got {lr}")
        super().__init__(params, dict(lr=lr, sphere=sphere, maximize=maximize))

    @torch.no_grad()
    def step(self, closure=None):  # type: ignore[override]
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = -p.grad if group["maximize"] else p.grad
                if group["sphere"]:
                    g = g - (g * p).sum(-1, keepdim=True) * p
                    p.sub_(group["lr"] * g)
                    p.div_(p.norm(dim=-1, keepdim=True))
                else:
                    p.sub_(group["lr"] * g)
        return loss
