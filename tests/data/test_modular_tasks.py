"""data.modular_tasks against brute force."""

from __future__ import annotations

import pytest
import torch

from theorylab.data.modular_tasks import TASKS, multitask_sequences, task_prompts, vocab_size


def test_answers_brute_force():
    p = 7
    tokens, answers, task_ids = multitask_sequences(p)
    assert tokens.shape == (4 * p * p, 4) and answers.shape == task_ids.shape == (4 * p * p,)
    assert int(tokens.max()) < vocab_size(p) == p + 5
    ref = {
        "add": lambda a, b: (a + b) % p,
        "sub": lambda a, b: (a - b) % p,
        "copy_a": lambda a, b: a,
        "max": lambda a, b: max(a, b),
    }
    for (t, a, b, eq), y, k in zip(tokens.tolist(), answers.tolist(), task_ids.tolist()):
        assert t == p + k and eq == p + 4 and 0 <= a < p and 0 <= b < p
        assert y == ref[TASKS[k]](a, b)
    assert len({tuple(r) for r in tokens.tolist()}) == len(tokens)


def test_prompts_share_operands():
    ta, _ = task_prompts(5, "add")
    tb, yb = task_prompts(5, "max")
    assert torch.equal(ta[:, 1:], tb[:, 1:]) and (ta[:, 0] != tb[:, 0]).all()
    assert torch.equal(yb, torch.maximum(tb[:, 1], tb[:, 2]))
    sub = multitask_sequences(5, ("sub", "max"))
    assert int(sub[0].max()) < vocab_size(5, 2)


def test_bad_input():
    with pytest.raises(ValueError, match="p must be"):
        multitask_sequences(1)
    with pytest.raises(ValueError, match="tasks must be"):
        multitask_sequences(5, ("add", "mul"))
    with pytest.raises(ValueError, match="not one of"):
        task_prompts(5, "max", ("add", "sub"))
