"""The papers' ready-made transformers: what is frozen, what is there, and causality."""

from __future__ import annotations

import torch

from theorylab.nn.transformer_recipes import recall_transformer, small_gpt


def test_recall_transformer_freezes_embeddings_and_drops_ff():
    model = recall_transformer(d_model=32, vocab=20, seq_len=16, ff_width=128, seed=0)
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert any("embed" in n for n in frozen) and any("readout" in n for n in frozen)
    assert len(model.blocks) == 2 and all(b.mlp is not None for b in model.blocks)
    assert not any("bias" in n for n, _ in model.named_parameters())
    emb = next(p for n, p in model.named_parameters() if "embed" in n and p.shape[0] == 20)
    assert abs(float(emb.std()) - 32**-0.5) < 0.02  # N(0, 1/d)
    no_ff = recall_transformer(d_model=32, vocab=20, seq_len=16, ff_width=0, seed=0)
    assert all(b.mlp is None for b in no_ff.blocks)
    same = recall_transformer(d_model=32, vocab=20, seq_len=16, ff_width=128, seed=0)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), same.parameters()))


def test_small_gpt_is_causal():
    model = small_gpt(d_model=16, n_layers=2, n_heads=2, vocab=11, max_len=12, seed=0).double()
    x = torch.randint(11, (3, 12), generator=torch.Generator().manual_seed(0))
    y = x.clone()
    y[:, 7:] = (y[:, 7:] + 1) % 11
    with torch.no_grad():
        a, b = model(x), model(y)
    assert a.shape == (3, 12, 11)
    assert torch.allclose(a[:, :7], b[:, :7]) and not torch.allclose(a[:, 7:], b[:, 7:])
