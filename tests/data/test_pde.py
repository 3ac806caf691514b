"""The PDE kit's solvers against answers known in closed form (the _pde-kit card's reference checks)."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.data.pde import KS1D, NS2D, KSLeaky, etdrk4_coefficients, lyapunov_benettin, resample_spectral


@pytest.fixture(autouse=True)
def _one_thread():
    """Small FFT loops: one intra-op thread (the card's measured 90x slowdown with two on a loaded box)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_etdrk4_weights_have_the_right_limits():
    c = etdrk4_coefficients(torch.tensor([0.0, -1e-12, -2.0]), 0.1)
    assert torch.allclose(c["Q"][:2], torch.full((2,), 0.05, dtype=torch.float64), rtol=1e-12)  # h/2 at L = 0
    for name in ("f1", "f3"):
        assert c[name][0] == pytest.approx(0.1 / 6, rel=1e-12)
    assert c["f2"][0] == pytest.approx(0.1 / 6, rel=1e-12)
    assert c["E"][2] == pytest.approx(math.exp(-0.2))


def test_ks_conserves_the_mean_and_grows_a_linear_mode_exactly():
    ks = KS1D.preset("ks22")
    u = ks.spun_up(4, torch.Generator().manual_seed(0), time=50) + 0.3
    after = ks.step(u, 4000)
    assert float((after.mean(-1) - u.mean(-1)).abs().max()) <= 1e-12  # K-KS-mean
    m = 2
    u0 = 1e-8 * torch.cos(2 * math.pi * m * ks.x / ks.L)[None, None]
    steps = int(round(10 / ks.dt))
    growth = torch.fft.rfft(ks.step(u0, steps), dim=-1)[..., m].real / torch.fft.rfft(u0, dim=-1)[..., m].real
    q = 2 * math.pi * m / ks.L
    assert float(growth) == pytest.approx(math.exp((q**2 - q**4) * 10), rel=1e-9)  # K-KS-linear: rate 0.219817
    assert q**2 - q**4 == pytest.approx(0.219817, abs=1e-6)


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_ks_etdrk4_is_fourth_order():
    g = torch.Generator().manual_seed(1)
    u0 = KS1D(L=22.0, N=64, dt=0.25).spun_up(2, g, time=100)
    ref = KS1D(L=22.0, N=64, dt=0.0625 / 64).step(u0, 64 * 160)
    errors = [
        float((KS1D(L=22.0, N=64, dt=dt).step(u0, int(round(10 / dt))) - ref).abs().max()) for dt in (0.125, 0.0625)
    ]
    assert errors[0] / errors[1] >= 8  # K-KS-order: order >= 3


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_ks22_largest_lyapunov_exponent():
    ks = KS1D.preset("ks22")
    g = torch.Generator().manual_seed(2)
    lam, per = lyapunov_benettin(lambda x: ks.step(x), ks.spun_up(32, g), time=2000, dt=ks.dt, generator=g)
    assert 0.040 <= lam <= 0.055, lam  # K-KS-lyap: literature 0.043-0.048
    assert per.shape == (32,)


def test_ks_determinism_and_bad_parameters():
    ks = KS1D.preset("ks22")
    a = ks.spun_up(2, torch.Generator().manual_seed(5), time=20)
    b = ks.spun_up(2, torch.Generator().manual_seed(5), time=20)
    c = ks.spun_up(2, torch.Generator().manual_seed(6), time=20)
    assert torch.equal(a, b) and not torch.equal(a, c)
    with pytest.raises(ValueError, match="even N"):
        KS1D(N=63)
    with pytest.raises(ValueError, match="unknown KS preset"):
        KS1D.preset("ks23")


def test_taylor_green_decays_exactly():
    ns = NS2D(N=64, nu=0.01, drag=0.0, forcing_amplitude=0.0, dt=0.01)
    x, y = ns.grid
    kappa = 2
    w0 = (2 * kappa * torch.cos(kappa * x) * torch.cos(kappa * y))[None, None]
    w = ns.step(w0, 100)
    exact = w0 * math.exp(-2 * ns.nu * kappa**2 * 1.0)
    assert float((w - exact).norm() / exact.norm()) <= 1e-10  # K-NS-TG


def test_advection_sign_conventions():
    ns = NS2D(N=32, forcing_amplitude=0.0)
    x, y = ns.grid
    w = torch.cos(x) + torch.cos(2 * y)
    adv = torch.fft.irfft2(ns.advection(torch.fft.rfft2(w)), s=(32, 32))
    assert float((adv - 1.5 * torch.sin(x) * torch.sin(2 * y)).abs().max()) <= 1e-12  # K-NS-jacobian: −u·∇ω


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_inviscid_flow_conserves_energy_and_enstrophy_at_fourth_order():
    g = torch.Generator().manual_seed(3)
    drifts = []
    for dt in (5e-3, 2.5e-3):
        ns = NS2D(N=64, nu=0.0, drag=0.0, forcing_amplitude=0.0, dt=dt)
        w0 = ns.random_state(1, torch.Generator().manual_seed(3), peak=4, rms=5.0)
        E0, Z0 = ns.energy_enstrophy(w0)
        E1, Z1 = ns.energy_enstrophy(ns.step(w0, int(round(5 / dt))))
        drifts.append((abs(float(E1 / E0) - 1), abs(float(Z1 / Z0) - 1)))
    (dE, dZ), (dE2, dZ2) = drifts
    assert dE <= 1e-6 and dZ <= 5e-5  # K-NS-inviscid
    assert dE / dE2 >= 12 and dZ / dZ2 >= 12
    del g


def test_kolmogorov_laminar_state_is_a_fixed_point():
    ns = NS2D.preset("kolmo_re1k", N=32)
    x, y = ns.grid
    n = ns.forcing_mode
    w = (-n * torch.cos(n * y) / (ns.nu * n**2 + ns.drag))[None, None]
    assert float((ns.step(w, 100) - w).norm() / w.norm()) <= 1e-10  # K-NS-laminar


def test_resample_round_trip_and_band_limited_values():
    g = torch.Generator().manual_seed(4)
    x = resample_spectral(torch.randn(3, 1, 32, generator=g, dtype=torch.float64), 16)  # band-limited to 16 points
    assert torch.allclose(resample_spectral(resample_spectral(x, 64), 16), x, atol=1e-14)
    w = NS2D(N=16, forcing_amplitude=0.0).random_state(2, g, peak=2, rms=1.0)
    assert torch.allclose(resample_spectral(resample_spectral(w, 32, dims=2), 16, dims=2), w, atol=1e-14)
    c = torch.arange(32, dtype=torch.float64) * (2 * math.pi / 32)
    fine = torch.cos(3 * c)
    assert torch.allclose(resample_spectral(fine, 16), torch.cos(3 * c[::2]), atol=1e-14)


def test_leaky_emulator_drifts_where_the_solver_does_not():
    ks = KS1D.preset("ks22")
    g = torch.Generator().manual_seed(7)
    u = ks.spun_up(4, g)
    emulator = KSLeaky(ks)
    high = lambda z: torch.fft.rfft(z, dim=-1)[..., 8:].abs().pow(2).sum(-1).mean()  # noqa: E731
    x, y, left = u, u, None
    for step in range(1, 101):
        x = emulator(x, g)
        y = ks.step(y, 4)
        if left is None and not float(high(x)) <= 100 * float(high(y)):  # NaN counts as gone
            left = step
    assert left is not None and left < 100  # the (1 + η) leak pumps the small scales off the attractor
    assert torch.isfinite(y).all() and 0.8 < float(y.std()) < 1.6  # the solver stays on it (std ~1.19)
    no_leak = KSLeaky(ks, eta=-1.0, sigma=0.0)  # (1 + η) = 0: exactly the solver
    assert torch.equal(no_leak(u), ks.step(u, 4))


def test_coarsening_is_a_projection_and_closure_vanishes_where_it_must():
    from theorylab.data.pde import SpectralCoarsen, closure_target

    g = torch.Generator().manual_seed(8)
    fine = NS2D.preset("kolmo_re1k", N=128)
    coarse = NS2D.preset("kolmo_re1k", N=32)
    C = SpectralCoarsen(32, dims=2)
    w = fine.random_state(2, g, peak=8, rms=3.0)
    assert torch.allclose(C(C(w)), C(w), atol=1e-14)  # C∘C = C (sharp)
    inside = SpectralCoarsen(128, dims=2)(resample_spectral(C(w), 128, dims=2))  # supported inside the coarse band
    S = closure_target(fine, coarse, C, inside)
    ref = closure_target(fine, coarse, C, w)
    assert float(S.norm()) <= 1e-10 * float(ref.norm())

    class Linear(NS2D):
        def advection(self, w_hat):
            return torch.zeros_like(w_hat)

    lin_f, lin_c = Linear.preset("kolmo_re1k", N=128), Linear.preset("kolmo_re1k", N=32)
    assert float(closure_target(lin_f, lin_c, C, w).abs().max()) <= 1e-10  # no nonlinear term: nothing to close
    gauss = SpectralCoarsen(32, op="gauss", dims=2)(w)
    assert gauss.shape == (2, 1, 32, 32) and float(gauss.norm()) < float(C(w).norm())
    ks_c = SpectralCoarsen(16, length=22.0)(KS1D.preset("ks22").spun_up(2, g, time=10))
    assert ks_c.shape == (2, 1, 16)
    with pytest.raises(ValueError):
        SpectralCoarsen(32, op="box")


def test_trajectory_files_round_trip_deterministic_and_cached(tmp_path):
    pytest.importorskip("h5py")
    from theorylab.data.pde import cache_key, generate, load_trajectories

    ks = KS1D.preset("ks22")
    a, cfg = generate(ks, 3, 40, 4, spinup=10, seed=1)
    b, _ = generate(ks, 3, 40, 4, spinup=10, seed=1)
    c, _ = generate(ks, 3, 40, 4, spinup=10, seed=2)
    assert a.shape == (3, 11, 1, 64) and a.dtype == torch.float64
    assert a.numpy().tobytes() == b.numpy().tobytes() and not torch.equal(a, c)  # K-determinism
    path = tmp_path / "ks22.h5"
    fresh, _ = generate(ks, 3, 40, 4, spinup=10, seed=1, out=str(path))
    fields, meta = load_trajectories(str(path))
    assert torch.equal(fields, fresh.float()) and meta["cache_key"] == cache_key(cfg) and meta["config"]["seed"] == 1
    assert torch.allclose(meta["t"], torch.arange(11, dtype=torch.float64) * 1.0)
    again, _ = generate(ks, 3, 40, 4, spinup=10, seed=1, out=str(path))  # same key: read back, not regenerated
    assert again.dtype == torch.float32 and torch.equal(again, fields)
    other, _ = generate(ks, 3, 40, 4, spinup=10, seed=3, out=str(path))  # different key: regenerated and rewritten
    assert other.dtype == torch.float64 and load_trajectories(str(path))[1]["config"]["seed"] == 3
    assert not list(tmp_path.glob("*.part"))
    with pytest.raises(ValueError):
        generate(ks, 0, 10, 1, spinup=0, seed=0)


def test_coarse_trajectories_store_resampled_fields_and_hold_out_test_states():
    from theorylab.data.pde import coarse_trajectories

    solver = NS2D(N=16, nu=1e-2, dt=5e-3)
    w0 = solver.random_state(5, torch.Generator().manual_seed(0), peak=2, rms=1.0)
    seen = []

    def progress(items, what):
        seen.append(what)
        return items

    train, test0 = coarse_trajectories(solver, w0, 3, 130, 4, 2, 8, progress=progress)
    assert train.shape == (3, 5, 1, 8, 8) and train.dtype == torch.float32 and test0.shape == (2, 1, 8, 8)
    assert seen == ["Kolmogorov spin-up", "Kolmogorov data"]
    w = solver.step(solver.step(w0, 100), 30)  # the same spin-up by hand
    assert torch.allclose(test0, resample_spectral(w[3:], 8, dims=2))
    for t in range(5):
        assert torch.allclose(train[:, t], resample_spectral(w[:3], 8, dims=2).float(), atol=1e-6)
        w = solver.step(w, 2)


def test_ks22_trajectories_are_the_solver_stepped_four_at_a_time():
    from theorylab.data.pde import ks22_trajectories

    g = lambda seed: torch.Generator().manual_seed(seed)  # noqa: E731
    ks, train, std, test0, truth = ks22_trajectories(3, 6, 2, 5, g(1), g(2))
    assert train.shape == (3, 6, 1, 64) and truth.shape == (2, 6, 1, 64) and test0.shape == (2, 1, 64)
    assert std == pytest.approx(float(train.std()))
    x = ks.spun_up(3, g(1))  # the same draws by hand: the first stored frame is four solver steps on
    assert torch.equal(train[:, 0], ks.step(x, 4)) and torch.equal(truth[:, 0], test0)
    assert torch.allclose(truth[:, 5], ks.step(test0, 20), atol=1e-10)  # 5 x 4 steps vs 20: rounding only


def test_ns2d_batched_advection_and_float32_follow_the_float64_formula():
    solver = NS2D(N=32, nu=1e-2, dt=5e-3)
    w = solver.random_state(3, torch.Generator().manual_seed(4), peak=2, rms=1.0)
    w_hat = torch.fft.rfft2(w)
    u_hat, v_hat = solver.velocity_hat(w_hat)  # the advection term written field by field
    s = (32, 32)
    u, v = torch.fft.irfft2(u_hat, s=s), torch.fft.irfft2(v_hat, s=s)
    wx, wy = torch.fft.irfft2(1j * solver.kx * w_hat, s=s), torch.fft.irfft2(1j * solver.ky * w_hat, s=s)
    reference = -torch.fft.rfft2(u * wx + v * wy) * solver._mask
    torch.testing.assert_close(solver.advection(w_hat), reference, rtol=1e-12, atol=1e-12)
    fast = NS2D(N=32, nu=1e-2, dt=5e-3, dtype=torch.float32)
    a, b = solver.step(w, 200), fast.step(w, 200)
    assert b.dtype == torch.float32 and a.dtype == torch.float64
    assert float((a - b.double()).norm() / a.norm()) < 1e-4  # rounding only (measured ~1e-6)
    with pytest.raises(ValueError, match="dtype"):
        NS2D(N=32, dtype=torch.float16)
