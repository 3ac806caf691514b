"""Mean-field two-layer networks on the sphere in closed form (population loss, velocity, local Hessian).

Network ``f_rho(x) = int sigma(<w, x>) d rho(w)``, particles ``w`` on ``S^{d-1}``, a finite network
being ``rho = sum_i c_i delta_{w_i}`` (``c_i = 1/m``). With ``x ~ N(0, I_d)`` and
``sigma = sum_j a_j He_j / sqrt(j!)``, ``E[sigma(<w, x>) sigma(<w', x>)] = K(<w, w'>)`` with
``K(t) = sum_j a_j^2 t^j`` (Mehler), so everything is a function of overlaps, without sampling
(Glasgow, Wu, Bruna, arXiv 2504.13110, Sec. 2):

- loss ``L(rho) = 1/2 [ int int K(<w, w'>) - 2 int K(<w, w*>) + K(1) ]`` against ``f* = sigma(<w*, x>)``;
- particle velocity ``v(w) = (I - w w^T) [K'(<w, w*>) w* - int K'(<w, w'>) w' d rho(w')]``;
- function gap ``|f_rho - f_rho'|^2 = int int K d(rho - rho')^{x2}``;
- at initialisation (i.i.d. uniform particles) ``E |f_m - f_MF|^2 = (K(1) - E K(<w, w'>)) / m``.

All tensors may carry leading batch axes (networks): particles ``(..., m, d)``, weights ``(..., m)``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from theorylab.nn.activations import HermiteActivation, hermite_activation_torch


def sphere_moment(j: int, d: int) -> float:
    """``E[t^j]`` for ``t = <w, w'>``, w, w' independent uniform on ``S^{d-1}``: 0 for odd j,
    ``(j-1)!! / (d (d+2) ... (d+j-2))`` for even j."""
    if j % 2:
        return 0.0
    out = 1.0
    for i in range(j // 2):
        out *= (2 * i + 1) / (d + 2 * i)
    return out


def init_gap_per_width(act: HermiteActivation, d: int) -> float:
    """``m * E |f_m - f_MF|^2`` at initialisation: ``K(1) - E K(<w, w'>)``."""
    return sum(a * a for a in act.coeffs) - sum(a * a * sphere_moment(j, d) for j, a in enumerate(act.coeffs))


def uniform_sphere(shape: tuple[int, ...], d: int, generator: torch.Generator, *, dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu") -> Tensor:
    """i.i.d. uniform points on ``S^{d-1}``: ``(*shape, d)``."""
    z = torch.randn(*shape, d, generator=generator, dtype=dtype, device=device)
    return z / z.norm(dim=-1, keepdim=True)


def kernel_mean(act: HermiteActivation, a: Tensor, ca: Tensor, b: Tensor, cb: Tensor, block: int = 4096) -> Tensor:
    """``sum_ij ca_i cb_j K(<a_i, b_j>)`` per batch: ``a (..., m, d)``, ``b (..., n, d)`` -> ``(...)``, in row blocks."""
    total = torch.zeros(a.shape[:-2], dtype=a.dtype, device=a.device)
    for start in range(0, a.shape[-2], block):
        rows = slice(start, start + block)
        g = a[..., rows, :] @ b.transpose(-1, -2)  # (..., block, n)
        total = total + ((act.kernel(g) * cb[..., None, :]).sum(-1) * ca[..., rows]).sum(-1)
    return total


def population_loss(act: HermiteActivation, w: Tensor, c: Tensor, w_star: Tensor) -> Tensor:
    """``L(rho) = 1/2 [sum c c K(G) - 2 sum c K(<w, w*>) + K(1)]`` per network: ``(...)``."""
    self_term = kernel_mean(act, w, c, w, c)
    cross = (c * act.kernel(w @ w_star)).sum(-1)
    return 0.5 * (self_term - 2 * cross + act.kernel(torch.ones((), dtype=w.dtype, device=w.device)))


def velocity(act: HermiteActivation, w: Tensor, c: Tensor, w_star: Tensor) -> Tensor:
    """``v(w_i) = P_{w_i} [K'(<w_i, w*>) w* - sum_j c_j K'(<w_i, w_j>) w_j]``: ``(..., m, d)``."""
    drive = act.kernel_prime(w @ w_star)[..., None] * w_star  # (..., m, d)
    interaction = (act.kernel_prime(w @ w.transpose(-1, -2)) * c[..., None, :]) @ w  # (..., m, d)
    raw = drive - interaction
    return raw - (raw * w).sum(-1, keepdim=True) * w


def projected_step(act: HermiteActivation, w: Tensor, c: Tensor, w_star: Tensor, eta: float) -> Tensor:
    """One projected gradient step in mean-field time: ``w <- normalise(w + eta v(w))``."""
    w = w + eta * velocity(act, w, c, w_star)
    return w / w.norm(dim=-1, keepdim=True)


def function_gap(act: HermiteActivation, a: Tensor, ca: Tensor, b: Tensor, cb: Tensor) -> Tensor:
    """``|f_a - f_b|^2_{L^2(gamma)} = sum K over (a - b) x (a - b)``, per batch."""
    return kernel_mean(act, a, ca, a, ca) - 2 * kernel_mean(act, a, ca, b, cb) + kernel_mean(act, b, cb, b, cb)


def local_hessian_ratio(act: HermiteActivation, w: Tensor, c: Tensor, w_star: Tensor, particles: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Self-concordance diagnostic: ``|H(w_i)|_op / |v(w_i)|`` with ``H = P dv/dw P`` (the particle's
    local Hessian on the tangent space, the measure held fixed), for the chosen ``particles`` (indices).

    ``w`` (m, d), ``c`` (m,). Returns ``(ratio, |H|_op)`` per chosen particle.
    """
    idx = torch.arange(w.shape[0], device=w.device) if particles is None else particles

    def v_at(point: Tensor) -> Tensor:
        drive = act.kernel_prime(point @ w_star) * w_star
        inter = (act.kernel_prime(w @ point) * c) @ w
        raw = drive - inter
        return raw - (raw @ point) * point

    points = w[idx]
    jac = torch.func.vmap(torch.func.jacrev(v_at))(points)  # (k, d, d)
    proj = torch.eye(w.shape[-1], dtype=w.dtype, device=w.device) - points[:, :, None] * points[:, None, :]
    hess = proj @ jac @ proj
    op = torch.linalg.matrix_norm(hess, ord=2)
    speed = torch.func.vmap(v_at)(points).norm(dim=-1)
    return op / speed.clamp_min(1e-300), op


class OverlapDynamics:
    """The rotationally symmetric reduction: the law of ``s = <w, w*>`` carries the whole state.

    For ``rho`` invariant under rotations fixing ``w*``, write ``w = s w* + sqrt(1 - s^2) xi`` with
    ``xi`` uniform on the sphere orthogonal to ``w*``; two particles overlap by
    ``c = s s' + r r' u`` with ``u`` distributed as a coordinate of a uniform point of ``S^{d-2}``
    (density ``∝ (1 - u^2)^{(d-4)/2}``, integrated by Gauss-Jacobi quadrature). Then
    ``ds/dt = K'(s)(1 - s^2) - E[K'(c) s'] + s E[K'(c) c]`` (expectations over ``s' ~ rho`` and ``u``),
    and ``L = 1/2 [E K(c) - 2 E K(s) + K(1)]``. The law is carried by ``n`` particles started at the
    quantiles of ``s`` under the uniform law (``(s + 1)/2 ~ Beta((d-1)/2, (d-1)/2)``) and stepped by
    Euler with the particle system's step size.
    """

    def __init__(self, act: HermiteActivation, d: int, n: int = 512, nodes: int = 16, device: str | torch.device = "cpu"):
        from scipy.special import roots_jacobi
        from scipy.stats import beta

        if d < 4:
            raise ValueError(f"the reduction needs d >= 4; got {d}")
        u, w = roots_jacobi(nodes, (d - 4) / 2, (d - 4) / 2)
        self.u = torch.tensor(u, dtype=torch.float64, device=device)
        self.uw = torch.tensor(w / w.sum(), dtype=torch.float64, device=device)
        q = (np.arange(n) + 0.5) / n
        self.s0 = torch.tensor(2 * beta.ppf(q, (d - 1) / 2, (d - 1) / 2) - 1, dtype=torch.float64, device=device)
        self.act, self.d, self.n = act, d, n

    def _pairs(self, s: Tensor) -> Tensor:
        r = torch.sqrt(torch.clamp(1 - s * s, min=0))
        return (s[:, None] * s[None, :])[..., None] + (r[:, None] * r[None, :])[..., None] * self.u  # (n, n, q)

    def drift(self, s: Tensor) -> Tensor:
        c = self._pairs(s)
        kp = self.act.kernel_prime(c)
        e1 = (kp * self.uw).sum(-1)  # E_u K'(c)
        e2 = (kp * c * self.uw).sum(-1)  # E_u K'(c) c
        return self.act.kernel_prime(s) * (1 - s * s) - e1 @ s / self.n + s * e2.mean(1)

    def loss(self, s: Tensor) -> float:
        self_term = (self.act.kernel(self._pairs(s)) * self.uw).sum(-1).mean()
        one = torch.ones((), dtype=s.dtype, device=s.device)
        return float(0.5 * (self_term - 2 * self.act.kernel(s).mean() + self.act.kernel(one)))

    def run(self, eta: float, steps: int) -> tuple[np.ndarray, Tensor]:
        """Loss at every step and the final particles."""
        s = self.s0.clone()
        losses = np.empty(steps + 1)
        for k in range(steps + 1):
            losses[k] = self.loss(s)
            if k < steps:
                s = torch.clamp(s + eta * self.drift(s), -1.0, 1.0)
        return losses, s


def empirical_velocity(act: HermiteActivation, w: Tensor, c: Tensor, x: Tensor, y: Tensor, block: int = 16384) -> Tensor:
    """Velocity under the empirical loss ``1/(2n) sum (f(x) - y)^2`` on fixed samples, in mean-field time:
    ``v_i = P_{w_i} (1/n) sum_x (y(x) - f(x)) sigma'(<w_i, x>) x``.

    ``w (..., m, d)``, ``c (..., m)``, ``x (..., n, d)``, ``y (..., n)``; the samples are processed in
    blocks of ``block`` so memory stays O(m * block).
    """
    deriv = act.derivative
    n = x.shape[-2]
    raw = torch.zeros_like(w)
    for start in range(0, n, block):
        xb, yb = x[..., start : start + block, :], y[..., start : start + block]
        z = w @ xb.transpose(-1, -2)  # (..., m, b)
        f = (hermite_activation_torch(act, z) * c[..., None]).sum(-2)  # (..., b)
        raw = raw + ((yb - f)[..., None, :] * hermite_activation_torch(deriv, z)) @ xb
    raw = raw / n
    return raw - (raw * w).sum(-1, keepdim=True) * w
