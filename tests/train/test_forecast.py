"""train.forecast: pairs from trajectories, the trajectory split, NMSE/nRMSE, and a forecaster that learns a step."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from theorylab.data.pde_equations import AdvectionDiffusion
from theorylab.nn.axial import XFieldCNN
from theorylab.train.forecast import (
    ForecastSet,
    forecast_pairs,
    nmse,
    nrmse,
    persistence_nrmse,
    split_trajectories,
    steps_to_reach,
    train_forecaster,
)


def test_forecast_pairs_windows_are_consecutive_frames():
    f = torch.arange(2 * 5 * 2 * 3, dtype=torch.float64).reshape(2, 5, 2, 3)  # 2 traj, 5 frames, 2 channels, n = 3
    s = forecast_pairs("t", f, history=2)
    assert s.x.shape == (2 * 3, 4, 3) and s.y.shape == (6, 2, 3) and s.x.dtype == torch.float32
    # trajectory 1, window starting at frame 2: inputs are frames 2, 3 (channels stacked oldest first), target 4
    k = 1 * 3 + 2
    assert torch.equal(s.x[k], torch.cat([f[1, 2], f[1, 3]]).float()) and torch.equal(s.y[k], f[1, 4].float())
    with pytest.raises(ValueError, match="history"):
        forecast_pairs("t", f, history=5)


def test_split_is_by_trajectory_and_disjoint():
    f = torch.arange(8.0).reshape(8, 1, 1, 1)
    train, test = split_trajectories(f, 0.25, torch.Generator().manual_seed(0))
    assert len(test) == 2 and len(train) == 6
    assert sorted(torch.cat([train, test]).flatten().tolist()) == list(range(8))
    with pytest.raises(ValueError, match="trajector"):
        split_trajectories(f[:1], 0.25, torch.Generator())


def test_nmse_and_persistence_against_hand_values():
    y = torch.tensor([[3.0, 4.0]])
    assert nmse(torch.tensor([[3.0, 5.0]]), y).item() == pytest.approx(1 / 25)
    s = ForecastSet("p", torch.tensor([[[0.0, 0.0]], [[1.0, 1.0]]]), torch.tensor([[[3.0, 4.0]], [[1.0, 1.0]]]))
    # predicting the last input: errors 5/5 = 1 and 0/√2 = 0, mean 0.5; the identity model reads the same
    assert persistence_nrmse(s, 1) == pytest.approx(0.5)
    assert nrmse(nn.Identity(), s) == pytest.approx(0.5)


def test_forecaster_learns_the_exact_advection_step():
    """A linear residual axial CNN trained on advection-diffusion frames beats persistence by far (the exact step
    is a 1-D convolution along the axis; the kit's solver is the reference)."""
    torch.manual_seed(0)
    eq = AdvectionDiffusion(dim=1, N=32, L=2 * math.pi, velocity=(1.0,), kappa=0.01, dt=0.01, peak=3.0)
    g = torch.Generator().manual_seed(1)
    u = eq.random_state(16, g)
    frames = torch.stack([u] + [u := eq.step(u, 5) for _ in range(7)], 1)
    train, test = split_trajectories(frames, 0.25, g)
    tr, te = forecast_pairs("adv", train), forecast_pairs("adv", test)
    net = XFieldCNN(1, 1, width=4, layers=0, kernel_size=5)
    out = train_forecaster(net, [tr], 300, 16, 1e-2, torch.Generator().manual_seed(2), eval_sets=[te], eval_every=100)
    assert [c[0] for c in out["curve"]] == [0, 100, 200, 300]
    assert nrmse(net, te) < 0.1 * persistence_nrmse(te, 1)
    assert steps_to_reach(out["curve"], "adv", nrmse(net, te) + 1e-9) is not None
    assert steps_to_reach(out["curve"], "adv", -1.0) is None


def test_divergence_is_reported():
    class Blow(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(()))

        def forward(self, x):
            return x * self.w * float("nan")

    s = ForecastSet("n", torch.randn(4, 1, 3), torch.randn(4, 1, 3))
    with pytest.raises(FloatingPointError, match="step 0"):
        train_forecaster(Blow(), [s], 3, 2, 1e-3, torch.Generator())
    seen = []
    with pytest.raises(RuntimeError):
        train_forecaster(
            Blow(),
            [s],
            3,
            2,
            1e-3,
            torch.Generator(),
            check=lambda what, v, step: (seen.append(step), math.isfinite(v) or _raise()),
        )
    assert seen == [0]


def _raise():
    raise RuntimeError("diverged")
