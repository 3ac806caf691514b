"""Training on the trigger task: it learns the association, keeps its rows tidy, drops diverged seeds."""

from __future__ import annotations

import pytest
import torch

from theorylab.core.errors import Diverged
from theorylab.data.markov import TriggerNoiseTask
from theorylab.nn.transformer_recipes import recall_transformer
from theorylab.train.batched import AdamWSchedule, StackedModels
from theorylab.train.trigger_recall import train_trigger_recall

TASK = TriggerNoiseTask.dirichlet(12, 0.3, trigger_boost=0.2, seed=0)
TEST = TASK.sample(32, 24, 0.0, torch.Generator().manual_seed(9))


def _models(n: int, poison: int | None = None) -> StackedModels:
    models = [recall_transformer(d_model=16, vocab=12, seq_len=24, ff_width=32, seed=s) for s in range(n)]
    if poison is not None:
        with torch.no_grad():
            models[poison].blocks[0].attn.W_Q.fill_(float("nan"))
    return StackedModels(models)


def _train(models, *, train_bank=0, p_noise=1.0, steps=40):
    return train_trigger_recall(
        models,
        TASK,
        TEST,
        p_noise=p_noise,
        steps=steps,
        batch=16,
        seq_len=24,
        train_bank=train_bank,
        optim=AdamWSchedule(lr=1e-2),
        generator=torch.Generator().manual_seed(0),
        evaluate_every=20,
        name="tiny",
        labels=dict(variant="tiny", p_noise=p_noise),
    )


@pytest.mark.parametrize("bank", [0, 64])
def test_learns_the_noise_association_and_logs_tidy_rows(bank):
    curve, bad = _train(_models(2), train_bank=bank)
    assert not bad
    assert list(curve.columns[:4]) == ["variant", "p_noise", "seed", "step"]
    assert sorted(curve["step"].unique()) == [0, 20, 40] and set(curve["seed"]) == {0, 1}
    start, end = curve[curve["step"] == 0], curve[curve["step"] == 40]
    # trained with p = 1 (always the noise token after the trigger): P(noise) at test triggers rises towards 1
    assert (end["P_noise_full"].to_numpy() > 0.8).all() and (start["P_noise_full"].to_numpy() < 0.5).all()


def test_diverged_members_are_dropped_and_all_diverged_raises():
    curve, bad = _train(_models(2, poison=1), steps=4)
    assert bad == {1: 0} and set(curve["seed"]) == {0}
    with pytest.raises(Diverged, match="every seed of tiny"):
        _train(StackedModels([_models(1, poison=0).member(0)]), steps=4)
