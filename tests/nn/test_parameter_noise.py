"""Bias perturbation: only biases move, by the generator's draws."""

from __future__ import annotations

import torch

from theorylab.nn.parameter_noise import is_bias, perturb_biases
from theorylab.nn.toy_transformer import ToyTransformer


def test_is_bias_names():
    assert is_bias("blocks.0.attn.b_Q") and is_bias("h.0.attn.c_attn.bias") and is_bias("b_U")
    assert not is_bias("blocks.0.attn.W_Q") and not is_bias("embed.weight")


def test_only_biases_move_by_the_generators_draws():
    model = ToyTransformer(d_model=8, n_heads=2, n_layers=1, vocab_size=5, seed=0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    perturb_biases(model, torch.Generator().manual_seed(3), scale=0.5)
    g = torch.Generator().manual_seed(3)
    moved = 0
    for n, p in model.named_parameters():
        if is_bias(n):
            expected = before[n] + 0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype)  # drawn in parameter order
            assert torch.equal(p, expected)
            moved += 1
        else:
            assert torch.equal(p, before[n])
    assert moved > 0
