"""Block families: shapes, batching, causality, and the states they expose."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.blocks import FAMILIES, make_stack


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_equals_per_sequence_and_is_causal(family):
    stack = make_stack(family, 2, 8, seed=0)
    X = torch.randn(3, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        Y = stack(X)
        assert torch.allclose(Y[1], stack(X[1]), atol=1e-13)
        X2 = X[0].clone()
        X2[-1] += 1.0  # changing the last token leaves earlier positions alone
        assert torch.allclose(stack(X2)[:-1], Y[0, :-1], atol=1e-13)
        assert not torch.allclose(stack(X2)[-1], Y[0, -1])


@pytest.mark.parametrize("family", FAMILIES)
def test_query_state_matches_forward(family):
    block = make_stack(family, 1, 8, seed=1).blocks[0]
    X = torch.randn(5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        s = block.query_state(X)
        assert torch.equal(s["out"], block(X)[-1])
        assert torch.equal(s["x"], X[-1])


def test_gemma_block_is_the_cards_formula():
    block = make_stack("gemma", 1, 8, seed=2).blocks[0]
    X = torch.randn(4, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(2))

    def N(z, g):
        return z / torch.sqrt(z.pow(2).mean(-1, keepdim=True) + block.eps) * (1 + g)

    with torch.no_grad():
        h = X + N(block.attend(N(X, block.g1)), block.g2)
        n = N(h, block.g3)
        z = torch.nn.functional.gelu(n @ block.W_g.T, approximate="tanh") * (n @ block.W_u.T)
        assert torch.allclose(block(X), h + N(z @ block.W_d.T, block.g4), atol=1e-13)


def test_make_stack_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown block family"):
        make_stack("rwkv", 1, 8, seed=0)
    with pytest.raises(ValueError, match="divisible"):
        make_stack("llama", 1, 9, seed=0, n_heads=2)
    with pytest.raises(ValueError, match="top_k"):
        make_stack("moe", 1, 8, seed=0, n_experts=2, top_k=3)
