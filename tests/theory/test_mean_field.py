"""Mean-field closed forms against Monte Carlo and autograd; batching and padding change nothing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.nn.activations import HermiteActivation
from theorylab.theory.mean_field import (
    function_gap,
    init_gap_per_width,
    local_hessian_ratio,
    population_loss,
    projected_step,
    sphere_moment,
    uniform_sphere,
    velocity,
)
from theorylab.theory.rates import fit_inverse_width, fit_power_law
from theorylab.train.mean_field import NetworkBatch, run_projected_gd

ACT = HermiteActivation.mix({3: 1.0, 4: 1.0})


def _net(m, d, seed):
    g = torch.Generator().manual_seed(seed)
    return uniform_sphere((m,), d, g), torch.full((m,), 1.0 / m, dtype=torch.float64)


def test_kernel_is_mehler_expectation():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400_000, 2))
    rho = 0.6
    u, v = x[:, 0], rho * x[:, 0] + np.sqrt(1 - rho**2) * x[:, 1]
    samples = ACT(u) * ACT(v)
    assert abs(samples.mean() - float(ACT.kernel(torch.tensor(rho)))) < 4 * samples.std() / np.sqrt(len(samples))
    assert float(ACT.kernel(torch.tensor(1.0))) == pytest.approx(1.0)
    t = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    ACT.kernel(t).backward()
    assert float(t.grad) == pytest.approx(float(ACT.kernel_prime(torch.tensor(0.3, dtype=torch.float64))))


def test_population_loss_matches_monte_carlo():
    d, m = 6, 5
    w, c = _net(m, d, 1)
    w_star = torch.zeros(d, dtype=torch.float64)
    w_star[0] = 1
    rng = np.random.default_rng(2)
    x = rng.standard_normal((300_000, d))
    f = (ACT(x @ w.numpy().T) * c.numpy()).sum(1)
    err = 0.5 * (f - ACT(x[:, 0])) ** 2
    assert abs(err.mean() - float(population_loss(ACT, w, c, w_star))) < 4 * err.std() / np.sqrt(len(err))


def test_velocity_is_minus_m_times_the_projected_loss_gradient():
    d, m = 7, 4
    w, c = _net(m, d, 3)
    w_star = torch.zeros(d, dtype=torch.float64)
    w_star[1] = 1
    w_var = w.clone().requires_grad_()
    population_loss(ACT, w_var, c, w_star).backward()
    grad = w_var.grad * m
    proj = grad - (grad * w).sum(-1, keepdim=True) * w
    torch.testing.assert_close(velocity(ACT, w, c, w_star), -proj)


def test_sphere_moments_and_initial_gap():
    g = torch.Generator().manual_seed(4)
    a, b = uniform_sphere((200_000,), 5, g), uniform_sphere((200_000,), 5, g)
    t = (a * b).sum(-1).numpy()
    for j in (2, 4, 6):
        assert (t**j).mean() == pytest.approx(sphere_moment(j, 5), rel=0.03)
    assert sphere_moment(3, 5) == 0
    assert init_gap_per_width(HermiteActivation.he(4), 16) == pytest.approx(1 - 3 / (16 * 18))


def test_initial_gap_of_random_networks_is_the_formula_over_m():
    from theorylab.probes.function_gap import gap_to_reference

    d, m, reps = 8, 20, 300
    g = torch.Generator().manual_seed(5)
    act = HermiteActivation.he(4)
    nets = uniform_sphere((reps, m), d, g)
    big = uniform_sphere((8000,), d, g)  # the mean-field measure at t = 0 (uniform), finely sampled
    c = torch.full((reps, m), 1.0 / m, dtype=torch.float64)
    gaps, own = gap_to_reference(act, nets, c, big)
    assert own == pytest.approx(init_gap_per_width(act, d) / 8000, rel=0.5)  # the split-half estimate of C / m_ref
    assert (m * gaps.numpy()).mean() == pytest.approx(init_gap_per_width(act, d), rel=0.08)


def test_projected_step_stays_on_the_sphere_and_gap_is_a_distance():
    w, c = _net(10, 5, 6)
    w_star = torch.eye(5, dtype=torch.float64)[0]
    w2 = projected_step(ACT, w, c, w_star, 0.3)
    torch.testing.assert_close(w2.norm(dim=-1), torch.ones(10, dtype=torch.float64))
    assert float(function_gap(ACT, w, c, w, c)) == pytest.approx(0, abs=1e-12)
    assert float(function_gap(ACT, w, c, w2, c)) == pytest.approx(float(function_gap(ACT, w2, c, w, c)))


def test_padded_batch_trains_exactly_like_separate_networks():
    d = 6
    g = torch.Generator().manual_seed(7)
    nets = NetworkBatch.uniform((3, 8), 2, d, g)
    ref = uniform_sphere((16,), d, g)
    w_star = torch.eye(d, dtype=torch.float64)[0]
    together = run_projected_gd(ACT, w_star, nets, ref, eta=0.2, steps=15, checkpoints=[15])
    for b, alone in enumerate(nets.split()):
        hist = run_projected_gd(ACT, w_star, alone, ref, eta=0.2, steps=15, checkpoints=[15])
        m = nets.widths[b]
        torch.testing.assert_close(together.snapshots[15][0][b, :m], hist.snapshots[15][0][0], atol=1e-12, rtol=1e-12)
        assert together.net_loss[15][b] == pytest.approx(hist.net_loss[15][0], abs=1e-14)


def test_local_hessian_matches_finite_differences():
    d, m = 5, 6
    w, c = _net(m, d, 8)
    w_star = torch.eye(d, dtype=torch.float64)[2]
    ratio, op = local_hessian_ratio(ACT, w, c, w_star, torch.tensor([1]))
    point = w[1]
    eps = 1e-6

    def v_at(p):
        raw = ACT.kernel_prime(p @ w_star) * w_star - (ACT.kernel_prime(w @ p) * c) @ w
        return raw - (raw @ p) * p

    jac = torch.stack(
        [(v_at(point + eps * e) - v_at(point - eps * e)) / (2 * eps) for e in torch.eye(d, dtype=torch.float64)], dim=1
    )
    proj = torch.eye(d, dtype=torch.float64) - torch.outer(point, point)
    expected = torch.linalg.matrix_norm(proj @ jac @ proj, ord=2)
    assert float(op[0]) == pytest.approx(float(expected), rel=1e-5)
    assert float(ratio[0]) == pytest.approx(float(expected / v_at(point).norm()), rel=1e-5)


def test_rate_fits_recover_exponents():
    t = np.linspace(0.1, 100, 2000)
    c, (lo, hi), used = fit_power_law(t, 3 * t**-2.3, (1e-4, 1.0))
    assert c == pytest.approx(2.3, abs=1e-9) and lo <= 2.3 + 1e-9 and hi >= 2.3 - 1e-9 and used.any()
    assert fit_inverse_width(np.array([32, 64, 128]), 5 / np.array([32, 64, 128]) ** 0.8) == pytest.approx(0.8)
    assert np.isnan(fit_power_law(t[:2], t[:2], None)[0])


def test_overlap_reduction_starts_at_the_exact_uniform_loss_and_follows_the_particles():
    from theorylab.theory.mean_field import OverlapDynamics

    act, d = HermiteActivation.he(4), 16
    red = OverlapDynamics(act, d, n=256, nodes=12)
    exact = 0.5 * (1 - sphere_moment(4, d))  # L(uniform) = (K(1) - E K(s)) / 2, E K(s) = E s^4
    assert red.loss(red.s0) == pytest.approx(exact, rel=2e-3)
    losses, _ = red.run(0.1, 50)
    ref = uniform_sphere((2048,), d, torch.Generator().manual_seed(9))
    nets = NetworkBatch(ref[None, :1], torch.ones(1, 1, dtype=torch.float64), [1], [0])
    particles = run_projected_gd(
        act, torch.eye(d, dtype=torch.float64)[0], nets, ref, eta=0.1, steps=50, checkpoints=[0]
    ).ref_loss
    assert np.abs(losses - particles).max() < 0.03  # finite-width reference (~1/sqrt(2048)) and O(eta) differences


def test_mean_field_net_and_spherical_sgd_match_the_closed_forms():
    from theorylab.nn.activations import hermite_activation_torch
    from theorylab.nn.mean_field import MeanFieldNet, SphericalSGD

    z = np.linspace(-2.5, 2.5, 11)
    np.testing.assert_allclose(hermite_activation_torch(ACT, torch.tensor(z)).numpy(), ACT(z), atol=1e-12)
    net = MeanFieldNet(8, 5, ACT, generator=torch.Generator().manual_seed(0))
    w_star = torch.eye(5, dtype=torch.float64)[0]
    w0 = net.weight.detach().clone()
    opt = SphericalSGD([net.weight], lr=0.1 * 8)  # lr = eta * m: one mean-field step
    opt.zero_grad()
    net.population_loss(w_star).backward()
    opt.step()
    torch.testing.assert_close(
        net.weight.detach(), projected_step(ACT, w0, torch.full((8,), 1 / 8, dtype=torch.float64), w_star, 0.1)
    )
    x = torch.randn(200_000, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y = hermite_activation_torch(ACT, x[:, 0])
    with torch.no_grad():
        per_sample = 0.5 * (net(x) - y) ** 2  # heavy-tailed (degree-8 polynomial): compare within 4 SE
        se = float(per_sample.std() / np.sqrt(len(per_sample)))
        assert abs(float(net.empirical_loss(x, y)) - float(net.population_loss(w_star))) < 4 * se
    free = MeanFieldNet(4, 5, ACT, sphere=False, train_second_layer=True)
    with pytest.raises(ValueError, match="sphere"):
        free.population_loss(w_star)


def test_escape_tracking():
    act, d = HermiteActivation.he(4), 12
    g = torch.Generator().manual_seed(3)
    nets = NetworkBatch.uniform((16,), 2, d, g)
    ref = uniform_sphere((256,), d, g)
    hist = run_projected_gd(
        act,
        torch.eye(d, dtype=torch.float64)[0],
        nets,
        ref,
        eta=0.1,
        steps=150,
        checkpoints=[150],
        escape_threshold=0.5,
    )
    assert hist.ref_escaped[0] < 0.2 and hist.ref_escaped[-1] > hist.ref_escaped[0] + 0.3
    assert hist.net_escaped.shape == (151, 2)
    times = hist.ref_escape_time
    assert (
        np.nanmin(times) >= 0
        and np.nanmax(times) <= 15.0
        and np.isfinite(times).mean() == pytest.approx(hist.ref_escaped.max(), abs=0.2)
    )


def test_empirical_velocity_converges_to_the_population_velocity():
    from theorylab.nn.activations import hermite_activation_torch
    from theorylab.theory.mean_field import empirical_velocity

    act = HermiteActivation.he(2)
    g = torch.Generator().manual_seed(0)
    w, c = _net(6, 5, 10)
    w_star = torch.eye(5, dtype=torch.float64)[0]
    errors = []
    for n in (20_000, 320_000):
        x = torch.randn(n, 5, generator=g, dtype=torch.float64)
        y = hermite_activation_torch(act, x[:, 0])
        errors.append(
            float((empirical_velocity(act, w, c, x, y, block=4096) - velocity(act, w, c, w_star)).abs().max())
        )
    assert errors[1] < errors[0] / 2.5  # ~ n^-1/2: 16x the samples, ~4x smaller


def test_chunked_pairwise_computations_equal_the_unchunked_ones():
    """Every blocked computation (rows only, rows and columns, batched) gives the one-block result to float64
    rounding."""
    from theorylab.nn.activations import hermite_activation_torch
    from theorylab.theory.mean_field import empirical_velocity, kernel_mean, pair_blocks

    d, g = 5, torch.Generator().manual_seed(11)
    nets = NetworkBatch.uniform((3, 7, 12), 2, d, g)  # batch of 6 networks padded to 12
    ref = uniform_sphere((40,), d, g)
    rc = torch.full((40,), 1 / 40, dtype=torch.float64)
    w_star = torch.eye(d, dtype=torch.float64)[0]
    # columns split, rows split
    assert len(pair_blocks(6, 12, 12, 10)) > 1 and len(pair_blocks(1, 40, 40, 7)) > len(pair_blocks(1, 40, 40, 80)) > 1
    for limit in (1, 7, 50, 500):
        close = dict(rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(
            kernel_mean(ACT, ref, rc, ref, rc, limit), kernel_mean(ACT, ref, rc, ref, rc, 1 << 30), **close
        )
        torch.testing.assert_close(
            velocity(ACT, nets.w, nets.c, w_star, limit), velocity(ACT, nets.w, nets.c, w_star, 1 << 30), **close
        )
        torch.testing.assert_close(
            velocity(ACT, ref, rc, w_star, limit), velocity(ACT, ref, rc, w_star, 1 << 30), **close
        )
        torch.testing.assert_close(
            population_loss(ACT, nets.w, nets.c, w_star, limit),
            population_loss(ACT, nets.w, nets.c, w_star, 1 << 30),
            **close,
        )
        torch.testing.assert_close(
            function_gap(ACT, nets.w, nets.c, ref, rc, limit),
            function_gap(ACT, nets.w, nets.c, ref, rc, 1 << 30),
            **close,
        )
        r1, o1 = local_hessian_ratio(ACT, ref, rc, w_star, torch.arange(9), max_elements=limit)
        r2, o2 = local_hessian_ratio(ACT, ref, rc, w_star, torch.arange(9), max_elements=1 << 30)
        torch.testing.assert_close(r1, r2, **close)
        torch.testing.assert_close(o1, o2, **close)
        x = torch.randn(2, 30, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        y = hermite_activation_torch(ACT, x @ w_star)
        w2, c2 = nets.w[:2], nets.c[:2]
        torch.testing.assert_close(
            empirical_velocity(ACT, w2, c2, x, y, max_elements=limit),
            empirical_velocity(ACT, w2, c2, x, y, block=30),
            **close,
        )
    small = run_projected_gd(ACT, w_star, nets, ref, eta=0.2, steps=6, checkpoints=[6], max_elements=13)
    whole = run_projected_gd(ACT, w_star, nets, ref, eta=0.2, steps=6, checkpoints=[6], max_elements=1 << 30)
    np.testing.assert_allclose(small.ref_loss, whole.ref_loss, rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(small.snapshots[6][0], whole.snapshots[6][0], rtol=1e-12, atol=1e-13)


def test_an_allocation_failure_is_one_line_naming_the_size_and_the_field():
    from theorylab.core.errors import MissingResource
    from theorylab.train.mean_field import bounded_memory

    cpu = RuntimeError(
        "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: you "
        "tried to allocate 34359738368 bytes. Error code 12"
    )
    with pytest.raises(MissingResource) as hit:
        with bounded_memory("block_mib", 16.0, "m_ref"):
            raise cpu
    text = str(hit.value)
    assert "32.0 GiB" in text and "--set block_mib" in text and "\n" not in text
    with pytest.raises(MissingResource, match=r"32\.0 GiB"):
        with bounded_memory("block_mib", 16.0, "m_ref"):
            raise RuntimeError("CUDA out of memory. Tried to allocate 32.00 GiB (GPU 0; 23.6 GiB total capacity)")
    with pytest.raises(ValueError, match="unrelated"):
        with bounded_memory("block_mib", 16.0, "m_ref"):
            raise ValueError("unrelated")


def test_init_gap_monte_carlo_is_independent_of_the_kernel(monkeypatch):
    from theorylab.theory.mean_field import init_gap_monte_carlo

    act, d = HermiteActivation.he(4), 10
    est, se, square, _ = init_gap_monte_carlo(act, d, 1 << 15, torch.Generator().manual_seed(0))
    assert square == pytest.approx(1.0, abs=1e-12) and abs(est - init_gap_per_width(act, d)) < 4 * se
    monkeypatch.setattr(HermiteActivation, "kernel", lambda self, t: 2 * t**4)  # a wrong K cannot move the Monte Carlo
    assert init_gap_monte_carlo(act, d, 1 << 15, torch.Generator().manual_seed(0))[0] == est


def test_self_concordance_summary_matches_local_hessian_ratio_and_the_drive_at_initialisation():
    from theorylab.theory.mean_field import self_concordance_summary

    act, d, m = HermiteActivation.he(4), 24, 512
    w, c = _net(m, d, 11)
    w_star = torch.eye(d, dtype=torch.float64)[0]
    pick = torch.arange(0, m, 8)
    s = self_concordance_summary(act, w, w_star, pick, 0.5)
    ratio, op = local_hessian_ratio(act, w, c, w_star, pick)
    overlap = (w[pick] @ w_star).abs().numpy()
    escaping = overlap < 0.5
    assert s["ratio_p95"] == pytest.approx(float(np.percentile(ratio.numpy(), 95)))
    assert s["hessian_op_max"] == pytest.approx(float(op.max())) and s["escaping"] == int(escaping.sum())
    assert s["ratio_p95_escaping"] == pytest.approx(float(np.percentile(ratio.numpy()[escaping], 95)))
    # at uniform initialisation the drive dominates: |s| |H| / |v| ~ k - 1 on the equator band
    assert s["scaled_median_escaping"] == pytest.approx(3.0, rel=0.3)
    assert np.isnan(self_concordance_summary(act, w, w_star, pick, 1e-6)["ratio_p95_escaping"])  # < 5 escaping: NaN


def test_escape_time_summary():
    from theorylab.theory.mean_field import escape_time_summary

    times = np.array([np.nan, 1.0, 2.0, 3.0, np.nan, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    s = escape_time_summary(times)
    assert s == dict(escaped=10 / 12, median_escape_time=5.5, q10_escape_time=pytest.approx(1.9))
    none = escape_time_summary(np.full(4, np.nan))
    assert none["escaped"] == 0.0 and np.isnan(none["median_escape_time"]) and np.isnan(none["q10_escape_time"])


def test_step_halving_gaps_are_function_gaps_between_successive_step_sizes():
    from theorylab.theory.mean_field import step_halving_gaps

    act, d = HermiteActivation.he(2), 8
    finals = {eta: _net(64, d, seed)[0] for eta, seed in ((0.05, 1), (0.2, 2), (0.1, 3))}
    out = step_halving_gaps(act, finals)
    c = torch.full((64,), 1 / 64, dtype=torch.float64)
    assert [(a, b) for a, b, _ in out] == [(0.2, 0.1), (0.1, 0.05)]
    assert out[0][2] == pytest.approx(float(function_gap(act, finals[0.2], c, finals[0.1], c)))
    same = step_halving_gaps(act, {0.2: finals[0.2], 0.1: finals[0.2]})
    assert abs(same[0][2]) < 1e-14


def test_reduction_error_budget_bounds_a_loss_difference_by_the_function_gap():
    """|L(rho) - L(rho')| <= |f - f'| (|f - f*| + |f' - f*|) / 2 (Cauchy-Schwarz), checked on random networks."""
    from theorylab.theory.mean_field import reduction_error_budget

    act, d = HermiteActivation.mix({3: 1.0, 4: 1.0}), 10
    w_star = torch.eye(d, dtype=torch.float64)[0]
    for seed in range(5):
        (a, ca), (b, cb) = _net(16, d, 2 * seed), _net(32, d, 2 * seed + 1)
        la, lb = float(population_loss(act, a, ca, w_star)), float(population_loss(act, b, cb, w_star))
        gap = float(function_gap(act, a, ca, b, cb))
        la_, lb_ = np.array([la]), np.array([lb])
        width, step, disc = reduction_error_budget(la_, la_, lb_, lb_, np.array([gap]))
        assert abs(la - lb) <= width[0] + 1e-12 and step[0] == 0 and disc[0] == 0
    width, step, disc = reduction_error_budget(*(np.array([x]) for x in (0.5, 0.4, 0.3, 0.35, -1.0)))
    assert width[0] == 0 and step[0] == pytest.approx(0.2) and disc[0] == pytest.approx(0.1)


def test_init_gap_check_puts_the_closed_form_beside_the_monte_carlo():
    from theorylab.theory.mean_field import init_gap_check, init_gap_monte_carlo

    act, d = HermiteActivation.he(4), 12
    check = init_gap_check(act, d, 1 << 15, torch.Generator().manual_seed(4))
    est, se, square, cross = init_gap_monte_carlo(act, d, 1 << 15, torch.Generator().manual_seed(4))
    assert check == dict(
        init_theory=init_gap_per_width(act, d),
        init_mc=est,
        init_mc_se=se,
        sigma_square=square,
        sigma_cross_mc=cross,
        mc_samples=1 << 15,
    )
    assert abs(check["init_mc"] - check["init_theory"]) < 4 * check["init_mc_se"]


def test_single_index_link():
    from theorylab.nn.activations import single_index_link

    assert single_index_link(4) == HermiteActivation.he(4) and single_index_link(4).information_exponent == 4
    mixed = single_index_link(3)
    assert mixed.information_exponent == 3 and float(mixed.kernel(torch.tensor(1.0))) == pytest.approx(1.0)
    t = torch.tensor(0.3, dtype=torch.float64)
    assert float(mixed.kernel(t)) == pytest.approx((0.3**3 + 0.3**4) / 2)  # K = (t^3 + t^4) / 2
