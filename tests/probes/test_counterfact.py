"""probes.counterfact: the local-weights co-occurrence check of Ravfogel et al. (arXiv 2510.15804, Sec. 5.2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from offline_models import tiny_gpt2_and_counterfact
from theorylab.probes.counterfact import counterfact_context_check


def test_context_check_on_a_tiny_offline_model(tmp_path):
    """The local-weights co-occurrence check on a 1-layer random GPT-2 and a word-level tokenizer built offline (no
    download): one row per prompt and context, and log P(true target) equals the model's own token log-probabilities."""
    model_dir, cf = tiny_gpt2_and_counterfact(tmp_path)
    transformers = pytest.importorskip("transformers")
    rows = counterfact_context_check(model_dir, cf, 3, torch.device("cpu"))
    assert len(rows) == 6 and {r["context"] for r in rows} == {"all_true", "one_false"}
    assert all(np.isfinite(r["logp"]) and r["feature"].shape == (16,) for r in rows)
    # the first all-true row by hand: context of facts 1-3 (true targets), then the query's true target token
    lm = transformers.GPT2LMHeadModel.from_pretrained(model_dir).eval()
    fast = transformers.PreTrainedTokenizerFast.from_pretrained(model_dir)
    text = (
        "The capital of Spain is Madrid. The capital of Italy is Rome. The capital of Germany is Berlin. "
        "The capital of France is"
    )
    ids = fast(text, return_tensors="pt").input_ids
    target = fast(" Paris", add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = lm(torch.cat([ids, target], 1)).logits
    expected = logits[0, ids.shape[1] - 1].log_softmax(-1)[target[0, 0]]
    assert rows[0]["context"] == "all_true" and rows[0]["logp"] == pytest.approx(float(expected), abs=1e-5)
