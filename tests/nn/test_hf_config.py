"""Small Hugging Face configs: the Gemma 3 layer pattern and a model built from each config."""

from __future__ import annotations

import pytest

from theorylab.nn.hf import gemma3_layer_types, small_config

SIZES = dict(hidden=16, intermediate=32, layers=3, heads=2, kv_heads=1, head_dim=8, vocab=40)


def test_gemma3_layer_types_local_global_pattern():
    assert gemma3_layer_types(6, 3) == ["sliding_attention", "sliding_attention", "full_attention"] * 2
    types = gemma3_layer_types(26, 6)  # Gemma 3 1B: 5 local then 1 global
    assert [i for i, t in enumerate(types) if t == "full_attention"] == [5, 11, 17, 23]


def test_small_config_per_family():
    g = small_config("gemma3", **SIZES, window=4, global_every=2, max_positions=100)
    assert g["sliding_window"] == 4 and g["layer_types"] == ["sliding_attention", "full_attention", "sliding_attention"]
    assert g["max_position_embeddings"] == 100 and g["num_key_value_heads"] == 1
    m = small_config("mixtral", **SIZES, experts=3)
    assert m["num_local_experts"] == 3 and m["num_experts_per_tok"] == 2 and "layer_types" not in m
    assert set(small_config("llama", **SIZES)) == set(m) - {"num_local_experts", "num_experts_per_tok"}


@pytest.mark.parametrize("arch", ["gemma3", "llama", "mixtral"])
def test_random_init_accepts_the_config(arch):
    pytest.importorskip("transformers")
    from theorylab.nn.hf import random_init

    model = random_init(arch, seed=0, **small_config(arch, **SIZES, window=4, global_every=2))
    assert model.config.hidden_size == 16 and model.config.num_hidden_layers == 3 and model.config.vocab_size == 40
    if arch == "gemma3":
        assert list(model.config.layer_types) == ["sliding_attention", "full_attention", "sliding_attention"]
