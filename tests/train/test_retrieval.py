"""Associative-recall training (train.retrieval): a tiny model learns the task; bad arguments fail first."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.train.retrieval import recall_accuracy, train_recall


def _tiny(seed: int = 0) -> ToyTransformer:
    return ToyTransformer(
        d_model=32,
        n_layers=2,
        n_heads=2,
        mlp_width=64,
        causal=True,
        final_norm=True,
        vocab_size=16,
        positional="rotary",
        seed=seed,
    )


def test_a_tiny_model_learns_recall_above_chance():
    torch.manual_seed(0)
    model, gen = _tiny(), torch.Generator().manual_seed(0)
    kw = dict(n_pairs=2, length=8, vocab=16)
    before = recall_accuracy(model, batch=256, generator=torch.Generator().manual_seed(9), **kw)
    losses = train_recall(model, steps=300, batch=32, lr=3e-3, generator=gen, **kw)
    after = recall_accuracy(model, batch=256, generator=torch.Generator().manual_seed(9), **kw)
    # values are uniform on 8 tokens (chance 1/8); copying one of the two present values gives 1/2
    assert sum(losses[-20:]) / 20 < sum(losses[:20]) / 20
    assert after >= 0.45 and after > before + 0.2, (before, after)
    assert not model.training


def test_nan_loss_is_reported_with_its_step():
    model = _tiny()
    with torch.no_grad():
        model.readout.weight.fill_(float("nan"))
    seen = []

    def check(what, loss, step):
        if not torch.isfinite(loss):
            seen.append(step)
            raise FloatingPointError(f"{what} diverged at step {step}")

    with pytest.raises(FloatingPointError, match="step 0"):
        train_recall(
            model,
            steps=5,
            n_pairs=2,
            length=8,
            vocab=16,
            batch=4,
            lr=1e-3,
            generator=torch.Generator().manual_seed(0),
            check=check,
        )
    assert seen == [0]


def test_bad_arguments():
    with pytest.raises(ValueError, match="steps"):
        train_recall(_tiny(), steps=0, n_pairs=2, length=8, vocab=16, batch=4, lr=1e-3, generator=torch.Generator())
