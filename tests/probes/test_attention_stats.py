"""Attention statistics on patterns with known answers."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.data.nearest_points import nearest_point_sets
from theorylab.nn.attention_constructions import full_rank_head
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.attention_stats import argmax_hit_rate, attention_entropy, attention_patterns


def test_entropy_of_uniform_and_one_hot_rows():
    uniform = torch.full((2, 1, 3, 5), 0.2)
    one_hot = torch.nn.functional.one_hot(torch.tensor([[[1, 2, 0]]]), 5).float().expand(2, 1, 3, 5)
    ent = attention_entropy(torch.cat([uniform, one_hot], dim=1))
    torch.testing.assert_close(ent, torch.tensor([math.log(5), 0.0]))


def test_hit_rate_of_the_exact_head_is_one_and_of_a_wrong_head_zero():
    sets = nearest_point_sets(8, 6, 50, torch.Generator().manual_seed(0), dtype=torch.float64)
    patterns = attention_patterns(full_rank_head(8, 200.0, dtype=torch.float64), sets.sequence)
    assert set(patterns) == {0} and patterns[0].shape == (50, 1, 6, 6)
    assert float(argmax_hit_rate(patterns[0], sets.index)[0]) == 1.0
    self_pattern = torch.eye(6, dtype=torch.float64).expand(50, 1, 6, 6)
    assert float(argmax_hit_rate(self_pattern, sets.index)[0]) == 0.0


def test_patterns_for_every_layer():
    model = ToyTransformer(d_model=8, n_heads=2, n_layers=3, mlp_width=8)
    patterns = attention_patterns(model, torch.randn(2, 5, 8))
    assert sorted(patterns) == [0, 1, 2] and all(p.shape == (2, 2, 5, 5) for p in patterns.values())


def test_row_theta_brackets_the_exact_value():
    import numpy as np

    from theorylab.probes.attention_stats import row_theta
    from theorylab.theory.softmax import theta_exact

    scores = torch.randn(2, 3, 24, 24, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    causal = torch.ones(24, 24, dtype=torch.bool).triu(1)
    pattern = torch.softmax(scores.masked_fill(causal, float("-inf")), -1)
    t = row_theta(pattern, min_keys=16, exact_up_to=20)
    assert len(t) == 2 * 3 * 9 and set(t["keys"]) == set(range(16, 25))  # rows 15..23 have 16..24 keys
    for r in t.itertuples():
        p = pattern[r.batch, r.head, r.row]
        p = p[p > 0].numpy()
        exact = theta_exact(p)  # meet-in-the-middle for the long rows
        assert r.theta_lo <= exact + 1e-12 <= r.theta_hi + 1e-9 and r.greedy <= exact + 1e-12
        if r.exact:
            assert r.theta_lo == r.theta_hi == exact
    assert np.all(t["theta_hi"] <= 1 + 1e-12)


class _FixedAttention(torch.nn.Module):
    """A stand-in Hugging Face model: returns the given attention patterns whatever the input."""

    def __init__(self, patterns):
        super().__init__()
        self.patterns = patterns

    def forward(self, batch, output_attentions=False):
        from types import SimpleNamespace

        return SimpleNamespace(attentions=self.patterns)


def test_head_theta_summary_averages_the_greedy_bound_over_long_rows():
    from theorylab.probes.attention_stats import head_theta_summary
    from theorylab.theory.softmax import theta_greedy

    T = 6
    causal = torch.tril(torch.ones(T, T, dtype=torch.float64))
    uniform = (causal / causal.sum(-1, keepdim=True))[None, None]  # row i: uniform over i + 1 keys
    peaked = torch.zeros(T, T, dtype=torch.float64)
    for i in range(1, T):  # 0.6 on the first key, 0.4 spread over the others: θ = 4·0.6·0.4 exactly
        peaked[i, 0], peaked[i, 1 : i + 1] = 0.6, 0.4 / i
    peaked[0, 0] = 1.0
    patterns = (torch.cat([uniform, peaked[None, None]], 1),)
    t = head_theta_summary(_FixedAttention(patterns), torch.zeros(1, T), min_keys=4)
    assert list(t.columns) == ["layer", "head", "mean", "p10", "rows"] and t["rows"].tolist() == [3, 3]
    assert t["mean"].iloc[1] == pytest.approx(0.96, rel=1e-12) and t["p10"].iloc[1] == pytest.approx(0.96, rel=1e-12)
    expected = [float(theta_greedy(uniform[0, 0, i, : i + 1].double())) for i in (3, 4, 5)]  # rows with 4, 5, 6 keys
    assert t["mean"].iloc[0] == pytest.approx(sum(expected) / 3, rel=1e-12)
    assert expected == pytest.approx([1.0, 1 - 1 / 25, 1.0])  # uniform rows: θ = 1 (n even), 1 − 1/n² (n odd)


def test_checkpoint_theta_reads_a_local_checkpoint(tmp_path):
    pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    from transformers import PreTrainedTokenizerFast

    from theorylab.data.text import random_windows
    from theorylab.nn.hf import random_init
    from theorylab.probes.attention_stats import checkpoint_theta, head_theta_summary

    words = ["alpha", "beta", "gamma", "delta", "eps"]
    text = " ".join(words[(3 * i * i + i) % 5] for i in range(400))
    vocab = {w: i for i, w in enumerate(words + ["[UNK]"])}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(tmp_path)
    model = random_init(
        "gpt2", seed=0, dtype=torch.float32, init_std=0.02, n_layer=1, n_embd=16, n_head=2, n_positions=32, vocab_size=6
    )
    model.save_pretrained(tmp_path)
    got = checkpoint_theta(str(tmp_path), text, 4, torch.Generator().manual_seed(0), max_context=16)
    ids = PreTrainedTokenizerFast.from_pretrained(tmp_path)(text, return_tensors="pt").input_ids[0]
    assert len(ids) == 400
    batch = random_windows(ids, 8, 16, torch.Generator().manual_seed(0))
    want = head_theta_summary(model.eval(), batch, 4)
    assert got[["layer", "head", "rows"]].equals(want[["layer", "head", "rows"]]) and len(got) == 2
    assert got["mean"].to_numpy() == pytest.approx(want["mean"].to_numpy(), rel=1e-5)
