"""Closure algebra, the Germano identity (exact, with its failing control) and offline skill, for KS, NS and QG."""

from __future__ import annotations

import pytest
import torch

from theorylab.data.pde import KS1D, NS2D, SpectralCoarsen, closure_target, resample_spectral, tendency
from theorylab.data.qg import QG2L, qg_closure_target
from theorylab.nn.closure import DirectClosure
from theorylab.probes.closure_checks import (
    band_limited,
    closure_algebra,
    full_band,
    germano_errors,
    linear_only,
    offline_relative_mse,
)

L = 32 * torch.pi


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def ks_states():
    fine = KS1D(L=float(L), N=128, dt=0.05)
    return fine, fine.spun_up(6, torch.Generator().manual_seed(0), time=60)


def test_closure_algebra_is_exact_on_ks_and_ns(ks_states):
    fine, u = ks_states
    coarse = KS1D(L=float(L), N=32, dt=0.05, dealias=True)
    C = SpectralCoarsen(32, length=float(L))
    a = closure_algebra(fine, coarse, C, u)
    assert a["idempotence"] <= 1e-14 and a["inside_band"] <= 1e-12 and a["linear"] <= 1e-12, a
    # the closure of a generic field is O(1) of the coarse tendency (the checks can fail)
    S = closure_target(fine, coarse, C, u)
    assert float(S.norm() / tendency(coarse, C(u)).norm()) > 0.05
    # without the coarse grid's own dealiasing a band-limited field has aliased products: S != 0 (control)
    raw = KS1D(L=float(L), N=32, dt=0.05)
    v = band_limited(u, 32)
    assert float(closure_target(fine, raw, C, v).norm() / tendency(raw, C(v)).norm()) > 1e-3
    ns_f, ns_c = NS2D(N=48, dt=0.01), NS2D(N=24, dt=0.01)
    w = ns_f.random_state(2, torch.Generator().manual_seed(1), peak=6, rms=3.0)
    b = closure_algebra(ns_f, ns_c, SpectralCoarsen(24, dims=2), w, dims=2)
    assert b["idempotence"] <= 1e-14 and b["inside_band"] <= 1e-12 and b["linear"] <= 1e-12, b


def test_linear_only_switches_off_just_the_nonlinear_term(ks_states):
    fine, u = ks_states
    lin = linear_only(fine)
    v = torch.fft.rfft(u, dim=-1)
    zero = torch.zeros_like(v)
    assert torch.equal(lin.nonlinear(v), zero) and not torch.equal(fine.nonlinear(v), zero)
    assert torch.allclose(tendency(lin, u), torch.fft.irfft(fine.linear * v, n=fine.N, dim=-1), atol=1e-12)
    assert fine.nonlinear(v).abs().max() > 0  # the original is untouched


def test_germano_identity_is_exact_and_its_control_fails(ks_states):
    fine, u = ks_states
    coarse, small = KS1D(L=float(L), N=32, dt=0.05, dealias=True), KS1D(L=float(L), N=16, dt=0.05, dealias=True)
    C, D = SpectralCoarsen(32, length=float(L)), SpectralCoarsen(16, length=float(L))
    assert float(germano_errors(fine, coarse, small, C, D, D, u).max()) <= 1e-12
    assert float(germano_errors(fine, coarse, small, full_band(32), full_band(16), full_band(16), u).max()) <= 1e-12
    control = germano_errors(fine, coarse, small, C, D, full_band(16), u)
    assert float(control.min()) >= 0.1
    # 2-D: NS with nested sharp truncations, and QG through its own right-hand side
    ns = [NS2D(N=n, dt=0.01) for n in (48, 24, 12)]
    w = ns[0].random_state(2, torch.Generator().manual_seed(2), peak=6, rms=3.0)
    ops = [SpectralCoarsen(n, dims=2) for n in (24, 12)]
    assert float(germano_errors(ns[0], ns[1], ns[2], ops[0], ops[1], ops[1], w).max()) <= 1e-12
    qg = [QG2L.preset("eddy", N=n) for n in (32, 16, 8)]
    q = qg[0].random_state(2, torch.Generator().manual_seed(3), peak=4.0)
    qops = [SpectralCoarsen(n, dims=2, length=qg[0].L) for n in (16, 8)]
    assert float(germano_errors(qg[0], qg[1], qg[2], qops[0], qops[1], qops[1], q).max()) <= 1e-12


def test_one_closure_target_for_ks_ns_and_qg():
    """``closure_target`` is one function: for QG it equals the kit's ``qg_closure_target``; for NS and KS it is
    C(F_fine) − F_coarse(C ·) with F the right-hand side, linear part included."""
    g = torch.Generator().manual_seed(4)
    qf, qc = QG2L.preset("eddy", N=32), QG2L.preset("eddy", N=16)
    q = qf.random_state(2, g, peak=6.0)
    C = SpectralCoarsen(16, dims=2, length=qf.L)
    assert torch.equal(closure_target(qf, qc, C, q), qg_closure_target(qf, qc, C, q))
    ks = KS1D(L=22.0, N=64, dt=0.25)
    u = ks.random_state(2, g, amplitude=1.0)
    v = torch.fft.rfft(u, dim=-1)
    assert torch.allclose(tendency(ks, u), torch.fft.irfft(ks.linear * v + ks.nonlinear(v), n=64, dim=-1))
    with pytest.raises(TypeError):
        tendency(object(), u)


def test_full_band_and_band_limited_fields():
    x = torch.randn(2, 1, 32, dtype=torch.float64)
    assert torch.equal(full_band(16)(x), resample_spectral(x, 16))
    y = band_limited(x, 16)
    assert torch.fft.rfft(y, dim=-1)[..., 6:].abs().max() < 1e-12 and torch.allclose(
        torch.fft.rfft(y, dim=-1)[..., :6], torch.fft.rfft(x, dim=-1)[..., :6]
    )
    z = band_limited(torch.randn(1, 1, 16, 16, dtype=torch.float64), 12, dims=2)
    assert torch.fft.rfft2(z)[..., 4:].abs().max() < 1e-12


class _Fixed(torch.nn.Module):
    def __init__(self, out):
        super().__init__()
        self.out = out

    def forward(self, x):
        return self.out[: len(x)]


def test_offline_relative_mse_is_zero_for_the_truth_and_one_for_zero():
    S = torch.randn(10, 1, 16)
    x = torch.randn(10, 1, 16)
    assert offline_relative_mse(DirectClosure(_Fixed(S), 16), x, [S], chunk=10) == [0.0]
    zero = DirectClosure(_Fixed(torch.zeros_like(S)), 16)
    assert offline_relative_mse(zero, x, [S], chunk=10) == pytest.approx([1.0])
    half = offline_relative_mse(DirectClosure(_Fixed(0.5 * S), 16), x, [S], chunk=10)[0]
    assert half == pytest.approx(0.25)
