"""Tiny Hugging Face models and data files built offline for tests of the local-weights paths (nothing downloaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CAPITALS = [
    ("France", "Paris", "Rome"),
    ("Spain", "Madrid", "Berlin"),
    ("Italy", "Rome", "Oslo"),
    ("Germany", "Berlin", "Lima"),
    ("Norway", "Oslo", "Paris"),
    ("Peru", "Lima", "Madrid"),
]


def tiny_gpt2_and_counterfact(folder: Path, n_embd: int = 16) -> tuple[Path, Path]:
    """A 1-layer random GPT-2 with a word-level tokenizer saved in ``folder/model``, and a CounterFact-format JSON of
    six capital-city prompts in ``folder/counterfact.json``. Skips the test when transformers/tokenizers are absent."""
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    words = ["[UNK]", "The", "capital", "of", "is", ".", *sorted({w for triple in CAPITALS for w in triple})]
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    model_dir = folder / "model"
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(model_dir)
    transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=len(words), n_positions=64, n_embd=n_embd, n_layer=1, n_head=2)
    ).save_pretrained(model_dir)
    records = [
        dict(
            requested_rewrite=dict(
                prompt="The capital of {} is", subject=s, target_true=dict(str=t), target_new=dict(str=f)
            )
        )
        for s, t, f in CAPITALS
    ]
    cf = folder / "counterfact.json"
    cf.write_text(json.dumps(records))
    return model_dir, cf
