"""Query-key operators: convention-safe extraction (ours and Hugging Face) and invariant geometry."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.spectra import effective_rank, stable_rank
from theorylab.theory.bilinear import (
    balanced_factorization,
    directionality_score,
    head_operators,
    inertia,
    rotation_content,
    split_sym_skew,
    symmetry_score,
)


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_split_and_scores_and_orthogonal_invariance():
    M = _rand(8, 8)
    S, A = split_sym_skew(M)
    assert torch.allclose(S + A, M) and torch.allclose(S, S.T) and torch.allclose(A, -A.T)
    assert float(M.pow(2).sum()) == pytest.approx(float(S.pow(2).sum() + A.pow(2).sum()))
    Q, _ = torch.linalg.qr(_rand(8, 8, seed=1))
    assert float(symmetry_score(Q.T @ M @ Q)) == pytest.approx(float(symmetry_score(M)))
    assert inertia(Q.T @ M @ Q) == inertia(M)
    assert rotation_content(Q.T @ M @ Q) == pytest.approx(rotation_content(M))
    assert float(symmetry_score(S)) == pytest.approx(1.0) and float(symmetry_score(A)) == pytest.approx(0.0)
    assert rotation_content(A) == pytest.approx(1.0) and rotation_content(S) == 0.0
    assert inertia(torch.diag(torch.tensor([1.0, -2.0, 0.0], dtype=torch.float64))) == (1, 1, 1)


def test_directionality_flips_under_transpose_and_balanced_gauge():
    M = _rand(16, 16)
    M[:, 3] *= 12  # one key direction dominates
    d = directionality_score(M)
    assert float(d) > 0.5 and float(directionality_score(M.T)) == pytest.approx(-float(d))
    WQ, WK = balanced_factorization(M)
    assert torch.allclose(WQ @ WK.T, M, atol=1e-10)
    assert torch.allclose(WQ.norm(dim=0), WK.norm(dim=0))  # balanced: equal column norms


def test_random_init_symmetry_is_near_half():
    d, dh = 64, 16
    s = [float(symmetry_score(_rand(dh, d, seed=i).T @ _rand(dh, d, seed=100 + i))) for i in range(20)]
    assert abs(sum(s) / len(s) - (0.5 + 1 / (2 * d))) < 0.05


def test_spectra():
    W = torch.diag(torch.tensor([3.0, 1.0, 0.0], dtype=torch.float64))
    assert float(stable_rank(W)) == pytest.approx(10 / 9)
    assert float(effective_rank(torch.eye(5, dtype=torch.float64))) == pytest.approx(5.0)


def test_toy_transformer_operator_gives_its_scores():
    model = ToyTransformer(d_model=16, n_heads=2, n_layers=1, vocab_size=11, seed=0)
    ops = head_operators(model)
    assert len(ops) == 2
    x = _rand(5, 16).float()
    attn = model.blocks[0].attn
    q = torch.einsum("td,rd->tr", x, attn.W_Q[1].detach())
    k = torch.einsum("td,rd->tr", x, attn.W_K[1].detach())
    assert torch.allclose(x @ ops[1].M @ x.T, model.cfg.scale * q @ k.T, atol=1e-5)


transformers = pytest.importorskip("transformers")


def _capture_input(module):
    seen = {}

    def hook(_m, args, kwargs):
        seen.setdefault("x", (args[0] if args else kwargs["hidden_states"])[0].detach())

    return seen, module.register_forward_pre_hook(hook, with_kwargs=True)


def test_gpt2_conv1d_layout_reproduces_attention():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=4, n_positions=16, vocab_size=50, attn_implementation="eager")).double().eval()
    with torch.no_grad():
        model.transformer.h[0].attn.c_attn.bias.zero_()
        model.transformer.h[0].attn.c_attn.weight.normal_(0, 0.3)
    seen, h = _capture_input(model.transformer.h[0].attn)
    ids = torch.randint(0, 50, (1, 7), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        probs = model(ids, output_attentions=True).attentions[0][0]  # (H, T, T)
    h.remove()
    x = seen["x"]
    mask = torch.ones(7, 7, dtype=torch.bool).triu(1)
    for op in head_operators(model):
        mine = torch.softmax((x @ op.M @ x.T).masked_fill(mask, float("-inf")), -1)
        assert torch.allclose(mine, probs[op.head], atol=1e-10)


def test_bert_layout_reproduces_attention():
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=4, intermediate_size=64, vocab_size=50, attn_implementation="eager")).double().eval()
    sa = model.encoder.layer[0].attention.self
    with torch.no_grad():
        sa.query.bias.zero_()
        sa.key.bias.zero_()
        sa.query.weight.normal_(0, 0.3)
    seen, h = _capture_input(sa)
    ids = torch.randint(0, 50, (1, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        probs = model(ids, output_attentions=True).attentions[0][0]
    h.remove()
    x = seen["x"]
    for op in head_operators(model):
        assert torch.allclose(torch.softmax(x @ op.M @ x.T, -1), probs[op.head], atol=1e-10)


def test_llama_gqa_maps_each_query_head_to_its_key_head():
    from theorylab.nn.hf import random_init

    model = random_init("llama", hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, head_dim=8, vocab_size=50)
    ops = head_operators(model)
    assert [op.key_head for op in ops] == [0, 0, 1, 1] and all(op.rope for op in ops)
    x = _rand(3, 32)
    attn = model.model.layers[0].self_attn
    q = (x @ attn.q_proj.weight.T).view(3, 4, 8)
    k = (x @ attn.k_proj.weight.T).view(3, 2, 8)
    for op in ops:  # at zero relative offset RoPE cancels: s = q_h · k_g / sqrt(d_h)
        assert torch.allclose(x @ op.M @ x.T, q[:, op.head] @ k[:, op.key_head].T / math.sqrt(8), atol=1e-10)


def test_random_init_gpt2_and_bert_operators():
    from theorylab.nn.hf import random_init

    gpt2 = random_init("gpt2", n_embd=32, n_layer=2, n_head=4, n_positions=16, vocab_size=50)
    bert = random_init("bert", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, vocab_size=50)
    assert type(bert).__name__ == "BertForMaskedLM"
    for model in (gpt2, bert):
        ops = head_operators(model)
        assert len(ops) == 8 and all(op.M.shape == (32, 32) and not op.rope for op in ops)
        assert 0.3 < float(sum(symmetry_score(op.M) for op in ops) / 8) < 0.7  # random init: about 1/2


def test_head_geometry_from_factors_matches_the_full_matrices():
    from theorylab.theory.bilinear import head_geometry

    model = ToyTransformer(d_model=32, n_heads=4, n_layers=2, vocab_size=11, seed=3).double()
    with torch.no_grad():
        model.blocks[1].attn.W_K[0] = model.blocks[1].attn.W_Q[0]  # one symmetric (tied) head
        model.blocks[0].attn.W_K[:, :, 5] *= 6  # a key direction dominates: directional heads
    ops = head_operators(model)
    geo = head_geometry(ops)
    for op, row in zip(ops, geo.itertuples()):
        M = op.M.double()
        assert row.symmetry == pytest.approx(float(symmetry_score(M)), abs=1e-12)
        assert row.directionality == pytest.approx(float(directionality_score(M)), abs=1e-10)
        assert (row.inertia_pos, row.inertia_neg, row.inertia_zero) == inertia(M, rel_tol=1e-8)
        assert row.rotation == pytest.approx(rotation_content(M), abs=1e-8)
        assert row.stable_rank == pytest.approx(float(stable_rank(M)), rel=1e-10)
        assert row.effective_rank == pytest.approx(float(effective_rank(M)), rel=1e-8)
    assert geo.loc[4, "symmetry"] == pytest.approx(1.0) and (geo["directionality"].abs() > 0).any()
