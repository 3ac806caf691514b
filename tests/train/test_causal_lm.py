"""Next-token training of a Hugging Face causal LM: the loss falls on a predictable stream."""

from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("transformers")

from theorylab.nn.hf import random_init, small_config  # noqa: E402
from theorylab.train.causal_lm import train_hf_causal_lm  # noqa: E402


def test_training_on_a_periodic_stream_lowers_the_loss_and_returns_to_eval():
    stream = torch.arange(400) % 7  # fully predictable from the previous token
    sizes = small_config("llama", hidden=32, intermediate=64, layers=1, heads=2, kv_heads=1, head_dim=16, vocab=16)
    model = random_init("llama", seed=0, dtype=torch.float32, init_std=0.02, **sizes)
    seen = []
    losses = train_hf_causal_lm(
        model,
        stream,
        30,
        generator=torch.Generator().manual_seed(0),
        length=12,
        batch=4,
        lr=1e-2,
        check=lambda what, loss, step: seen.append((what, step)),
    )
    assert len(losses) == 30 and seen[0] == ("language-model loss", 0) and len(seen) == 30
    assert losses[0] == pytest.approx(math.log(16), rel=0.1)  # near-uniform at init
    assert sum(losses[-5:]) / 5 < 0.2 * losses[0]
    assert not model.training
