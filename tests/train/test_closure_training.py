"""Closure data, offline training and the coupled coarse solver, each against an independent reference."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.core.rng import seeded
from theorylab.data.pde import KS1D, NS2D, SpectralCoarsen, closure_target, etdrk4_coefficients
from theorylab.data.qg import QG2L
from theorylab.nn.closure import GZFCNN, DirectClosure, MultiscaleClosure, PeriodicConv1d
from theorylab.probes.closure_checks import linear_only
from theorylab.train.closure import (
    CoupledSolver,
    NetClosure,
    _noised,
    channel_scale,
    closure_trajectories,
    coupled_rollout,
    split_closure_data,
    train_direct,
    train_multiscale,
)

L = 22.0


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_zero_closure_is_the_plain_coarse_solver_bit_for_bit():
    g = torch.Generator().manual_seed(0)
    ks = KS1D(L=L, N=32, dt=0.25, dealias=True)
    u = ks.random_state(3, g, amplitude=1.0)
    zero = CoupledSolver(ks, lambda x: torch.zeros_like(x))
    assert torch.equal(CoupledSolver(ks).step(u, 20), ks.step(u, 20))
    assert torch.equal(zero.step(u, 20), ks.step(u, 20)) and zero.calls == 80  # four closure calls per step
    ns = NS2D(N=16, dt=0.01)
    w = ns.random_state(2, g, rms=2.0)
    assert torch.equal(CoupledSolver(ns, lambda x: torch.zeros_like(x)).step(w, 5), ns.step(w, 5))
    qg = QG2L.preset("eddy", N=16)
    q = qg.random_state(2, g)
    assert torch.equal(CoupledSolver(qg, lambda x: torch.zeros_like(x)).step(q, 3), qg.step(q, 3))
    with pytest.raises(TypeError):
        CoupledSolver(object())


def test_a_constant_closure_enters_as_explicit_forcing_exactly():
    """Linear dynamics v_t = L v + f with a constant closure f: v(t) = e^{Lt} v_0 + (e^{Lt} − 1)/L f (f/L → t f
    at L = 0), which ETDRK4 integrates exactly; the sign and scale of the coupling are pinned."""
    g = torch.Generator().manual_seed(1)
    ks = linear_only(KS1D(L=L, N=32, dt=0.1, dealias=True))
    u0 = ks.random_state(2, g, amplitude=1.0)
    f = 0.3 * torch.randn(1, 1, 32, generator=g, dtype=torch.float64)
    f = f - f.mean()
    steps, t = 30, 30 * 0.1
    got = CoupledSolver(ks, lambda x: f.expand_as(x)).step(u0, steps)
    lam = ks.linear
    decay = torch.exp(lam * t)
    gain = torch.where(lam.abs() > 1e-12, (decay - 1) / torch.where(lam.abs() > 1e-12, lam, 1.0), t)
    exact = torch.fft.irfft(decay * torch.fft.rfft(u0, dim=-1) + gain * torch.fft.rfft(f, dim=-1), n=32, dim=-1)
    assert float((got - exact).abs().max()) <= 1e-10 * float(exact.abs().max())
    # the opposite sign is far off (negative control)
    wrong = CoupledSolver(ks, lambda x: -f.expand_as(x)).step(u0, steps)
    assert float((wrong - exact).abs().max()) > 1e-2
    assert etdrk4_coefficients(ks.linear, ks.dt)["E"].shape == (17,)


def test_coupled_rollout_tracks_blowup():
    ks = KS1D(L=L, N=32, dt=0.25, dealias=True)
    u = ks.random_state(4, torch.Generator().manual_seed(2), amplitude=1.0)
    run, blow = coupled_rollout(CoupledSolver(ks), u, 40, record_every=4)
    assert run.states.shape == (4, 11, 1, 32) and (blow == -1).all() and run.times[-1] == 40
    grow = CoupledSolver(ks, lambda x: 4.0 * x)  # e^{4t} growth: rms 1e3 within ~2 time units
    run, blow = coupled_rollout(grow, u, 400, record_every=4)
    assert (blow > 0).all() and (blow <= 400).all() and int(blow.max()) % 4 == 0
    rms = run.states[:, 1:].flatten(2).pow(2).mean(-1).sqrt()
    first = [int(run.times[1:][~(r <= 1e3)][0]) for r in rms]
    assert blow.tolist() == first


def test_closure_trajectories_store_coarse_states_and_level_targets():
    g = torch.Generator().manual_seed(3)
    fine, coarse = KS1D(L=L, N=64, dt=0.05), KS1D(L=L, N=32, dt=0.05, dealias=True)
    C = SpectralCoarsen(32, length=L)
    down = lambda x, n: SpectralCoarsen(n, length=L)(x)  # noqa: E731
    x0 = fine.spun_up(2, g, time=20)
    seen = []
    out = closure_trajectories(
        fine, coarse, {"sharp": (C, down)}, [16, 32], x0, 3, 4, on_record=lambda t, x: seen.append(x)
    )
    states, targets = out["sharp"]
    assert states.shape == (2, 3, 1, 32) and targets[0].shape == (2, 3, 1, 16) and targets[1].shape == (2, 3, 1, 32)
    x2 = fine.step(fine.step(x0, 4), 4)
    assert torch.equal(seen[2], x2) and torch.allclose(states[:, 2], C(x2), atol=1e-14)
    S = closure_target(fine, coarse, C, x2)
    assert torch.allclose(targets[1][:, 2], S, atol=1e-13) and torch.allclose(targets[0][:, 2], down(S, 16), atol=1e-13)
    split = split_closure_data(states, targets, 2)
    assert split.x_train.shape == (4, 1, 32) and split.x_test.shape == (2, 1, 32)
    assert split.x_train.dtype == torch.float32
    assert torch.allclose(split.x_train.double().std(), torch.tensor(1.0, dtype=torch.float64), atol=1e-6)
    assert torch.allclose(split.y_test[0], (targets[0][:, 2:].reshape(-1, 1, 16) / split.out_scale).float())
    other = split_closure_data(states, targets, test=(states[:1], [t[:1] for t in targets]))
    assert other.x_train.shape == (6, 1, 32) and other.x_test.shape == (3, 1, 32)
    assert channel_scale(torch.randn(5, 2, 8, 8)).shape == (2, 1, 1)
    with pytest.raises(ValueError):
        split_closure_data(states, targets, 3)


def _toy(n: int, g: torch.Generator):
    """A learnable target: a fixed periodic convolution of the input (exactly representable by one layer)."""
    conv = PeriodicConv1d(1, 1, 5)
    with torch.no_grad():
        conv.weight.copy_(torch.tensor([[[0.5, -1.0, 0.2, 1.0, -0.3]]]))
        conv.bias.zero_()
    x = torch.randn(n, 1, 16, generator=g)
    with torch.no_grad():
        return x, conv(x)


def test_training_fits_a_learnable_closure_and_freezes_lower_levels():
    g = torch.Generator().manual_seed(4)
    x, y = _toy(256, g)
    with seeded(0):
        direct = DirectClosure(GZFCNN.quick(1, 1, 8, 2, 5), 16)
    log = train_direct(direct, x, y, steps=300, batch=32, lr=1e-2, generator=g)
    assert log[-1]["loss"] < 0.02 * float(y.pow(2).mean()) and log[-1]["step"] == 300
    down = lambda t, n: SpectralCoarsen(n, length=L)(t).to(t.dtype)  # noqa: E731
    ms = MultiscaleClosure([8, 16], [GZFCNN.quick(1, 1, 6, 2, 5), GZFCNN.quick(2, 1, 6, 2, 5)], downsample=down)
    seen: dict[str, list] = {}

    def check(what, value, step):
        assert math.isfinite(value)
        seen.setdefault(what, []).append([p.detach().clone() for p in ms.nets[0].parameters()])

    train_multiscale(ms, x, [down(y, 8), y], steps=[100, 100], batch=32, lr=1e-2, generator=g, check=check)
    level1 = [k for k in seen if "level 1" in k][0]
    first, last = seen[level1][0], seen[level1][-1]
    assert all(torch.equal(a, b) for a, b in zip(first, last))  # net 0 frozen while net 1 trains
    assert all(p.requires_grad for p in ms.parameters())
    before = [p.detach().clone() for p in ms.parameters()]
    train_multiscale(ms, x, [down(y, 8), y], steps=[20, 20], batch=32, lr=1e-3, generator=g, mode="joint")
    assert all(not torch.equal(a, b) for a, b in zip(before, ms.parameters()))  # joint: every net moves
    with pytest.raises(ValueError):
        train_multiscale(ms, x, [y], steps=[10], batch=8, lr=1e-3, generator=g)
    with pytest.raises(ValueError):
        train_direct(direct, x, y, steps=0, batch=8, lr=1e-3, generator=g)


def test_noise_injection_and_net_closure_scales():
    g = torch.Generator().manual_seed(5)
    x = torch.zeros(4, 1, 8)
    assert torch.equal(_noised(x, 0.0, 0.0, g), x) and torch.equal(_noised(x, 1.0, 1.0, g), x)
    noised = [bool((_noised(x, 1.0, 0.5, g) != 0).any()) for _ in range(400)]
    assert 0.4 < sum(noised) / 400 < 0.6  # p_clean = 0.5: about half the batches get noise
    ident = torch.nn.Identity()
    u = torch.randn(2, 1, 8, dtype=torch.float64)
    out = NetClosure(ident, 2.0, 3.0)(u)
    assert out.dtype == torch.float64 and torch.allclose(out, 1.5 * u, atol=1e-6)
    per_channel = NetClosure(ident, torch.tensor([1.0, 2.0]).view(2, 1), torch.tensor([1.0, 4.0]).view(2, 1))
    v = torch.randn(3, 2, 8, dtype=torch.float64)
    assert torch.allclose(per_channel(v)[:, 1], 2 * v[:, 1], atol=1e-6)
