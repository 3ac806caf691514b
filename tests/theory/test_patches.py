"""The patch lemmas against independent computations (least-norm solutions, direct evaluation)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.theory.patches import (
    NotControllable,
    input_patch,
    norm_scale_patch,
    post_norm_target,
    rank1_to_target,
    rms,
)


def _rand(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 12), n=st.integers(1, 12))
def test_rank1_to_target_hits_the_target_with_the_least_norm_update(seed, m, n):
    W, z, t = _rand(seed, m, n), _rand(seed + 1, n), _rand(seed + 2, m)
    dW = rank1_to_target(W, z, t)
    assert torch.allclose((W + dW) @ z, t, atol=1e-12, rtol=0)
    assert torch.linalg.matrix_rank(dW).item() == 1 or torch.allclose(t, W @ z)
    # Least-norm solution of ΔW z = r (a linear system in vec(ΔW)): the pseudo-inverse answer.
    r = t - W @ z
    least = r[:, None] @ torch.linalg.pinv(z[:, None])  # each row solves ΔW_i · z = r_i
    assert torch.allclose(dW, least, atol=1e-12)


def test_input_patch_is_dherins_formula():
    W, a_x, a_c = _rand(0, 5, 4), _rand(1, 4), _rand(2, 4)
    dW = input_patch(W, a_x, a_c)
    assert torch.allclose((W + dW) @ a_x, W @ a_c, atol=1e-13)
    assert torch.allclose(dW, torch.outer(W @ (a_c - a_x), a_x) / a_x.dot(a_x))


def test_norm_scale_patch_reproduces_any_target():
    eps = 1e-6
    t, scale = _rand(3, 7), 1 + 0.1 * _rand(4, 7)
    m_star = post_norm_target(t, scale)
    new = norm_scale_patch(scale, m_star, eps)
    out = m_star / rms(m_star, eps) * new
    assert torch.allclose(out, t, atol=1e-14)
    ratio = new / scale
    assert float(ratio.max() - ratio.min()) < 1e-14  # a scalar multiple of the old scale


def test_uncontrollable_cases_raise_with_the_condition():
    W = _rand(0, 3, 3)
    with pytest.raises(NotControllable, match="not output-controllable"):
        rank1_to_target(W, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
    with pytest.raises(NotControllable, match="not input-controllable"):
        input_patch(W, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
    scale = torch.tensor([1.0, 0.0, 2.0], dtype=torch.float64)
    with pytest.raises(NotControllable, match=r"coordinate\(s\) \[1\]"):
        post_norm_target(torch.ones(3, dtype=torch.float64), scale)
    # a dead scale entry is harmless where the target is 0 there
    assert post_norm_target(torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64), scale)[1] == 0
