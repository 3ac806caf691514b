"""Markov token data against brute force and exact laws."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.data.markov import (
    TriggerNoiseTask,
    bigram_counts,
    dirichlet_bigram,
    previous_trigger_next,
    split_halves,
    stationary_distribution,
    top_successor,
)


def test_dirichlet_rows_are_distributions_and_seeded():
    p = dirichlet_bigram(10, 0.2, seed=3)
    assert p.shape == (10, 10) and np.allclose(p.sum(1), 1) and (p >= 0).all()
    assert np.array_equal(p, dirichlet_bigram(10, 0.2, seed=3))
    assert not np.array_equal(p, dirichlet_bigram(10, 0.2, seed=4))


def test_stationary_distribution_matches_power_iteration():
    p = dirichlet_bigram(12, 0.5, seed=1)
    pi = stationary_distribution(p)
    power = np.full(12, 1 / 12)
    for _ in range(2000):
        power = power @ p
    assert np.allclose(pi, power, atol=1e-10)
    assert np.allclose(pi @ p, pi, atol=1e-12)


def test_bigram_counts_recover_a_chain():
    task = TriggerNoiseTask.dirichlet(8, alpha=1.0, seed=2)
    seqs = task.sample(400, 200, p_noise=0.0, generator=torch.Generator().manual_seed(0))
    # Background transitions only: drop pairs that start at the trigger (the task rewrites those).
    t = seqs.tokens.numpy()
    est = np.zeros((8, 8))
    for row in t:
        for a, b in zip(row[:-1], row[1:]):
            if a != task.trigger:
                est[a, b] += 1
    est = est / np.maximum(est.sum(1, keepdims=True), 1)
    rows = [i for i in range(8) if i not in (task.trigger, task.noise)]  # noise is never visited at p = 0
    assert np.abs(est[rows] - task.transition[rows]).max() < 0.03
    counts = bigram_counts(np.array([0, 1, 0, 1, 1]), 3)
    assert np.allclose(counts[0], [0, 1, 0]) and np.allclose(counts[1], [0.5, 0.5, 0]) and np.allclose(counts[2], 1 / 3)


def test_trigger_task_follows_its_rules():
    task = TriggerNoiseTask.dirichlet(16, alpha=0.2, trigger_boost=0.1, seed=0)
    assert task.noise == 15 and task.trigger != task.noise
    assert np.allclose(task.transition[:, task.noise], 0)  # the background never emits noise
    pi = stationary_distribution(TriggerNoiseTask.dirichlet(16, alpha=0.2, seed=0).transition)
    pi[15] = -1
    assert task.trigger == int(np.argmax(pi))
    b = task.sample(2000, 64, p_noise=0.3, generator=torch.Generator().manual_seed(1))
    tok, out = b.tokens, b.outputs
    assert not ((out == task.trigger) | (out == task.noise)).any()
    nxt = tok[:, 1:][b.after_trigger[:, :-1]]
    expect = out[:, None].expand_as(tok)[:, 1:][b.after_trigger[:, :-1]]
    is_noise = nxt == task.noise
    assert ((nxt == expect) | is_noise).all()
    n = len(nxt)
    assert abs(float(is_noise.double().mean()) - 0.3) < 4 * np.sqrt(0.3 * 0.7 / n)
    # Brute-force masks.
    for i in range(5):
        seen_trigger = False
        for t in range(64):
            is_t = bool(tok[i, t] == task.trigger) and t < 63
            assert bool(b.after_trigger[i, t]) == is_t
            assert bool(b.seen[i, t]) == (is_t and seen_trigger)
            seen_trigger |= is_t
    clean = task.sample(200, 64, p_noise=0.0, generator=torch.Generator().manual_seed(2))
    assert not (clean.tokens == task.noise).any()
    tgt = clean.targets()
    assert (tgt[clean.after_trigger] == clean.outputs[:, None].expand_as(tgt)[clean.after_trigger]).all()
    assert (tgt[~clean.after_trigger] == -100).all()


def test_trigger_task_rejects_bad_values():
    with pytest.raises(ValueError, match="p_noise"):
        TriggerNoiseTask.dirichlet(8).sample(2, 8, 1.5, torch.Generator())
    with pytest.raises(ValueError, match="trigger_boost"):
        TriggerNoiseTask.dirichlet(8, trigger_boost=1.0)


def test_previous_trigger_next_against_a_loop():
    task = TriggerNoiseTask.dirichlet(64, 0.2, trigger_boost=0.1, seed=0)
    batch = task.sample(20, 64, 0.5, torch.Generator().manual_seed(0))
    key = previous_trigger_next(batch)
    assert (key >= 0).any()
    for i in range(20):
        last = -1
        for t in range(64):
            if batch.after_trigger[i, t]:
                assert int(key[i, t]) == (last + 1 if last >= 0 else -1)
                last = t
            else:
                assert int(key[i, t]) == -1


def test_split_halves_are_disjoint_and_cover():
    task = TriggerNoiseTask.dirichlet(10, 0.5, trigger_boost=0.2, seed=1)
    batch = task.sample(9, 16, 0.3, torch.Generator().manual_seed(2))
    halves = split_halves(batch)
    assert list(halves) == ["validation", "test"] and len(halves["validation"].tokens) == 4
    for field in ("tokens", "outputs", "after_trigger", "seen"):
        joined = torch.cat([getattr(halves["validation"], field), getattr(halves["test"], field)])
        assert torch.equal(joined, getattr(batch, field))


def test_top_successor_against_a_count_loop():
    stream = np.array([0, 1, 0, 1, 0, 2, 2, 2, 1, 3])
    top = top_successor(stream, 5)
    assert top.tolist()[:3] == [1, 0, 2] and top[3] == 3 and top[4] == 4  # unseen tokens map to themselves
    rng = np.random.default_rng(0)
    stream = rng.integers(0, 7, size=400)
    top = top_successor(stream, 9)
    for a in range(9):
        counts = np.bincount(stream[1:][stream[:-1] == a], minlength=9)
        if counts.sum() == 0:
            assert int(top[a]) == a
        else:
            best = np.flatnonzero(counts == counts.max())
            assert int(top[a]) == best[-1]  # ties go to the largest id
