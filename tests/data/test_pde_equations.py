"""PDE kit II: Burgers, advection–diffusion (1-3 D) and FitzHugh–Nagumo diffusion–reaction against closed forms.

Each check prints the measured value and the tolerance on failure; every tolerance sits between the measured
error (comments) and a negative control that must exceed it (a wrong parameter, a too-large step, no dealiasing).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from theorylab.data.pde_equations import (
    AdvDiffND,
    AdvectionDiffusion,
    Burgers1D,
    DiffReact2D,
    advection_diffusion_bessel,
    burgers_cole_hopf,
    cole_hopf_coefficients,
)

F64 = torch.float64


@pytest.fixture(autouse=True)
def _one_thread():
    """Small FFT loops: one intra-op thread (the PDE kit card's measured 90x slowdown with two on a loaded box)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest per-trajectory relative L2 error."""
    return float(((a - b).flatten(1).norm(dim=-1) / b.flatten(1).norm(dim=-1)).max())


# --------------------------------------------------------------------------------------------
# Burgers
# --------------------------------------------------------------------------------------------


def test_cole_hopf_solves_burgers_pointwise():
    """The closed form itself: u_t + u u_x − ν u_xx = 0 by automatic differentiation at random (x, t)."""
    g = torch.Generator().manual_seed(0)
    a, th = cole_hopf_coefficients(1, g, n_modes=3, margin=0.02)
    nu, P = 0.01, 50
    x = torch.rand(P, generator=g, dtype=F64).requires_grad_()
    t = (0.5 * torch.rand(P, 1, generator=g, dtype=F64)).requires_grad_()  # one time per point
    u = burgers_cole_hopf(x, t, nu, a.expand(P, -1), th.expand(P, -1)).diagonal()  # u(x_p, t_p)
    u_x, u_t = torch.autograd.grad(u.sum(), (x, t), create_graph=True)
    (u_xx,) = torch.autograd.grad(u_x.sum(), x)
    u, u_x, u_t = u.detach(), u_x.detach(), u_t.detach().flatten()
    residual = float((u_t + u * u_x - nu * u_xx).abs().max())
    assert residual <= 1e-13 * float(u_t.abs().max()) + 1e-14, residual  # measured 1e-16
    wrong = float((u_t + u * u_x + nu * u_xx).abs().max())  # a sign error in the viscous term is seen
    assert wrong >= 1e-2 * float(u_t.abs().max()), wrong
    grid = torch.arange(64, dtype=F64) / 64
    assert float(burgers_cole_hopf(grid, 0.0, nu, a, th).mean().abs()) <= 1e-14  # zero mean (measured 2e-16)


def test_burgers_matches_cole_hopf():
    """K-Burgers: ν = 0.01, N = 1024, t = 0.5 on [0, 1). Card: ≤ 1e-6 relative. Measured 1.3e-11 (the ETDRK4 time
    error at dt = 1e-3: it drops 15.5x per halving of dt, and the grid resolves the fronts to rounding), so the
    assertion is 1e-9; the same comparison with ν off by 0.1% gives 6e-4 (it can tell the viscosity)."""
    g = torch.Generator().manual_seed(0)
    a, th = cole_hopf_coefficients(4, g, n_modes=3, margin=0.05)  # fronts of width ~0.05, max|u| ≈ 0.57
    burgers = Burgers1D(L=1.0, N=1024, nu=0.01, dt=1e-3)
    u = burgers.step(burgers.exact(0.0, a, th), 500)
    assert u.shape == (4, 1, 1024) and u.dtype == F64
    err = _rel(u, burgers.exact(0.5, a, th))
    assert err <= 1e-9, f"relative L2 error {err:.3e} > 1e-9"
    off = _rel(u, burgers_cole_hopf(burgers.x, 0.5, 0.01 * 1.001, a, th, L=1.0).unsqueeze(-2))
    assert off >= 1e-4, off


def test_burgers_is_fourth_order_in_time_and_a_large_step_fails_the_tolerance():
    """Negative control: dt = 5e-3 breaks the 1e-9 tolerance of the Cole–Hopf check (measured 7e-9); halving it
    shrinks the error ≈ 15x (fourth order: 16). N = 256 resolves the same fronts to rounding."""
    g = torch.Generator().manual_seed(0)
    a, th = cole_hopf_coefficients(4, g, n_modes=3, margin=0.05)
    errors = []
    for dt in (5e-3, 2.5e-3):
        burgers = Burgers1D(N=256, nu=0.01, dt=dt)
        errors.append(_rel(burgers.step(burgers.exact(0.0, a, th), int(round(0.5 / dt))), burgers.exact(0.5, a, th)))
    assert errors[0] > 1e-9, errors
    assert errors[0] / errors[1] >= 10, errors


def test_dealiasing_conserves_energy_past_the_shock_where_aliasing_does_not():
    """At ν → 0 the 2/3-truncated system is the Galerkin truncation of inviscid Burgers, which conserves ∫u²
    exactly (only the time step drifts it: measured 4.5e-10 at t = 1, after the shock forms at t ≈ 0.8);
    the aliased pseudo-spectral term does not (measured: 7% drift or overflow to NaN). Dealiasing is the default."""
    drift = {}
    for dealias in (True, False):
        burgers = Burgers1D(N=64, nu=1e-12, dt=1e-3) if dealias else Burgers1D(N=64, nu=1e-12, dt=1e-3, dealias=False)
        x = burgers.x
        u0 = (0.1 * torch.sin(2 * math.pi * x) + 0.05 * torch.cos(4 * math.pi * x + 1))[None, None]
        u = burgers.step(u0, 1000)
        drift[dealias] = float((u.pow(2).mean() / u0.pow(2).mean() - 1).abs())
    assert drift[True] <= 1e-7, drift
    assert not drift[False] <= 1e-3, drift  # NaN counts as a failure to conserve


def test_burgers_symmetries_translation_reflection_galilean():
    g = torch.Generator().manual_seed(1)
    burgers = Burgers1D(N=256, nu=0.01, dt=1e-3)
    a, th = cole_hopf_coefficients(2, g)
    u0 = burgers.exact(0.0, a, th) + 0.1 * burgers.random_state(2, g)
    u = burgers.step(u0, 300)
    assert float((burgers.step(u0.roll(17, -1), 300) - u.roll(17, -1)).abs().max()) <= 1e-12  # measured 6e-14
    reflect = lambda z: -z.flip(-1).roll(1, -1)  # noqa: E731  u(x) -> −u(−x)
    assert float((burgers.step(reflect(u0), 300) - reflect(u)).abs().max()) <= 1e-12  # measured 6e-15
    # Galilean: u0 + U evolves into u(x − U t, t) + U (a shift by a non-integer number of cells)
    U, t = 0.37, 0.3
    v0 = burgers.exact(0.0, a, th)
    v = burgers.step(v0, 300)
    moved = torch.fft.irfft(torch.fft.rfft(v) * torch.exp(-1j * burgers.k * U * t), n=256) + U
    gal = float((burgers.step(v0 + U, 300) - moved).abs().max())
    assert gal <= 1e-9, gal  # measured 3.3e-11: time error of the explicitly stepped U u_x, ~dt^4
    assert float((burgers.step(v0 - U, 300) - moved).abs().max()) >= 1e-2  # the wrong frame is seen


def test_burgers_batching_determinism_and_bad_arguments():
    burgers = Burgers1D(N=64, nu=0.05, dt=1e-2)
    a = burgers.random_state(3, torch.Generator().manual_seed(5))
    assert a.shape == (3, 1, 64) and float(a.mean(-1).abs().max()) <= 1e-15
    assert torch.equal(a, burgers.random_state(3, torch.Generator().manual_seed(5)))
    assert not torch.equal(a, burgers.random_state(3, torch.Generator().manual_seed(6)))
    together = burgers.step(a, 20)
    alone = torch.cat([burgers.step(a[i : i + 1], 20) for i in range(3)])
    assert float((together - alone).abs().max()) <= 1e-14
    for bad, match in (
        (dict(nu=0.0), "positive viscosity"),
        (dict(nu=-1.0), "positive viscosity"),
        (dict(N=63), "even grid size"),
        (dict(N=2), "even grid size"),
        (dict(dt=0.0), "dt > 0"),
    ):
        with pytest.raises(ValueError, match=match):
            Burgers1D(**bad)
    with pytest.raises(ValueError, match="offset > sum"):
        burgers_cole_hopf(burgers.x, 0.0, 0.01, torch.tensor([0.6, 0.5]))
    with pytest.raises(ValueError, match="0 < margin < 1"):
        cole_hopf_coefficients(2, torch.Generator(), margin=1.0)


# --------------------------------------------------------------------------------------------
# Advection–diffusion
# --------------------------------------------------------------------------------------------

# dim: (velocity, wavevectors n_j, grid N). Oblique directions; N large enough that I_{N/(2|n|∞)}(β) < 1e-17.
CASES = {
    1: ((0.7,), [[1], [3]], 128),
    2: ((0.7, -1.3), [[1, 2], [0, 1]], 64),
    3: ((0.7, -1.3, 0.4), [[1, 1, -1], [0, 1, 0]], 32),
}


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_advection_diffusion_matches_the_bessel_closed_form(dim):
    """u0 = Σ_j exp(β_j cos(n_j·x)); the solution's Bessel series is evaluated without FFTs. Measured max error
    1-2e-15 (relative) after 100 steps in 1, 2, 3 D; asserted 1e-12. The same series with the velocity reversed
    is off by 0.6-0.9 (a sign error cannot pass)."""
    velocity, n, N = CASES[dim]
    ad = AdvectionDiffusion(dim=dim, N=N, velocity=velocity, kappa=0.05, dt=0.01)
    g = torch.Generator().manual_seed(dim)
    beta = 0.5 + torch.rand(3, 2, generator=g, dtype=F64)  # 3 trajectories
    u0 = advection_diffusion_bessel(ad.grid, 0.0, beta, n, velocity, ad.kappa).unsqueeze(1)  # (3, 1, *spatial)
    direct = sum(
        torch.exp(beta[:, j].view(-1, *[1] * dim) * torch.cos(sum(n[j][i] * ad.grid[i] for i in range(dim))))
        for j in range(2)
    ).unsqueeze(1)
    assert float((u0 - direct).abs().max()) <= 1e-13  # the series at t = 0 (measured 4e-15)
    u = ad.step(u0, 100)
    exact = advection_diffusion_bessel(ad.grid, 1.0, beta, n, velocity, ad.kappa).unsqueeze(1)
    err = float((u - exact).abs().max() / exact.abs().max())
    assert err <= 1e-12, f"dim {dim}: max error {err:.3e} > 1e-12"
    flipped = advection_diffusion_bessel(ad.grid, 1.0, beta, n, tuple(-c for c in velocity), ad.kappa).unsqueeze(1)
    assert float((u - flipped).abs().max() / exact.abs().max()) >= 0.1


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_advection_diffusion_any_smooth_field_and_translation(dim):
    velocity, _, N = CASES[dim]
    ad = AdvDiffND(dim=dim, N=N, velocity=velocity, kappa=0.02, dt=0.05)
    g = torch.Generator().manual_seed(10 + dim)
    u0 = ad.random_state(2, g)
    assert u0.shape == (2, 1, *[N] * dim) and float(u0.mean().abs()) <= 1e-15
    u = ad.step(u0, 20)
    assert float((u - ad.exact(u0, 1.0)).abs().max()) <= 1e-12  # measured ~1e-14
    axes = tuple(range(-dim, 0))
    shifts = (5, -3, 7)[:dim]
    assert float((ad.step(u0.roll(shifts, axes), 20) - u.roll(shifts, axes)).abs().max()) <= 1e-12


def test_pure_advection_by_whole_cells_is_a_roll():
    """κ = 0 and c·T an integer number of cells per axis: the exact solution is the rolled grid field, whatever
    the field (rough noise included, except its Nyquist content, which carries no phase)."""
    N, L, T = 32, 2 * math.pi, 1.0
    cells = (3, -5)
    ad = AdvectionDiffusion(dim=2, N=N, velocity=tuple(c * L / N / T for c in cells), kappa=0.0, dt=T / 8)
    u0 = torch.randn(2, 1, N, N, generator=torch.Generator().manual_seed(3), dtype=F64)
    keep = torch.fft.rfft2(u0)
    keep[..., N // 2, :] = 0
    keep[..., :, N // 2] = 0
    u0 = torch.fft.irfft2(keep, s=(N, N))
    assert float((ad.step(u0, 8) - u0.roll(cells, (-2, -1))).abs().max()) <= 1e-12  # measured ~1e-14
    with_diffusion = AdvectionDiffusion(dim=2, N=N, velocity=ad.velocity, kappa=1e-3, dt=T / 8)
    assert float((with_diffusion.step(u0, 8) - u0.roll(cells, (-2, -1))).abs().max()) >= 1e-3


def test_advection_diffusion_bad_arguments():
    for bad, match in (
        (dict(dim=4), "dim 1, 2 or 3"),
        (dict(dim=2, velocity=(1.0,)), "one velocity component"),
        (dict(kappa=-0.1), "kappa >= 0"),
        (dict(N=31), "even grid size"),
        (dict(dt=-1.0), "dt > 0"),
    ):
        with pytest.raises(ValueError, match=match):
            AdvectionDiffusion(**bad)
    assert AdvectionDiffusion(dim=3, N=8).velocity == (1.0, 1.0, 1.0)


# --------------------------------------------------------------------------------------------
# FitzHugh–Nagumo diffusion–reaction
# --------------------------------------------------------------------------------------------


def test_fitzhugh_nagumo_linear_growth_matches_the_dispersion_relation():
    """Each trajectory seeds one Fourier mode m = (m_x, m_y) along the eigenvector of J − diag(D_u, D_v)|k|² with
    the larger real part, amplitude 1e-6 around u* = −k^{1/3}; over t = 1 the complex ratio of the mode's Fourier
    coefficient gives λ. Modes: Turing-unstable (6,0), (4,4), (0,2); oscillatory (1,0); damped (9,5).
    Measured relative error ≤ 1e-9 (ETDRK4 time error of the explicit reaction; nonlinear corrections are
    ~(1e-6)²); asserted 1e-8. The theory with D_u and D_v swapped misses by > 1e-2."""
    fhn = DiffReact2D(N=32)  # PDEBench parameters on [0, 2)²: D_u = 1e-3, D_v = 5e-3, k = 5e-3
    modes = [(6, 0), (4, 4), (0, 2), (1, 0), (9, 5)]
    x, y = fhn.grid
    q = 2 * math.pi / fhn.L
    k2 = torch.tensor([q**2 * (mx**2 + my**2) for mx, my in modes], dtype=F64)
    lam = fhn.eigenvalues(k2)[:, 0]  # (5,) closed form, larger real part
    states = []
    for (mx, my), kk in zip(modes, k2.tolist()):
        A = fhn.jacobian().numpy() - np.diag([fhn.Du, fhn.Dv]) * kk
        ev, V = np.linalg.eig(A)
        i = int(np.argmax(ev.real))
        assert abs(ev[i] - complex(lam[len(states)])) <= 1e-12 * abs(ev[i])  # formula = numerical eigenvalue
        e = torch.from_numpy(V[:, i]).view(2, 1, 1)
        states.append((e * torch.exp(1j * q * (mx * x + my * y))).real)
    u_star = fhn.steady_state()
    w0 = u_star + 1e-6 * torch.stack(states)  # (5, 2, N, N)
    T = 1.0
    w = fhn.step(w0, int(round(T / fhn.dt)))
    idx = torch.arange(len(modes))
    my = torch.tensor([m[1] for m in modes])
    mx = torch.tensor([m[0] for m in modes])
    ratio = torch.fft.rfft2(w)[idx, :, my, mx] / torch.fft.rfft2(w0)[idx, :, my, mx]  # (5, 2): both species
    measured = torch.log(ratio) / T
    err = float(((measured - lam[:, None]).abs() / lam.abs()[:, None]).max())
    assert err <= 1e-8, f"growth rates {measured[:, 0]} vs {lam}: relative error {err:.2e}"
    assert float(lam.real[:3].min()) > 0.05 and float(lam.real[4]) < -0.2 and float(lam.imag[3].abs()) > 0.2
    swapped = DiffReact2D(N=32, Du=fhn.Dv, Dv=fhn.Du).eigenvalues(k2)[:, 0]
    assert float(((measured[:, 0] - swapped).abs() / lam.abs()).max()) >= 1e-2
    assert float(fhn.growth_rate(k2).max()) == pytest.approx(float(lam.real.max()))


def test_fitzhugh_nagumo_steady_state_and_ode_reduction():
    """u* = −k^{1/3} is a fixed point; a spatially uniform state follows the reaction ODE (scipy, rtol 1e-12):
    measured 1.5e-10 (classical RK4 on the k = 0 mode at dt = 0.01), asserted 1e-9; at dt = 0.1 the error (1.8e-6)
    exceeds it (negative control)."""
    from scipy.integrate import solve_ivp

    fhn = DiffReact2D(N=16)
    u_star = fhn.steady_state()
    rest = torch.full((1, 2, 16, 16), u_star, dtype=F64)
    assert float((fhn.step(rest, 50) - u_star).abs().max()) <= 1e-15
    start = torch.tensor([[0.8, -0.3], [-1.2, 0.5]], dtype=F64)  # two trajectories
    w0 = start.view(2, 2, 1, 1).expand(2, 2, 16, 16).clone()
    rhs = lambda t, z: [z[0] - z[0] ** 3 - fhn.k - z[1], z[0] - z[1]]  # noqa: E731
    ref = torch.tensor(
        np.stack([solve_ivp(rhs, (0, 2.0), s, method="DOP853", rtol=1e-12, atol=1e-14).y[:, -1] for s in start.numpy()])
    )
    errors = []
    for dt in (0.01, 0.1):
        solver = DiffReact2D(N=16, dt=dt)
        w = solver.step(w0, int(round(2.0 / dt)))
        assert float((w - w.mean((-1, -2), keepdim=True)).abs().max()) <= 1e-14  # stays uniform
        errors.append(float((w[..., 0, 0] - ref).abs().max()))
    assert errors[0] <= 1e-9 < errors[1], errors


def test_fitzhugh_nagumo_without_reaction_is_the_heat_equation_and_conserves_means():
    fhn = DiffReact2D(N=32, reaction=False, dt=0.05)
    w0 = fhn.random_state(2, torch.Generator().manual_seed(4)) + torch.tensor([0.3, -0.2], dtype=F64).view(1, 2, 1, 1)
    w = fhn.step(w0, 40)
    drift = float((w.mean((-1, -2)) - w0.mean((-1, -2))).abs().max())
    assert drift <= 1e-14, drift  # ⟨u⟩, ⟨v⟩ conserved (measured ~1e-17)
    exact = torch.fft.irfft2(torch.fft.rfft2(w0) * torch.exp(fhn.linear * 2.0), s=(32, 32))
    assert float((w - exact).abs().max()) <= 1e-13
    reacting = DiffReact2D(N=32, dt=0.05).step(w0, 40)  # with reaction the means move
    assert float((reacting.mean((-1, -2)) - w0.mean((-1, -2))).abs().max()) >= 1e-2


def test_fitzhugh_nagumo_symmetries():
    """Translation (roll) and x↔y transposition equivariance; with k = 0 the reaction is odd, so −w0 evolves into
    −w exactly (negative control: with PDEBench's k = 5e-3 it does not)."""
    g = torch.Generator().manual_seed(6)
    fhn = DiffReact2D(N=32, dt=0.02)
    w0 = fhn.random_state(2, g)
    w = fhn.step(w0, 25)
    assert float((fhn.step(w0.roll((3, -7), (-2, -1)), 25) - w.roll((3, -7), (-2, -1))).abs().max()) <= 1e-12
    assert float((fhn.step(w0.transpose(-1, -2), 25) - w.transpose(-1, -2)).abs().max()) <= 1e-12
    odd = DiffReact2D(N=32, dt=0.02, k=0.0)
    assert float((odd.step(-w0, 25) + odd.step(w0, 25)).abs().max()) <= 1e-12
    assert float((fhn.step(-w0, 25) + w).abs().max()) >= 1e-3


def test_fitzhugh_nagumo_state_and_bad_arguments():
    fhn = DiffReact2D(N=16)
    a = fhn.random_state(3, torch.Generator().manual_seed(1))
    assert a.shape == (3, 2, 16, 16) and a.dtype == F64
    assert torch.equal(a, fhn.random_state(3, torch.Generator().manual_seed(1)))
    spectrum = torch.fft.rfft2(a).abs()  # rows m_y = 0..7, −8..−1; columns m_x = 0..8
    assert float(spectrum[..., 6:11, :].amax() + spectrum[..., :, 6:].amax()) <= 1e-12  # 2/3 band: |m| < 16/3
    for bad, match in (
        (dict(Du=0.0), "positive diffusivities"),
        (dict(Dv=-1e-3), "positive diffusivities"),
        (dict(N=15), "even grid size"),
        (dict(dt=0.0), "dt > 0"),
        (dict(L=0.0), "L > 0"),
    ):
        with pytest.raises(ValueError, match=match):
            DiffReact2D(**bad)


def test_new_equations_work_with_the_kit_generator():
    from theorylab.data.pde import generate

    fields, cfg = generate(Burgers1D(N=64, nu=0.02, dt=5e-3), 2, 10, 5, spinup=0.0, seed=0)
    assert fields.shape == (2, 3, 1, 64) and cfg["params"]["nu"] == 0.02
    fields, _ = generate(DiffReact2D(N=16, dt=0.05), 2, 4, 2, spinup=0.1, seed=0)
    assert fields.shape == (2, 3, 2, 16, 16) and torch.isfinite(fields).all()
    fields, _ = generate(AdvectionDiffusion(dim=2, N=16), 2, 4, 2, spinup=0.0, seed=0)
    assert fields.shape == (2, 3, 1, 16, 16)
