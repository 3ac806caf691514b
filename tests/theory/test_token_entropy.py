"""Unigram entropy of a token stream against SciPy and the uniform case."""

from __future__ import annotations

import math

import pytest
import torch
from scipy.stats import entropy

from theorylab.theory.token_entropy import unigram_entropy


def test_unigram_entropy_matches_scipy_and_log_v_for_uniform():
    assert unigram_entropy(torch.arange(40) % 8, 8) == pytest.approx(math.log(8), rel=1e-14)
    stream = torch.tensor([0, 0, 0, 1, 2, 2, 5])
    counts = torch.bincount(stream, minlength=9).double().numpy()
    assert unigram_entropy(stream, 9) == pytest.approx(entropy(counts), rel=1e-14)  # unused tokens add nothing
    assert unigram_entropy(torch.zeros(5, dtype=torch.long), 3) == 0.0
