"""Batched training equals S separate plain training loops (float64), and members never mix."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.train.batched import AdamWSchedule, StackedModels, evaluate_stacked, train_stacked

D, T, B, S, STEPS = 8, 5, 6, 3, 25


def _model(seed: int, **kw) -> ToyTransformer:
    kw = {**dict(d_model=D, n_heads=2, n_layers=2, mlp_width=12, norm="layer", positional="learned", max_len=T), **kw}
    return ToyTransformer(**kw, seed=seed).double()


def _batches(steps: int, members: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [
        (
            torch.randn(members, B, T, D, generator=g, dtype=torch.float64),
            torch.randn(members, B, T, D, generator=g, dtype=torch.float64),
        )
        for _ in range(steps)
    ]


def _mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return (pred - target).pow(2).mean()


def _plain_loop(model: torch.nn.Module, data: list, member: int, optim: AdamWSchedule) -> torch.nn.Module:
    """The reference: one model, torch's AdamW and LambdaLR, torch's clip_grad_norm_."""
    opt = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=optim.lr,
        betas=optim.betas,
        weight_decay=optim.weight_decay,
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, optim.lr_factor(len(data)))
    for x, y in data:
        loss = _mse(model(x[member]), y[member])
        opt.zero_grad()
        loss.backward()
        if optim.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), optim.grad_clip)
        opt.step()
        sched.step()
    return model


@pytest.mark.parametrize("clip", [None, 0.05])
def test_batched_training_equals_separate_runs_in_float64(clip):
    optim = AdamWSchedule(lr=3e-3, betas=(0.9, 0.95), weight_decay=0.01, warmup_frac=0.2, grad_clip=clip)
    data = _batches(STEPS, S)
    stacked = StackedModels([_model(s) for s in range(S)])
    log = train_stacked(stacked, lambda step: data[step], _mse, steps=STEPS, optim=optim, log_every=1)
    assert (log.diverged_at == -1).all()
    for s in range(S):
        alone = _plain_loop(_model(s), data, s, optim)
        trained = stacked.member(s)
        for (name, p), (_, q) in zip(alone.named_parameters(), trained.named_parameters()):
            torch.testing.assert_close(q, p, atol=1e-10, rtol=1e-9, msg=f"member {s}, {name}")
        # The logged loss of the first step is the plain model's first loss.
        first = _mse(_model(s)(data[0][0][s]), data[0][1][s]).item()
        assert log.losses[0][s] == pytest.approx(first, rel=1e-12)


def test_stacked_forward_equals_each_member():
    models = [_model(s) for s in range(S)]
    stacked = StackedModels(models)
    x = torch.randn(S, 4, T, D, dtype=torch.float64)
    out = evaluate_stacked(stacked, x, chunk=3)
    for s, m in enumerate(models):
        torch.testing.assert_close(out[s], m(x[s]))


def test_a_diverging_member_is_reported_and_leaves_the_others_untouched():
    optim = AdamWSchedule(lr=1e-3)
    data = _batches(12, S)
    poisoned = [(x.clone(), y.clone()) for x, y in data]
    for x, _ in poisoned[7:]:
        x[1] = float("nan")
    stacked = StackedModels([_model(s) for s in range(S)])
    log = train_stacked(stacked, lambda step: poisoned[step], _mse, steps=12, optim=optim)
    assert log.diverged_at.tolist() == [-1, 7, -1]
    assert log.diverged.tolist() == [False, True, False]
    clean = StackedModels([_model(s) for s in range(S)])
    train_stacked(clean, lambda step: data[step], _mse, steps=12, optim=optim)
    for s in (0, 2):
        for (n, p), (_, q) in zip(clean.member(s).named_parameters(), stacked.member(s).named_parameters()):
            torch.testing.assert_close(q, p, atol=0, rtol=0, msg=n)
    table = log.table()
    assert (
        set(table.columns) == {"step", "member", "loss"}
        and np.isnan(table[(table.member == 1) & (table.step == 11)]["loss"]).all()
    )


def test_training_stops_when_every_member_diverged():
    data = _batches(30, 2)
    for x, _ in data[3:]:
        x[:] = float("inf")
    log = train_stacked(
        StackedModels([_model(0), _model(1)]),
        lambda step: data[step],
        _mse,
        steps=30,
        optim=AdamWSchedule(),
        log_every=1,
    )
    assert log.diverged_at.tolist() == [3, 3]
    assert log.steps[-1] == 3


def test_frozen_parameters_stay_fixed():
    models = [
        ToyTransformer(d_model=D, n_heads=2, vocab_size=7, freeze_embedding=True, mlp_width=8, seed=s) for s in range(2)
    ]
    stacked = StackedModels(models)
    before = stacked.params["embed__weight"].detach().clone()
    g = torch.Generator().manual_seed(0)

    def batches(step):
        return torch.randint(0, 7, (2, 4, T), generator=g), torch.randint(0, 7, (2, 4, T), generator=g)

    def loss(logits, target):
        return torch.nn.functional.cross_entropy(logits.reshape(-1, 7), target.reshape(-1))

    train_stacked(stacked, batches, loss, steps=5, optim=AdamWSchedule(lr=1e-2))
    assert torch.equal(stacked.params["embed__weight"], before)
    assert not stacked.member(0).embed.weight.requires_grad


def test_members_must_share_an_architecture():
    with pytest.raises(ValueError, match="architecture"):
        StackedModels([_model(0), _model(1, mlp_width=4)])
    with pytest.raises(ValueError, match="members on axis 0"):
        StackedModels([_model(0)])(torch.randn(2, 1, T, D, dtype=torch.float64))


def test_warmup_then_cosine_schedule():
    factor = AdamWSchedule(warmup_frac=0.1).lr_factor(100)
    assert factor(0) == pytest.approx(0.1) and factor(9) == pytest.approx(1.0)
    assert factor(10) == pytest.approx(1.0)
    assert factor(55) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.5)))
    assert factor(99) < 0.01
    assert AdamWSchedule(schedule="constant").lr_factor(10)(7) == 1.0


def test_single_member_fast_path_matches_the_vmapped_stack():
    """With S = 1 the stack is indexed, not vmapped; training must match member 0 of an S = 2 stack of copies."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3)).double()
    x, y = torch.randn(16, 5, dtype=torch.float64), torch.randn(16, 3, dtype=torch.float64)
    one = StackedModels([copy.deepcopy(model)])
    two = StackedModels([copy.deepcopy(model), copy.deepcopy(model)])
    mse = lambda p, t: ((p - t) ** 2).mean()  # noqa: E731
    opt = AdamWSchedule(lr=1e-2, weight_decay=0.1, warmup_frac=0.1)
    seen: list[int] = []
    train_stacked(one, lambda s: (x[None], y[None]), mse, steps=25, optim=opt, evaluate=seen.append, evaluate_every=10)
    train_stacked(two, lambda s: (x[None].expand(2, -1, -1), y[None].expand(2, -1, -1)), mse, steps=25, optim=opt)
    for a, b in zip(one.member(0).parameters(), two.member(0).parameters()):
        assert torch.allclose(a, b, atol=1e-12)
    assert seen == [0, 10, 20, 25]


def test_sgd_schedule_matches_torch_sgd():
    torch.manual_seed(1)
    model = torch.nn.Linear(4, 2).double()
    x, y = torch.randn(8, 4, dtype=torch.float64), torch.randn(8, 2, dtype=torch.float64)
    ref = copy.deepcopy(model)
    stack = StackedModels([copy.deepcopy(model)])
    mse = lambda p, t: ((p - t) ** 2).mean()  # noqa: E731
    train_stacked(
        stack,
        lambda s: (x[None], y[None]),
        mse,
        steps=20,
        optim=AdamWSchedule(lr=0.05, kind="sgd", momentum=0.9, weight_decay=1e-3, schedule="constant"),
    )
    opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    for _ in range(20):
        opt.zero_grad()
        mse(ref(x), y).backward()
        opt.step()
    for a, b in zip(stack.member(0).parameters(), ref.parameters()):
        assert torch.allclose(a, b, atol=1e-12)
