"""Two-layer quasi-geostrophic model on a doubly periodic square (the PDE kit's ``QG2L``), batched over trajectories.

The model is the standard two-layer QG system in the form of pyqg's ``QGModel`` (pyqg documentation; filter after
Arbic & Flierl 2003), also used by pyqg-jax and by Ross et al. 2023 (the "eddy" and "jet" configurations).
Layer 1 is on top, with depth ``H1``; layer 2 is below it, with depth ``H2 = H1/δ``. The potential vorticity
anomalies are

    q_1 = ∇²ψ_1 + F_1 (ψ_2 − ψ_1),    q_2 = ∇²ψ_2 + F_2 (ψ_1 − ψ_2),    F_1 = rd⁻²/(1 + δ),  F_2 = δ F_1,

and the equations are

    ∂_t q_n + J(ψ_n, q_n) + U_n ∂_x q_n + Q_{y,n} ∂_x ψ_n = −δ_{n2} r_ek ∇²ψ_2 − ν₄ ∇⁴ q_n,
    Q_{y,1} = β + F_1 (U_1 − U_2),    Q_{y,2} = β − F_2 (U_1 − U_2).

Here J(ψ, q) = ∂_x(u q) + ∂_y(v q), with the geophysical convention u = −∂_yψ and v = ∂_xψ. This convention is
pyqg's. It differs from :class:`theorylab.data.pde.NS2D`, which uses u = ∂_yψ with −∇²ψ = ω.

Numerics:

- The Jacobian is pseudo-spectral in flux form, and the 2/3 rule is optional (``dealias=True`` by default).
- pyqg's exponential filter can be switched on (``filterfac``; 0 switches it off). It multiplies mode κ by
  ``exp(−filterfac (κ* − 0.65π)⁴)`` for κ* > 0.65π, where κ* = |(k Δx, l Δy)|. Here the filter enters as the
  linear damping rate ``−ln(filter)/dt``, so one step damps each mode by exactly pyqg's factor.
- The time stepper is ETDRK4 (Cox & Matthews 2002), with the linear part treated exactly. That part is a 2×2
  matrix for each wavenumber: mean advection, the β and shear terms through the inversion, drag, ν₄ and the
  filter. The kit's :func:`~theorylab.data.pde.etdrk4_coefficients` takes a real diagonal operator, so
  :func:`etdrk4_coefficients_2x2` computes the matrix φ-functions in closed form, with a contour average for
  nearly degenerate eigenvalues. :func:`etdrk4_step_2x2` is the kit's ETDRK4 step with matrix weights.
  pyqg itself uses AB3 with the filter applied once per step.
- ∂_x has no component on the x-Nyquist column (as the kit's KS1D has none on its Nyquist mode). This keeps the
  rfft2 coefficients of a real field Hermitian under the linear part. pyqg applies ik_x there. That matters only
  with both the filter and the 2/3 rule off, where the two codes part at the grid scale.

API: :class:`QG2L` (``step``, ``step_hat``, ``rhs``, ``tendency_hat``, ``nonlinear``, ``invert``/``pv_hat``,
``streamfunction``/``pv``, ``velocity``, ``energy``, ``enstrophy``, ``ke_spectrum``, ``linear_eigenvalues``,
``random_state``, ``spun_up``, ``preset``), :func:`qg_closure_target`, :func:`etdrk4_coefficients_2x2`,
:func:`etdrk4_step_2x2` and :func:`matvec2`.

States are PV anomalies ``q [..., 2, N, N]`` in float64, with axes (layer, y, x) and the batch first. Spectral
states are ``rfft2`` over (y, x). Times are in seconds and lengths in metres.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor

from theorylab.data.pde import DTYPE

CDTYPE = torch.complex128
YEAR = 365.0 * 86400.0

# The ETDRK4 weights as functions of z = hλ (Kassam & Trefethen 2005, eq. 2.5); Q, f1, f2, f3 are multiplied by h.
_PHI: dict[str, tuple[Callable[[Tensor], Tensor], bool]] = {
    "E": (lambda z: torch.exp(z), False),
    "E2": (lambda z: torch.exp(z / 2), False),
    "Q": (lambda z: (torch.exp(z / 2) - 1) / z, True),
    "f1": (lambda z: (-4 - z + torch.exp(z) * (4 - 3 * z + z**2)) / z**3, True),
    "f2": (lambda z: (2 + z + torch.exp(z) * (-2 + z)) / z**3, True),
    "f3": (lambda z: (-4 - 3 * z - z**2 + torch.exp(z) * (4 - z)) / z**3, True),
}


def matvec2(m: Tensor, v: Tensor) -> Tensor:
    """``m [2, 2, *grid]`` applied to the layer axis of ``v [..., 2, *grid]``, one 2×2 product per grid point
    (one broadcast product and one sum, which on CPU was faster than four products and a stack)."""
    return (m * v.unsqueeze(-4)).sum(-3)


def etdrk4_coefficients_2x2(linear: Tensor, dt: float, contour_points: int = 32) -> dict[str, Tensor]:
    """ETDRK4 weights ``E, E2, Q, f1, f2, f3`` (each ``[2, 2, *grid]`` complex) for a linear operator that is a
    complex 2×2 matrix ``linear [2, 2, *grid]`` at each grid point.

    Write hL = μI + A, with μ = tr(hL)/2, so that A is traceless and A² = d²I. Then every function satisfies
    f(hL) = a I + b A, with a = (f(μ+d) + f(μ−d))/2 and b = (f(μ+d) − f(μ−d))/(2d). If |d| > 1/4, a and b come
    from this formula, with each f evaluated by the kit's scalar contour mean over a circle of radius 1
    (Kassam & Trefethen 2005). If |d| ≤ 1/4, both come from the Cauchy integrals a = ∮ f(μ+z) z²/(z²−d²) and
    b = ∮ f(μ+z) z/(z²−d²) on the unit circle, which avoids cancellation at d → 0. The trapezoid-rule error of
    that branch is about |d|^M ≤ 4^{−M}. The construction handles defective matrices, such as the marginal
    baroclinic mode, and complex eigenvalues."""
    h = float(dt)
    hL = h * linear.to(CDTYPE)
    mu = (hL[0, 0] + hL[1, 1]) / 2
    a_mat = hL.clone()
    a_mat[0, 0] -= mu
    a_mat[1, 1] -= mu
    d2 = a_mat[0, 0] ** 2 + a_mat[0, 1] * a_mat[1, 0]
    d = torch.sqrt(d2)
    small = d.abs() <= 0.25
    d_safe = torch.where(small, torch.ones_like(d), d)
    theta = 2 * math.pi * (torch.arange(contour_points, dtype=DTYPE) + 0.5) / contour_points
    z = torch.exp(1j * theta).to(CDTYPE)
    den = z**2 - d2[..., None]
    weight_a, weight_b = z**2 / den, z / den
    t_mid, t_plus, t_minus = mu[..., None] + z, (mu + d_safe)[..., None] + z, (mu - d_safe)[..., None] + z
    eye = torch.eye(2, dtype=CDTYPE).view(2, 2, *[1] * mu.ndim)
    out = {}
    for name, (f, times_h) in _PHI.items():
        f_mid = f(t_mid)
        f_plus, f_minus = f(t_plus).mean(-1), f(t_minus).mean(-1)
        a = torch.where(small, (f_mid * weight_a).mean(-1), (f_plus + f_minus) / 2)
        b = torch.where(small, (f_mid * weight_b).mean(-1), (f_plus - f_minus) / (2 * d_safe))
        out[name] = (h if times_h else 1.0) * (a * eye + b * a_mat)
    return out


def etdrk4_step_2x2(v: Tensor, c: dict[str, Tensor], nonlinear: Callable[[Tensor], Tensor]) -> Tensor:
    """One ETDRK4 step of ``v_t = L v + N(v)`` (Cox & Matthews 2002), with 2×2 matrix weights from
    :func:`etdrk4_coefficients_2x2`. It has the same stages as :func:`theorylab.data.pde.etdrk4_step`."""
    Nv = nonlinear(v)
    E2v = matvec2(c["E2"], v)
    a = E2v + matvec2(c["Q"], Nv)
    Na = nonlinear(a)
    b = E2v + matvec2(c["Q"], Na)
    Nb = nonlinear(b)
    cc = matvec2(c["E2"], a) + matvec2(c["Q"], 2 * Nb - Nv)
    Nc = nonlinear(cc)
    return matvec2(c["E"], v) + matvec2(c["f1"], Nv) + matvec2(c["f2"], 2 * (Na + Nb)) + matvec2(c["f3"], Nc)


@dataclass
class QG2L:
    """Two-layer QG model on a doubly periodic ``[0, L)²`` grid of ``N × N`` points, stepped by ETDRK4 with step
    ``dt``. States are PV anomalies ``q [B, 2, N, N]`` (float64).

    Parameters use pyqg's names: ``beta`` β (1/(m s)), ``rd`` the deformation radius (m), ``delta`` δ = H1/H2,
    ``H1`` (m), ``U1``/``U2`` the background zonal flows (m/s), ``rek`` the bottom drag on layer 2 (1/s), and
    ``filterfac`` pyqg's exponential filter (0 switches it off). ``nu4`` is a hyperviscosity −ν₄∇⁴q on both
    layers (m⁴/s; 0 by default, as in pyqg). ``dealias`` applies the 2/3 rule (|k_x|, |k_y| < N/3 in mode units)
    to the Jacobian. ``dealias=False`` with ``filterfac=23.6`` has pyqg's right-hand side.

    Presets (``QG2L.preset(name, **overrides)``): ``"eddy"`` and ``"jet"``; see :attr:`PRESETS`.
    """

    N: int = 64
    L: float = 1e6
    beta: float = 1.5e-11
    rd: float = 15000.0
    delta: float = 0.25
    H1: float = 500.0
    U1: float = 0.025
    U2: float = 0.0
    rek: float = 5.787e-7
    dt: float = 3600.0
    filterfac: float = 23.6
    nu4: float = 0.0
    dealias: bool = True
    contour_points: int = 32
    device: str | torch.device = "cpu"
    _c: dict = field(init=False, repr=False)

    # Card values: β, δ, r_ek, rd = 15 km, U1 = 0.025 m/s, U2 = 0, L = 1e6 m, dt = 3600 s and the 256² truth.
    # The card says nothing about H1 or the filter, so those are pyqg defaults: H1 = 500 m and filterfac = 23.6.
    # These values match Ross et al. 2023 (pyqg_parameterization_benchmarks: eddy = pyqg defaults; jet = rek 7e-8,
    # δ 0.1, β 1e-11).
    PRESETS = {
        "eddy": dict(
            N=256,
            L=1e6,
            beta=1.5e-11,
            rd=15000.0,
            delta=0.25,
            H1=500.0,
            U1=0.025,
            U2=0.0,
            rek=5.787e-7,
            dt=3600.0,
            filterfac=23.6,
        ),
        "jet": dict(
            N=256,
            L=1e6,
            beta=1e-11,
            rd=15000.0,
            delta=0.1,
            H1=500.0,
            U1=0.025,
            U2=0.0,
            rek=7e-8,
            dt=3600.0,
            filterfac=23.6,
        ),
    }

    def __post_init__(self) -> None:
        bad = [
            name
            for name, ok in (
                ("N (even, >= 8)", self.N >= 8 and self.N % 2 == 0),
                ("L > 0", self.L > 0),
                ("rd > 0", self.rd > 0),
                ("delta > 0", self.delta > 0),
                ("H1 > 0", self.H1 > 0),
                ("dt > 0", self.dt > 0),
                ("rek >= 0", self.rek >= 0),
                ("filterfac >= 0", self.filterfac >= 0),
                ("nu4 >= 0", self.nu4 >= 0),
                ("contour_points >= 8", self.contour_points >= 8),
            )
            if not ok
        ]
        finite = all(
            math.isfinite(float(x))
            for x in (
                self.L,
                self.beta,
                self.rd,
                self.delta,
                self.H1,
                self.U1,
                self.U2,
                self.rek,
                self.dt,
                self.filterfac,
                self.nu4,
            )
        )
        if bad or not finite:
            raise ValueError(
                f"QG2L needs {', '.join(bad) if bad else 'finite parameters'}; got N={self.N}, "
                f"L={self.L}, rd={self.rd}, delta={self.delta}, H1={self.H1}, dt={self.dt}, "
                f"rek={self.rek}, filterfac={self.filterfac}, nu4={self.nu4}, beta={self.beta}, "
                f"U1={self.U1}, U2={self.U2}, contour_points={self.contour_points}"
            )
        N = self.N
        self.H2 = self.H1 / self.delta
        self.H = self.H1 + self.H2
        self.F1 = self.rd**-2 / (1.0 + self.delta)
        self.F2 = self.delta * self.F1
        self.Qy = (self.beta + self.F1 * (self.U1 - self.U2), self.beta - self.F2 * (self.U1 - self.U2))
        dk = 2 * math.pi / self.L
        self.m_x = torch.arange(N // 2 + 1, dtype=DTYPE)[None, :]  # mode numbers
        self.m_y = torch.fft.fftfreq(N, 1.0 / N, dtype=DTYPE)[:, None]
        self.kx, self.ky = dk * self.m_x, dk * self.m_y  # rad/m
        self.kappa2 = self.kx**2 + self.ky**2
        # ∂_x has no component on the x-Nyquist column (the kit's KS convention). This keeps a real field's rfft2
        # coefficients Hermitian under the linear part. ∂_y keeps pyqg's wavenumber −N/2 on the y-Nyquist row.
        self._dx = torch.where(self.m_x.abs() == N // 2, 0.0, self.kx)
        self._dy = self.ky
        k2, F1, F2 = self.kappa2, self.F1, self.F2
        det = k2 * (k2 + F1 + F2)
        det_inv = torch.where(det > 0, 1.0 / torch.where(det > 0, det, 1.0), 0.0)
        # ψ̂ = inv q̂ and q̂ = fwd ψ̂; the κ = 0 mode has ψ̂ = 0
        self.inv = torch.stack(
            [torch.stack([-(k2 + F2) * det_inv, -F1 * det_inv]), torch.stack([-F2 * det_inv, -(k2 + F1) * det_inv])]
        )
        self.fwd = torch.stack([torch.stack([-k2 - F1, F1 + 0 * k2]), torch.stack([F2 + 0 * k2, -k2 - F2])])
        ik = 1j * self._dx.to(CDTYPE)
        zero = torch.zeros_like(k2)
        U = torch.stack([torch.stack([self.U1 * ik + zero, zero + 0j]), torch.stack([zero + 0j, self.U2 * ik + zero])])
        Qy = torch.stack(
            [torch.stack([self.Qy[0] * ik + zero, zero + 0j]), torch.stack([zero + 0j, self.Qy[1] * ik + zero])]
        )
        drag = torch.stack([torch.stack([zero, zero]), torch.stack([zero, self.rek * k2])]).to(CDTYPE)
        # q̂_t = L q̂ + N(q̂):  L = −ik diag(U) − ik diag(Q_y) inv + r_ek κ² e₂e₂ᵀ inv − ν₄ κ⁴ I
        eye = torch.eye(2, dtype=CDTYPE)[:, :, None, None]
        self.linear_matrix_physical = (
            -U - _mm(Qy, self.inv.to(CDTYPE)) + _mm(drag, self.inv.to(CDTYPE)) - self.nu4 * k2**2 * eye
        )
        self.filter = self._filter_factor()
        self.filter_rate = torch.where(self.filter > 0, -torch.log(self.filter.clamp_min(1e-300)), 700.0) / self.dt
        self.linear_matrix = self.linear_matrix_physical - self.filter_rate * eye
        self._c = {
            name: t.to(self.device)
            for name, t in etdrk4_coefficients_2x2(self.linear_matrix, self.dt, self.contour_points).items()
        }
        cut = N / 3
        self._mask = (
            ((self.m_x.abs() < cut) & (self.m_y.abs() < cut)) if self.dealias else torch.ones_like(k2, dtype=torch.bool)
        )
        # rfft2 weights for Parseval: interior k_x columns stand for two modes
        w = torch.full((N // 2 + 1,), 2.0, dtype=DTYPE)
        w[0] = 1.0
        w[-1] = 1.0
        self._parseval = (w[None, :] / float(N) ** 4).expand(N, N // 2 + 1)
        self._shell = torch.floor(torch.sqrt(self.m_x**2 + self.m_y**2) + 0.5).long().expand(N, N // 2 + 1)
        self._idx, self._idy = 1j * self._dx.to(CDTYPE), 1j * self._dy.to(CDTYPE)
        for name in (
            "kx",
            "ky",
            "_dx",
            "_dy",
            "_idx",
            "_idy",
            "kappa2",
            "inv",
            "fwd",
            "linear_matrix_physical",
            "linear_matrix",
            "_mask",
            "_parseval",
            "_shell",
        ):
            setattr(self, name, getattr(self, name).to(self.device))

    @classmethod
    def preset(cls, name: str, **overrides) -> "QG2L":
        if name not in cls.PRESETS:
            raise ValueError(f"unknown QG2L preset {name!r}; known: {', '.join(cls.PRESETS)}")
        return cls(**{**cls.PRESETS[name], **overrides})

    def _filter_factor(self) -> Tensor:
        """pyqg's filter (Arbic & Flierl 2003): exp(−filterfac (κ* − 0.65π)⁴) beyond κ* = 0.65π, else 1."""
        dx = self.L / self.N
        kstar = torch.sqrt((self.kx * dx) ** 2 + (self.ky * dx) ** 2)
        cphi = 0.65 * math.pi
        return torch.where(kstar > cphi, torch.exp(-self.filterfac * (kstar - cphi) ** 4), 1.0)

    # ---------------------------------------------------------------------------------- fields
    @property
    def grid(self) -> tuple[Tensor, Tensor]:
        """``(x, y)`` coordinates in metres, each ``[N, N]`` in the (y, x) layout (x_j = j L/N)."""
        c = torch.arange(self.N, dtype=DTYPE) * (self.L / self.N)
        y, x = torch.meshgrid(c, c, indexing="ij")
        return x, y

    def to_hat(self, x: Tensor) -> Tensor:
        return torch.fft.rfft2(x.to(DTYPE))

    def from_hat(self, xh: Tensor) -> Tensor:
        return torch.fft.irfft2(xh, s=(self.N, self.N))

    def invert(self, q_hat: Tensor) -> Tensor:
        """ψ̂ from q̂ (spectral PV inversion, the 2×2 solve per wavenumber; ψ̂ = 0 at κ = 0)."""
        return matvec2(self.inv, q_hat)

    def pv_hat(self, psi_hat: Tensor) -> Tensor:
        """q̂ from ψ̂: q̂_1 = −κ²ψ̂_1 + F_1(ψ̂_2 − ψ̂_1), q̂_2 = −κ²ψ̂_2 + F_2(ψ̂_1 − ψ̂_2)."""
        return matvec2(self.fwd, psi_hat)

    def streamfunction(self, q: Tensor) -> Tensor:
        """ψ [..., 2, N, N] from q (physical space)."""
        return self.from_hat(self.invert(self.to_hat(q)))

    def pv(self, psi: Tensor) -> Tensor:
        """q [..., 2, N, N] from ψ (physical space)."""
        return self.from_hat(self.pv_hat(self.to_hat(psi)))

    def velocity(self, q: Tensor) -> tuple[Tensor, Tensor]:
        """``(u, v)``, each ``[..., 2, N, N]``: u = −∂_yψ, v = ∂_xψ (perturbation, without U_n)."""
        ph = self.invert(self.to_hat(q))
        return self.from_hat(-self._idy * ph), self.from_hat(self._idx * ph)

    # ---------------------------------------------------------------------------------- dynamics
    def nonlinear(self, q_hat: Tensor) -> Tensor:
        """−F[J(ψ, q)] = −(ik F[u q] + il F[v q]) per layer, with the 2/3 mask if ``dealias``."""
        ph = matvec2(self.inv, q_hat)
        u, v, q = self.from_hat(torch.stack((-self._idy * ph, self._idx * ph, q_hat)))
        flux = self.to_hat(torch.stack((u * q, v * q)))
        out = -(self._idx * flux[0] + self._idy * flux[1])
        return out * self._mask if self.dealias else out

    def tendency_hat(self, q_hat: Tensor, include_filter: bool = False) -> Tensor:
        """The full right-hand side ``L q̂ + N(q̂)``. By default the filter is left out, as in pyqg's ``dqhdt``:
        the filter is a per-step operation of the numerics, not part of the physics."""
        lin = self.linear_matrix if include_filter else self.linear_matrix_physical
        return matvec2(lin, q_hat) + self.nonlinear(q_hat)

    def rhs(self, q: Tensor, include_filter: bool = False) -> Tensor:
        """∂_t q in physical space, ``[..., 2, N, N]`` (see :meth:`tendency_hat`)."""
        return self.from_hat(self.tendency_hat(self.to_hat(q), include_filter))

    def step_hat(self, q_hat: Tensor) -> Tensor:
        return etdrk4_step_2x2(q_hat, self._c, self.nonlinear)

    def step(self, q: Tensor, n: int = 1) -> Tensor:
        """``n`` ETDRK4 steps from ``q [..., 2, N, N]`` (physical space)."""
        if q.shape[-3:] != (2, self.N, self.N):
            raise ValueError(f"QG2L.step needs q of shape [..., 2, {self.N}, {self.N}], got {tuple(q.shape)}")
        v = self.to_hat(q)
        for _ in range(n):
            v = self.step_hat(v)
        return self.from_hat(v)

    def linear_eigenvalues(self, include_filter: bool = False) -> Tensor:
        """Eigenvalues ``[2, N, N//2 + 1]`` (complex, 1/s) of the solver's 2×2 linear operator per wavenumber,
        with the larger real part first. A positive real part means growth: baroclinic instability."""
        m = self.linear_matrix if include_filter else self.linear_matrix_physical
        mu = (m[0, 0] + m[1, 1]) / 2
        d = torch.sqrt(((m[0, 0] - m[1, 1]) / 2) ** 2 + m[0, 1] * m[1, 0])
        lam = torch.stack((mu + d, mu - d))
        return torch.where((lam[0].real >= lam[1].real)[None], lam, lam.flip(0))

    # ---------------------------------------------------------------------------------- diagnostics
    def _mean_square(self, f_hat: Tensor) -> Tensor:
        """Domain mean of f² from rfft2 coefficients (Parseval), over the last two axes."""
        return (self._parseval * f_hat.abs() ** 2).sum((-1, -2))

    def energy(self, q: Tensor) -> tuple[Tensor, Tensor]:
        """``(KE, APE)`` per state, with the depth-weighted domain means KE = Σ_n (H_n/H) ½⟨|∇ψ_n|²⟩ and
        APE = ½ (H_1/H) F_1 ⟨(ψ_1 − ψ_2)²⟩, in m²/s². Their sum is −½ Σ_n (H_n/H) ⟨ψ_n q_n⟩, which inviscid
        dynamics without shear conserves."""
        ph = self.invert(self.to_hat(q))
        ke_layer = 0.5 * self._mean_square(torch.sqrt(self.kappa2) * ph)
        ke = (self.H1 * ke_layer[..., 0] + self.H2 * ke_layer[..., 1]) / self.H
        ape = 0.5 * (self.H1 / self.H) * self.F1 * self._mean_square(ph[..., 0, :, :] - ph[..., 1, :, :])
        return ke, ape

    def enstrophy(self, q: Tensor) -> Tensor:
        """Potential enstrophy Σ_n (H_n/H) ½⟨q_n²⟩ per state. It is conserved without forcing, dissipation,
        shear or β."""
        z = 0.5 * (q.to(DTYPE) ** 2).mean((-1, -2))
        return (self.H1 * z[..., 0] + self.H2 * z[..., 1]) / self.H

    def ke_spectrum(self, q: Tensor) -> tuple[Tensor, Tensor]:
        """``(m, E)``: the isotropic kinetic-energy spectrum of each layer, ``E [..., 2, n_shells]``, with
        E(m) = ½ Σ_{m−½ ≤ |k'|L/2π < m+½} (|û|² + |v̂|²). The coefficients are normalised so that Σ_m E(m) is the
        layer's domain-mean KE ½⟨u² + v²⟩. ``m`` holds the integer shell indices 0..⌊N/√2⌉, and the physical
        wavenumber is 2πm/L."""
        ph = self.invert(self.to_hat(q))
        power = 0.5 * self._parseval * self.kappa2 * ph.abs() ** 2  # ½(|û|² + |v̂|²) = ½κ²|ψ̂|²
        n_shells = int(self._shell.max()) + 1
        E = torch.zeros(*power.shape[:-2], n_shells, dtype=DTYPE, device=power.device)
        E.index_add_(-1, self._shell.flatten(), power.flatten(-2))
        return torch.arange(n_shells, dtype=DTYPE, device=E.device), E

    # ---------------------------------------------------------------------------------- initial states
    def random_state(self, batch: int, generator: torch.Generator, peak: float = 8.0, velocity: float = 0.05) -> Tensor:
        """Random PV ``[batch, 2, N, N]``. Each layer's streamfunction is independent, band-limited to the
        dealiased band, with its spectrum peaked at mode ``peak`` and its rms velocity equal to ``velocity``
        (m/s). The mean is zero."""
        if batch < 1 or peak <= 0 or velocity < 0:
            raise ValueError(f"random_state needs batch >= 1, peak > 0, velocity >= 0; got {batch}, {peak}, {velocity}")
        shape = (batch, 2, self.N, self.N // 2 + 1)
        noise = torch.randn(shape, generator=generator, dtype=DTYPE) + 1j * torch.randn(
            shape, generator=generator, dtype=DTYPE
        )
        m = torch.sqrt(self.m_x**2 + self.m_y**2)
        width = max(1.0, peak / 4)
        band = (self.m_x.abs() < self.N / 3) & (self.m_y.abs() < self.N / 3)
        amp = torch.where(m > 0, torch.exp(-((m - peak) ** 2) / (2 * width**2)) / m.clamp_min(1.0), 0.0) * band
        ph = (noise * amp).to(self.device)
        psi = self.from_hat(ph)
        ph = self.to_hat(psi)  # a real field's coefficients (Hermitian symmetric on the k_x = 0 column)
        rms_u = torch.sqrt(self._mean_square(torch.sqrt(self.kappa2) * ph))[..., None, None]
        ph = ph * (velocity / rms_u.clamp_min(1e-300))
        return self.from_hat(self.pv_hat(ph))

    def spun_up(self, batch: int, generator: torch.Generator, time: float = 5 * YEAR, velocity: float = 1e-3) -> Tensor:
        """States after ``time`` seconds of spin-up from weak random noise. The default of 5 years is the start
        of the averaging window in Ross et al. 2023 (reconstructed). At 256² this is GPU-scale work."""
        return self.step(self.random_state(batch, generator, velocity=velocity), int(round(time / self.dt)))


def _mm(a: Tensor, b: Tensor) -> Tensor:
    """Pointwise 2×2 matrix product of ``[2, 2, *grid]`` tensors."""
    return torch.einsum("ij...,jk...->ik...", a, b)


def qg_closure_target(fine: QG2L, coarse: QG2L, coarsen: Callable[[Tensor], Tensor], q: Tensor) -> Tensor:
    """``S(q) = C(F_fine(q)) − F_coarse(C q)`` for QG. Each F is the grid's full right-hand side, without the
    per-step filter (as for pyqg's ``dqhdt``). ``coarsen`` acts on the last two axes, e.g. ``SpectralCoarsen(n,
    dims=2, length=fine.L)``. The linear terms cancel exactly because they are the same Fourier multipliers
    on both grids."""
    return coarsen(fine.rhs(q)) - coarse.rhs(coarsen(q))
