"""Reversible truncation of query/key weights."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.lowrank import delta_loss, truncate


def _model():
    return ToyTransformer(d_model=16, n_heads=2, n_layers=2, vocab_size=11, seed=0).double()


def test_truncation_sets_ranks_keeps_m_balanced_and_restores():
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    a = model.blocks[0].attn
    M0 = a.W_Q.transpose(1, 2) @ a.W_K
    with truncate(model, "qk", 3):
        M = a.W_Q.transpose(1, 2) @ a.W_K
        U, s, Vh = torch.linalg.svd(M0)
        best = (U[..., :3] * s[..., None, :3]) @ Vh[..., :3, :]
        assert torch.allclose(M, best, atol=1e-10)
        assert torch.allclose(a.W_Q.norm(dim=-1), a.W_K.norm(dim=-1))  # balanced gauge
    with truncate(model, "k", 2):
        assert int(torch.linalg.matrix_rank(a.W_K[0])) == 2 and int(torch.linalg.matrix_rank(a.W_Q[0])) == 8
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))


def test_delta_loss_is_zero_at_full_rank_and_restores_after_errors():
    model = _model()
    tokens = torch.randint(0, 11, (2, 6), generator=torch.Generator().manual_seed(0))

    def loss(m):
        return m(tokens).pow(2).mean()

    assert delta_loss(model, loss, "q", 8) == 0.0
    assert delta_loss(model, loss, "q", 1) != 0.0
    before = model.blocks[1].attn.W_Q.detach().clone()
    with pytest.raises(RuntimeError):
        with truncate(model, "q", 1):
            raise RuntimeError("boom")
    assert torch.equal(model.blocks[1].attn.W_Q, before)
    with pytest.raises(ValueError, match="which"):
        with truncate(model, "v", 1):
            pass
