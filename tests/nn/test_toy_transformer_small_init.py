"""ToyTransformer's small-ε initialisation (init="normal") and the no-W_O option (output_projection=False), the
one-layer model of Chen, Lin, Xu & Luo (arXiv 2605.01199)."""

from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError
from scipy import stats

from theorylab.nn import ToyTransformer

CARD = dict(
    vocab_size=10,
    d_model=16,
    n_heads=1,
    mlp_width=0,
    norm="none",
    residual=False,
    bias=False,
    causal=True,
    output_projection=False,
)


def test_every_weight_is_normal_with_std_eps():
    eps = 0.05
    m = ToyTransformer(
        vocab_size=50,
        d_model=64,
        n_heads=2,
        mlp_width=32,
        norm="layer",
        init="normal",
        init_std=eps,
        positional="learned",
        max_len=32,
        seed=0,
    )
    for name, p in m.named_parameters():
        if "norm" in name:
            assert torch.all(p == (1.0 if name.endswith("weight") else 0.0)), name  # norm scales untouched
        elif name.endswith("bias") or name.split(".")[-1].startswith("b_"):
            assert torch.all(p == 0), name
        else:
            z = (p.detach().double().flatten() / eps).numpy()
            # Kolmogorov-Smirnov against N(0, 1): a wrong std (or torch's default init) fails at these sizes
            assert stats.kstest(z, "norm").pvalue > 1e-3, name
    assert math.isclose(float(m.embed.weight.detach().std()), eps, rel_tol=0.1)


def test_default_init_unchanged_and_reproducible():
    a = ToyTransformer(d_model=8, n_heads=2, seed=3)
    b = ToyTransformer(d_model=8, n_heads=2, init="default", seed=3)
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), n
    c = ToyTransformer(**CARD, init="normal", init_std=0.05, seed=3)
    d = ToyTransformer(**CARD, init="normal", init_std=0.05, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(c.parameters(), d.parameters()))


def test_init_loss_is_log_vocab_at_small_eps():
    m = ToyTransformer(**CARD, init="normal", init_std=0.05, seed=0)
    x = torch.randint(0, 10, (64, 16), generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, 10, (64, 16), generator=torch.Generator().manual_seed(1))
    loss = torch.nn.functional.cross_entropy(m(x).detach().reshape(-1, 10), y.reshape(-1))
    assert abs(loss.item() - math.log(10)) < 1e-3


def test_no_output_projection_matches_the_card_formula():
    m = ToyTransformer(**CARD, init="normal", init_std=0.3, seed=1).double()
    a = m.blocks[0].attn
    assert "blocks.0.attn.W_O" not in dict(m.named_parameters())  # a fixed buffer, not trained
    assert torch.equal(a.W_O[0], torch.eye(16, dtype=torch.float64))
    x = torch.randint(0, 10, (3, 7), generator=torch.Generator().manual_seed(2))
    E, WQ, WK, WV, U = m.embed.weight, a.W_Q[0].T, a.W_K[0].T, a.W_V[0].T, m.readout.weight.T
    e = E[x]  # (B, T, d)
    s = (e @ WQ) @ (e @ WK).transpose(-1, -2) / math.sqrt(16)
    s = s.masked_fill(torch.ones(7, 7, dtype=torch.bool).triu(1), float("-inf"))
    expected = (s.softmax(-1) @ (e @ WV)) @ U  # logits = Uᵀ Σ_s α_ts W_Vᵀ e_s
    torch.testing.assert_close(m(x), expected, rtol=1e-12, atol=1e-12)


def test_bad_settings_fail_naming_the_field():
    with pytest.raises(ValidationError, match="init_std"):
        ToyTransformer(d_model=8, init="normal")
    with pytest.raises(ValidationError, match="init_std"):
        ToyTransformer(d_model=8, init_std=0.1)
    with pytest.raises(ValidationError, match="embedding_std"):
        ToyTransformer(d_model=8, vocab_size=5, init="normal", init_std=0.1, embedding_std=0.1)
    with pytest.raises(ValidationError, match="output_projection"):
        ToyTransformer(d_model=8, n_heads=2, value_dim=3, output_projection=False)
    with pytest.raises(ValidationError, match="init_std"):
        ToyTransformer(d_model=8, init="normal", init_std=-1.0)
    m = ToyTransformer(d_model=8, output_projection=False)
    with pytest.raises(ValueError, match="output_projection"):
        m.set_head(0, 0, o=torch.eye(8))


def test_xavier_keeps_a_fixed_identity_output():
    m = ToyTransformer(d_model=8, n_heads=2, output_projection=False, init="xavier")
    W_O = m.blocks[0].attn.W_O
    assert torch.equal(torch.cat([W_O[0], W_O[1]], dim=1), torch.eye(8))
