"""Tensor probes against tensorly (unfold, Tucker/HOOI) and closed forms (rank-one tensors)."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.probes.tensor import (
    balanced_features,
    balanced_flattening,
    hosvd,
    hosvd_features,
    layer_axis,
    mode_product,
    overlaps,
    singular_value_ratios,
    unfold,
)

tl = pytest.importorskip("tensorly")


def _rank_one(rng, shape):
    ws = [v / np.linalg.norm(v) for v in (rng.standard_normal(s) for s in shape)]
    T = ws[0]
    for w in ws[1:]:
        T = np.multiply.outer(T, w)
    return T, ws


def test_unfold_and_mode_product_match_tensorly():
    T = np.random.default_rng(0).standard_normal((3, 4, 5))
    for mode in range(3):
        np.testing.assert_array_equal(unfold(T, mode), tl.unfold(T, mode))
    M = np.random.default_rng(1).standard_normal((2, 4))
    np.testing.assert_allclose(mode_product(T, M, 1), tl.tenalg.mode_dot(T, M, 1))


def test_full_hosvd_reconstructs_and_truncated_matches_hooi():
    rng = np.random.default_rng(2)
    T = rng.standard_normal((4, 5, 3))
    core, factors = hosvd(T, (4, 5, 3))
    np.testing.assert_allclose(tl.tucker_to_tensor((core, factors)), T, atol=1e-12)
    # nearly rank one: the rank-1 HOSVD and tensorly's HOOI (Tucker) agree up to sign
    S, ws = _rank_one(rng, (6, 7, 8))
    noisy = 5 * S + 0.05 * rng.standard_normal(S.shape)
    _, tf = tl.decomposition.tucker(noisy, rank=[1, 1, 1], init="svd", n_iter_max=50)
    _, ours = hosvd(noisy, 1)
    for mode, (a, b) in enumerate(zip(ours, tf)):
        assert abs(float(a[:, 0] @ b[:, 0])) > 1 - 1e-4  # HOOI refines HOSVD by O(noise^2)
        M = tl.unfold(noisy, mode)
        top = np.linalg.eigh(M @ M.T)[1][:, -1]  # HOSVD by definition, through tensorly's unfolding
        assert abs(float(a[:, 0] @ top)) > 1 - 1e-10


def test_layer_features_and_balanced_flattening_on_rank_one():
    rng = np.random.default_rng(3)
    for K in (3, 4):
        T, ws = _rank_one(rng, (5,) * K)  # axes (i_K, ..., i_1): ws[0] = w_K
        layers = ws[::-1]
        assert layer_axis(K, 1) == K - 1
        np.testing.assert_allclose(overlaps(np.stack(hosvd_features(T)), np.stack(layers)), 1, atol=1e-10)
        np.testing.assert_allclose(overlaps(np.stack(balanced_features(T)), np.stack(layers)), 1, atol=1e-10)
        assert balanced_flattening(T).shape == (5 ** (K // 2), 5 ** (K - K // 2))


def test_overlaps_and_ratios():
    u = np.array([[1.0, 0], [0.6, -0.8]])
    assert np.allclose(overlaps(-2 * u, u), 1)
    with pytest.raises(ValueError, match="shape"):
        overlaps(u, u[:1, :1])
    M = np.diag([3.0, 2.0, 1.0])
    np.testing.assert_allclose(singular_value_ratios(M, 3), [2 / 3, 1 / 3])
    with pytest.raises(ValueError, match="mode"):
        unfold(M, 2)
