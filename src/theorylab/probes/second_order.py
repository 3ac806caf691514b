"""Exact local geometry of a model around one parameter vector θ, on ``torch.func``.

Every quantity acts on one flat vector ``θ ∈ R^D``: :class:`FlatModel` flattens a module's trainable
parameters and calls it with :func:`torch.func.functional_call`, so ``f(θ)`` and ``L(θ)`` are plain functions of
a tensor. Then

- :func:`jvp`: ``J_θ v`` (forward mode, exact; no Jacobian materialised);
- :func:`hvp` (from :mod:`theorylab.probes.hessian`): ``H_θ v`` (forward-over-reverse, exact; no Hessian
  materialised);
- :func:`per_example_grads`: the ``(N, D)`` matrix of per-example gradients (``vmap`` of ``grad``, chunked);
- :func:`taylor_remainder`: ``ε_lin(t) = ‖f(θ+tδ) − f(θ) − t J δ‖ / ‖f(θ+tδ) − f(θ)‖`` over a grid of ``t``;
- :func:`mixed_difference`: ``I(δ₁, δ₂) = L(θ+δ₁+δ₂) − L(θ+δ₁) − L(θ+δ₂) + L(θ) = δ₁ᵀHδ₂ + O(‖δ‖³)``;
- :func:`hutchinson_trace`: ``tr H`` from Rademacher HVPs; :func:`loglog_slope`: a least-squares log-log slope;
- :func:`lie_bracket`: ``H_B g_A − H_A g_B`` (two exact HVPs), the leading order-dependent term of two sequential
  gradient steps; :func:`two_step_defect`: ``θ_AB − θ_BA`` by taking the steps; :func:`order_defect`: the
  measured ``‖θ_AB − θ_BA‖ / ‖η (g_A + g_B)‖`` over step sizes ``η``, which equals ``η κ + O(η²)`` with
  ``κ = ‖H_B g_A − H_A g_B‖ / ‖g_A + g_B‖``;
- :func:`first_order_error`: ``|ΔL(tδ) − t gᵀδ|`` over a grid of ``t`` (``O(t²)``), the one-direction window.

Built for the local-perturbation-geometry study (Piontkovskaia & Nikolenko, arXiv 2607.16821).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from theorylab.probes.hessian import hvp


class FlatModel:
    """``model`` as a function of one flat vector of its trainable parameters (buffers stay as they are).

    ``fm(θ, x)`` runs the model with parameters ``θ``; ``fm.theta`` is the current flat vector (a detached copy);
    ``fm.unflatten(θ)`` the dict of named views; ``fm.load(θ)`` writes ``θ`` into the module.
    """

    def __init__(self, model: nn.Module):
        self.model = model
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("FlatModel needs a model with at least one trainable parameter")
        self.names = [n for n, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.frozen = {n: p.detach() for n, p in model.named_parameters() if not p.requires_grad}

    @property
    def dim(self) -> int:
        return sum(self.numels)

    @property
    def theta(self) -> Tensor:
        params = dict(self.model.named_parameters())
        return torch.cat([params[n].detach().reshape(-1) for n in self.names]).clone()

    def unflatten(self, theta: Tensor) -> dict[str, Tensor]:
        if theta.shape != (self.dim,):
            raise ValueError(f"θ must have shape ({self.dim},), got {tuple(theta.shape)}")
        parts = torch.split(theta, self.numels)
        return {**self.frozen, **{n: t.view(s) for n, t, s in zip(self.names, parts, self.shapes)}}

    def __call__(self, theta: Tensor, *args, **kwargs):
        return functional_call(self.model, self.unflatten(theta), args, kwargs)

    def load(self, theta: Tensor) -> None:
        with torch.no_grad():
            for name, value in self.unflatten(theta).items():
                if name in self.names:
                    self.model.get_parameter(name).copy_(value)


def _vector(v: Tensor, theta: Tensor, name: str) -> Tensor:
    if v.shape != theta.shape:
        raise ValueError(f"{name} must have θ's shape {tuple(theta.shape)}, got {tuple(v.shape)}")
    return v.to(theta.dtype)


def jvp(f: Callable[[Tensor], Tensor], theta: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """``(f(θ), J_θ v)`` by forward-mode AD."""
    return torch.func.jvp(f, (theta,), (_vector(v, theta, "v"),))


def per_example_grads(loss_one: Callable[..., Tensor], theta: Tensor, *batch: Tensor, chunk: int = 64) -> Tensor:
    """``(N, D)``: row ``i`` is ``∇_θ loss_one(θ, *[b[i] for b in batch])``; examples run ``chunk`` at a time."""
    if not batch:
        raise ValueError("per_example_grads needs at least one batch tensor")
    n = batch[0].shape[0]
    if any(b.shape[0] != n for b in batch):
        raise ValueError(f"batch tensors disagree on N: {[b.shape[0] for b in batch]}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    g = vmap(grad(loss_one), in_dims=(None,) + (0,) * len(batch))
    return torch.cat([g(theta, *[b[i : i + chunk] for b in batch]) for i in range(0, n, chunk)])


def taylor_remainder(f: Callable[[Tensor], Tensor], theta: Tensor, delta: Tensor, ts: Sequence[float]) -> np.ndarray:
    """``ε_lin(t) = ‖f(θ+tδ) − f(θ) − t J_θ δ‖ / ‖f(θ+tδ) − f(θ)‖`` for each ``t`` (∝ t for small t)."""
    if len(ts) == 0 or any(t <= 0 for t in ts):
        raise ValueError(f"ts must be a non-empty list of positive steps, got {list(ts)}")
    with torch.no_grad():
        f0, jd = jvp(f, theta, delta)
        out = []
        for t in ts:
            df = f(theta + t * delta) - f0
            out.append(float((df - t * jd).norm() / df.norm()))
    return np.array(out)


def mixed_difference(L: Callable[[Tensor], Tensor], theta: Tensor, d1: Tensor, d2: Tensor) -> float:
    """``L(θ+δ₁+δ₂) − L(θ+δ₁) − L(θ+δ₂) + L(θ)`` (the interference of two updates; ``δ₁ᵀHδ₂ + O(‖δ‖³)``)."""
    d1, d2 = _vector(d1, theta, "d1"), _vector(d2, theta, "d2")
    with torch.no_grad():
        return float(L(theta + d1 + d2) - L(theta + d1) - L(theta + d2) + L(theta))


def hutchinson_trace(
    L: Callable[[Tensor], Tensor], theta: Tensor, probes: int, generator: torch.Generator | None = None
) -> tuple[float, float]:
    """``(estimate, standard error)`` of ``tr ∇²L(θ)`` from ``probes`` Rademacher vectors ``zᵀHz``."""
    if probes < 2:
        raise ValueError(f"probes must be >= 2 (for an error bar), got {probes}")
    vals = []
    for _ in range(probes):
        z = torch.randint(0, 2, theta.shape, generator=generator).to(theta) * 2 - 1
        vals.append(float(z @ hvp(L, theta, z)))
    v = np.array(vals)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(probes))


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of ``log y`` on ``log x`` (positive values only)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.size < 2 or (x <= 0).any() or (y <= 0).any():
        raise ValueError("loglog_slope needs >= 2 matching positive x and y values")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def lie_bracket(
    loss_a: Callable[[Tensor], Tensor], loss_b: Callable[[Tensor], Tensor], theta: Tensor
) -> dict[str, Tensor]:
    """The pieces of two sequential gradient steps' order dependence at ``θ``: ``g_a``, ``g_b`` (gradients),
    ``hb_ga = H_B g_A`` and ``ha_gb = H_A g_B`` (exact HVPs), and ``bracket = H_B g_A − H_A g_B``.

    One SGD step on A then one on B moves θ by ``−η(g_A + g_B) + η² H_B g_A + O(η³)``; the other order by
    ``−η(g_A + g_B) + η² H_A g_B + O(η³)``: the two end points differ by ``η² (H_B g_A − H_A g_B) + O(η³)``."""
    g_a, g_b = grad(loss_a)(theta).detach(), grad(loss_b)(theta).detach()
    hb_ga, ha_gb = hvp(loss_b, theta, g_a).detach(), hvp(loss_a, theta, g_b).detach()
    return dict(g_a=g_a, g_b=g_b, hb_ga=hb_ga, ha_gb=ha_gb, bracket=hb_ga - ha_gb)


def order_defect(
    loss_a: Callable[[Tensor], Tensor], loss_b: Callable[[Tensor], Tensor], theta: Tensor, etas: Sequence[float]
) -> np.ndarray:
    """``c(η) = ‖θ_AB − θ_BA‖ / ‖η (g_A + g_B)‖`` for each ``η``, measured by taking the steps: ``θ_AB`` is one
    plain gradient step of size ``η`` on ``loss_a`` then one on ``loss_b`` (``θ_BA`` the other order). Only the
    displacements from ``θ`` are differenced, so rounding of ``θ`` itself does not enter."""
    if len(etas) == 0 or any(e <= 0 for e in etas):
        raise ValueError(f"etas must be a non-empty list of positive step sizes, got {list(etas)}")
    g_a, g_b = grad(loss_a)(theta).detach(), grad(loss_b)(theta).detach()
    return np.array(
        [
            float(two_step_defect(loss_a, loss_b, theta, eta, g_a, g_b).norm() / (eta * (g_a + g_b)).norm())
            for eta in etas
        ]
    )


def two_step_defect(
    loss_a: Callable[[Tensor], Tensor],
    loss_b: Callable[[Tensor], Tensor],
    theta: Tensor,
    eta: float,
    g_a: Tensor | None = None,
    g_b: Tensor | None = None,
) -> Tensor:
    """``θ_AB − θ_BA`` for step size ``η`` (``g_a``, ``g_b``: the gradients at ``θ``, when already known); equal to
    ``η² (H_B g_A − H_A g_B) + O(η³)``."""
    ga, gb = grad(loss_a), grad(loss_b)
    g_a = ga(theta).detach() if g_a is None else g_a
    g_b = gb(theta).detach() if g_b is None else g_b
    d_ab = -eta * g_a - eta * gb(theta - eta * g_a).detach()
    d_ba = -eta * g_b - eta * ga(theta - eta * g_b).detach()
    return d_ab - d_ba


def first_order_error(
    loss: Callable[[Tensor], Tensor], theta: Tensor, delta: Tensor, ts: Sequence[float], g: Tensor | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(ΔL, gᵀδ)`` per ``t``: the loss change ``L(θ + tδ) − L(θ)`` and its first-order prediction ``t gᵀδ``
    (``g = ∇L(θ)`` unless given, e.g. a stale gradient as a control). Their gap is ``t²δᵀHδ/2 + O(t³)``."""
    if len(ts) == 0 or any(t <= 0 for t in ts):
        raise ValueError(f"ts must be a non-empty list of positive steps, got {list(ts)}")
    delta = _vector(delta, theta, "delta")
    g = grad(loss)(theta).detach() if g is None else _vector(g, theta, "g")
    with torch.no_grad():
        l0 = loss(theta)
        dl = np.array([float(loss(theta + t * delta) - l0) for t in ts])
    return dl, np.asarray(ts, float) * float(g @ delta)
