"""data.truth_cooccurrence: the card's generator and synthetic documents, checked by counting."""

from __future__ import annotations

import pytest
import torch

from theorylab.data.truth_cooccurrence import (
    corrupt_one_fact,
    document_vocab,
    fact_table,
    truth_bijection,
    truth_cooccurrence,
    truth_documents,
)


def test_bijection_is_a_permutation_drawn_from_the_generator():
    g = truth_bijection(50, torch.Generator().manual_seed(3))
    assert sorted(g.tolist()) == list(range(50))
    assert torch.equal(g, truth_bijection(50, torch.Generator().manual_seed(3)))
    assert not torch.equal(g, truth_bijection(50, torch.Generator().manual_seed(4)))


def test_sequences_follow_the_mixture():
    n, rho, b = 16, 0.7, 200_000
    gen = torch.Generator().manual_seed(0)
    g = truth_bijection(n, gen)
    batch = truth_cooccurrence(n, rho, b, g, gen)
    x, y, x2, y2 = batch.tokens.unbind(1)
    assert batch.tokens.shape == (b, 4) and (x < n).all() and (y >= n).all() and (y < 2 * n).all()
    t = batch.true
    assert abs(t.float().mean().item() - rho) < 4 * (rho * (1 - rho) / b) ** 0.5
    # true contexts follow g at both pairs
    assert ((y[t] - n) == g[x[t]]).all() and ((y2[t] - n) == g[x2[t]]).all()
    # false contexts: y independent of x (match rate 1/N), y and y' independent of each other, uniform marginals
    f = ~t
    match = ((y[f] - n) == g[x[f]]).float().mean().item()
    assert abs(match - 1 / n) < 4 * (1 / n / f.sum().item()) ** 0.5
    counts = torch.bincount(y[f] - n, minlength=n).float() / f.sum()
    assert (counts - 1 / n).abs().max() < 0.01
    assert abs(((y[f] - n) == (y2[f] - n)).float().mean().item() - 1 / n) < 0.01
    # entities uniform
    assert (torch.bincount(x, minlength=n).float() / b - 1 / n).abs().max() < 0.01


def test_bad_inputs_fail_clearly():
    gen = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="rho"):
        truth_cooccurrence(4, 1.5, 3, truth_bijection(4, gen), gen)
    with pytest.raises(ValueError, match="'g'"):
        truth_cooccurrence(4, 0.5, 3, truth_bijection(5, gen), gen)
    with pytest.raises(ValueError, match="'n'"):
        truth_bijection(1, gen)


def test_documents_and_one_false_fact():
    s, r, a, f = 20, 4, 30, 8
    gen = torch.Generator().manual_seed(1)
    table = fact_table(s, r, a, gen)
    voc = document_vocab(s, r, a)
    docs = truth_documents(table, a, f, 0.5, 5000, gen)
    tok = docs.tokens.view(-1, f, 3)
    subj, rel, att = tok[..., 0] - voc["subject"], tok[..., 1] - voc["relation"], tok[..., 2] - voc["attribute"]
    assert (subj >= 0).all() and (subj < s).all() and (rel >= 0).all() and (rel < r).all() and (att < a).all()
    correct = att == table[subj, rel]
    assert torch.equal(correct, docs.fact_true)
    assert correct[docs.true].all()
    assert abs(correct[~docs.true].float().mean().item() - 1 / a) < 0.01
    assert abs(docs.true.float().mean().item() - 0.5) < 0.03
    clean = truth_documents(table, a, f, 1.0, 1000, gen)
    dirty = corrupt_one_fact(clean, table, a, 2, gen)
    changed = (dirty.tokens != clean.tokens).any(0).nonzero().flatten().tolist()
    assert changed == [3 * 2 + 2]
    t2 = dirty.tokens.view(-1, f, 3)
    assert (t2[:, 2, 2] - voc["attribute"] != table[t2[:, 2, 0], t2[:, 2, 1] - voc["relation"]]).all()
    assert not dirty.fact_true[:, 2].any() and dirty.fact_true[:, [0, 1, 3]].all()
