"""Truncation curves and rank profiles of query/key weights, against exact answers."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.qk_compression import qk_rank_profile, truncation_curve
from theorylab.probes.spectra import stable_rank


def _model():
    return ToyTransformer(
        d_model=16,
        n_heads=2,
        n_layers=2,
        mlp_width=32,
        vocab_size=12,
        causal=True,
        positional="learned",
        max_len=10,
        seed=0,
    ).double()


def test_truncation_at_full_rank_costs_nothing_and_at_rank_one_costs_something():
    model = _model()
    ids = torch.randint(0, 12, (4, 10), generator=torch.Generator().manual_seed(0))

    def loss(m):
        with torch.no_grad():
            logits = m(ids[:, :-1])
            return torch.nn.functional.cross_entropy(logits.reshape(-1, 12), ids[:, 1:].reshape(-1))

    rows = truncation_curve(model, loss, (1 / 8, 1.0), head_dim=8)
    assert [(r["rank"], r["which"]) for r in rows] == [(1, "q"), (1, "k"), (1, "qk"), (8, "q"), (8, "k"), (8, "qk")]
    assert all(r["delta_loss"] == 0.0 for r in rows if r["rank"] == 8)
    assert all(abs(r["delta_loss"]) > 1e-6 for r in rows if r["rank"] == 1)
    assert float(loss(model)) == float(loss(_model()))  # the weights are restored


def test_qk_rank_profile_matches_the_weights_and_is_gauge_free():
    model = _model()
    rows = qk_rank_profile(model, head_dim=8)
    assert [(r["layer"], r["head"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    a = model.blocks[1].attn
    assert rows[3]["q_stable_rank"] == pytest.approx(float(stable_rank(a.W_Q[1].detach())), rel=1e-12)
    assert rows[3]["k_norm"] == pytest.approx(float(a.W_K[1].detach().norm()), rel=1e-12)
    assert all(1 <= r["balanced_stable_rank"] <= 8 for r in rows)
    from theorylab.probes.qk_identities import gauge_transform, random_gauge

    gauge_transform(a, 1, random_gauge(8, 10.0, torch.Generator().manual_seed(0)))
    moved = qk_rank_profile(model, head_dim=8)[3]
    assert moved["balanced_stable_rank"] == pytest.approx(rows[3]["balanced_stable_rank"], rel=1e-8)
    assert moved["q_stable_rank"] != pytest.approx(rows[3]["q_stable_rank"], rel=1e-3)
