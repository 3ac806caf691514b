"""Random embedded prompts: the rows come from one Gaussian table and the other query is a different token."""

from __future__ import annotations

import pytest
import torch

from theorylab.data.random_prompts import embedded_prompt_pair


def test_prompt_rows_are_table_rows_and_the_other_token_differs():
    for seed in range(20):
        g = torch.Generator().manual_seed(seed)
        X, other = embedded_prompt_pair(3, 4, 5, g)
        table = torch.randn(3, 4, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        assert X.shape == (6, 4) and other.shape == (4,) and X.dtype == torch.float64
        ids = [int(torch.nonzero((table == row).all(1))[0]) for row in X]  # every row is one of the table's rows
        assert not torch.equal(other, X[-1]) and any(torch.equal(other, t) for t in table)
        assert len(ids) == 6


def test_other_token_is_uniform_over_the_rest():
    counts = torch.zeros(4)
    for seed in range(2000):
        X, other = embedded_prompt_pair(4, 2, 0, torch.Generator().manual_seed(seed))
        table = torch.randn(4, 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        q = int(torch.nonzero((table == X[-1]).all(1))[0])
        o = int(torch.nonzero((table == other).all(1))[0])
        counts[(o - q) % 4] += 1
    assert counts[0] == 0 and torch.allclose(counts[1:] / counts[1:].sum(), torch.full((3,), 1 / 3), atol=0.04)


def test_same_generator_state_same_prompt_and_checks():
    a = embedded_prompt_pair(10, 3, 2, torch.Generator().manual_seed(7))
    b = embedded_prompt_pair(10, 3, 2, torch.Generator().manual_seed(7))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    with pytest.raises(ValueError, match="vocab"):
        embedded_prompt_pair(1, 3, 2, torch.Generator())
