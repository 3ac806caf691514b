"""Reversible interventions against hand-made edits and brute force."""

from __future__ import annotations

import copy

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.ablation import ablate, attention_to, best_rank_k, direct_logit, logit_margin, low_rank


def _model() -> ToyTransformer:
    return ToyTransformer(
        d_model=16,
        n_layers=2,
        n_heads=2,
        mlp_width=32,
        vocab_size=11,
        causal=True,
        positional="learned",
        max_len=9,
        norm="none",
        bias=False,
        seed=0,
    ).double()


def test_ablate_equals_zeroed_weights_and_is_removed():
    model = _model()
    x = torch.randint(11, (3, 9), generator=torch.Generator().manual_seed(0))
    before = model(x)
    zeroed = copy.deepcopy(model)
    with torch.no_grad():
        zeroed.blocks[1].mlp.down.weight.zero_()
    with ablate(model, "blocks.1.mlp"):
        inside = model(x)
    assert torch.equal(inside, zeroed(x))
    assert not torch.allclose(inside, before)
    assert torch.equal(model(x), before)  # hook removed
    with pytest.raises(KeyError, match="no sub-module"):
        with ablate(model, "blocks.7.mlp"):
            pass


def test_low_rank_truncates_and_restores_exactly():
    model = _model()
    name = "blocks.1.mlp.up.weight"
    w = model.get_parameter(name).detach().clone()
    u, s, vh = torch.linalg.svd(w)
    with low_rank(model, {name: 3}):
        inside = model.get_parameter(name).detach().clone()
    assert torch.equal(model.get_parameter(name), w)
    assert torch.linalg.matrix_rank(inside) == 3
    assert torch.allclose(inside, (u[:, :3] * s[:3]) @ vh[:3], atol=1e-12)
    assert torch.allclose(best_rank_k(w, 100), w, atol=1e-12)
    with pytest.raises(RuntimeError):
        with low_rank(model, {name: 1}):
            raise RuntimeError("boom")
    assert torch.equal(model.get_parameter(name), w)  # restored after an error too


def test_low_rank_truncates_per_head_weights_head_by_head():
    model = _model()
    name = "blocks.1.attn.W_V"  # (H, v, d): two heads
    w = model.get_parameter(name).detach().clone()
    with low_rank(model, {name: 2}):
        inside = model.get_parameter(name).detach().clone()
    assert torch.equal(model.get_parameter(name), w)
    for h in range(w.shape[0]):
        u, s, vh = torch.linalg.svd(w[h])
        assert torch.allclose(inside[h], (u[:, :2] * s[:2]) @ vh[:2], atol=1e-12)
        assert torch.linalg.matrix_rank(inside[h]) == 2


def test_margin_direct_logit_and_attention_to_against_loops():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 5, 7, generator=g)
    m = logit_margin(logits, 3)
    for i in range(4):
        for j in range(5):
            others = [float(logits[i, j, v]) for v in range(7) if v != 3]
            assert abs(float(m[i, j]) - (float(logits[i, j, 3]) - max(others))) < 1e-6
    comp, unembed = torch.randn(4, 6, generator=g), torch.randn(7, 6, generator=g)
    assert torch.allclose(direct_logit(comp, unembed), torch.stack([unembed @ c for c in comp]))
    pattern = torch.rand(2, 5, 5, generator=g)
    key = torch.tensor([[-1, 0, 1, 2, 0], [4, -1, 3, 3, 1]])
    got = attention_to(pattern, key)
    for b in range(2):
        for t in range(5):
            if key[b, t] < 0:
                assert torch.isnan(got[b, t])
            else:
                assert got[b, t] == pattern[b, t, key[b, t]]
