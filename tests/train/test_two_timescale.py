"""train.two_timescale: orthonormal Hermite features (quadrature), ridge, the QR retraction, and the finite-d
two-timescale algorithm against the overlap ODE from the same M(0) (population variant and with samples)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.data.index_models import HERMITE_LINKS, random_stiefel
from theorylab.theory.hermite import gauss_hermite_nd
from theorylab.theory.multi_index import grassmann_rhs
from theorylab.theory.order_ode import run_order_ode
from theorylab.train.two_timescale import hermite_features, multi_indices, retract, ridge, train_two_timescale


@pytest.mark.parametrize(("r", "degree"), [(1, 6), (2, 4), (3, 3)])
def test_hermite_features_orthonormal(r, degree):
    p, w = gauss_hermite_nd(r, degree + 2)
    F = hermite_features(torch.as_tensor(p), degree).numpy()
    assert F.shape[1] == len(multi_indices(r, degree))
    assert np.abs(F.T @ (w[:, None] * F) - np.eye(F.shape[1])).max() < 1e-11


def test_ridge_recovers_a_polynomial_link():
    z = torch.randn(5000, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = torch.as_tensor(HERMITE_LINKS["staircase"](z.numpy()))
    a = ridge(hermite_features(z, 4), y, 1e-12)
    assert torch.abs(hermite_features(z, 4) @ a - y).max() < 1e-8


def test_retraction_orthonormal_and_sign_fixed():
    W = torch.randn(10, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    Q = retract(W)
    assert torch.allclose(Q.T @ Q, torch.eye(3, dtype=torch.float64), atol=1e-12)
    Q0 = retract(Q)
    assert torch.allclose(Q0, Q, atol=1e-12)  # a point of St(d, r) is fixed (no column sign flips)


def _m1_smin(M):
    return np.sqrt((M @ np.swapaxes(M, 1, 2))[:, 0, 0]), np.linalg.svd(M, compute_uv=False)[:, -1]


def _setup(d=16, seed=0):
    rng = np.random.default_rng(seed)
    return random_stiefel(d, 2, rng), random_stiefel(d, 2, rng)


def test_population_variant_is_euler_of_the_ode():
    link = HERMITE_LINKS["staircase"]
    Ws, W0 = _setup()
    run = train_two_timescale(
        link,
        Ws,
        W0,
        steps=600,
        lr=0.01,
        batch=1,
        generator=torch.Generator().manual_seed(0),
        population=True,
        coeffs=link,
        log_every=20,
    )
    ode = run_order_ode(grassmann_rhs(link), Ws.T @ W0, float(run.t[-1]), t_eval=run.t)
    for a, b in zip(_m1_smin(run.M), _m1_smin(ode.states)):
        assert np.abs(a - b).max() < 0.02
    assert _m1_smin(run.M)[1][-1] > 0.99


@pytest.mark.parametrize("features", ["hermite", "random"])
def test_finite_d_tracks_the_ode(features):
    link = HERMITE_LINKS["staircase"]
    Ws, W0 = _setup()
    run = train_two_timescale(
        link,
        Ws,
        W0,
        steps=120,
        lr=0.05,
        batch=3000,
        features=features,
        n_features=300,
        generator=torch.Generator().manual_seed(1),
        log_every=10,
    )
    m1, smin = _m1_smin(run.M)
    if features == "hermite":  # the exact link class: tracks the ODE from the same M(0)
        ode = run_order_ode(grassmann_rhs(link), Ws.T @ W0, float(run.t[-1]), t_eval=run.t)
        m1o, smino = _m1_smin(ode.states)
        assert np.abs(m1 - m1o).max() < 0.15 and np.abs(smin - smino).max() < 0.15
        assert smin[-1] > 0.9
    else:  # 300 ReLU features: the first direction is still found (the approximation error slows the rest)
        assert m1[-1] > 0.9 > m1[0]
    assert np.isfinite(run.loss[1:]).all()


def test_bad_input():
    Ws, W0 = _setup()
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="W0"):
        train_two_timescale(HERMITE_LINKS["staircase"], Ws, W0[:, :1], steps=1, lr=0.1, batch=10, generator=g)
    with pytest.raises(ValueError, match="coeffs"):
        train_two_timescale(HERMITE_LINKS["staircase"], Ws, W0, steps=1, lr=0.1, batch=10, generator=g, population=True)
    with pytest.raises(ValueError, match="features"):
        train_two_timescale(HERMITE_LINKS["staircase"], Ws, W0, steps=1, lr=0.1, batch=10, generator=g, features="rkhs")
