"""train.multitask: the base loop reaches its target, SGD paths match a hand loop, LoRA needs peft."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from theorylab.core.errors import MissingResource
from theorylab.data.modular_tasks import multitask_sequences, vocab_size
from theorylab.nn import ToyTransformer
from theorylab.train.multitask import lora_recovery, per_task_accuracy, sgd_path, train_until_accurate

HAS_PEFT = importlib.util.find_spec("peft") is not None


def _tiny(seed=0):
    return ToyTransformer(
        vocab_size=vocab_size(3, 2),
        d_model=16,
        n_layers=1,
        n_heads=2,
        mlp_width=32,
        causal=True,
        positional="learned",
        max_len=4,
        final_norm=True,
        seed=seed,
    )


def test_train_until_accurate_stops_at_target():
    torch.set_num_threads(1)
    tokens, answers, tids = multitask_sequences(3, ("copy_a", "max"))
    model = _tiny()
    steps, acc, losses = train_until_accurate(
        model,
        tokens,
        answers,
        tids,
        position=3,
        max_steps=400,
        lr=1e-2,
        batch=18,
        target=1.0,
        check_every=10,
        generator=torch.Generator().manual_seed(0),
    )
    assert steps < 400 and steps % 10 == 0 and acc.min() == 1.0
    assert np.allclose(acc, per_task_accuracy(model, tokens, answers, tids, 3))
    assert losses[-1] < losses[0]
    with pytest.raises(ValueError, match="max_steps"):
        train_until_accurate(model, tokens, answers, tids, position=3, max_steps=0, lr=1e-3, batch=4)
    # min_steps: the accuracy stop waits; the same data order reaches the same earlier point on the way
    more, acc2, losses2 = train_until_accurate(
        _tiny(),
        tokens,
        answers,
        tids,
        position=3,
        max_steps=400,
        lr=1e-2,
        batch=18,
        target=1.0,
        check_every=10,
        min_steps=steps + 50,
        generator=torch.Generator().manual_seed(0),
    )
    assert more >= steps + 50 and len(losses2) == more and losses2[: len(losses)] == losses
    with pytest.raises(ValueError, match="min_steps"):
        train_until_accurate(model, tokens, answers, tids, position=3, max_steps=10, lr=1e-3, batch=4, min_steps=11)


def test_sgd_path_matches_a_hand_loop():
    centres = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    loss = lambda th, c: 0.5 * ((th - c) ** 2).sum()  # noqa: E731  gradient th - c
    th0 = torch.zeros(3, dtype=torch.float64)
    path = sgd_path(loss, th0, lambda k: centres[k], steps=5, lr=0.3)
    th, want = th0.clone(), [th0.clone()]
    for k in range(5):
        th = th - 0.3 * (th - centres[k])
        want.append(th.clone())
    assert torch.allclose(path, torch.stack(want), atol=1e-14)
    with pytest.raises(ValueError, match="steps"):
        sgd_path(loss, th0, lambda k: centres[k], steps=0, lr=0.3)


@pytest.mark.skipif(HAS_PEFT, reason="peft is installed")
def test_lora_without_peft_says_how_to_get_it():
    with pytest.raises(MissingResource, match="pip install peft"):
        lora_recovery(_tiny(), lambda m: torch.zeros(()), ["blocks.0.mlp.up"], rank=2, steps=1, lr=0.1, noise=0.1)


@pytest.mark.skipif(not HAS_PEFT, reason="needs the optional package peft")
def test_lora_recovery_reduces_the_noise():
    torch.set_num_threads(1)
    tokens, answers, tids = multitask_sequences(3, ("copy_a", "max"))
    model = _tiny().double()
    train_until_accurate(
        model,
        tokens,
        answers,
        tids,
        position=3,
        max_steps=300,
        lr=1e-2,
        batch=18,
        target=1.0,
        check_every=10,
        generator=torch.Generator().manual_seed(0),
    )
    targets = ["blocks.0.mlp.up", "blocks.0.mlp.down"]
    path, clean = lora_recovery(
        model,
        lambda m: F.cross_entropy(m(tokens)[:, 3], answers),
        targets,
        rank=2,
        steps=30,
        lr=0.5,
        noise=0.3,
        generator=torch.Generator().manual_seed(1),
    )
    assert path.shape == (31, clean.numel()) == (31, 2 * 16 * 32)
    assert not torch.allclose(path[0], clean)  # the noise is there
    assert torch.linalg.matrix_rank(((path[-1] - path[0])[: 16 * 32]).reshape(32, 16)) <= 2  # a rank-2 update
    with pytest.raises(ValueError, match="nn.Linear"):
        lora_recovery(model, lambda m: torch.zeros(()), ["blocks.0.attn"], rank=2, steps=1, lr=0.1, noise=0.1)
