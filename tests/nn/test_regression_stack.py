"""The in-context regression stack: shape, seeding, and Dherin's setting (no layer norm)."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.regression_stack import in_context_regression_stack


def test_shape_seed_and_no_layer_norm():
    a, b = in_context_regression_stack(2, 2, seed=3), in_context_regression_stack(2, 2, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.blocks[0].W1, in_context_regression_stack(2, 2, seed=4).blocks[0].W1)
    assert len(a.blocks) == 2 and a.blocks[0].W1.shape == (12, 3) and a.family == "vanilla"
    assert not a.blocks[0].layer_norm and a.blocks[0].W1.dtype == torch.float64
    x = torch.randn(5, 7, 3, dtype=torch.float64)
    assert a(x).shape == (5, 7, 3)
    # no layer norm: the MLP input n is the residual h itself (Dherin et al.'s Thm 2.2 setting)
    parts = a.blocks[0].parts(x[0])
    assert torch.equal(parts["n"], parts["h"])
    with pytest.raises(ValueError, match="dim"):
        in_context_regression_stack(0, seed=0)
