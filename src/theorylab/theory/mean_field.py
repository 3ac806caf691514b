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
The activation ``act`` is anything with the :class:`HermiteActivationLike` interface, e.g.
:class:`theorylab.nn.activations.HermiteActivation`; the closed forms only call its methods (theory does
not import ``nn``).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch
from torch import Tensor


class HermiteActivationLike(Protocol):
    """What the closed forms need from ``sigma = sum_j a_j He_j / sqrt(j!)``: its coefficients ``a_j``, its
    kernel ``K(t) = sum_j a_j^2 t^j`` and ``K'``, ``sigma'`` as such an activation, and ``sigma`` evaluated
    pointwise (NumPy: ``act(z)``; torch: ``act.evaluate(z)``)."""

    coeffs: tuple[float, ...]

    def kernel(self, t: Tensor) -> Tensor: ...

    def kernel_prime(self, t: Tensor) -> Tensor: ...

    @property
    def derivative(self) -> "HermiteActivationLike": ...

    def __call__(self, z: np.ndarray) -> np.ndarray: ...

    def evaluate(self, z: Tensor) -> Tensor: ...


def sphere_moment(j: int, d: int) -> float:
    """``E[t^j]`` for ``t = <w, w'>``, w, w' independent uniform on ``S^{d-1}``: 0 for odd j,
    ``(j-1)!! / (d (d+2) ... (d+j-2))`` for even j."""
    if j % 2:
        return 0.0
    out = 1.0
    for i in range(j // 2):
        out *= (2 * i + 1) / (d + 2 * i)
    return out


def init_gap_per_width(act: HermiteActivationLike, d: int) -> float:
    """``m * E |f_m - f_MF|^2`` at initialisation: ``K(1) - E K(<w, w'>)``."""
    return sum(a * a for a in act.coeffs) - sum(a * a * sphere_moment(j, d) for j, a in enumerate(act.coeffs))


def uniform_sphere(
    shape: tuple[int, ...],
    d: int,
    generator: torch.Generator,
    *,
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
) -> Tensor:
    """i.i.d. uniform points on ``S^{d-1}``: ``(*shape, d)``."""
    z = torch.randn(*shape, d, generator=generator, dtype=dtype, device=device)
    return z / z.norm(dim=-1, keepdim=True)


DEFAULT_MAX_ELEMENTS = 1 << 21
"""Largest pairwise block (entries) a chunked computation forms at once: 2^21 float64 entries = 16 MiB.
Peak memory then no longer grows with m^2, and blocks this small are reused by the CPU allocator instead
of being mapped and faulted in afresh (1 GiB blocks spent most of their time in page faults on CPU);
a large GPU may raise it (fewer kernel launches)."""


def max_elements_for(mib: float, dtype: torch.dtype = torch.float64) -> int:
    """The block size, in entries, of ``mib`` MiB of ``dtype``."""
    return max(1, int(mib * (1 << 20)) // torch.empty((), dtype=dtype).element_size())


def pair_blocks(batch: int, m: int, n: int, max_elements: int | None = None) -> list[tuple[slice, slice]]:
    """Row and column slices covering an ``(batch, m, n)`` pairwise array so that each block holds at
    most ``max_elements`` entries (at least one row and one column at a time). Columns are split only
    when a single row of the batch is already too large."""
    limit = DEFAULT_MAX_ELEMENTS if max_elements is None else max_elements
    cols = max(1, min(n, limit // max(batch, 1)))
    rows = max(1, min(m, limit // max(batch * cols, 1)))
    return [(slice(i, i + rows), slice(j, j + cols)) for i in range(0, m, rows) for j in range(0, n, cols)]


def kernel_mean(
    act: HermiteActivationLike, a: Tensor, ca: Tensor, b: Tensor, cb: Tensor, max_elements: int | None = None
) -> Tensor:
    """``sum_ij ca_i cb_j K(<a_i, b_j>)`` per batch: ``a (..., m, d)``, ``b (..., n, d)`` -> ``(...)``.

    Formed in blocks of at most ``max_elements`` pairs (:func:`pair_blocks`), so memory stays bounded
    whatever m and n; the per-row sums are collected before one final reduction."""
    lead = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2], ca.shape[:-1], cb.shape[:-1])
    batch = int(np.prod(lead)) if len(lead) else 1
    m, n = a.shape[-2], b.shape[-2]
    per_row = torch.zeros(*lead, m, dtype=a.dtype, device=a.device)
    for rows, cols in pair_blocks(batch, m, n, max_elements):
        g = a[..., rows, :] @ b[..., cols, :].transpose(-1, -2)  # (..., rows, cols)
        per_row[..., rows] += (act.kernel(g) * cb[..., None, cols]).sum(-1)
        del g
    return (per_row * ca).sum(-1)


def population_loss(
    act: HermiteActivationLike, w: Tensor, c: Tensor, w_star: Tensor, max_elements: int | None = None
) -> Tensor:
    """``L(rho) = 1/2 [sum c c K(G) - 2 sum c K(<w, w*>) + K(1)]`` per network: ``(...)``."""
    self_term = kernel_mean(act, w, c, w, c, max_elements)
    cross = (c * act.kernel(w @ w_star)).sum(-1)
    return 0.5 * (self_term - 2 * cross + act.kernel(torch.ones((), dtype=w.dtype, device=w.device)))


def velocity(
    act: HermiteActivationLike, w: Tensor, c: Tensor, w_star: Tensor, max_elements: int | None = None
) -> Tensor:
    """``v(w_i) = P_{w_i} [K'(<w_i, w*>) w* - sum_j c_j K'(<w_i, w_j>) w_j]``: ``(..., m, d)``.

    The ``(..., m, m)`` interaction is formed in blocks of at most ``max_elements`` pairs."""
    drive = act.kernel_prime(w @ w_star)[..., None] * w_star  # (..., m, d)
    m = w.shape[-2]
    batch = int(np.prod(w.shape[:-2])) if w.dim() > 2 else 1
    blocks = pair_blocks(batch, m, m, max_elements)
    if len(blocks) == 1:
        interaction = (act.kernel_prime(w @ w.transpose(-1, -2)) * c[..., None, :]) @ w  # (..., m, d)
    else:
        interaction = torch.zeros_like(w)
        for rows, cols in blocks:
            wc = w[..., cols, :]
            interaction[..., rows, :] += (
                act.kernel_prime(w[..., rows, :] @ wc.transpose(-1, -2)) * c[..., None, cols]
            ) @ wc
    raw = drive - interaction
    return raw - (raw * w).sum(-1, keepdim=True) * w


def projected_step(
    act: HermiteActivationLike, w: Tensor, c: Tensor, w_star: Tensor, eta: float, max_elements: int | None = None
) -> Tensor:
    """One projected gradient step in mean-field time: ``w <- normalise(w + eta v(w))``."""
    w = w + eta * velocity(act, w, c, w_star, max_elements)
    return w / w.norm(dim=-1, keepdim=True)


def function_gap(
    act: HermiteActivationLike, a: Tensor, ca: Tensor, b: Tensor, cb: Tensor, max_elements: int | None = None
) -> Tensor:
    """``|f_a - f_b|^2_{L^2(gamma)} = sum K over (a - b) x (a - b)``, per batch."""
    return (
        kernel_mean(act, a, ca, a, ca, max_elements)
        - 2 * kernel_mean(act, a, ca, b, cb, max_elements)
        + kernel_mean(act, b, cb, b, cb, max_elements)
    )


def local_hessian_ratio(
    act: HermiteActivationLike,
    w: Tensor,
    c: Tensor,
    w_star: Tensor,
    particles: Tensor | None = None,
    max_elements: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Self-concordance diagnostic: ``|H(w_i)|_op / |v(w_i)|`` with ``H = P dv/dw P`` (the particle's
    local Hessian on the tangent space, the measure held fixed), for the chosen ``particles`` (indices).

    ``w`` (m, d), ``c`` (m,). Returns ``(ratio, |H|_op)`` per chosen particle. The Jacobians of a group
    of particles form a ``(group, d, m)`` intermediate; groups are sized to ``max_elements``.
    """
    idx = torch.arange(w.shape[0], device=w.device) if particles is None else particles

    def v_at(point: Tensor) -> Tensor:
        drive = act.kernel_prime(point @ w_star) * w_star
        inter = (act.kernel_prime(w @ point) * c) @ w
        raw = drive - inter
        return raw - (raw @ point) * point

    limit = DEFAULT_MAX_ELEMENTS if max_elements is None else max_elements
    group = max(1, limit // (w.shape[0] * (w.shape[1] + 1)))
    ops, speeds = [], []
    for start in range(0, len(idx), group):
        points = w[idx[start : start + group]]
        jac = torch.func.vmap(torch.func.jacrev(v_at))(points)  # (group, d, d)
        proj = torch.eye(w.shape[-1], dtype=w.dtype, device=w.device) - points[:, :, None] * points[:, None, :]
        ops.append(torch.linalg.matrix_norm(proj @ jac @ proj, ord=2))
        speeds.append(torch.func.vmap(v_at)(points).norm(dim=-1))
    op, speed = torch.cat(ops), torch.cat(speeds)
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

    def __init__(
        self, act: HermiteActivationLike, d: int, n: int = 512, nodes: int = 16, device: str | torch.device = "cpu"
    ):
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


def empirical_velocity(
    act: HermiteActivationLike,
    w: Tensor,
    c: Tensor,
    x: Tensor,
    y: Tensor,
    block: int | None = None,
    max_elements: int | None = None,
) -> Tensor:
    """Velocity under the empirical loss ``1/(2n) sum (f(x) - y)^2`` on fixed samples, in mean-field time:
    ``v_i = P_{w_i} (1/n) sum_x (y(x) - f(x)) sigma'(<w_i, x>) x``.

    ``w (..., m, d)``, ``c (..., m)``, ``x (..., n, d)``, ``y (..., n)``; the samples are processed in
    blocks of ``block`` (default: as many as keep the ``(..., m, block)`` preactivations within
    ``max_elements``), so memory stays bounded.
    """
    deriv = act.derivative
    n = x.shape[-2]
    if block is None:
        batch = int(np.prod(w.shape[:-2])) if w.dim() > 2 else 1
        limit = DEFAULT_MAX_ELEMENTS if max_elements is None else max_elements
        block = max(1, limit // (batch * w.shape[-2]))
    raw = torch.zeros_like(w)
    for start in range(0, n, block):
        xb, yb = x[..., start : start + block, :], y[..., start : start + block]
        z = w @ xb.transpose(-1, -2)  # (..., m, b)
        f = (act.evaluate(z) * c[..., None]).sum(-2)  # (..., b)
        raw = raw + ((yb - f)[..., None, :] * deriv.evaluate(z)) @ xb
        del z
    raw = raw / n
    return raw - (raw * w).sum(-1, keepdim=True) * w


def init_gap_monte_carlo(
    act: HermiteActivationLike,
    d: int,
    samples: int,
    generator: torch.Generator,
    *,
    chunk: int = 1 << 16,
    device: str | torch.device = "cpu",
) -> tuple[float, float, float, float]:
    """``m E|f_m - f_MF|^2`` at initialisation, ``E[sigma(g)^2] - E[sigma(<w, x>) sigma(<w', x>)]``, from the
    activation itself (``sigma`` evaluated pointwise by the Hermite recurrence), never from
    ``act.kernel``, so a ``K`` that is not ``E[sigma sigma]`` disagrees with it:

    - ``E[sigma(g)^2]``, ``g ~ N(0, 1)``, by Gauss-Hermite quadrature (exact for a polynomial ``sigma``);
    - ``E[sigma(<w, x>) sigma(<w', x>)]`` by Monte Carlo over ``w, w'`` independent uniform on ``S^{d-1}``
      and ``x ~ N(0, I_d)`` (``samples`` draws; ``w = e_1`` by rotation invariance of x).

    Returns ``(estimate, standard error, E sigma^2, E sigma sigma')``.
    """
    from numpy.polynomial.hermite_e import hermegauss

    nodes, weights = hermegauss(max(2 * len(act.coeffs), 16))  # exact for polynomials of degree < 2 * nodes
    square = float((act(nodes) ** 2 * weights).sum() / np.sqrt(2 * np.pi))
    total, total_sq, done = 0.0, 0.0, 0
    while done < samples:
        b = min(chunk, samples - done)
        w2 = uniform_sphere((b,), d, generator, device=device)
        x = torch.randn(b, d, generator=generator, dtype=torch.float64, device=device)
        est = act.evaluate(x[:, 0]) * act.evaluate((w2 * x).sum(-1))
        total += float(est.sum())
        total_sq += float((est * est).sum())
        done += b
    cross = total / samples
    se = float(np.sqrt(max(total_sq / samples - cross * cross, 0.0) / samples))
    return square - cross, se, square, cross


def self_concordance_summary(
    act: HermiteActivationLike,
    w: Tensor,
    w_star: Tensor,
    particles: Tensor,
    escape_threshold: float,
    max_elements: int | None = None,
) -> dict[str, float]:
    """Self-concordance ``|H(w)|_op <~ |v(w)|`` (Glasgow, Wu, Bruna, arXiv 2504.13110) read on a system ``w (m, d)``
    of equal weights ``1/m``, at the chosen ``particles`` (indices): percentiles of ``|H|/|v|``
    (:func:`local_hessian_ratio`) over all of them and over those still on the equator band
    (``|<w, w*>| < escape_threshold``; NaN when fewer than 5 are). Particles that have converged have
    ``v -> 0`` with ``H`` finite, so their ratio diverges without saying anything about the escape.

    ``scaled_*`` is ``|s| |H| / |v|`` with ``s = <w, w*>``: at initialisation the drive alone gives exactly
    ``(k - 1)(1 + O(s^2))`` (``|H| ~ k(k-1)|s|^(k-2)``, ``|v| ~ k|s|^(k-1)``), so the raw ratio is
    ``~ (k - 1)/|s| ~ (k - 1) sqrt(d)`` on the equator band."""
    c = torch.full((w.shape[0],), 1.0 / w.shape[0], dtype=torch.float64, device=w.device)
    ratio, op = local_hessian_ratio(act, w, c, w_star, particles, max_elements=max_elements)
    ratio, op = ratio.cpu().numpy(), op.cpu().numpy()
    overlap = (w[particles] @ w_star).abs().cpu().numpy()
    escaping = overlap < escape_threshold
    enough = escaping.sum() >= 5
    scaled = overlap * ratio
    nan = float("nan")
    return dict(
        ratio_p95=float(np.percentile(ratio, 95)),
        ratio_median=float(np.median(ratio)),
        ratio_max=float(ratio.max()),
        hessian_op_max=float(op.max()),
        escaping=int(escaping.sum()),
        ratio_p95_escaping=float(np.percentile(ratio[escaping], 95)) if enough else nan,
        scaled_median_escaping=float(np.median(scaled[escaping])) if enough else nan,
        scaled_p95_escaping=float(np.percentile(scaled[escaping], 95)) if enough else nan,
        overlap_median_escaping=float(np.median(overlap[escaping])) if enough else nan,
    )


def escape_time_summary(times: np.ndarray) -> dict[str, float]:
    """First escape times of particles from the equator (NaN: never escaped): the fraction that escaped,
    the median and the 10th percentile of the finite times (NaN when none escaped)."""
    hit = np.isfinite(times).any()
    return dict(
        escaped=float(np.isfinite(times).mean()),
        median_escape_time=float(np.nanmedian(times)) if hit else float("nan"),
        q10_escape_time=float(np.nanpercentile(times, 10)) if hit else float("nan"),
    )


def step_halving_gaps(
    act: HermiteActivationLike, finals: dict[float, Tensor], max_elements: int | None = None
) -> list[tuple[float, float, float]]:
    """Discretisation check: ``finals`` maps step sizes to a system's particles ``(m, d)`` (equal weights) at
    the same time T, all runs from the same initial particles. For each step size and the next smaller
    one, ``(eta, eta_next, |f_eta - f_eta_next|^2)``; a first-order scheme has the distance ``O(eta)``."""
    etas = sorted(finals, reverse=True)
    out = []
    for big, small in zip(etas, etas[1:]):
        a, b = finals[big], finals[small]
        w = torch.full((a.shape[0],), 1.0 / a.shape[0], dtype=a.dtype, device=a.device)
        out.append((big, small, float(function_gap(act, a, w, b, w, max_elements))))
    return out


def reduction_error_budget(
    loss_ref: np.ndarray,
    loss_ref_half_eta: np.ndarray,
    loss_reduced: np.ndarray,
    loss_reduced_coarse: np.ndarray,
    ref_error: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """How far the 1-D overlap reduction may sit from a finite particle reference, as three error estimates:

    - the reference's finite width: ``|L(rho) - L(rho')| <= |f_rho - f_rho'| (|f_rho - f*| + |f_rho' - f*|) / 2``
      with ``|f - f*| = sqrt(2 L)`` and ``|f_rho - f_rho'|^2`` estimated by the reference's split-half error;
    - its time step: first order, the error at eta is ~ twice the eta vs eta/2 difference;
    - the reduction's discretisation: ~ twice the n vs n/2 particle difference.

    Works elementwise on arrays (or pandas Series) of equal length; returns ``(width, step, discretisation)``."""
    width = np.sqrt(np.maximum(ref_error, 0)) * (np.sqrt(2 * loss_ref) + np.sqrt(2 * loss_reduced)) / 2
    step = 2 * abs(loss_ref - loss_ref_half_eta)
    disc = 2 * abs(loss_reduced - loss_reduced_coarse)
    return width, step, disc


def init_gap_check(
    act: HermiteActivationLike, d: int, samples: int, generator: torch.Generator, *, device: str | torch.device = "cpu"
) -> dict[str, float]:
    """The initial fluctuation ``m E|f_m - f_MF|^2`` two ways: the closed form ``K(1) - E K(<w, w'>)``
    (``init_theory``, :func:`init_gap_per_width`) and the Monte Carlo from the activation itself
    (``init_mc`` with its standard error ``init_mc_se``, ``sigma_square``, ``sigma_cross_mc``,
    :func:`init_gap_monte_carlo` with ``samples`` draws, recorded as ``mc_samples``)."""
    mc, se, square, cross = init_gap_monte_carlo(act, d, samples, generator, device=device)
    return dict(
        init_theory=init_gap_per_width(act, d),
        init_mc=mc,
        init_mc_se=se,
        sigma_square=square,
        sigma_cross_mc=cross,
        mc_samples=samples,
    )
