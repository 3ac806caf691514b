"""ToyTransformer against PyTorch's own attention and encoder layers, plus its invariances and hooks."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from theorylab.nn.toy_transformer import (
    ToyTransformer,
    ToyTransformerConfig,
    apply_rotary,
    attention_only,
    deepnorm,
    sinusoidal_positions,
)


@pytest.fixture(autouse=True, scope="module")
def _float64():
    """Exact comparisons with PyTorch's layers run in float64; restored after this module."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def _load_from_torch_mha(attn, mha: torch.nn.MultiheadAttention) -> None:
    """Copy torch's packed in-projection into our per-head (H, r, d) parameters."""
    d, h = mha.embed_dim, mha.num_heads
    r = d // h
    wq, wk, wv = mha.in_proj_weight.detach().chunk(3)
    bq, bk, bv = mha.in_proj_bias.detach().chunk(3)
    with torch.no_grad():
        attn.W_Q.copy_(wq.view(h, r, d))
        attn.W_K.copy_(wk.view(h, r, d))
        attn.W_V.copy_(wv.view(h, r, d))
        attn.b_Q.copy_(bq.view(h, r))
        attn.b_K.copy_(bk.view(h, r))
        attn.b_V.copy_(bv.view(h, r))
        attn.W_O.copy_(mha.out_proj.weight.detach().view(d, h, r).permute(1, 0, 2))
        attn.b_O.copy_(mha.out_proj.bias.detach())


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_torch_multihead_attention(causal):
    torch.manual_seed(0)
    d, h, t = 12, 3, 7
    mha = torch.nn.MultiheadAttention(d, h, batch_first=True, dtype=torch.float64)
    model = ToyTransformer(d_model=d, n_heads=h, norm="none", residual=False, causal=causal)
    attn = model.blocks[0].attn
    _load_from_torch_mha(attn, mha)
    x = torch.randn(4, t, d)
    mask = torch.ones(t, t, dtype=torch.bool).triu(1) if causal else None
    expected, weights = mha(x, x, x, attn_mask=mask, average_attn_weights=False)
    out, cache = model.run_with_cache(x)
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(cache["blocks.0.attn.hook_pattern"], weights, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("norm_first", [False, True])
def test_block_matches_torch_encoder_layer(norm_first):
    torch.manual_seed(1)
    d, h, m = 16, 4, 24
    ref = torch.nn.TransformerEncoderLayer(
        d, h, m, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=torch.float64
    )
    ref.train()  # the slow path: what training runs
    model = ToyTransformer(
        d_model=d,
        n_heads=h,
        mlp_width=m,
        activation="relu",
        norm="layer",
        norm_position="pre" if norm_first else "post",
    )
    block = model.blocks[0]
    _load_from_torch_mha(block.attn, ref.self_attn)
    with torch.no_grad():
        block.mlp.up.load_state_dict(ref.linear1.state_dict())
        block.mlp.down.load_state_dict(ref.linear2.state_dict())
        block.norm_attn.load_state_dict(ref.norm1.state_dict())
        block.norm_mlp.load_state_dict(ref.norm2.state_dict())
    x = torch.randn(3, 9, d)
    torch.testing.assert_close(model(x), ref(x), atol=1e-12, rtol=1e-10)


def test_head_rank_and_value_dim_are_free_of_d_over_h():
    model = ToyTransformer(d_model=8, n_heads=16, head_rank=8, value_dim=2, mlp_width=0)
    attn = model.blocks[0].attn
    assert attn.W_Q.shape == (16, 8, 8) and attn.W_K.shape == (16, 8, 8)
    assert attn.W_V.shape == (16, 2, 8) and attn.W_O.shape == (16, 8, 2)
    assert torch.linalg.matrix_rank(attn.bilinear(0)) == 8
    assert model(torch.randn(2, 5, 8)).shape == (2, 5, 8)


def test_set_head_makes_scores_exactly_the_requested_bilinear_form():
    torch.manual_seed(2)
    d, r = 6, 3
    model = ToyTransformer(d_model=d, n_heads=2, head_rank=r, value_dim=d, mlp_width=0, norm="none", residual=False)
    q, k = torch.randn(r, d), torch.randn(r, d)
    model.set_head(0, 1, q=q, k=k, v=torch.eye(d), o=2 * torch.eye(d))
    x = torch.randn(3, 5, d)
    _, cache = model.run_with_cache(x, names=["blocks.0.attn.hook_scores"])
    expected = x @ q.T @ k @ x.transpose(1, 2)  # (B, T, T)
    torch.testing.assert_close(cache["blocks.0.attn.hook_scores"][:, 1], expected)
    torch.testing.assert_close(model.blocks[0].attn.bilinear(1), q.T @ k)
    torch.testing.assert_close(model.blocks[0].attn.ov(1), 2 * torch.eye(d))


def test_tied_queries_and_keys_give_a_symmetric_psd_score_matrix():
    model = ToyTransformer(d_model=6, n_heads=2, qk="tied", mlp_width=0)
    attn = model.blocks[0].attn
    assert attn.W_K is None
    b = attn.bilinear(0)
    torch.testing.assert_close(b, b.T)
    assert torch.linalg.eigvalsh(b).min() > -1e-12
    with pytest.raises(ValueError, match="tied"):
        attn.set_head(0, k=torch.eye(3, 6))


def test_hard_attention_returns_the_value_of_the_top_scoring_key():
    torch.manual_seed(3)
    model = attention_only(5, 2, 5, attention="hard", qk_scale=1.0)
    x = torch.randn(4, 6, 5)
    _, cache = model.run_with_cache(x)
    pattern = cache["blocks.0.attn.hook_pattern"]
    assert set(pattern.unique().tolist()) <= {0.0, 1.0} and torch.all(pattern.sum(-1) == 1)
    # The gather path (no hook) and the one-hot path (hooked) agree.
    torch.testing.assert_close(model(x), cache["blocks.0.hook_resid_post"])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), positional=st.sampled_from(["none", "rotary"]))
def test_causal_output_ignores_the_future(seed, positional):
    g = torch.Generator().manual_seed(seed)
    model = ToyTransformer(
        d_model=8, n_heads=2, n_layers=2, mlp_width=16, causal=True, positional=positional, seed=seed
    )
    x = torch.randn(2, 6, 8, generator=g)
    y = x.clone()
    y[:, 4:] = torch.randn(2, 2, 8, generator=g)
    torch.testing.assert_close(model(x)[:, :4], model(y)[:, :4])


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    norm=st.sampled_from(["layer", "rms", "sphere", "none"]),
    position=st.sampled_from(["pre", "post"]),
)
def test_without_positions_the_model_is_permutation_equivariant(seed, norm, position):
    g = torch.Generator().manual_seed(seed)
    model = ToyTransformer(d_model=8, n_heads=2, n_layers=2, mlp_width=8, norm=norm, norm_position=position, seed=seed)
    x = torch.randn(3, 7, 8, generator=g)
    perm = torch.randperm(7, generator=g)
    torch.testing.assert_close(model(x[:, perm]), model(x)[:, perm])


def test_rotary_scores_depend_only_on_relative_position():
    torch.manual_seed(4)
    q, k = torch.randn(1, 1, 4), torch.randn(1, 1, 4)
    seq_q, seq_k = q.expand(1, 12, 4), k.expand(1, 12, 4)
    scores = apply_rotary(seq_q) @ apply_rotary(seq_k).transpose(-1, -2)  # (1, 12, 12)
    for shift in range(1, 4):
        torch.testing.assert_close(scores[0].diagonal(shift)[:-1], scores[0].diagonal(shift)[1:])
    # Rotations keep norms.
    torch.testing.assert_close(apply_rotary(seq_q).norm(dim=-1), seq_q.norm(dim=-1))


def test_sinusoidal_table_values():
    table = sinusoidal_positions(50, 8).double()
    assert table[0, 0] == 0 and table[0, 1] == 1
    assert table[7, 2] == pytest.approx(math.sin(7 / 10000 ** (2 / 8)), abs=1e-6)
    assert table[7, 3] == pytest.approx(math.cos(7 / 10000 ** (2 / 8)), abs=1e-6)


def test_hook_patching_and_cleanup():
    torch.manual_seed(5)
    model = ToyTransformer(d_model=8, n_heads=2, mlp_width=0, norm="layer", norm_position="pre")
    x = torch.randn(2, 5, 8)
    with model.hooks({"blocks.0.hook_attn_out": torch.zeros_like}):
        torch.testing.assert_close(model(x), x)  # pre-norm residual with the attention knocked out
    assert not any(m._forward_hooks for m in model.modules())
    with pytest.raises(KeyError, match="unknown hook"):
        with model.hooks({"blocks.0.nope": torch.zeros_like}):
            pass
    names = model.hook_names()
    for expected in (
        "blocks.0.attn.hook_scores",
        "blocks.0.attn.hook_pattern",
        "blocks.0.hook_resid_pre",
        "blocks.0.hook_resid_post",
        "hook_embed",
    ):
        assert expected in names


def test_mlp_hooks_see_the_mlp_input_and_output():
    torch.manual_seed(6)
    model = ToyTransformer(d_model=8, n_heads=2, mlp_width=12, norm="layer", norm_position="pre")
    x = torch.randn(2, 5, 8)
    _, cache = model.run_with_cache(x)
    block = model.blocks[0]
    torch.testing.assert_close(cache["blocks.0.hook_mlp_in"], block.norm_mlp(cache["blocks.0.hook_resid_mid"]))
    torch.testing.assert_close(cache["blocks.0.hook_mlp_out"], block.mlp(cache["blocks.0.hook_mlp_in"]))
    torch.testing.assert_close(
        cache["blocks.0.hook_resid_post"], cache["blocks.0.hook_resid_mid"] + cache["blocks.0.hook_mlp_out"]
    )


def test_sphere_norm_outputs_unit_vectors_at_init():
    model = ToyTransformer(d_model=8, n_heads=2, mlp_width=8, norm="sphere", norm_position="post")
    out = model(torch.randn(3, 4, 8))
    torch.testing.assert_close(out.norm(dim=-1), torch.ones(3, 4), atol=1e-5, rtol=0)


def test_tokens_frozen_embedding_and_readout():
    model = ToyTransformer(
        d_model=8, n_heads=2, vocab_size=11, freeze_embedding=True, positional="learned", max_len=16, mlp_width=8
    )
    logits = model(torch.randint(0, 11, (2, 6)))
    assert logits.shape == (2, 6, 11)
    assert not model.embed.weight.requires_grad
    with pytest.raises(ValueError, match="max_len"):
        model(torch.randint(0, 11, (1, 17)))


def test_seed_fixes_the_weights_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = ToyTransformer(d_model=8, n_heads=2, seed=7), ToyTransformer(d_model=8, n_heads=2, seed=7)
    assert torch.equal(torch.random.get_rng_state(), state)
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), n


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(d_model=10, n_heads=3), "head_rank"),
        (dict(d_model=8, n_heads=2, head_rank=3, positional="rotary"), "even 'head_rank'"),
        (dict(d_model=8, n_heads=0), "n_heads"),
        (dict(d_model=8, norm="batch"), "norm"),
        (dict(d_model=8, vocab_size=5, d_input=3), "d_input"),
        (dict(d_model=8, residual_scale=2.0), "residual_scale"),
        (dict(d_model=8, init_gain=0.5), "init_gain"),
    ],
)
def test_bad_configs_fail_naming_the_field(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        ToyTransformerConfig(**kwargs)


def test_pattern_rows_sum_to_one_and_match_softmax_of_scores():
    model = ToyTransformer(d_model=8, n_heads=2, n_layers=2, mlp_width=8)
    _, cache = model.run_with_cache(torch.randn(2, 20, 8))
    for layer in (0, 1):
        scores, pattern = cache[f"blocks.{layer}.attn.hook_scores"], cache[f"blocks.{layer}.attn.hook_pattern"]
        torch.testing.assert_close(pattern, F.softmax(scores, dim=-1))


def test_per_layer_mlp_frozen_readout_and_embedding_scale():
    m = ToyTransformer(
        d_model=32,
        n_layers=3,
        mlp_width=64,
        mlp_layers=(0, 2),
        vocab_size=50,
        freeze_embedding=True,
        freeze_readout=True,
        embedding_std=32**-0.5,
        bias=False,
        seed=0,
    )
    assert m.blocks[0].mlp is not None and m.blocks[1].mlp is None and m.blocks[2].mlp is not None
    assert not m.embed.weight.requires_grad and not m.readout.weight.requires_grad
    assert abs(float(m.embed.weight.std()) - 32**-0.5) < 0.01 and abs(float(m.readout.weight.std()) - 32**-0.5) < 0.01
    with pytest.raises(ValueError, match="mlp_layers"):
        ToyTransformer(d_model=8, n_layers=2, mlp_width=8, mlp_layers=(2,))
    with pytest.raises(ValueError, match="mlp_width"):
        ToyTransformer(d_model=8, n_layers=2, mlp_width=0, mlp_layers=(0,))


def test_deepnorm_residual_weight_and_xavier_gains():
    N = 6
    model = ToyTransformer(d_model=32, n_heads=4, mlp_width=64, seed=0, **deepnorm(N))
    alpha, beta = (2 * N) ** 0.25, (8 * N) ** -0.25
    model.requires_grad_(False)
    a = model.blocks[0].attn
    assert model.cfg.residual_scale == pytest.approx(alpha) and model.cfg.init_gain == pytest.approx(beta)
    assert float(a.W_Q.std()) == pytest.approx(math.sqrt(2 / 64), rel=0.1)  # xavier, gain 1 on Q and K
    assert float(a.W_V.std()) == pytest.approx(beta * math.sqrt(2 / 64), rel=0.1)  # gain β on V, O, MLP
    assert float(model.blocks[0].mlp.up.weight.std()) == pytest.approx(beta * math.sqrt(2 / 96), rel=0.1)
    assert all(float(b.abs().max()) == 0 for b in (a.b_Q, a.b_O, model.blocks[0].mlp.up.bias))
    x = torch.randn(2, 5, 32)
    block = model.blocks[0]
    mid = block.norm_attn(alpha * x + block.attn(x))  # x_{l+1} = LN(α x + G(x))
    assert torch.allclose(block(x), block.norm_mlp(alpha * mid + block.mlp(mid)), atol=1e-12)


def test_frozen_attention_layer_is_seeded_frozen_and_leaves_the_global_rng_alone():
    from theorylab.nn.toy_transformer import frozen_attention_layer

    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a, b = frozen_attention_layer(8, 2, seed=5), frozen_attention_layer(8, 2, seed=5)
    assert torch.equal(torch.rand(3), before)  # the global stream did not move
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not any(p.requires_grad for p in a.parameters()) and a.W_Q.dtype == torch.float64 and a.b_Q is None
    assert not torch.equal(frozen_attention_layer(8, 2, seed=6).W_Q, a.W_Q)
