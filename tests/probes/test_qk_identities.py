"""Key-bias invariance and the query/key gauge freedom, exactly, on our toy transformer."""

from __future__ import annotations

import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.qk_identities import bias_gradients, gauge_transform


def _model(positional: str) -> ToyTransformer:
    torch.manual_seed(0)
    m = ToyTransformer(d_model=16, n_heads=2, n_layers=2, vocab_size=20, bias=True, positional=positional, seed=1).double()
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
        G = torch.randn(model.cfg.rank, model.cfg.rank, generator=torch.Generator().manual_seed(2), dtype=torch.float64) + 3 * torch.eye(model.cfg.rank, dtype=torch.float64)
        M_before = model.blocks[0].attn.bilinear(1).clone()
        gauge_transform(model.blocks[0].attn, 1, G)
        assert torch.allclose(model.blocks[0].attn.bilinear(1), M_before, atol=1e-12)
        assert torch.allclose(model(ids), before, atol=1e-10)


def test_qk_gradients_key_sums_vanish_query_sums_do_not():
    from theorylab.nn.toy_transformer import ToyTransformer
    from theorylab.probes.qk_identities import qk_gradients

    model = ToyTransformer(d_model=16, n_heads=2, n_layers=2, vocab_size=9, causal=True, positional="rotary", seed=0).double()
    tokens = torch.randint(0, 9, (2, 7), generator=torch.Generator().manual_seed(0))
    saved = qk_gradients(model, lambda m: m(tokens).pow(2).mean())
    assert len(saved) == 2 and {"q", "k", "S", "dq", "dk", "dS"} <= set(saved[0])
    for rec in saved:
        assert float(rec["dS"].sum(-1).abs().max()) < 1e-14 * float(rec["dS"].abs().max()) + 1e-300
        assert float(rec["dk"].sum(2).norm()) < 1e-12 * float(rec["dk"].norm())
        assert float(rec["dq"].sum(2).norm()) > 1e-3 * float(rec["dq"].norm())
