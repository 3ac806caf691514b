"""Key-bias invariance and the query/key gauge freedom, exactly, on our toy transformer."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.qk_identities import bias_gradients, gauge_transform


def _model(positional: str) -> ToyTransformer:
    torch.manual_seed(0)
    m = ToyTransformer(
        d_model=16, n_heads=2, n_layers=2, vocab_size=20, bias=True, positional=positional, seed=1
    ).double()
    with torch.no_grad():
        for block in m.blocks:
            block.attn.b_K.normal_()
            block.attn.b_Q.normal_()
    return m


def _loss(ids):
    def fn(model):
        logits = model(ids[:, :-1])
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))

    return fn


def test_key_bias_has_exactly_zero_gradient_without_rotation():
    ids = torch.randint(0, 20, (4, 12), generator=torch.Generator().manual_seed(0))
    for positional in ("none", "learned"):
        g = bias_gradients(_model(positional), _loss(ids))
        assert g["key_bias_grad"].max() < 1e-14 and g["query_bias_grad"].min() > 1e-6
    g = bias_gradients(_model("rotary"), _loss(ids))
    assert g["key_bias_grad"].min() > 1e-8  # RoPE rotates the bias: the invariance breaks


def test_gauge_transform_leaves_the_function_unchanged():
    model = _model("none")
    ids = torch.randint(0, 20, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        before = model(ids)
        G = torch.randn(
            model.cfg.rank, model.cfg.rank, generator=torch.Generator().manual_seed(2), dtype=torch.float64
        ) + 3 * torch.eye(model.cfg.rank, dtype=torch.float64)
        M_before = model.blocks[0].attn.bilinear(1).clone()
        gauge_transform(model.blocks[0].attn, 1, G)
        assert torch.allclose(model.blocks[0].attn.bilinear(1), M_before, atol=1e-12)
        assert torch.allclose(model(ids), before, atol=1e-10)


def test_qk_gradients_key_sums_vanish_query_sums_do_not():
    from theorylab.nn.toy_transformer import ToyTransformer
    from theorylab.probes.qk_identities import qk_gradients

    model = ToyTransformer(
        d_model=16, n_heads=2, n_layers=2, vocab_size=9, causal=True, positional="rotary", seed=0
    ).double()
    tokens = torch.randint(0, 9, (2, 7), generator=torch.Generator().manual_seed(0))
    saved = qk_gradients(model, lambda m: m(tokens).pow(2).mean())
    assert len(saved) == 2 and {"q", "k", "S", "dq", "dk", "dS"} <= set(saved[0])
    for rec in saved:
        assert float(rec["dS"].sum(-1).abs().max()) < 1e-14 * float(rec["dS"].abs().max()) + 1e-300
        assert float(rec["dk"].sum(2).norm()) < 1e-12 * float(rec["dk"].norm())
        assert float(rec["dq"].sum(2).norm()) > 1e-3 * float(rec["dq"].norm())


def _plain(positional: str, causal: bool = True) -> ToyTransformer:
    return ToyTransformer(
        d_model=16,
        n_heads=2,
        n_layers=2,
        mlp_width=32,
        vocab_size=20,
        causal=causal,
        positional=positional,
        max_len=12,
        seed=3,
    ).double()


def test_next_token_losses_are_the_per_position_cross_entropy():
    from theorylab.probes.qk_identities import next_token_losses

    model = _plain("learned")
    ids = torch.randint(0, 20, (3, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        per = next_token_losses(model, ids)
        logits = model(ids[:, :-1])
        mean = torch.nn.functional.cross_entropy(logits.reshape(-1, 20), ids[:, 1:].reshape(-1))
    assert per.shape == (3, 9) and float(per.mean()) == pytest.approx(float(mean), rel=1e-14)
    assert float(per[1, 4]) == pytest.approx(float(-logits[1, 4].log_softmax(-1)[ids[1, 5]]), rel=1e-14)


def test_bias_effect_key_side_invisible_without_rope_and_the_biases_are_restored():
    from theorylab.probes.qk_identities import bias_effect

    ids = torch.randint(0, 20, (2, 10), generator=torch.Generator().manual_seed(0))
    model = _plain("learned")
    saved = [p.clone() for p in model.parameters()]
    assert bias_effect(model, ids, "key", 10.0, torch.Generator().manual_seed(1)) < 1e-12
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), saved))
    assert bias_effect(model, ids, "query", 10.0, torch.Generator().manual_seed(1)) > 1e-3
    assert bias_effect(_plain("rotary"), ids, "key", 10.0, torch.Generator().manual_seed(1)) > 1e-3


def test_key_gradient_sums_are_within_rounding_and_query_sums_are_not():
    from theorylab.probes.qk_identities import key_gradient_sums

    ids = torch.randint(0, 20, (2, 11), generator=torch.Generator().manual_seed(0))
    for dtype, positional in ((torch.float64, "rotary"), (torch.float32, "none")):
        rows = key_gradient_sums(_plain(positional).to(dtype), ids)
        assert len(rows) == 2 * 2 * 2  # layers x sequences x heads
        assert all(r["key_ratio"] <= r["key_tolerance"] and r["dS_row_sum"] <= r["row_sum_tolerance"] for r in rows)
        assert all(r["query_ratio"] > 1e-3 for r in rows)
        assert rows[0]["row_sum_tolerance"] == 2 * 10 * torch.finfo(dtype).eps
        if positional == "none":
            assert all(r["key_bias_grad"] < 1e-6 * r["query_bias_grad"] for r in rows)


def test_causal_key_support_only_later_losses_reach_a_key():
    from theorylab.probes.qk_identities import causal_key_support

    ids = torch.randint(0, 20, (2, 11), generator=torch.Generator().manual_seed(0))
    rows = causal_key_support(_plain("rotary"), ids, (1, 5, 9))
    assert [(r["j"], r["layer"]) for r in rows] == [(1, 0), (1, 1), (5, 0), (5, 1), (9, 0), (9, 1)]
    assert max(max(r["before_norm"], r["after_gap"]) for r in rows) < 1e-12 and min(r["full_norm"] for r in rows) > 0
    leaky = causal_key_support(_plain("rotary", causal=False), ids, (5,))  # bidirectional: earlier losses see key 5
    assert min(r["before_norm"] for r in leaky) > 1e-3


def test_random_gauge_has_the_stated_condition_number_and_gauge_rank_changes_keep_the_logits():
    from theorylab.probes.qk_identities import gauge_rank_changes, random_gauge

    G = random_gauge(6, 10.0, torch.Generator().manual_seed(0))
    s = torch.linalg.svdvals(G)
    assert float(s.max() / s.min()) == pytest.approx(10.0, rel=1e-12)
    assert float(s.min()) == pytest.approx(1.0, rel=1e-12)
    model, exact = _plain("learned", causal=False).float(), _plain("learned", causal=False)
    ids = torch.randint(0, 20, (2, 10), generator=torch.Generator().manual_seed(0))
    rows = gauge_rank_changes(model, exact, ids, 10.0, torch.Generator().manual_seed(1))
    assert len(rows) == 4 and all(r["logit_change"] < 1e-5 for r in rows)
    assert all(r["balanced_rank_change"] < 1e-8 for r in rows) and max(r["q_rank_change"] for r in rows) > 0.1
