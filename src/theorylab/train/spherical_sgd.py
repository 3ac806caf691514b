"""Online spherical SGD on the correlation loss of the multiscale single-index model, batched over seeds.

Bruna, *The Multiscale Single-Index Model*, arXiv 2607.03347 (2026): all layers trained together, on the same
timescale, by online SGD on the correlation objective ``max E[y f_u(x)]`` with projected (spherical) steps

    u_l <- normalise(u_l + eta (I - u_l u_l^T) grad_{u_l}),

fresh batches of size B, ``eta = c B / d^(K-1)`` (the card's schedule, reconstructed: c = 0.1, divided by 10
over the last 30% of the samples). The paper's rate is n = Õ(d^(K-1)) samples for 1 - o_d(1) overlaps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from theorylab.data.msim import msim_forward_torch, msim_link
from theorylab.nn.mean_field import SphericalSGD
from theorylab.nn.msim import MSIMNet

__all__ = ["SGDRun", "crossing", "perp_noise", "projected_batch", "spherical_step", "train_msim_sgd"]


def spherical_step(u: torch.Tensor, grad: torch.Tensor, lr: float | torch.Tensor) -> torch.Tensor:
    """One projected ascent step along the last axis: ``normalise(u + lr (I - u u^T) grad)``."""
    tangent = grad - (grad * u).sum(-1, keepdim=True) * u
    v = u + lr * tangent
    return v / v.norm(dim=-1, keepdim=True)


@dataclass
class SGDRun:
    """A batched run: ``samples`` (T,) fresh samples seen at each log point; ``overlaps`` (T, S, K) = <u_l, w_l>
    with signs (the link is not odd, so u = -w is a spurious critical point, not a symmetry; the card scores |.|)."""

    samples: np.ndarray
    overlaps: np.ndarray


def crossing(samples: np.ndarray, values: np.ndarray, level: float) -> np.ndarray:
    """First sample count at which ``values`` (T, ...) reaches ``level``, per trailing index (nan: never)."""
    hit = values >= level
    first = np.argmax(hit, axis=0)
    out = samples[first].astype(np.float64)
    out[~hit.any(axis=0)] = np.nan
    return out


def projected_batch(
    u1: torch.Tensor, w1: torch.Tensor, batch: int, blocks: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact shortcut for one batch of the first layer: ``x_bj = alpha e_1 + beta e_2 + x_perp`` with ``e_1 = u_1``,
    ``e_2`` the unit part of ``w_1`` orthogonal to ``u_1``. Returns the student pre-activations ``a = alpha`` and the
    teacher's ``g = m alpha + sqrt(1 - m^2) beta`` (S, B, blocks), ``e_2`` (S, d) and ``beta``. The orthogonal parts
    enter only the gradient, as ``sum c_bj x_perp_bj ~ N(0, sum c^2 P_perp)`` (drawn by :func:`perp_noise`)."""
    S = u1.shape[0]
    m = (u1 * w1).sum(-1)
    e2 = w1 - m[:, None] * u1
    e2 = e2 / e2.norm(dim=-1, keepdim=True).clamp_min(1e-30)
    alpha = torch.randn(S, batch, blocks, generator=generator, device=u1.device)
    beta = torch.randn(S, batch, blocks, generator=generator, device=u1.device)
    g = m[:, None, None] * alpha + (1 - m * m).clamp_min(0).sqrt()[:, None, None] * beta
    return alpha, g, e2, beta


def perp_noise(u1: torch.Tensor, e2: torch.Tensor, scale: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``scale * P_perp xi``, xi ~ N(0, I_d), P_perp the projector off span(u_1, e_2) (S, d)."""
    xi = torch.randn(u1.shape, generator=generator, device=u1.device)
    xi = xi - (xi * u1).sum(-1, keepdim=True) * u1 - (xi * e2).sum(-1, keepdim=True) * e2
    return scale[:, None] * xi


def train_msim_sgd(
    features: torch.Tensor,
    links,
    n: int,
    *,
    batch: int = 32,
    c: float = 0.1,
    decay_fraction: float = 0.3,
    decay: float = 10.0,
    generator: torch.Generator,
    log_every: int = 1,
    sampler: str = "projected",
) -> SGDRun:
    """Online spherical SGD of ``S`` MSIMNet students against ``S`` targets ``features`` (S, K, d) on ``n`` fresh
    samples each. Step ``eta = c B / d^(K-1)``, divided by ``decay`` over the last ``decay_fraction`` of the samples.
    Students are initialised from ``generator`` (uniform on the sphere). Returns the overlaps every ``log_every``
    steps (and at the start).

    ``sampler='full'`` draws x ~ N(0, I_{d^K}) and backpropagates through ``MSIMNet``; ``'projected'`` (default)
    draws the same update exactly in law at cost ``B d^(K-1)`` instead of ``B d^K``: only the first layer sees x,
    through the projections of each block on span(u_1, w_1) (:func:`projected_batch`), and the gradient's
    orthogonal part is one Gaussian vector (:func:`perp_noise`)."""
    S, K, d = features.shape
    if batch < 1 or n < batch:
        raise ValueError(f"train_msim_sgd needs 1 <= batch <= n; got batch = {batch}, n = {n}")
    if sampler not in ("full", "projected"):
        raise ValueError(f"train_msim_sgd: sampler must be 'full' or 'projected'; got {sampler!r}")
    links = tuple(links)
    net = MSIMNet(d, K, links, replicas=S, generator=generator, device=features.device)
    steps = n // batch
    eta = c * batch / d ** (K - 1)
    opt = SphericalSGD(net.parameters(), lr=eta, maximize=True)
    switch = math.ceil((1 - decay_fraction) * steps)
    samples, traj = [0], [net.signed_overlaps(features).cpu().numpy()]
    first = msim_link(links[0])
    for t in range(steps):
        if t == switch:
            opt.param_groups[0]["lr"] = eta / decay
        opt.zero_grad(set_to_none=True)
        if sampler == "full":
            x = torch.randn(S, batch, d**K, generator=generator, device=features.device)
            with torch.no_grad():
                y = msim_forward_torch(x, features, links)
            # correlation objective per student; the sum over students keeps their gradients separate
            (y * net(x)).mean(1).sum().backward()
        else:
            u1 = net.u.detach()[:, 0]
            a, g, e2, beta = projected_batch(u1, features[:, 0], batch, d ** (K - 1), generator)
            a.requires_grad_(True)
            with torch.no_grad():
                y = msim_forward_torch(first(g), features[:, 1:], links[1:]) if K > 1 else first(g).reshape(S, -1)
            h = first(a)
            f = msim_forward_torch(h, net.u[:, 1:], links[1:]) if K > 1 else h.reshape(S, -1)
            (y * f).mean(1).sum().backward()
            cbj = a.grad  # dL/da_bj, so dL/du_1 = sum_bj c_bj x_bj
            grad1 = (cbj * a.detach()).sum((1, 2))[:, None] * u1 + (cbj * beta).sum((1, 2))[:, None] * e2
            grad1 = grad1 + perp_noise(u1, e2, cbj.pow(2).sum((1, 2)).sqrt(), generator)
            full = torch.zeros_like(net.u)
            full[:, 0] = grad1
            if K > 1:
                full[:, 1:] = net.u.grad[:, 1:]
            net.u.grad = full
        opt.step()
        if (t + 1) % log_every == 0 or t + 1 == steps:
            samples.append((t + 1) * batch)
            traj.append(net.signed_overlaps(features).cpu().numpy())
    return SGDRun(np.asarray(samples), np.stack(traj))
