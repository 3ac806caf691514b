"""MSIM sampler: the layer wiring against a brute-force loop, the shortcut sampler's exactness, the torch path, the
first- and second-chaos estimators against closed forms, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from theorylab.data.msim import (
    MSIM,
    first_chaos_projection,
    first_chaos_tensor,
    msim,
    msim_forward_torch,
    msim_link,
    second_chaos_matrix,
    stack_features,
)


def _brute(model: MSIM, x: np.ndarray) -> float:
    """Nested loops over the (i_K, ..., i_1) layout: layer l contracts the last remaining axis."""
    d, K = model.d, model.K
    h = {idx: float(x[i]) for i, idx in enumerate(np.ndindex(*(d,) * K))}
    for layer in range(K):
        w, f = model.features[layer], msim_link(model.links[layer])
        nxt = {}
        for idx in np.ndindex(*(d,) * (K - layer - 1)):
            nxt[idx] = float(f(sum(w[j] * h[idx + (j,)] for j in range(d))))
        h = nxt
    return h[()]


def test_forward_matches_brute_force_and_shortcut_identity():
    rng = np.random.default_rng(0)
    model = msim(3, 3, rng, link=("quadratic", "linear", "quadratic"))
    x, y = model.sample(5, rng, dtype=np.float64)
    np.testing.assert_allclose(y, [_brute(model, xi) for xi in x], rtol=1e-12)
    # the shortcut's pieces from the same x: g = <w_1, x_block>, y = upper layers of sigma_1(g), z = <w ⊗ w ⊗ w, x>
    g = x.reshape(5, -1, 3) @ model.features[0]
    np.testing.assert_allclose(model.forward_blocks(msim_link("quadratic")(g), 2), y, rtol=1e-12)
    np.testing.assert_allclose(g @ model.upper_tensor().reshape(-1), x @ model.teacher_tensor().reshape(-1), rtol=1e-10)


def test_shortcut_has_the_full_sampler_law():
    """E[y], E[y^2], E[y z] by both samplers agree within 4 standard errors (d = 4, K = 2)."""
    model = msim(4, 2, np.random.default_rng(1))
    n = 200_000
    x, y_full = model.sample(n, np.random.default_rng(2), dtype=np.float64)
    z_full = x @ model.teacher_tensor().reshape(-1)
    _, y_sc, z_sc = model.sample_blocks(n, np.random.default_rng(3), dtype=np.float64)
    for a, b in ((y_full, y_sc), (y_full**2, y_sc**2), (y_full * z_full, y_sc * z_sc)):
        se = math.sqrt(a.var() / n + b.var() / n)
        assert abs(a.mean() - b.mean()) <= 4 * se


def test_links_are_normalised():
    g = np.random.default_rng(4).standard_normal(2_000_000)
    s = msim_link("quadratic")(g)
    assert abs(s.mean()) < 3e-3 and abs((s**2).mean() - 1) < 5e-3
    assert abs((s * g).mean() - 1 / math.sqrt(1.5)) < 3e-3


def test_torch_forward_matches_numpy():
    rng = np.random.default_rng(5)
    models = [msim(4, 3, rng) for _ in range(2)]
    x = rng.standard_normal((2, 7, 64))
    yt = msim_forward_torch(
        torch.as_tensor(x), torch.as_tensor(np.stack([np.stack(m.features) for m in models])), models[0].links
    )
    np.testing.assert_allclose(yt.numpy(), np.stack([m(x[i]) for i, m in enumerate(models)]), rtol=1e-10)


def test_first_chaos_estimators_against_closed_forms():
    # linear links: y = <w_2 ⊗ w_1, x> exactly, so E[y z] = 1 and E[y x] = w_2 ⊗ w_1
    model = msim(5, 2, np.random.default_rng(6), link="linear")
    ((mean, se),) = first_chaos_projection(model, 100_000, np.random.default_rng(7), chunk=10_000)
    assert abs(mean - 1) <= 4 * se
    T, C = first_chaos_tensor(
        stack_features([model]), model.links, [2000, 40_000], torch.Generator().manual_seed(0), chunk=5000, control=True
    )
    assert T.shape == (2, 1, 5, 5) and C.shape == T.shape
    err = (T[:, 0].numpy() - model.teacher_tensor()).reshape(2, -1)
    assert np.abs(err[1]).max() < 5 / math.sqrt(40_000) and np.abs(err[1]).max() < np.abs(err[0]).max()
    assert np.abs(C[1, 0].numpy()).max() < 5 / math.sqrt(40_000)  # independent y: no signal


def test_second_chaos_matrix_closed_form():
    """K = 1 quadratic: E[y (x x^T - I)] = w w^T / sqrt(1.5) (the He_2 coefficient 1/2, times 2)."""
    model = msim(4, 1, np.random.default_rng(8))
    C = second_chaos_matrix(stack_features([model]), model.links, 100_000, torch.Generator().manual_seed(1))
    w = model.features[0]
    assert np.abs(C.numpy() - np.outer(w, w) / math.sqrt(1.5)).max() < 0.03


def test_bad_input():
    with pytest.raises(ValueError, match="d >= 2"):
        msim(1, 2)
    with pytest.raises(ValueError, match="rng"):
        msim(4, 2, features="random")
    with pytest.raises(ValueError, match="features"):
        msim(4, 2, np.random.default_rng(0), features="gaussian")
    with pytest.raises(KeyError, match="unknown MSIM link"):
        msim(4, 2, features="flat", link="relu")
    with pytest.raises(ValueError, match="shape"):
        msim(4, 2, features="flat")(np.zeros((3, 15)))
    assert np.allclose(np.abs(msim(9, 2, np.random.default_rng(0), features="sign").features[0]), 1 / 3)
