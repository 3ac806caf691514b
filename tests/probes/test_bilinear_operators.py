"""Query-key operators: convention-safe extraction from our models and Hugging Face ones."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.bilinear_operators import head_operators
from theorylab.theory.bilinear import symmetry_score


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_toy_transformer_operator_gives_its_scores():
    model = ToyTransformer(d_model=16, n_heads=2, n_layers=1, vocab_size=11, seed=0)
    ops = head_operators(model)
    assert len(ops) == 2
    x = _rand(5, 16).float()
    attn = model.blocks[0].attn
    q = torch.einsum("td,rd->tr", x, attn.W_Q[1].detach())
    k = torch.einsum("td,rd->tr", x, attn.W_K[1].detach())
    assert torch.allclose(x @ ops[1].M @ x.T, model.cfg.scale * q @ k.T, atol=1e-5)


def test_head_operator_rows_of_a_tied_model_are_symmetric_psd_of_rank_dh():
    from theorylab.probes.bilinear_operators import EPS, head_operator_rows

    model = ToyTransformer(d_model=16, n_heads=2, qk="tied", bias=False, seed=0).double()
    rows = head_operator_rows(model, "tied", model_index=7)
    keys = [(r["layer"], r["head"], r["family"], r["model_index"]) for r in rows]
    assert keys == [(0, 0, "tied", 7), (0, 1, "tied", 7)]
    for r in rows:
        assert r["symmetry"] == pytest.approx(1.0, abs=r["tolerance"]) and r["tolerance"] == 256 * EPS
        assert (r["inertia_pos"], r["inertia_neg"], r["inertia_zero"]) == (8, 0, 8) and r["small_singular"] >= 8
        assert r["split_error"] <= r["tolerance"] and r["cross"] <= r["tolerance"] and r["conjugate_gap"] <= 1e-10
    M = head_operators(model)[1].M.double()
    assert rows[1]["sigma1"] == pytest.approx(float(torch.linalg.svdvals(M)[0]))


def test_random_init_head_rows_count_and_null_symmetry():
    from theorylab.probes.bilinear_operators import random_init_head_rows

    calls = []
    rows = random_init_head_rows(32, 4, [1, 2, 3], "random init", progress=lambda it, desc: calls.append(desc) or it)
    assert len(rows) == 12 and [r["model_index"] for r in rows] == [0] * 4 + [1] * 4 + [2] * 4
    assert calls == ["random-init heads"]
    mean = sum(r["symmetry"] for r in rows) / len(rows)
    assert abs(mean - (0.5 + 1 / 64)) < 0.1  # E s = 1/2 + 1/(2d) at random init
    again = random_init_head_rows(32, 4, [1, 2, 3], "random init")
    assert [r["symmetry"] for r in again] == [r["symmetry"] for r in rows]


def test_convention_check_passes_and_its_transposed_control_fails():
    from theorylab.probes.bilinear_operators import CONVENTION_MODELS, convention_check

    tokens = torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(0))
    seeds = {k: i for i, k in enumerate(CONVENTION_MODELS)}
    t = convention_check(16, 1, tokens, seeds, {k: torch.Generator().manual_seed(5) for k in CONVENTION_MODELS})
    real, ctrl = t[~t["control"]], t[t["control"]]
    assert len(real) == len(ctrl) and real["model"].str.contains("ToyTransformer").sum() == 8  # 2 models x 4 heads
    assert real["rel_error"].max() <= 1e-5 and ctrl.groupby("model")["rel_error"].max().min() >= 1e-2


transformers = pytest.importorskip("transformers")


def _capture_input(module):
    seen = {}

    def hook(_m, args, kwargs):
        seen.setdefault("x", (args[0] if args else kwargs["hidden_states"])[0].detach())

    return seen, module.register_forward_pre_hook(hook, with_kwargs=True)


def test_gpt2_conv1d_layout_reproduces_attention():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = (
        GPT2LMHeadModel(
            GPT2Config(n_layer=1, n_embd=32, n_head=4, n_positions=16, vocab_size=50, attn_implementation="eager")
        )
        .double()
        .eval()
    )
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

    model = (
        BertModel(
            BertConfig(
                num_hidden_layers=1,
                hidden_size=32,
                num_attention_heads=4,
                intermediate_size=64,
                vocab_size=50,
                attn_implementation="eager",
            )
        )
        .double()
        .eval()
    )
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

    model = random_init(
        "llama",
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        vocab_size=50,
    )
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
    bert = random_init(
        "bert", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, vocab_size=50
    )
    assert type(bert).__name__ == "BertForMaskedLM"
    for model in (gpt2, bert):
        ops = head_operators(model)
        assert len(ops) == 8 and all(op.M.shape == (32, 32) and not op.rope for op in ops)
        assert 0.3 < float(sum(symmetry_score(op.M) for op in ops) / 8) < 0.7  # random init: about 1/2
