"""Token tasks of the representation-collapse study: shapes, layouts and determinism under a generator."""

from __future__ import annotations

import pytest
import torch

from theorylab.data.tasks import associative_recall, count_sequences, edit_first, passkey, random_tokens


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_count_sequences():
    x1, x2 = count_sequences(5, 3, 7)
    assert x1.tolist() == [[3] * 5 + [7]] and x2.tolist() == [[3] * 6 + [7]]
    with pytest.raises(ValueError):
        count_sequences(4, 2, 2)


def test_edit_first_changes_exactly_position_one():
    x = random_tokens(500, 6, 5, generator=_gen())
    y = edit_first(x, 5, _gen(1))
    assert torch.all(y[:, 0] != x[:, 0]) and torch.equal(y[:, 1:], x[:, 1:])
    assert set(y[:, 0].tolist()) <= set(range(5))
    assert torch.equal(y, edit_first(x, 5, _gen(1)))


def test_associative_recall_layout():
    p = associative_recall(4, 20, 64, 32, generator=_gen())
    assert p.tokens.shape == (32, 20) and p.answer.shape == (32,)
    rows = torch.arange(32)
    assert torch.equal(p.tokens[rows, p.source_position], p.answer)
    assert torch.equal(p.tokens[rows, p.source_position - 1], p.tokens[:, -1])  # the query is that value's key
    keys = p.tokens[:, 0:8:2]
    assert all(len(set(k.tolist())) == 4 for k in keys) and torch.all((keys >= 1) & (keys < 32))
    assert torch.all(p.tokens[:, 8:-1] == 0) and torch.all(p.answer >= 32) and torch.all(p.answer_position == 19)
    assert torch.equal(p.tokens, associative_recall(4, 20, 64, 32, generator=_gen()).tokens)
    with pytest.raises(ValueError):
        associative_recall(4, 8, 64, 1, generator=_gen())


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_passkey_layout(depth):
    p = passkey(50, depth, 64, 16, generator=_gen())
    rows = torch.arange(16)
    assert p.tokens.shape == (16, 50) and torch.all(p.tokens[:, -1] == 1)
    assert torch.all(p.tokens[rows, p.source_position - 1] == 0) and torch.all(p.source_position <= 48)
    assert torch.equal(p.tokens[rows, p.source_position], p.answer) and torch.all(p.answer >= 2)
    assert int((p.tokens == 0).sum()) == 16  # one marker per sequence; filler never uses the reserved tokens
    assert torch.equal(p.tokens, passkey(50, depth, 64, 16, generator=_gen()).tokens)
