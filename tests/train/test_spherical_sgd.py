"""Spherical SGD: the projected step, the optimiser, the exact projected sampler vs the full one, crossings."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from theorylab.nn import SphericalSGD
from theorylab.train.spherical_sgd import crossing, spherical_step, train_msim_sgd


def test_spherical_step_and_optimiser():
    g = torch.Generator().manual_seed(0)
    u = torch.randn(3, 5, generator=g)
    u = u / u.norm(dim=-1, keepdim=True)
    grad = torch.randn(3, 5, generator=g)
    v = spherical_step(u, grad, 0.1)
    assert torch.allclose(v.norm(dim=-1), torch.ones(3))
    # a gradient along u itself is no move (only the tangent part acts)
    assert torch.allclose(spherical_step(u, 2 * u, 0.5), u, atol=1e-6)
    p = torch.nn.Parameter(u.clone())
    opt = SphericalSGD([p], lr=0.1, maximize=True)
    p.grad = grad.clone()
    opt.step()
    assert torch.allclose(p.detach(), v, atol=1e-6)
    with pytest.raises(ValueError, match="lr"):
        SphericalSGD([p], lr=0.0)


def test_crossing_matches_brute_force():
    samples = np.array([0, 10, 20, 30])
    vals = np.array([[0.1, 0.2], [0.6, 0.3], [0.4, 0.3], [0.9, 0.4]])
    c = crossing(samples, vals, 0.5)
    assert c[0] == 10 and math.isnan(c[1])


def test_projected_sampler_has_the_full_sampler_law():
    """From the same initial students, the mean |overlap| after 40 steps agrees between the exact-in-law shortcut and
    the full x ~ N(0, I_{d^2}) backpropagation (64 replicas, within 4 standard errors)."""
    g = torch.Generator().manual_seed(1)
    W = torch.randn(64, 2, 6, generator=g)
    W = W / W.norm(dim=-1, keepdim=True)
    out = {}
    for sampler in ("full", "projected"):
        run = train_msim_sgd(
            W,
            ("quadratic",) * 2,
            40 * 8,
            batch=8,
            c=0.3,
            generator=torch.Generator().manual_seed(2),
            log_every=10,
            sampler=sampler,
        )
        np.testing.assert_allclose(run.overlaps[0], out.get("init", run.overlaps[0]))  # same start
        out["init"] = run.overlaps[0]
        out[sampler] = np.abs(run.overlaps[-1])
    for layer in range(2):
        a, b = out["full"][:, layer], out["projected"][:, layer]
        se = math.sqrt(a.var() / 64 + b.var() / 64)
        assert abs(a.mean() - b.mean()) <= 4 * se
    assert np.abs(out["full"]).mean() > np.abs(out["init"]).mean() + 0.1  # it learned


def test_sgd_recovers_small_k2_and_rejects_bad_input():
    g = torch.Generator().manual_seed(3)
    W = torch.randn(4, 2, 8, generator=g)
    W = W / W.norm(dim=-1, keepdim=True)
    run = train_msim_sgd(W, ("quadratic",) * 2, 6000, generator=g)
    assert np.abs(run.overlaps[-1]).min() > 0.6
    with pytest.raises(ValueError, match="batch"):
        train_msim_sgd(W, ("quadratic",) * 2, 10, batch=32, generator=g)
    with pytest.raises(ValueError, match="sampler"):
        train_msim_sgd(W, ("quadratic",) * 2, 100, generator=g, sampler="fast")
