"""probes.counterfact: the local-weights co-occurrence check of Ravfogel et al. (arXiv 2510.15804, Sec. 5.2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.probes.counterfact import counterfact_context_check


def test_context_check_on_a_tiny_offline_model(tmp_path):
    """The local-weights co-occurrence check on a 1-layer random GPT-2 and a word-level tokenizer built offline (no
    download): one row per prompt and context, and log P(true target) equals the model's own token log-probabilities."""
    import json

    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    words = ["[UNK]", "The", "capital", "of", "is", "France", "Paris", "Rome", "Spain", "Madrid", "Italy", "Berlin",
             "Germany", "Oslo", "Norway", "Lima", ".", "Peru"]
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    model_dir = tmp_path / "model"
    fast.save_pretrained(model_dir)
    transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=len(words), n_positions=64, n_embd=16, n_layer=1,
                                                         n_head=2)).save_pretrained(model_dir)
    pairs = [("France", "Paris", "Rome"), ("Spain", "Madrid", "Berlin"), ("Italy", "Rome", "Oslo"),
             ("Germany", "Berlin", "Lima"), ("Norway", "Oslo", "Paris"), ("Peru", "Lima", "Madrid")]
    records = [dict(requested_rewrite=dict(prompt="The capital of {} is", subject=s, target_true=dict(str=t),
                                           target_new=dict(str=f))) for s, t, f in pairs]
    cf = tmp_path / "counterfact.json"
    cf.write_text(json.dumps(records))
    rows = counterfact_context_check(model_dir, cf, 3, torch.device("cpu"))
    assert len(rows) == 6 and {r["context"] for r in rows} == {"all_true", "one_false"}
    assert all(np.isfinite(r["logp"]) and r["feature"].shape == (16,) for r in rows)
    # the first all-true row by hand: context of facts 1-3 (true targets), then the query's true target token
    lm = transformers.GPT2LMHeadModel.from_pretrained(model_dir).eval()
    text = "The capital of Spain is Madrid. The capital of Italy is Rome. The capital of Germany is Berlin. " \
           "The capital of France is"
    ids = fast(text, return_tensors="pt").input_ids
    target = fast(" Paris", add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = lm(torch.cat([ids, target], 1)).logits
    expected = logits[0, ids.shape[1] - 1].log_softmax(-1)[target[0, 0]]
    assert rows[0]["context"] == "all_true" and rows[0]["logp"] == pytest.approx(float(expected), abs=1e-5)

