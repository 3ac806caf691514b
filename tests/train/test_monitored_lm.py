"""Monitored LM loops: measurements at the logged steps, divergence detection, warmup on shared batches."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.train.monitored_lm import (
    theta_over_training,
    train_hf_causal_lm,
    train_until_divergence,
    warmup_comparison,
)

STREAM = torch.arange(3000) % 5  # fully predictable from context


def _toy(seed=0):
    return ToyTransformer(
        d_model=16,
        n_heads=2,
        n_layers=2,
        mlp_width=32,
        vocab_size=5,
        causal=True,
        positional="learned",
        max_len=12,
        norm_position="post",
        seed=seed,
    )


def test_train_until_divergence_learns_at_a_small_rate_and_stops_at_a_huge_one():
    rows, status = train_until_divergence(
        _toy(), STREAM, steps=25, batch=8, length=12, lr=1e-2, warmup=5, generator=torch.Generator().manual_seed(0)
    )
    assert status == "ok" and [r["step"] for r in rows] == list(range(25)) and all(r["warmup"] == 5 for r in rows)
    assert rows[-1]["loss"] < rows[0]["loss"] - 0.5
    rows, status = train_until_divergence(
        _toy(), STREAM, steps=40, batch=8, length=12, lr=50.0, warmup=0, generator=torch.Generator().manual_seed(0)
    )
    assert status.startswith("diverged") and len(rows) < 40
    last = rows[-1]["loss"]
    assert not math.isfinite(last) or last > 2 * min(r["loss"] for r in rows[:-1])


def test_warmup_comparison_shares_init_and_batches_and_the_warmup_changes_the_steps():
    t = warmup_comparison(
        _toy,
        STREAM,
        warmups=(0, 4),
        steps=5,
        batch=4,
        length=12,
        lr=1e-2,
        make_generator=lambda: torch.Generator().manual_seed(0),
    )
    assert list(t.columns) == ["warmup", "step", "loss", "status"]
    status = t[t["step"] < 0].set_index("warmup")["status"]
    assert status.to_dict() == {0: "ok", 4: "ok"}
    curves = t[t["step"] >= 0].pivot(index="step", columns="warmup", values="loss")
    assert curves.loc[0, 0] == curves.loc[0, 4]  # same model, same first batch
    assert curves.loc[1, 0] != curves.loc[1, 4]  # a quarter of the learning rate on the first step


def _gpt2(vocab=5):
    pytest.importorskip("transformers")
    from theorylab.nn.hf import random_init

    return random_init(
        "gpt2",
        seed=0,
        dtype=torch.float32,
        init_std=0.02,
        n_layer=1,
        n_embd=16,
        n_head=2,
        n_positions=16,
        vocab_size=vocab,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )


def test_train_hf_causal_lm_measures_at_the_logged_steps_in_eval_mode():
    model = _gpt2()
    modes = {}

    def measure(m):
        modes[len(modes)] = m.training
        return len(modes)

    measured, losses = train_hf_causal_lm(
        model,
        STREAM,
        steps=7,
        batch=4,
        length=16,
        lr=1e-2,
        generator=torch.Generator().manual_seed(0),
        measure=measure,
        log_every=3,
    )
    assert list(measured) == [0, 3, 6, 7] and list(losses) == list(range(7)) and not any(modes.values())
    assert model.training and losses[6] < losses[0]


def test_theta_over_training_tables():
    pytest.importorskip("transformers")
    from theorylab.theory.token_entropy import unigram_entropy

    theta, loss = theta_over_training(
        STREAM,
        5,
        layers=1,
        width=16,
        heads=2,
        context=16,
        batch=4,
        steps=4,
        lr=1e-3,
        log_every=2,
        min_keys=8,
        init_seed=0,
        probe_generator=torch.Generator().manual_seed(1),
        generator=torch.Generator().manual_seed(2),
    )
    assert list(theta.columns) == ["layer", "head", "mean", "p10", "rows", "step", "model", "train_loss"]
    assert sorted(set(theta["step"])) == [0, 2, 4] and theta["train_loss"].isna().tolist() == [False] * 4 + [True] * 2
    assert (theta["rows"] == 8 * (16 - 8 + 1)).all() and theta["mean"].between(
        0.9, 1.0
    ).all()  # near-uniform rows at init
    assert loss["step"].tolist() == [0, 1, 2, 3] and loss["unigram_entropy"].iloc[0] == unigram_entropy(STREAM, 5)
