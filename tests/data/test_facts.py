"""data.facts: bijection tables, multi-hop chains, CoT traces and Zipf queries against brute-force references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.data.facts import random_bijections, zipf_queries, zipf_weights


def test_bijections_are_seeded_permutations():
    t = random_bijections(50, 3, torch.Generator().manual_seed(0))
    assert t.table.shape == (3, 50) and t.table.dtype == torch.int64
    for row in t.table:
        assert sorted(row.tolist()) == list(range(50))
    again = random_bijections(50, 3, torch.Generator().manual_seed(0))
    assert torch.equal(t.table, again.table)
    other = random_bijections(50, 3, torch.Generator().manual_seed(1))
    assert not torch.equal(t.table, other.table)
    assert t.vocab_size == 53 and t.relation_token(2) == 52


def test_queries_and_chains_match_a_loop():
    t = random_bijections(7, 3, torch.Generator().manual_seed(2))
    pi = t.table.tolist()
    seq, tgt = t.queries()
    assert seq.shape == (21, 2)
    for (s, rt), y in zip(seq.tolist(), tgt.tolist()):
        assert y == pi[rt - 7][s]
    seq2, ans, inter = t.chains(2)
    assert seq2.shape == (7 * 9, 3) and inter.shape == (63, 2)
    seen = set()
    for (s, r1, r2), y, (m, y2) in zip(seq2.tolist(), ans.tolist(), inter.tolist()):
        assert m == pi[r1 - 7][s] and y == y2 == pi[r2 - 7][pi[r1 - 7][s]]
        seen.add((s, r1, r2))
    assert len(seen) == 63  # every (s, r1, r2) once
    trace, targets = t.cot_traces(2)
    assert trace.shape == (63, 5) and torch.equal(trace[:, 3:], inter) and torch.equal(targets, inter)
    seq3, ans3, _ = t.chains(3)
    assert len(seq3) == 7 * 27
    s, r1, r2, r3 = seq3[100].tolist()
    assert ans3[100] == pi[r3 - 7][pi[r2 - 7][pi[r1 - 7][s]]]


def test_zipf_weights_and_sampling():
    w = zipf_weights(5, 1.0)
    ref = np.array([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5])
    np.testing.assert_allclose(w.numpy(), ref / ref.sum(), rtol=1e-15)
    np.testing.assert_allclose(zipf_weights(4, 0.0).numpy(), 0.25)
    t = random_bijections(6, 2, torch.Generator().manual_seed(3))
    order = torch.arange(12)
    seq, tgt, idx = zipf_queries(t, 200_000, torch.Generator().manual_seed(4), exponent=1.2, order=order)
    all_seq, all_tgt = t.queries()
    assert torch.equal(seq, all_seq[idx]) and torch.equal(tgt, all_tgt[idx])
    freq = np.bincount(idx.numpy(), minlength=12) / 200_000
    p = zipf_weights(12, 1.2).numpy()
    assert np.abs(freq - p).max() < 5 * np.sqrt(p.max() / 200_000)  # Monte Carlo: 5 standard errors


def test_bad_input_names_the_field():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="n_entities"):
        random_bijections(1, 2, g)
    with pytest.raises(ValueError, match="n_relations"):
        random_bijections(5, 0, g)
    t = random_bijections(5, 1, g)
    with pytest.raises(ValueError, match="hops"):
        t.chains(0)
    with pytest.raises(ValueError, match="exponent"):
        zipf_weights(3, -1.0)
    with pytest.raises(ValueError, match="order"):
        zipf_queries(t, 10, g, order=torch.zeros(5, dtype=torch.long))


def test_noisy_context_places_subject_and_relation():
    from theorylab.data.facts import noisy_context

    t = random_bijections(9, 2, torch.Generator().manual_seed(5))
    seq, _ = t.queries()
    out = noisy_context(seq, 6, 4, t.vocab_size, torch.Generator().manual_seed(6))
    assert out.shape == (18, 6) and torch.equal(out[:, -1], seq[:, 1])
    for row, (s, _) in zip(out.tolist(), seq.tolist()):
        body = row[:-1]
        assert body.count(s) == 1  # the subject once, everything else noise from the extra vocabulary
        assert all(11 <= x < 15 for x in body if x != s)
    positions = [row[:-1].index(s) for row, (s, _) in zip(out.tolist(), seq.tolist())]
    assert len(set(positions)) > 1
    assert torch.equal(out, noisy_context(seq, 6, 4, t.vocab_size, torch.Generator().manual_seed(6)))
    with pytest.raises(ValueError, match="length"):
        noisy_context(seq, 1, 4, 11, torch.Generator())
