"""Mean-field training helpers: horizons, the reduction check and a width sweep's tidy rows, against brute force."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.nn.activations import HermiteActivation
from theorylab.theory.mean_field import OverlapDynamics, population_loss, projected_step, uniform_sphere
from theorylab.train.mean_field import (
    NetworkBatch,
    checkpoint_steps,
    reduction_against_reference,
    run_projected_gd,
    steps_to_loss_fraction,
    width_sweep,
)

ACT = HermiteActivation.he(4)


def test_checkpoint_steps():
    assert checkpoint_steps((0.0, 0.125, 0.25, 0.5, 1.0), 200) == [0, 25, 50, 100, 200]
    assert checkpoint_steps((1.0, 0.0, 0.01, 0.011), 10) == [0, 10]  # rounded, deduplicated, sorted


def test_steps_to_loss_fraction_is_the_first_step_below_the_ratio():
    d, m, eta = 10, 128, 0.2

    def horizon(cap):
        gen = torch.Generator().manual_seed(3)
        return steps_to_loss_fraction(ACT, d, m, eta=eta, stop_ratio=0.5, max_steps=cap, generator=gen)

    got = horizon(500)
    # brute force: the same particles, the loss recorded at every step
    w_star = torch.eye(d, dtype=torch.float64)[0]
    r = uniform_sphere((m,), d, torch.Generator().manual_seed(3))
    c = torch.full((m,), 1.0 / m, dtype=torch.float64)
    losses = [float(population_loss(ACT, r, c, w_star))]
    for _ in range(got):
        r = projected_step(ACT, r, c, w_star, eta)
        losses.append(float(population_loss(ACT, r, c, w_star)))
    assert losses[got] <= 0.5 * losses[0] and all(x > 0.5 * losses[0] for x in losses[1:got])
    assert horizon(got - 1) == got - 1


def test_reduction_against_reference_runs_the_reduction_and_the_half_step_reference():
    d, eta, steps = 12, 0.1, 15
    ref0 = uniform_sphere((256,), d, torch.Generator().manual_seed(5))
    out = reduction_against_reference(ACT, d, ref0, n=32, nodes=6, eta=eta, steps=steps)
    assert np.array_equal(out["L_reduced"], OverlapDynamics(ACT, d, 32, 6).run(eta, steps)[0])
    assert np.array_equal(out["L_reduced_coarse"], OverlapDynamics(ACT, d, 16, 6).run(eta, steps)[0])
    w_star = torch.eye(d, dtype=torch.float64)[0]
    c = torch.full((256,), 1 / 256, dtype=torch.float64)
    r, half = ref0.clone(), [float(population_loss(ACT, ref0, c, w_star))]
    for _ in range(steps):
        r = projected_step(ACT, projected_step(ACT, r, c, w_star, eta / 2), c, w_star, eta / 2)
        half.append(float(population_loss(ACT, r, c, w_star)))
    assert np.allclose(out["L_ref_half_eta"], half, rtol=1e-12, atol=0) and len(half) == steps + 1
    # first order in eta: the full-step reference sits close to the half-step one
    dummy = NetworkBatch(ref0[None, :1], torch.ones(1, 1, dtype=torch.float64), [1], [0])
    full = run_projected_gd(ACT, w_star, dummy, ref0, eta=eta, steps=steps, checkpoints=[0]).ref_loss
    assert np.abs(full - out["L_ref_half_eta"]).max() < 0.05 * full[0]


def test_width_sweep_rows_are_the_sweep_s_numbers():
    d, eta = 8, 0.1
    sw = width_sweep(
        ACT,
        d,
        (8, 16),
        2,
        64,
        eta=eta,
        steps=10,
        checkpoints=[0, 5, 10],
        generator=torch.Generator().manual_seed(0),
        escape_threshold=0.5,
    )
    rows = sw.gap_rows([0, 10], eta, setting="fast", eta=eta)
    assert len(rows) == 2 * 4 and list(rows[0]) == ["setting", "eta", "step", "t", "width", "seed", "gap", "ref_error"]
    assert [(r["width"], r["seed"]) for r in rows[:4]] == [(8, 0), (8, 1), (16, 0), (16, 1)]
    assert rows[5]["gap"] == float(sw.gaps[10][1]) and rows[5]["t"] == 10 * eta
    assert rows[5]["ref_error"] == sw.ref_error[10]
    esc = sw.escape_rows([5], eta, d=d)
    assert [r["seed"] for r in esc] == [0, 1, 0, 1, -1] and esc[-1]["width"] == 64
    assert esc[-1]["escaped_fraction"] == float(sw.history.ref_escaped[5])
    nets_w, ref_w = sw.history.snapshots[5]
    assert esc[2]["escaped_fraction"] == pytest.approx(float((nets_w[2, :16, 0].abs() >= 0.5).double().mean()))
    samples = sw.overlap_samples([0, 10], torch.eye(d, dtype=torch.float64)[0])
    names = [(0, "m = 8"), (0, "reference (m = 64)"), (10, "m = 8"), (10, "reference (m = 64)")]
    assert [(s, name) for s, name, _ in samples] == names
    assert np.array_equal(samples[2][2], sw.history.snapshots[10][0][0, :8, 0].numpy())
    assert np.array_equal(samples[3][2], sw.history.snapshots[10][1][:, 0].numpy())
