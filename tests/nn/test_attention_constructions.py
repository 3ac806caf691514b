"""The attention constructions of Amsel et al. against exact targets and a reference least-squares solve."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.data.nearest_points import d_mse, nearest_point_sets
from theorylab.nn.attention_constructions import fit_head_weights, full_rank_head, head_outputs, random_rank1_heads


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(2, 24), n=st.integers(2, 64))
def test_full_rank_hardmax_head_is_exact(seed, d, n):
    sets = nearest_point_sets(d, n, 16, torch.Generator().manual_seed(seed), dtype=torch.float64)
    assert float(d_mse(full_rank_head(d, dtype=torch.float64)(sets.sequence), sets.targets)) == 0.0


def test_wrong_sign_computes_the_nearest_point_instead():
    # With Q^T K = +I the head returns each point itself: d*MSE = E|x_i - x_far|^2 > 1, a failure the claim must see.
    d, n = 8, 6
    model = full_rank_head(d, dtype=torch.float64)
    model.set_head(0, 0, q=torch.eye(d, dtype=torch.float64))
    sets = nearest_point_sets(d, n, 64, torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(d_mse(model(sets.sequence), sets.targets)) > 1.0


def test_softmax_head_converges_as_beta_grows():
    sets = nearest_point_sets(16, 8, 500, torch.Generator().manual_seed(1), dtype=torch.float64)
    errs = [
        float(d_mse(full_rank_head(16, beta, dtype=torch.float64)(sets.sequence), sets.targets))
        for beta in (3, 30, 300, 3000)
    ]
    assert all(a > b for a, b in zip(errs, errs[1:]))
    assert errs[-1] < 1e-3
    assert full_rank_head(16, math.inf).blocks[0].attn.cfg.attention == "hard"


def test_rank1_head_picks_the_extreme_projection_on_the_query_side():
    d, h, n = 6, 5, 9
    model = random_rank1_heads(d, h, torch.Generator().manual_seed(2), dtype=torch.float64)
    theta = model.blocks[0].attn.W_Q[:, 0, :]  # (H, d), unit vectors (scale 1)
    torch.testing.assert_close(theta.norm(dim=1), torch.ones(h, dtype=torch.float64))
    x = nearest_point_sets(d, n, 4, torch.Generator().manual_seed(3), dtype=torch.float64).points
    z = head_outputs(model, x)  # (B, H, T, d)
    proj = torch.einsum("btd,hd->bht", x, theta)
    for b in range(4):
        for k in range(h):
            for i in range(n):
                j = int(proj[b, k].argmax()) if proj[b, k, i] > 0 else int(proj[b, k].argmin())
                torch.testing.assert_close(z[b, k, i], x[b, j])


def test_fit_head_weights_solves_least_squares():
    d, h = 6, 7
    model = random_rank1_heads(d, h, torch.Generator().manual_seed(4), dtype=torch.float64)
    sets = nearest_point_sets(d, 5, 300, torch.Generator().manual_seed(5), dtype=torch.float64)
    c = fit_head_weights(model, sets.sequence, sets.targets, chunk=64, ridge=0.0)
    z = head_outputs(model, sets.sequence)  # (B, H, T, d)
    design = z.permute(0, 2, 3, 1).reshape(-1, h)
    reference = torch.linalg.lstsq(design, sets.targets.reshape(-1, 1)).solution[:, 0]
    torch.testing.assert_close(c, reference, atol=1e-8, rtol=1e-7)
    prediction = torch.einsum("bhtd,h->btd", z, c)
    torch.testing.assert_close(model(sets.sequence), prediction)


def test_many_rank1_heads_stay_far_from_the_target():
    d = 8
    g = torch.Generator().manual_seed(6)
    train, test = (nearest_point_sets(d, 6, 800, g, dtype=torch.float64) for _ in range(2))
    model = random_rank1_heads(d, 64, g, dtype=torch.float64)
    fit_head_weights(model, train.sequence, train.targets)
    assert float(d_mse(model(test.sequence), test.targets)) > 0.5


@pytest.mark.parametrize("d", [4, 16])
def test_full_rank_softmax_bilinear_is_minus_beta_identity(d):
    attn = full_rank_head(d, 30.0, dtype=torch.float64).blocks[0].attn
    torch.testing.assert_close(attn.bilinear(0), -30.0 * torch.eye(d, dtype=torch.float64))
    torch.testing.assert_close(attn.ov(0), torch.eye(d, dtype=torch.float64))
