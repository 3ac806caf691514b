"""Periodic pseudo-spectral PDE solvers in PyTorch, batched over trajectories (the PDE kit).

Conventions (the PDE kit, docs/kits/pde.md): tensors are batch first, ``[B, C, *spatial]`` with ``C = 1`` here;
periodic domains; real FFTs on the last axes; integration in float64 (stored data may be float32);
the k = 0 mode is conserved, so initial conditions have zero mean. Small FFT loops are
overhead-bound: run them with one intra-op thread (``torch.set_num_threads(1)``) on a small CPU.

- :func:`etdrk4_coefficients`: Kassam & Trefethen's (SIAM J. Sci. Comput. 26, 2005) exponential
  time-differencing RK4 for ``v_t = L v + N(v)`` with a diagonal L, the φ-functions evaluated by a
  contour average over ``M`` points of radius 1 (no cancellation near L = 0).
- :class:`KS1D`: Kuramoto–Sivashinsky ``u_t + u u_x + u_xx + u_xxxx = 0`` on [0, L);
  in Fourier space ``û_t = (k² − k⁴) û − (ik/2) F[u²]``.
- :class:`NS2D`: 2-D incompressible Navier–Stokes in vorticity form on [0, 2π)²,
  ``ω_t + u·∇ω = ν∇²ω − αω + f_ω`` with ``−∇²ψ = ω``, ``u = ∂_yψ``, ``v = −∂_xψ``, 2/3 dealiasing of
  the advection term, Kolmogorov forcing ``f_ω = −n cos(n y)`` (from f_u = sin(n y)).
  Arrays are ``[..., y, x]``.
- :func:`resample_spectral`: truncate or zero-pad Fourier modes (values, not amplitudes, preserved).
- :func:`lyapunov_benettin`: the largest Lyapunov exponent from B perturbed copies.
- :class:`KSLeaky`: the card's drifting emulator ``x -> Φ_Δt(x) + (1 + η) P_{m >= m_c} x + σ ξ``.
- :class:`SpectralCoarsen`, :func:`tendency` (a solver's full right-hand side) and :func:`closure_target`
  (``S = C(F_fine(x)) − F_coarse(C x)``, one function for KS1D, NS2D and QG2L).
- :func:`coarse_trajectories`: spun-up solver trajectories stored on a coarser grid (train) and held-out
  initial states (test).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import Tensor

DTYPE = torch.float64


def etdrk4_coefficients(linear: Tensor, dt: float, contour_points: int = 32) -> dict[str, Tensor]:
    """``E = e^{hL}``, ``E2 = e^{hL/2}`` and the ETDRK4 weights ``Q, f1, f2, f3`` for a real diagonal ``L``
    (any shape), by the contour average of Kassam & Trefethen (2005), eq. (2.5) and Fig. 3."""
    h = float(dt)
    L = linear.to(DTYPE)
    r = torch.exp(1j * math.pi * (torch.arange(1, contour_points + 1, dtype=DTYPE) - 0.5) / contour_points)
    LR = h * L[..., None].to(torch.complex128) + r
    eLR = torch.exp(LR)
    Q = h * ((torch.exp(LR / 2) - 1) / LR).mean(-1).real
    f1 = h * ((-4 - LR + eLR * (4 - 3 * LR + LR**2)) / LR**3).mean(-1).real
    f2 = h * ((2 + LR + eLR * (-2 + LR)) / LR**3).mean(-1).real
    f3 = h * ((-4 - 3 * LR - LR**2 + eLR * (4 - LR)) / LR**3).mean(-1).real
    return dict(E=torch.exp(h * L), E2=torch.exp(h * L / 2), Q=Q, f1=f1, f2=f2, f3=f3)


def etdrk4_step(v: Tensor, c: dict[str, Tensor], nonlinear: Callable[[Tensor], Tensor]) -> Tensor:
    """One ETDRK4 step of ``v_t = L v + N(v)`` in Fourier space (Cox & Matthews 2002; Kassam & Trefethen 2005)."""
    Nv = nonlinear(v)
    a = c["E2"] * v + c["Q"] * Nv
    Na = nonlinear(a)
    b = c["E2"] * v + c["Q"] * Na
    Nb = nonlinear(b)
    cc = c["E2"] * a + c["Q"] * (2 * Nb - Nv)
    Nc = nonlinear(cc)
    return c["E"] * v + Nv * c["f1"] + 2 * (Na + Nb) * c["f2"] + Nc * c["f3"]


def resample_spectral(x: Tensor, n_out: int, dims: int = 1) -> Tensor:
    """``x [..., n, (n)]`` on a periodic grid resampled to ``n_out`` points per axis over its last ``dims``
    axes by truncating or zero-padding Fourier modes (the Nyquist mode of an even grid is dropped when
    truncating); grid values of band-limited fields are preserved."""
    if dims not in (1, 2):
        raise ValueError(f"dims must be 1 or 2, got {dims}")
    n_in = x.shape[-1]
    if dims == 1:
        xh = torch.fft.rfft(x, dim=-1)
        keep = min(n_in, n_out) // 2 + (0 if min(n_in, n_out) % 2 == 0 else 1)
        out = torch.zeros(*x.shape[:-1], n_out // 2 + 1, dtype=xh.dtype, device=x.device)
        out[..., :keep] = xh[..., :keep]
        return torch.fft.irfft(out, n=n_out, dim=-1) * (n_out / n_in)
    xh = torch.fft.rfft2(x, dim=(-2, -1))
    m = min(n_in, n_out)
    half = m // 2 if m % 2 == 0 else m // 2 + 1
    out = torch.zeros(*x.shape[:-2], n_out, n_out // 2 + 1, dtype=xh.dtype, device=x.device)
    out[..., :half, :half] = xh[..., :half, :half]
    neg = m // 2 - (1 if m % 2 == 0 else 0)  # negative y wavenumbers kept
    if neg:
        out[..., -neg:, :half] = xh[..., -neg:, :half]
    return torch.fft.irfft2(out, s=(n_out, n_out), dim=(-2, -1)) * (n_out / n_in) ** 2


# --------------------------------------------------------------------------------------------
# Kuramoto–Sivashinsky
# --------------------------------------------------------------------------------------------


class UUxStepper1D:
    """ETDRK4 stepping of a periodic 1-D equation whose nonlinearity is ``−u u_x = −(1/2)(u²)_x`` (KS1D, Burgers1D):
    a subclass sets ``N``, ``_g`` (the ``−ik/2`` multiplier), ``_mask`` (2/3 dealiasing or ``None``) and ``_c``
    (:func:`etdrk4_coefficients` of its linear operator)."""

    N: int

    def nonlinear(self, v: Tensor) -> Tensor:
        """``−F[u u_x] = −(ik/2) F[u²]`` (2/3-dealiased when a mask is set)."""
        u = torch.fft.irfft(v, n=self.N, dim=-1)
        out = self._g * torch.fft.rfft(u * u, dim=-1)
        return out if self._mask is None else out * self._mask

    def step_hat(self, v: Tensor) -> Tensor:
        return etdrk4_step(v, self._c, self.nonlinear)

    def step(self, u: Tensor, n: int = 1) -> Tensor:
        """``n`` solver steps from ``u [..., N]`` (physical space)."""
        v = torch.fft.rfft(u.to(DTYPE), dim=-1)
        for _ in range(n):
            v = self.step_hat(v)
        return torch.fft.irfft(v, n=self.N, dim=-1)


@dataclass
class KS1D(UUxStepper1D):
    """Kuramoto–Sivashinsky on [0, L) with N points, ETDRK4 step ``dt``; states ``[B, 1, N]`` (float64).

    Presets (card): ``KS1D.preset("ks22")`` (L = 22, N = 64, dt = 0.25), ``"ks22_fine"`` (N = 128,
    dt = 0.01), ``"ks64"`` (L = 64, N = 128), ``"ks32pi"`` (L = 32π, N = 256, dt = 0.05).
    """

    L: float = 22.0
    N: int = 64
    dt: float = 0.25
    dealias: bool = False
    device: str | torch.device = "cpu"
    _c: dict = field(init=False, repr=False)

    PRESETS = {
        "ks22": dict(L=22.0, N=64, dt=0.25),
        "ks22_fine": dict(L=22.0, N=128, dt=0.01),
        "ks64": dict(L=64.0, N=128, dt=0.25),
        "ks32pi": dict(L=32 * math.pi, N=256, dt=0.05),
    }

    def __post_init__(self) -> None:
        if self.L <= 0 or self.N < 4 or self.N % 2 or self.dt <= 0:
            raise ValueError(f"KS1D needs L > 0, an even N >= 4 and dt > 0; got L={self.L}, N={self.N}, dt={self.dt}")
        self.k = (2 * math.pi / self.L) * torch.arange(self.N // 2 + 1, dtype=DTYPE, device=self.device)
        self.linear = self.k**2 - self.k**4
        self._c = {name: t.to(self.device) for name, t in etdrk4_coefficients(self.linear.cpu(), self.dt).items()}
        deriv = self.k.clone()
        deriv[-1] = 0.0  # the Nyquist mode has no odd derivative
        self._g = -0.5j * deriv
        self._mask = (torch.arange(self.N // 2 + 1, device=self.device) < self.N / 3) if self.dealias else None

    @classmethod
    def preset(cls, name: str, **overrides) -> "KS1D":
        if name not in cls.PRESETS:
            raise ValueError(f"unknown KS preset {name!r}; known: {', '.join(cls.PRESETS)}")
        return cls(**{**cls.PRESETS[name], **overrides})

    @property
    def x(self) -> Tensor:
        return torch.arange(self.N, dtype=DTYPE) * (self.L / self.N)

    def random_state(self, batch: int, generator: torch.Generator, amplitude: float = 0.1) -> Tensor:
        """``amplitude · N(0, 1)`` noise with its mean removed, ``[batch, 1, N]``."""
        u = amplitude * torch.randn(batch, 1, self.N, generator=generator, dtype=DTYPE)
        return (u - u.mean(-1, keepdim=True)).to(self.device)

    def spun_up(self, batch: int, generator: torch.Generator, time: float = 250.0) -> Tensor:
        """States on the attractor: random noise integrated for ``time`` (card: 250 time units)."""
        return self.step(self.random_state(batch, generator), int(round(time / self.dt)))


def ks22_trajectories(
    n_train: int,
    train_horizon: int,
    n_test: int,
    horizon: int,
    train_generator: torch.Generator,
    test_generator: torch.Generator,
) -> tuple[KS1D, Tensor, float, Tensor, Tensor]:
    """The KS22 emulator data of the thermalizer (arXiv 2503.18731) and SNS (arXiv 2603.17750) studies: one
    stored step = 4 solver steps (Δt = 1.0). Returns ``(ks, train [n_train, train_horizon, 1, 64], std, test0
    [n_test, 1, 64], truth [n_test, horizon + 1, 1, 64])``: spun-up training trajectories without their first
    frame, their overall std (the emulators' scale), held-out initial states and their true trajectories."""
    ks = KS1D.preset("ks22")

    def trajectory(x0: Tensor, steps: int) -> Tensor:
        frames = [x0]
        for _ in range(steps):
            frames.append(ks.step(frames[-1], 4))
        return torch.stack(frames, 1)

    train = trajectory(ks.spun_up(n_train, train_generator), train_horizon)[:, 1:]
    test0 = ks.spun_up(n_test, test_generator)
    return ks, train, float(train.std()), test0, trajectory(test0, horizon)


# --------------------------------------------------------------------------------------------
# 2-D Navier–Stokes (vorticity form)
# --------------------------------------------------------------------------------------------


@dataclass
class NS2D:
    """Vorticity ``ω [B, 1, N, N]`` (axes y, x) on [0, 2π)², ETDRK4 step ``dt``.

    ``nu`` viscosity, ``drag`` linear drag α, ``forcing_mode`` n of the Kolmogorov forcing
    f_ω = −n cos(n y) scaled by ``forcing_amplitude`` (0: unforced). Presets: ``"kolmo_re1k"``
    (ν = 1e-3, α = 0.1, n = 4, dt = 5e-3 at 64²) and ``"kolmo_re10k"`` (ν = 1e-4, dt = 1e-3).
    ``dtype``: the arithmetic of :meth:`step` (float64 by default; float32 is 1.7-1.9x faster on a CPU and follows
    float64 to ~1e-6 relative over 200 steps, as jax-cfd's float32 solver of the thermalizer paper runs); the
    coefficients are computed in float64 either way.
    """

    N: int = 64
    nu: float = 1e-3
    drag: float = 0.1
    forcing_mode: int = 4
    forcing_amplitude: float = 1.0
    dt: float = 5e-3
    device: str | torch.device = "cpu"
    dtype: torch.dtype = torch.float64

    PRESETS = {
        "kolmo_re1k": dict(nu=1e-3, drag=0.1, forcing_mode=4, dt=5e-3),
        "kolmo_re10k": dict(nu=1e-4, drag=0.1, forcing_mode=4, dt=1e-3),
    }

    def __post_init__(self) -> None:
        if self.N < 8 or self.N % 2 or self.dt <= 0 or self.nu < 0 or self.drag < 0:
            raise ValueError(
                f"NS2D needs an even N >= 8, dt > 0, nu >= 0, drag >= 0; got N={self.N}, dt={self.dt}, "
                f"nu={self.nu}, drag={self.drag}"
            )
        if self.dtype not in (torch.float32, torch.float64):
            raise ValueError(f"NS2D's dtype must be torch.float32 or torch.float64; got {self.dtype}")
        N = self.N
        self.kx = torch.arange(N // 2 + 1, dtype=DTYPE, device=self.device)[None, :]
        self.ky = torch.fft.fftfreq(N, 1.0 / N, dtype=DTYPE, device=self.device)[:, None]
        self.k2 = self.kx**2 + self.ky**2
        self._inv_k2 = torch.where(self.k2 > 0, 1.0 / torch.where(self.k2 > 0, self.k2, 1.0), 0.0)
        self.linear = -self.nu * self.k2 - self.drag
        self._c = {name: t.to(self.device) for name, t in etdrk4_coefficients(self.linear.cpu(), self.dt).items()}
        cut = N / 3  # 2/3 rule: keep |k_x|, |k_y| < N/3
        self._mask = (self.kx.abs() < cut) & (self.ky.abs() < cut)
        y = torch.arange(N, dtype=DTYPE, device=self.device) * (2 * math.pi / N)
        f = -self.forcing_mode * torch.cos(self.forcing_mode * y)[:, None].expand(N, N) * self.forcing_amplitude
        complex_dtype = torch.complex64 if self.dtype == torch.float32 else torch.complex128
        self._forcing_hat = torch.fft.rfft2(f).to(complex_dtype)
        self._c = {name: t.to(self.dtype) for name, t in self._c.items()}
        # (û, v̂, ∂_xω̂, ∂_yω̂) = ω̂ times these four spectral multipliers: one inverse FFT for all four fields
        shape = (N, N // 2 + 1)
        self._advect = torch.stack(
            [
                (1j * self.ky * self._inv_k2).expand(shape),
                (-1j * self.kx * self._inv_k2).expand(shape),
                (1j * self.kx).expand(shape),
                (1j * self.ky).expand(shape),
            ]
        ).to(complex_dtype)

    @classmethod
    def preset(cls, name: str, **overrides) -> "NS2D":
        if name not in cls.PRESETS:
            raise ValueError(f"unknown NS2D preset {name!r}; known: {', '.join(cls.PRESETS)}")
        return cls(**{**cls.PRESETS[name], **overrides})

    @property
    def grid(self) -> tuple[Tensor, Tensor]:
        """``(x, y)`` coordinates, each ``[N, N]`` in the (y, x) layout."""
        c = torch.arange(self.N, dtype=DTYPE) * (2 * math.pi / self.N)
        y, x = torch.meshgrid(c, c, indexing="ij")
        return x, y

    def velocity_hat(self, w_hat: Tensor) -> tuple[Tensor, Tensor]:
        """``(û, v̂)`` from ω̂: ψ̂ = ω̂/|k|², u = ∂_yψ, v = −∂_xψ."""
        psi = w_hat * self._inv_k2
        return 1j * self.ky * psi, -1j * self.kx * psi

    def advection(self, w_hat: Tensor) -> Tensor:
        """``−F[u·∇ω]``, dealiased (2/3 rule). The four fields u, v, ∂_xω, ∂_yω come from one batched inverse FFT
        (at 64² and batch 1, 1.5x faster than four calls: the step is bound by per-call overhead there)."""
        u, v, wx, wy = torch.fft.irfft2(w_hat.unsqueeze(-3) * self._advect, s=(self.N, self.N)).unbind(-3)
        return -torch.fft.rfft2(u * wx + v * wy) * self._mask

    def nonlinear(self, w_hat: Tensor) -> Tensor:
        return self.advection(w_hat) + self._forcing_hat

    def step(self, w: Tensor, n: int = 1) -> Tensor:
        """``n`` ETDRK4 steps from ``w``; the result is in the solver's ``dtype``."""
        v = torch.fft.rfft2(w.to(self.dtype))
        for _ in range(n):
            v = etdrk4_step(v, self._c, self.nonlinear)
        return torch.fft.irfft2(v, s=(self.N, self.N))

    def energy_enstrophy(self, w: Tensor) -> tuple[Tensor, Tensor]:
        """Domain means ``E = ½⟨|u|²⟩`` and ``Z = ½⟨ω²⟩`` per state."""
        w_hat = torch.fft.rfft2(w.to(DTYPE))
        u_hat, v_hat = self.velocity_hat(w_hat)
        s = (self.N, self.N)
        u, v = torch.fft.irfft2(u_hat, s=s), torch.fft.irfft2(v_hat, s=s)
        return 0.5 * (u**2 + v**2).mean((-1, -2)), 0.5 * (w.to(DTYPE) ** 2).mean((-1, -2))

    def random_state(self, batch: int, generator: torch.Generator, peak: int = 4, rms: float = 5.0) -> Tensor:
        """Random vorticity ``[batch, 1, N, N]`` with a spectrum peaked at |k| = ``peak``, zero mean, rms ``rms``."""
        shape = (batch, 1, self.N, self.N // 2 + 1)
        phase = torch.randn(shape, generator=generator, dtype=DTYPE) + 1j * torch.randn(
            shape, generator=generator, dtype=DTYPE
        )
        k = self.k2.sqrt()
        amp = k * torch.exp(-((k - peak) ** 2) / 2) * self._mask
        w = torch.fft.irfft2(phase * amp, s=(self.N, self.N))
        w = w - w.mean((-1, -2), keepdim=True)
        return (w * (rms / w.pow(2).mean((-1, -2), keepdim=True).sqrt())).to(self.device)


# --------------------------------------------------------------------------------------------
# Lyapunov exponent; the drifting emulator
# --------------------------------------------------------------------------------------------


def lyapunov_benettin(
    step: Callable[[Tensor], Tensor],
    states: Tensor,
    time: float,
    dt: float,
    renorm_every: float = 1.0,
    eps: float = 1e-7,
    generator: torch.Generator | None = None,
) -> tuple[float, Tensor]:
    """``(mean λ₁, λ₁ per copy)``: each state runs beside a copy perturbed by ``eps`` (relative to its norm);
    every ``renorm_every`` time units the log growth of the gap is recorded and the gap reset to ``eps``
    (Benettin et al. 1980). ``step`` advances a batch by ``dt``."""
    per = max(1, int(round(renorm_every / dt)))
    rounds = max(1, int(round(time / (per * dt))))
    x = states.to(DTYPE)
    scale = x.flatten(1).norm(dim=-1).view(-1, *[1] * (x.ndim - 1))
    d = torch.randn(x.shape, generator=generator, dtype=DTYPE)
    d = d - d.mean(-1, keepdim=True)
    y = x + eps * scale * d / d.flatten(1).norm(dim=-1).view_as(scale)
    total = torch.zeros(x.shape[0], dtype=DTYPE)
    for _ in range(rounds):
        both = step(torch.cat([x, y]))
        for _ in range(per - 1):
            both = step(both)
        x, y = both[: len(x)], both[len(x) :]
        gap = (y - x).flatten(1).norm(dim=-1)
        total += torch.log(gap / (eps * scale.flatten()))
        y = x + (eps * scale.flatten() / gap).view_as(scale) * (y - x)
    lam = total / (rounds * per * dt)
    return float(lam.mean()), lam


@dataclass
class KSLeaky:
    """The card's drifting emulator for KS: one emulator step is ``Φ_Δt(x) + (1 + η) P_{m >= m_c} x + σ ξ``.

    ``Φ_Δt`` is ``substeps`` exact solver steps, ``P_{m >= m_c}`` the Fourier high-pass, ξ standard
    normal. It mimics a residual network that passes unresolved scales through the identity.
    """

    system: KS1D
    substeps: int = 4
    eta: float = 0.1
    m_cut: int = 8
    sigma: float = 1e-4

    def __call__(self, u: Tensor, generator: torch.Generator | None = None) -> Tensor:
        high = torch.fft.rfft(u.to(DTYPE), dim=-1)
        high[..., : self.m_cut] = 0
        leak = torch.fft.irfft(high, n=self.system.N, dim=-1)
        noise = torch.randn(u.shape, generator=generator, dtype=DTYPE).to(u.device)
        return self.system.step(u, self.substeps) + (1 + self.eta) * leak + self.sigma * noise


# --------------------------------------------------------------------------------------------
# Coarse graining and closure targets
# --------------------------------------------------------------------------------------------


class SpectralCoarsen:
    """The coarse-graining operator C of the PDE kit: fine ``[..., N(, N)]`` fields to ``n_coarse`` points
    per axis. ``op="sharp"`` truncates at the coarse grid's 2/3-dealiased band (|k| < n_coarse/3 per
    axis); ``op="gauss"`` first multiplies by exp(−k²(2Δx_c)²/24) (the Gaussian filter of width 2Δx_c),
    then truncates. C∘C = C for ``sharp``."""

    def __init__(self, n_coarse: int, op: str = "sharp", dims: int = 1, length: float = 2 * math.pi):
        if op not in ("sharp", "gauss") or dims not in (1, 2) or n_coarse < 4:
            raise ValueError(
                f"SpectralCoarsen needs op 'sharp' or 'gauss', dims 1 or 2 and n_coarse >= 4; got {op!r}, "
                f"{dims}, {n_coarse}"
            )
        self.n, self.op, self.dims, self.length = n_coarse, op, dims, length

    def __call__(self, x: Tensor) -> Tensor:
        n_in = x.shape[-1]
        if self.dims == 1:
            xh = torch.fft.rfft(x.to(DTYPE), dim=-1)
            m = torch.arange(xh.shape[-1], device=x.device)
            keep = m < self.n / 3
            if self.op == "gauss":
                k = 2 * math.pi * m / self.length
                xh = xh * torch.exp(-(k**2) * (2 * self.length / self.n) ** 2 / 24)
            return resample_spectral(torch.fft.irfft(xh * keep, n=n_in, dim=-1), self.n)
        xh = torch.fft.rfft2(x.to(DTYPE))
        kx = torch.arange(n_in // 2 + 1, device=x.device, dtype=DTYPE)[None, :]
        ky = torch.fft.fftfreq(n_in, 1.0 / n_in, device=x.device, dtype=DTYPE)[:, None]
        keep = (kx.abs() < self.n / 3) & (ky.abs() < self.n / 3)
        if self.op == "gauss":
            scale = 2 * math.pi / self.length
            xh = xh * torch.exp(-((kx**2 + ky**2) * scale**2) * (2 * self.length / self.n) ** 2 / 24)
        return resample_spectral(torch.fft.irfft2(xh * keep, s=(n_in, n_in)), self.n, dims=2)


def tendency(system: Any, x: Tensor) -> Tensor:
    """The full right-hand side ``∂_t x = F(x)`` (linear part included) of a kit solver, in physical space:
    :class:`KS1D` (``x [..., N]``), :class:`NS2D` (``x [..., N, N]``), or any solver with its own ``rhs``
    (e.g. :class:`theorylab.data.qg.QG2L`, whose ``rhs`` leaves out the per-step filter, as pyqg's ``dqhdt``)."""
    if hasattr(system, "rhs"):
        return system.rhs(x)
    if isinstance(system, NS2D):
        v = torch.fft.rfft2(x.to(DTYPE))
        return torch.fft.irfft2(system.linear * v + system.nonlinear(v), s=(system.N, system.N))
    if isinstance(system, KS1D):
        v = torch.fft.rfft(x.to(DTYPE), dim=-1)
        return torch.fft.irfft(system.linear * v + system.nonlinear(v), n=system.N, dim=-1)
    raise TypeError(f"tendency needs a KS1D, an NS2D or a solver with an rhs method; got {type(system).__name__}")


def closure_target(fine: Any, coarse: Any, coarsen: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """``S(x) = C(F_fine(x)) − F_coarse(C x)``: what a coarse model must add to its right-hand side so that
    the coarse-grained fine dynamics is reproduced. F is each grid's full right-hand side with its own
    dealiasing (:func:`tendency`), so the linear terms, Fourier multipliers on both grids, cancel exactly and
    S is the subgrid-flux divergence. One function for :class:`KS1D` (``x [..., N]``, ``coarsen`` on the last
    axis), :class:`NS2D` and QG (``x [..., N, N]``, ``coarsen`` on the last two axes); ``coarsen`` is any map
    from the fine to the coarse grid, e.g. :class:`SpectralCoarsen`."""
    return coarsen(tendency(fine, x)) - tendency(coarse, coarsen(x))


def coarse_trajectories(
    solver: NS2D | KS1D,
    w0: Tensor,
    n_train: int,
    spinup: int,
    steps: int,
    substeps: int,
    store_n: int,
    dims: int = 2,
    progress: Callable | None = None,
    label: str = "Kolmogorov",
) -> tuple[Tensor, Tensor]:
    """``(train [n_train, steps + 1, C, *spatial] float32, test0 [B − n_train, C, *spatial] float64)``: the
    states ``w0`` spun up ``spinup`` solver steps (in blocks of 100), then the first ``n_train`` integrated
    ``steps`` emulator steps of ``substeps`` solver steps each; every stored field (and the held-out initial
    states of the rest, for test rollouts) is resampled spectrally to ``store_n`` points per axis (the
    thermalizer's Kolmogorov data: a 256² truth solver stored at 64², Pedersen, Zanna, Bruna, arXiv 2503.18731).
    ``progress(iterable, description)`` wraps the spin-up and data loops (described as ``label`` spin-up / data)."""
    wrap = progress or (lambda items, description: items)
    w = w0
    for _ in wrap(range(spinup // 100), f"{label} spin-up"):
        w = solver.step(w, 100)
    w = solver.step(w, spinup % 100)
    frames = [resample_spectral(w[:n_train], store_n, dims=dims)]
    rest = w[n_train:]  # no rows when every state is integrated (an FFT of an empty batch raises)
    test0 = (
        resample_spectral(rest, store_n, dims=dims)
        if len(rest)
        else rest.new_empty(rest.shape[:-dims] + (store_n,) * dims)
    )
    w = w[:n_train]
    for _ in wrap(range(steps), f"{label} data"):
        w = solver.step(w, substeps)
        frames.append(resample_spectral(w, store_n, dims=dims))
    return torch.stack(frames, 1).float(), test0


# --------------------------------------------------------------------------------------------
# Trajectory sets on disk (HDF5)
# --------------------------------------------------------------------------------------------

KIT_VERSION = "1"


def cache_key(config: dict) -> str:
    """sha256 of the canonical JSON of a generation config (sorted keys, no spaces)."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def generate(
    system: Any, n_traj: int, n_steps: int, save_every: int, spinup: float, seed: int, out: str | None = None
) -> tuple[Tensor, dict]:
    """``(fields [n_traj, n_t, 1, *spatial] float64, config)``: ``n_traj`` trajectories from random states
    integrated ``spinup`` time units, then ``n_steps`` solver steps with every ``save_every``-th kept
    (the first saved state is the spun-up one). With ``out`` the set is also written as HDF5 (see
    :func:`save_trajectories`); an existing file with the same cache key is read instead of regenerated.
    The same seed and config give bitwise-identical trajectories on CPU."""
    if n_traj < 1 or n_steps < 0 or save_every < 1 or spinup < 0:
        raise ValueError(
            f"generate needs n_traj >= 1, n_steps >= 0, save_every >= 1, spinup >= 0; got {n_traj}, "
            f"{n_steps}, {save_every}, {spinup}"
        )
    kind = type(system).__name__
    # Every parameter the system was built with keys the cache (for KS1D and NS2D the same keys as before; the
    # equations of data.pde_equations add theirs, e.g. Du, Dv, k, velocity, kappa), never the device.
    names = ["L", "N", "dt", "dealias", "nu", "drag", "forcing_mode", "forcing_amplitude"]
    if dataclasses.is_dataclass(system):
        names += [f.name for f in dataclasses.fields(system) if f.init and f.name != "device" and f.name not in names]
    params = {k: getattr(system, k) for k in names if hasattr(system, k)}
    config = dict(
        system=kind,
        params=params,
        n_traj=n_traj,
        n_steps=n_steps,
        save_every=save_every,
        spinup=spinup,
        seed=seed,
        scheme="etdrk4",
        kit_version=KIT_VERSION,
    )
    if out is not None:
        from pathlib import Path

        if Path(out).is_file():
            fields, meta = load_trajectories(out)
            if meta.get("cache_key") == cache_key(config):
                return fields, config
    g = torch.Generator().manual_seed(seed)
    x = system.random_state(n_traj, g)
    x = system.step(x, int(round(spinup / system.dt)))
    frames = [x]
    for _ in range(n_steps // save_every):
        x = system.step(x, save_every)
        frames.append(x)
    fields = torch.stack(frames, 1)
    if out is not None:
        save_trajectories(out, fields, config, dt=system.dt * save_every)
    return fields, config


def save_trajectories(path: str, fields: Tensor, config: dict, dt: float) -> None:
    """HDF5 (the kit's only disk format): dataset ``fields`` (float32, chunks (1, min(n_t, 64), C, *spatial),
    gzip 4), dataset ``t`` (float64), attributes ``config`` (JSON), ``solver``, ``scheme``, ``kit_version``
    and ``cache_key``. Written to a temporary file and renamed: a killed write leaves no half file."""
    import json
    import os
    import tempfile
    from pathlib import Path

    h5py = _h5py()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".part", dir=target.parent)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            n_t = fields.shape[1]
            f.create_dataset(
                "fields",
                data=fields.float().numpy(),
                chunks=(1, min(n_t, 64), *fields.shape[2:]),
                compression="gzip",
                compression_opts=4,
            )
            f.create_dataset("t", data=(torch.arange(n_t, dtype=DTYPE) * dt).numpy())
            f.attrs["config"] = json.dumps(config, sort_keys=True, default=str)
            f.attrs["solver"] = config.get("system", "")
            f.attrs["scheme"] = config.get("scheme", "")
            f.attrs["kit_version"] = KIT_VERSION
            f.attrs["cache_key"] = cache_key(config)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_trajectories(path: str) -> tuple[Tensor, dict]:
    """``(fields float32 tensor, metadata dict: config, t, solver, scheme, kit_version, cache_key)``."""
    import json

    h5py = _h5py()
    with h5py.File(path, "r") as f:
        fields = torch.from_numpy(f["fields"][...])
        meta = dict(
            config=json.loads(f.attrs["config"]),
            t=torch.from_numpy(f["t"][...]),
            solver=str(f.attrs["solver"]),
            scheme=str(f.attrs["scheme"]),
            kit_version=str(f.attrs["kit_version"]),
            cache_key=str(f.attrs["cache_key"]),
        )
    return fields, meta


def _h5py():
    try:
        import h5py
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError('trajectory files need h5py: pip install "theorylab[pde]"') from err
    return h5py
