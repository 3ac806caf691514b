"""The leak test: silent on causal models, flags a model that reads the future at the right positions."""

from __future__ import annotations

import torch
from torch import nn

from theorylab.probes.causality import leak_test


class _Cumulative(nn.Module):
    """Causal: output t is the running mean of the embedded tokens <= t."""

    def __init__(self, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, 3)

    def forward(self, x):
        e = self.embed(x)
        return e.cumsum(1) / torch.arange(1, x.shape[1] + 1)[:, None]


class _PeekNext(_Cumulative):
    """Leaky: output t also reads token t + 1 (and only at even t)."""

    def forward(self, x):
        out = super().forward(x)
        nxt = torch.roll(self.embed(x), -1, dims=1)
        mask = (torch.arange(x.shape[1]) % 2 == 0).float()[:, None]
        return out + mask * nxt


def test_causal_model_has_no_leak():
    torch.manual_seed(0)
    report = leak_test(_Cumulative(7), 12, 7, torch.Generator().manual_seed(1))
    assert report.max_leak == 0.0 and report.per_position.shape == (12,)


def test_leaky_model_is_flagged_at_the_leaking_positions():
    torch.manual_seed(0)
    report = leak_test(_PeekNext(7), 12, 7, torch.Generator().manual_seed(1), sequences=3)
    # changing token t moves output t - 1 when t - 1 is even: t odd leaks, t even does not
    assert report.leaking_positions(1e-6) == [1, 3, 5, 7, 9, 11]
    assert report.max_leak > 1e-3


def test_bad_input_fails_early():
    import pytest

    with pytest.raises(ValueError, match="T >= 2"):
        leak_test(_Cumulative(3), 1, 3, torch.Generator())
