"""More periodic pseudo-spectral PDEs for the PDE kit, each with a closed-form check (the PDE kit's
"small extras for axial-networks": ``Burgers1D``, ``AdvDiffND(d=1..3)``, ``DiffReact2D``).

Conventions follow :mod:`theorylab.data.pde`: tensors are batch first, ``[B, C, *spatial]``; periodic
domains; real FFTs on the last axes; integration in float64; ETDRK4 (Kassam & Trefethen 2005) through
:func:`~theorylab.data.pde.etdrk4_coefficients` / :func:`~theorylab.data.pde.etdrk4_step`, exact on the
diagonal linear part; seeded initial states through an explicit ``torch.Generator``. Small FFT loops are
overhead-bound: run them with one intra-op thread.

- :class:`Burgers1D`: viscous Burgers ``u_t + u u_x = ν u_xx`` on [0, L); ``û_t = −ν k² û − (ik/2) F[u²]``,
  the quadratic term 2/3-dealiased. Exact solution: :func:`burgers_cole_hopf` (Cole 1951, Hopf 1950):
  ``u = −2ν φ_x / φ`` with φ a positive solution of the heat equation ``φ_t = ν φ_xx``.
- :class:`AdvectionDiffusion` (alias ``AdvDiffND``): ``u_t + c·∇u = κ Δu`` on [0, L)^d, d = 1, 2, 3. Purely
  linear, so each Fourier mode is multiplied by ``exp((−i c·k − κ|k|²) dt)`` per step and the stepper is the
  exact solution up to rounding. Closed forms: :func:`advection_diffusion_fourier` (any field on the grid) and
  :func:`advection_diffusion_bessel` (``u0 = Σ_j exp(β_j cos(2π n_j·x / L))``, whose Fourier coefficients are
  modified Bessel functions, evaluated without any FFT).
- :class:`DiffReact2D`: the FitzHugh–Nagumo diffusion–reaction system of PDEBench (Takamoto et al. 2022,
  "2D diffusion-reaction"), ``u_t = D_u Δu + u − u³ − k − v``, ``v_t = D_v Δv + u − v``, on a periodic
  [0, L)² instead of PDEBench's no-flux square. Closed forms: the homogeneous steady state
  ``u* = v* = −k^{1/3}`` and the linear dispersion relation :meth:`DiffReact2D.eigenvalues` (the eigenvalues
  of the reaction Jacobian minus ``diag(D_u, D_v) |k|²``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from theorylab.data.pde import DTYPE, UUxStepper1D, etdrk4_coefficients, etdrk4_step

__all__ = [
    "Burgers1D",
    "burgers_cole_hopf",
    "cole_hopf_coefficients",
    "AdvectionDiffusion",
    "AdvDiffND",
    "advection_diffusion_fourier",
    "advection_diffusion_bessel",
    "DiffReact2D",
]


def _check_grid(name: str, N: int, dt: float, L: float) -> None:
    if not (N >= 4 and N % 2 == 0) or not dt > 0 or not L > 0:
        raise ValueError(f"{name} needs an even grid size N >= 4, dt > 0 and L > 0; got N={N}, dt={dt}, L={L}")


# --------------------------------------------------------------------------------------------
# Viscous Burgers
# --------------------------------------------------------------------------------------------


def burgers_cole_hopf(
    x: Tensor,
    t: float | Tensor,
    nu: float,
    amplitudes: Tensor,
    phases: Tensor | None = None,
    offset: float = 1.0,
    L: float = 1.0,
) -> Tensor:
    """The exact periodic solution ``u(x, t) [..., len(x)]`` of ``u_t + u u_x = ν u_xx`` by the Cole–Hopf transform
    ``u = −2ν φ_x / φ``, with the heat-equation solution
    ``φ(x, t) = offset + Σ_m a_m cos(k_m x + θ_m) exp(−ν k_m² t)``, ``k_m = 2π m / L`` for m = 1..M.

    ``amplitudes [..., M]`` (``a_m``) and ``phases [..., M]`` (``θ_m``, default 0) broadcast together; φ > 0
    requires ``offset > Σ_m |a_m|``. The solution is periodic with zero mean (``u = −2ν ∂_x log φ``).
    ``x`` and ``t`` may be tensors (a 0-d ``t``), differentiable with ``torch.func``.
    """
    if not nu > 0 or not L > 0 or (isinstance(t, (int, float)) and t < 0):
        raise ValueError(f"burgers_cole_hopf needs nu > 0, L > 0 and t >= 0; got nu={nu}, L={L}, t={t}")
    a = torch.as_tensor(amplitudes, dtype=DTYPE)
    theta = torch.zeros_like(a) if phases is None else torch.as_tensor(phases, dtype=DTYPE)
    if not bool((a.abs().sum(-1) < offset).all()):
        raise ValueError(
            f"burgers_cole_hopf needs offset > sum |amplitudes| (phi > 0); got offset={offset}, "
            f"max sum |a| = {float(a.abs().sum(-1).max()):.4g}"
        )
    k = (2 * math.pi / L) * torch.arange(1, a.shape[-1] + 1, dtype=DTYPE)  # (M,)
    decay = a * torch.exp(-nu * k**2 * t)  # (..., M)
    arg = k[:, None] * torch.as_tensor(x, dtype=DTYPE)[None, :] + theta[..., None]  # (..., M, N)
    phi = offset + (decay[..., None] * torch.cos(arg)).sum(-2)
    phi_x = -(decay[..., None] * k[:, None] * torch.sin(arg)).sum(-2)
    return -2 * nu * phi_x / phi


def cole_hopf_coefficients(
    batch: int, generator: torch.Generator, n_modes: int = 3, margin: float = 0.05
) -> tuple[Tensor, Tensor]:
    """Seeded ``(amplitudes, phases)``, each ``[batch, n_modes]``, for :func:`burgers_cole_hopf` with
    ``offset = 1``: non-negative amplitudes summing to ``1 − margin`` (so min φ >= margin; a smaller margin
    gives steeper fronts, of width about sqrt(2 margin) / k_1) and phases uniform on [0, 2π)."""
    if batch < 1 or n_modes < 1 or not 0 < margin < 1:
        raise ValueError(
            f"cole_hopf_coefficients needs batch >= 1, n_modes >= 1 and 0 < margin < 1; got {batch}, "
            f"{n_modes}, {margin}"
        )
    w = torch.rand(batch, n_modes, generator=generator, dtype=DTYPE) + 0.1
    amplitudes = (1 - margin) * w / w.sum(-1, keepdim=True)
    phases = 2 * math.pi * torch.rand(batch, n_modes, generator=generator, dtype=DTYPE)
    return amplitudes, phases


@dataclass
class Burgers1D(UUxStepper1D):
    """Viscous Burgers ``u_t + u u_x = ν u_xx`` on [0, L) with N points, ETDRK4 step ``dt``; states ``[B, 1, N]``
    (float64). In Fourier space ``û_t = −ν k² û − (ik/2) F[u²]``; the quadratic term is computed on the grid
    and, with ``dealias`` (default), 2/3-truncated (modes ``m < N/3`` kept), which is the exact Galerkin
    projection for a quadratic term, so the truncated system conserves energy when ν = 0.

    Defaults are the card's K-Burgers check (ν = 0.01, N = 1024) on PDEBench's domain [0, 1).
    Exact solution for comparison: :meth:`exact` (Cole–Hopf, :func:`burgers_cole_hopf`).
    """

    L: float = 1.0
    N: int = 1024
    nu: float = 0.01
    dt: float = 1e-3
    dealias: bool = True
    device: str | torch.device = "cpu"
    _c: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_grid("Burgers1D", self.N, self.dt, self.L)
        if not self.nu > 0:
            raise ValueError(f"Burgers1D needs a positive viscosity nu; got nu={self.nu}")
        m = torch.arange(self.N // 2 + 1, device=self.device)
        self.k = (2 * math.pi / self.L) * m.to(DTYPE)
        self.linear = -self.nu * self.k**2
        self._c = {name: t.to(self.device) for name, t in etdrk4_coefficients(self.linear.cpu(), self.dt).items()}
        deriv = self.k.clone()
        deriv[-1] = 0.0  # the Nyquist mode has no odd derivative
        self._g = -0.5j * deriv
        self._mask = (m < self.N / 3) if self.dealias else None

    @property
    def x(self) -> Tensor:
        return torch.arange(self.N, dtype=DTYPE) * (self.L / self.N)

    @property
    def grid(self) -> Tensor:
        return self.x

    def exact(self, t: float, amplitudes: Tensor, phases: Tensor | None = None, offset: float = 1.0) -> Tensor:
        """The Cole–Hopf solution on this grid, ``[..., 1, N]`` for ``amplitudes [..., M]``."""
        return burgers_cole_hopf(self.x, t, self.nu, amplitudes, phases, offset, self.L).unsqueeze(-2)

    def random_state(self, batch: int, generator: torch.Generator, n_modes: int = 4, amplitude: float = 1.0) -> Tensor:
        """PDEBench-style ``Σ_{m=1}^{n_modes} a_m sin(2π m x / L + θ_m)``, ``a_m ~ U(0, amplitude)``,
        ``θ_m ~ U(0, 2π)``; zero mean; ``[batch, 1, N]``."""
        a = amplitude * torch.rand(batch, 1, n_modes, 1, generator=generator, dtype=DTYPE)
        theta = 2 * math.pi * torch.rand(batch, 1, n_modes, 1, generator=generator, dtype=DTYPE)
        m = torch.arange(1, n_modes + 1, dtype=DTYPE)[:, None]
        return (a * torch.sin(2 * math.pi * m * self.x / self.L + theta)).sum(-2).to(self.device)


# --------------------------------------------------------------------------------------------
# Advection–diffusion in 1, 2, 3 dimensions
# --------------------------------------------------------------------------------------------


def _wavevectors(dim: int, N: int, L: float, device=None) -> list[Tensor]:
    """Wavenumbers of ``rfftn`` over the last ``dim`` axes, each broadcastable to ``[N, .., N // 2 + 1]``."""
    ks = []
    for axis in range(dim):
        last = axis == dim - 1
        m = (
            torch.arange(N // 2 + 1, dtype=DTYPE, device=device)
            if last
            else torch.fft.fftfreq(N, 1.0 / N, dtype=DTYPE, device=device)
        )
        shape = [1] * dim
        shape[axis] = -1
        ks.append((2 * math.pi / L) * m.view(shape))
    return ks


def _advection_diffusion_operator(dim: int, N: int, L: float, velocity, kappa: float, device=None) -> Tensor:
    """``−i c·k − κ|k|²`` on the ``rfftn`` grid; the odd (advective) part is zero on Nyquist wavenumbers, whose
    real-field modes cannot carry a phase (as for the KS derivative)."""
    ks = _wavevectors(dim, N, L, device)
    is_nyquist = lambda k: (k.abs() * (L / (2 * math.pi))).round() == N // 2  # noqa: E731  by mode index
    adv = sum(c * torch.where(is_nyquist(k), 0.0, k) for c, k in zip(velocity, ks))
    k2 = sum(k**2 for k in ks)
    return torch.complex(-kappa * k2, -adv)


def _check_advection_diffusion(dim: int, velocity, kappa: float) -> tuple[float, ...]:
    if dim not in (1, 2, 3):
        raise ValueError(f"advection-diffusion needs dim 1, 2 or 3; got {dim}")
    c = (1.0,) * dim if velocity is None else tuple(float(v) for v in velocity)
    if len(c) != dim:
        raise ValueError(f"advection-diffusion needs one velocity component per axis ({dim}); got {len(c)}")
    if not kappa >= 0:
        raise ValueError(f"advection-diffusion needs a diffusivity kappa >= 0; got kappa={kappa}")
    return c


def advection_diffusion_fourier(
    u0: Tensor, t: float, velocity, kappa: float, L: float = 2 * math.pi, dim: int | None = None
) -> Tensor:
    """The exact solution at time ``t`` of ``u_t + c·∇u = κ Δu`` from ``u0 [..., N, (N, (N))]`` (last ``dim``
    axes, default ``len(velocity)``): each Fourier mode times ``exp((−i c·k − κ|k|²) t)``.

    ``velocity[i]`` is the component along spatial axis i (for ``[..., y, x]`` arrays pass ``(c_y, c_x)``)."""
    dim = len(velocity) if dim is None else dim
    c = _check_advection_diffusion(dim, velocity, kappa)
    N = u0.shape[-1]
    axes = tuple(range(-dim, 0))
    op = _advection_diffusion_operator(dim, N, L, c, kappa, u0.device)
    return torch.fft.irfftn(torch.fft.rfftn(u0.to(DTYPE), dim=axes) * torch.exp(op * t), s=(N,) * dim, dim=axes)


def advection_diffusion_bessel(
    coords: tuple[Tensor, ...],
    t: float,
    beta: Tensor,
    wavevectors: Tensor,
    velocity,
    kappa: float,
    L: float = 2 * math.pi,
    n_terms: int = 40,
) -> Tensor:
    """Closed-form solution, without FFTs, for ``u0 = Σ_j exp(β_j cos(2π n_j·x / L))``.

    With ``exp(β cos θ) = I_0(β) + 2 Σ_{m>=1} I_m(β) cos(mθ)`` (modified Bessel functions), each term evolves as
    ``I_0(β) + 2 Σ_m I_m(β) exp(−κ m² |q|² t) cos(m q·(x − c t))``, ``q = 2π n / L``. ``coords`` are the d
    coordinate arrays (e.g. :attr:`AdvectionDiffusion.grid`), ``beta [..., J]``, ``wavevectors [J, d]`` integer
    directions ``n_j``; returns ``[..., *spatial]``. The series is cut at ``n_terms`` (I_m(β) ~ (β/2)^m / m!).
    """
    from scipy.special import iv

    dim = len(coords)
    c = _check_advection_diffusion(dim, velocity, kappa)
    n = torch.as_tensor(wavevectors, dtype=DTYPE)
    b = torch.as_tensor(beta, dtype=DTYPE)
    if n.ndim != 2 or n.shape[1] != dim or b.shape[-1] != n.shape[0]:
        raise ValueError(
            f"advection_diffusion_bessel needs wavevectors [J, {dim}] and beta [..., J]; got "
            f"{tuple(n.shape)} and {tuple(b.shape)}"
        )
    q = (2 * math.pi / L) * n  # (J, d)
    phase = sum(q[:, i].view(-1, *[1] * dim) * (coords[i].to(DTYPE) - c[i] * t) for i in range(dim))  # (J, *sp)
    m = torch.arange(n_terms + 1, dtype=DTYPE)
    coef = torch.from_numpy(iv(m.numpy()[None, :], b.reshape(-1, 1).numpy())).reshape(*b.shape, n_terms + 1)
    coef = coef * torch.where(m == 0, 1.0, 2.0) * torch.exp(-kappa * m**2 * (q**2).sum(-1, keepdim=True) * t)
    waves = torch.cos(m.view(1, -1, *[1] * dim) * phase[:, None])  # (J, M, *spatial)
    spatial = waves.shape[2:]
    out = coef.reshape(-1, coef.shape[-2] * coef.shape[-1]) @ waves.reshape(-1, spatial.numel())  # (P, S)
    return out.reshape(*b.shape[:-1], *spatial)


@dataclass
class AdvectionDiffusion:
    """``u_t + c·∇u = κ Δu`` on [0, L)^dim (dim = 1, 2, 3) with N points per axis; states ``[B, 1, *spatial]``.

    The equation is linear, so the ETDRK4 step (no nonlinear term) is ``û ← exp(dt (−i c·k − κ|k|²)) û``:
    exact for any field on the grid, up to rounding. ``velocity[i]`` is the component along spatial axis i
    (arrays ``[..., y, x]`` take ``(c_y, c_x)``); default ``(1.0,) * dim``. ``kappa = 0`` is pure advection.
    ``peak`` is the integer Fourier mode where :meth:`random_state` puts most energy.
    """

    dim: int = 1
    N: int = 64
    velocity: tuple[float, ...] | None = None
    kappa: float = 0.01
    dt: float = 0.01
    L: float = 2 * math.pi
    peak: float = 3.0
    device: str | torch.device = "cpu"

    def __post_init__(self) -> None:
        _check_grid("AdvectionDiffusion", self.N, self.dt, self.L)
        self.velocity = _check_advection_diffusion(self.dim, self.velocity, self.kappa)
        self.k = _wavevectors(self.dim, self.N, self.L, self.device)
        self.linear = _advection_diffusion_operator(self.dim, self.N, self.L, self.velocity, self.kappa, self.device)
        self._E = torch.exp(self.dt * self.linear)
        self._axes = tuple(range(-self.dim, 0))

    @property
    def grid(self) -> tuple[Tensor, ...]:
        """Coordinates ``(x_0, .., x_{d-1})``, each ``[N] * dim`` (``indexing="ij"``: x_i varies along axis i)."""
        c = torch.arange(self.N, dtype=DTYPE) * (self.L / self.N)
        return torch.meshgrid(*([c] * self.dim), indexing="ij")

    def nonlinear(self, v: Tensor) -> Tensor:
        return torch.zeros_like(v)

    def step_hat(self, v: Tensor) -> Tensor:
        return self._E * v  # = etdrk4_step(v, c, self.nonlinear) with N ≡ 0

    def step(self, u: Tensor, n: int = 1) -> Tensor:
        v = torch.fft.rfftn(u.to(DTYPE), dim=self._axes)
        for _ in range(n):
            v = self.step_hat(v)
        return torch.fft.irfftn(v, s=(self.N,) * self.dim, dim=self._axes)

    def exact(self, u0: Tensor, t: float) -> Tensor:
        """:func:`advection_diffusion_fourier` with this equation's parameters."""
        return advection_diffusion_fourier(u0, t, self.velocity, self.kappa, self.L, self.dim)

    def random_state(
        self, batch: int, generator: torch.Generator, peak: float | None = None, rms: float = 1.0
    ) -> Tensor:
        """Smooth random field ``[batch, 1, *spatial]``: Gaussian Fourier coefficients with amplitude
        ``exp(−(|m| − peak)² / 2)`` (m the integer mode; ``peak`` defaults to the equation's), zero mean, rms
        ``rms``."""
        peak = self.peak if peak is None else peak
        shape = (batch, 1, *self.linear.shape)
        z = torch.complex(
            torch.randn(shape, generator=generator, dtype=DTYPE), torch.randn(shape, generator=generator, dtype=DTYPE)
        )
        m = torch.sqrt(sum((k * self.L / (2 * math.pi)) ** 2 for k in self.k))
        u = torch.fft.irfftn(z * torch.exp(-((m - peak) ** 2) / 2), s=(self.N,) * self.dim, dim=self._axes)
        u = u - u.mean(self._axes, keepdim=True)
        return (u * (rms / u.pow(2).mean(self._axes, keepdim=True).sqrt())).to(self.device)


AdvDiffND = AdvectionDiffusion  # the card's name


# --------------------------------------------------------------------------------------------
# FitzHugh–Nagumo diffusion–reaction (PDEBench 2D)
# --------------------------------------------------------------------------------------------


@dataclass
class DiffReact2D:
    """FitzHugh–Nagumo diffusion–reaction on [0, L)² (periodic), states ``[B, 2, N, N]`` (channels u, v; axes y, x):

    ``u_t = D_u Δu + u − u³ − k − v``, ``v_t = D_v Δv + u − v``

    (PDEBench's 2D diffusion–reaction: D_u = 1e-3, D_v = 5e-3, k = 5e-3 on a square of side 2, 128², from N(0, 1)
    noise; PDEBench uses no-flux walls, this kit periodic ones). ETDRK4 with the diffusion as the exact linear
    part and the reaction as the nonlinear part, 2/3-truncated when ``dealias`` (exact for quadratic, not cubic,
    products; it keeps the state in the resolved band). ``reaction=False`` leaves the heat equation.

    Closed forms: :meth:`steady_state` ``u* = v* = −k^{1/3}``; :meth:`eigenvalues` of
    ``J − diag(D_u, D_v)|k|²`` with ``J = [[1 − 3u*², −1], [1, −1]]`` (the linear growth of a mode e^{ik·x});
    with these defaults the state is Turing-unstable for 5.06 < |k| < 26.2, fastest at |k| ≈ 13.9 (rate 0.272),
    while the uniform mode (k = 0) is a damped oscillation.
    """

    N: int = 128
    L: float = 2.0
    Du: float = 1e-3
    Dv: float = 5e-3
    k: float = 5e-3
    dt: float = 0.01
    dealias: bool = True
    reaction: bool = True
    device: str | torch.device = "cpu"
    _c: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check_grid("DiffReact2D", self.N, self.dt, self.L)
        if not (self.Du > 0 and self.Dv > 0):
            raise ValueError(f"DiffReact2D needs positive diffusivities Du, Dv; got Du={self.Du}, Dv={self.Dv}")
        N = self.N
        my = torch.fft.fftfreq(N, 1.0 / N, dtype=DTYPE, device=self.device)[:, None]
        mx = torch.arange(N // 2 + 1, dtype=DTYPE, device=self.device)[None, :]
        self.ky, self.kx = (2 * math.pi / self.L) * my, (2 * math.pi / self.L) * mx
        self.k2 = self.kx**2 + self.ky**2
        D = torch.tensor([self.Du, self.Dv], dtype=DTYPE, device=self.device).view(2, 1, 1)
        self.linear = -D * self.k2  # (2, N, N // 2 + 1)
        self._c = {name: t.to(self.device) for name, t in etdrk4_coefficients(self.linear.cpu(), self.dt).items()}
        self._mask = ((mx < N / 3) & (my.abs() < N / 3)) if self.dealias else None

    @property
    def grid(self) -> tuple[Tensor, Tensor]:
        """``(x, y)`` coordinates, each ``[N, N]`` in the (y, x) layout (as :class:`~theorylab.data.pde.NS2D`)."""
        c = torch.arange(self.N, dtype=DTYPE) * (self.L / self.N)
        y, x = torch.meshgrid(c, c, indexing="ij")
        return x, y

    def reaction_terms(self, w: Tensor) -> Tensor:
        """``(R_u, R_v) = (u − u³ − k − v, u − v)`` for ``w [..., 2, *spatial]`` in physical space."""
        u, v = w[..., 0:1, :, :], w[..., 1:2, :, :]
        return torch.cat([u - u**3 - self.k - v, u - v], dim=-3)

    def nonlinear(self, v: Tensor) -> Tensor:
        if not self.reaction:
            return torch.zeros_like(v)
        out = torch.fft.rfft2(self.reaction_terms(torch.fft.irfft2(v, s=(self.N, self.N))))
        return out if self._mask is None else out * self._mask

    def step_hat(self, v: Tensor) -> Tensor:
        return etdrk4_step(v, self._c, self.nonlinear)

    def step(self, w: Tensor, n: int = 1) -> Tensor:
        v = torch.fft.rfft2(w.to(DTYPE))
        for _ in range(n):
            v = self.step_hat(v)
        return torch.fft.irfft2(v, s=(self.N, self.N))

    def steady_state(self) -> float:
        """The homogeneous fixed point ``u* = v* = −k^{1/3}`` (real root of u³ = −k)."""
        return -math.copysign(abs(self.k) ** (1 / 3), self.k)

    def jacobian(self) -> Tensor:
        """The reaction Jacobian at the steady state, ``[[1 − 3u*², −1], [1, −1]]``."""
        u = self.steady_state()
        return torch.tensor([[1 - 3 * u**2, -1.0], [1.0, -1.0]], dtype=DTYPE)

    def eigenvalues(self, k2: Tensor | float) -> Tensor:
        """Both linear growth rates ``[..., 2]`` (complex, larger real part first) of a mode with ``|k|² = k2``: the
        roots ``λ = τ/2 ± sqrt(τ²/4 − Δ)`` of the 2×2 matrix ``J − diag(D_u, D_v)|k|²`` (trace τ, determinant Δ)."""
        q = torch.as_tensor(k2, dtype=DTYPE)
        J = self.jacobian()
        a, b = J[0, 0] - self.Du * q, J[1, 1] - self.Dv * q
        tau, det = a + b, a * b - J[0, 1] * J[1, 0]
        root = torch.sqrt((tau**2 / 4 - det).to(torch.complex128))
        return torch.stack([tau / 2 + root, tau / 2 - root], dim=-1)

    def growth_rate(self, k2: Tensor | float) -> Tensor:
        """The dispersion relation: the largest real part of :meth:`eigenvalues`."""
        return self.eigenvalues(k2).real.max(-1).values

    def random_state(self, batch: int, generator: torch.Generator, amplitude: float = 1.0) -> Tensor:
        """PDEBench's initial state: ``amplitude · N(0, 1)`` noise in both species, ``[batch, 2, N, N]``,
        low-passed to the 2/3 band when ``dealias``."""
        w = amplitude * torch.randn(batch, 2, self.N, self.N, generator=generator, dtype=DTYPE)
        if self._mask is not None:
            w = torch.fft.irfft2(torch.fft.rfft2(w) * self._mask.cpu(), s=(self.N, self.N))
        return w.to(self.device)
