"""In-context regression training, explicit online fine-tuning, and the implicit-vs-explicit rows."""

from __future__ import annotations

import copy

import pytest
import torch

from theorylab.data.tasks import in_context_linear_regression
from theorylab.nn.regression_stack import in_context_regression_stack
from theorylab.train.in_context_regression import implicit_vs_explicit, online_finetune, train_in_context_regression


def _mse(model, prompts):
    with torch.no_grad():
        return float((model(prompts.tokens)[:, -1, -1] - prompts.y_query).pow(2).mean())


def test_training_lowers_the_test_loss_and_logs_every_step():
    model = in_context_regression_stack(2, seed=0)
    test = in_context_linear_regression(256, 12, 2, generator=torch.Generator().manual_seed(1))
    before = _mse(model, test)
    seen = []
    log = train_in_context_regression(
        model,
        steps=60,
        tasks=32,
        length=12,
        dim=2,
        lr=1e-2,
        generator=torch.Generator().manual_seed(0),
        check=lambda what, loss, step: seen.append(step),
    )
    assert [r["step"] for r in log] == list(range(60)) and seen == list(range(60))
    assert _mse(model, test) < 0.5 * before


def test_online_finetune_is_sgd_on_one_matrix_and_leaves_the_model():
    model = in_context_regression_stack(2, seed=1).requires_grad_(False)
    saved = copy.deepcopy(model.state_dict())
    tokens = in_context_linear_regression(1, 6, 2, generator=torch.Generator().manual_seed(2)).tokens[0]
    with torch.no_grad():
        base = float(model(tokens[-1:])[-1, -1])
    assert online_finetune(model, tokens, 0.3, lr=0.0) == pytest.approx([(base - 0.3) ** 2] * 5, rel=1e-12)
    # one step by hand: W1 - lr * d/dW1 ½ (f([x_1, 0]) - y_1)²
    x = tokens[:1].clone()
    y = float(x[0, -1])
    x[0, -1] = 0.0
    W1 = model.blocks[0].W1.detach().clone().requires_grad_(True)
    by_hand = copy.deepcopy(model)
    out = torch.func.functional_call(by_hand, {"blocks.0.W1": W1}, (x,))
    (g,) = torch.autograd.grad(0.5 * (out[-1, -1] - y) ** 2, W1)
    with torch.no_grad():
        by_hand.blocks[0].W1.copy_(W1 - 0.05 * g)
        expected = (float(by_hand(tokens[-1:])[-1, -1]) - 0.3) ** 2
    assert online_finetune(model, tokens, 0.3, lr=0.05)[0] == pytest.approx(expected, rel=1e-10)
    assert all(torch.equal(v, saved[k]) for k, v in model.state_dict().items())


def test_implicit_vs_explicit_rows():
    model = in_context_regression_stack(2, seed=0).requires_grad_(False)
    test = in_context_linear_regression(2, 7, 2, generator=torch.Generator().manual_seed(3))
    rows, ft = implicit_vs_explicit(model, test.tokens, test.y_query, 0.05)
    assert [(r["task"], r["i"]) for r in rows] == [(t, i) for t in range(2) for i in range(1, 7)]
    assert [(r["task"], r["i"]) for r in ft] == [(r["task"], r["i"]) for r in rows]
    assert max(r["rel_error"] for r in rows) <= 1e-12
    first = online_finetune(model, test.tokens[1], float(test.y_query[1]), 0.05)[0]
    assert ft[6]["finetuned_sq_error"] == pytest.approx(first)
