"""One-step model updates and per-block gradient norms, against autograd and the linear regime of a step."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from theorylab.probes.update_response import (
    block_gradient_norms,
    causal_lm,
    deepnorm_update_sweep,
    depth_gradient_profile,
    relative_update,
)


def _tokens(seed=0):
    return torch.randint(0, 16, (2, 9), generator=torch.Generator().manual_seed(seed))


def test_relative_update_is_linear_in_a_small_gradient_step_and_sign_steps_are_larger():
    small = relative_update(causal_lm(16, 2, 16, 8, seed=0, n_layers=2), _tokens(), 1e-7)
    double = relative_update(causal_lm(16, 2, 16, 8, seed=0, n_layers=2), _tokens(), 2e-7)
    assert double["sgd"] / small["sgd"] == pytest.approx(2.0, rel=1e-4)  # first order in lr
    assert double["sign"] / small["sign"] == pytest.approx(2.0, rel=1e-4)
    assert small["sign"] > small["sgd"] > 0  # every coordinate moves by lr in a sign step; gradients are far below 1
    assert relative_update(causal_lm(16, 2, 16, 8, seed=0, n_layers=2), _tokens(), 0.0) == {"sgd": 0.0, "sign": 0.0}


def test_block_gradient_norms_match_autograd_per_block():
    model = causal_lm(16, 2, 16, 8, seed=1, n_layers=3)
    tokens = _tokens(1)
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 16), tokens[:, 1:].reshape(-1))
    expected = []
    for block in model.blocks:
        grads = torch.autograd.grad(loss, list(block.parameters()), retain_graph=True, allow_unused=True)
        expected.append(math.sqrt(sum(float(g.pow(2).sum()) for g in grads if g is not None)))
    model.zero_grad()
    assert block_gradient_norms(model, tokens) == pytest.approx(expected, rel=1e-12)


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_deepnorm_sweep_table_and_post_ln_growth():
    toy = dict(
        d_model=16,
        n_heads=2,
        vocab_size=16,
        batch=2,
        length=8,
        depths=(2, 8),
        exponents=(0.0, 0.25),
        n_seeds=1,
        lr=1e-3,
        init_seed=lambda N, s: 10 * N + s,
        data_generator=lambda s: torch.Generator().manual_seed(s),
    )
    t = deepnorm_update_sweep(**toy)
    assert list(t.columns) == ["variant", "p", "N", "seed", "update_sgd", "update_sign"] and len(t) == 3 * 2
    assert t["p"].isna().sum() == 2 and set(t["variant"]) == {"deepnorm", "post-LN"}
    plain = t[t["variant"] == "post-LN"].set_index("N")["update_sgd"]
    assert plain[8] > plain[2]  # plain post-LN's update grows with depth
    same = deepnorm_update_sweep(**toy)  # the same arguments again: deterministic
    assert same.equals(t)


def test_depth_gradient_profile_covers_both_norm_positions():
    t = depth_gradient_profile(
        d_model=16,
        n_heads=2,
        vocab_size=16,
        batch=2,
        length=8,
        depths=(2, 4),
        init_seed=lambda N: N,
        generator=torch.Generator().manual_seed(0),
    )
    assert len(t) == 2 * (2 + 4) and set(t["norm_position"]) == {"pre", "post"} and (t["grad_norm"] > 0).all()
    model = causal_lm(16, 2, 16, 8, seed=4, n_layers=4, norm_position="post", final_norm=False)
    tokens = torch.randint(0, 16, (2, 9), generator=torch.Generator().manual_seed(0))
    post4 = t[(t["norm_position"] == "post") & (t["N"] == 4)]["grad_norm"].to_list()
    assert post4 == pytest.approx(block_gradient_norms(model, tokens), rel=1e-12)
