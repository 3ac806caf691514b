"""Language-model objectives: causal next-token and masked-token losses, and a training run that learns."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.core.errors import Diverged
from theorylab.data.trigger_text import word_trigger_corpus
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.nn.transformer_recipes import small_gpt
from theorylab.train.batched import AdamWSchedule, StackedModels
from theorylab.train.language import lm_loss, train_language_model, train_trigger_lm


def test_losses_at_init_are_near_log_vocab_and_mask_needs_an_id():
    model = ToyTransformer(
        d_model=16, n_heads=2, vocab_size=11, causal=True, positional="learned", max_len=16, seed=0, embedding_std=0.01
    )
    tokens = torch.randint(0, 10, (4, 9), generator=torch.Generator().manual_seed(0))
    model.requires_grad_(False)
    assert float(lm_loss(model, tokens, "clm")) == pytest.approx(math.log(11), rel=0.1)
    assert float(
        lm_loss(model, tokens[:, :8], "mlm", mask_id=10, generator=torch.Generator().manual_seed(1))
    ) == pytest.approx(math.log(11), rel=0.1)
    with pytest.raises(ValueError, match="mask_id"):
        lm_loss(model, tokens, "mlm")
    with pytest.raises(ValueError, match="objective"):
        lm_loss(model, tokens, "seq2seq")


@pytest.mark.parametrize("objective, causal", [("clm", True), ("mlm", False)])
def test_training_on_a_periodic_stream_lowers_the_loss(objective, causal):
    stream = torch.arange(300) % 5  # 0 1 2 3 4 0 1 ...: fully predictable from context
    model = ToyTransformer(
        d_model=16,
        n_heads=2,
        n_layers=1,
        mlp_width=32,
        vocab_size=6,
        causal=causal,
        positional="learned",
        max_len=12,
        seed=0,
    )
    seen = []
    log = train_language_model(
        model,
        stream,
        objective=objective,
        steps=120,
        batch=16,
        length=12,
        lr=1e-2,
        generator=torch.Generator().manual_seed(0),
        mask_id=5,
        log_every=40,
        on_log=lambda s, v: seen.append(s),
    )
    assert log[-1]["loss"] < 0.3 * log[0]["loss"] and seen == [r["step"] for r in log]


def test_train_trigger_lm_learns_the_text_and_reports_divergence():
    text = " ".join(
        f"the son of {n} went unto the house of the LORD ." for n in ["Moses", "Aaron", "David", "Saul", "Jacob"] * 60
    )
    corpus = word_trigger_corpus(text, 30, "of", window=16)

    def train(model, steps):
        return train_trigger_lm(
            StackedModels([model]),
            corpus.train,
            corpus.task,
            steps=steps,
            batch=8,
            length=16,
            p_noise=0.5,
            task_rate=0.5,
            optim=AdamWSchedule(lr=3e-3),
            generator=torch.Generator().manual_seed(0),
        )

    log = train(small_gpt(d_model=16, n_layers=2, n_heads=2, vocab=len(corpus.vocab), max_len=16, seed=0), 60)
    table = log.table()
    first, last = table["loss"].iloc[0], table["loss"].iloc[-1]
    assert first == pytest.approx(math.log(len(corpus.vocab)), rel=0.2) and last < 0.6 * first
    bad = small_gpt(d_model=16, n_layers=2, n_heads=2, vocab=len(corpus.vocab), max_len=16, seed=0)
    with torch.no_grad():
        bad.blocks[0].mlp.up.weight.fill_(float("nan"))
    with pytest.raises(Diverged, match="language-model training loss"):
        train(bad, 3)
