from __future__ import annotations

import pytest
import torch

from theorylab.data.tasks import in_context_linear_regression


def test_in_context_linear_regression_prompts():
    p = in_context_linear_regression(5, 10, 3, generator=torch.Generator().manual_seed(0))
    assert p.tokens.shape == (5, 10, 4) and p.n_context == 9
    x, y = p.tokens[..., :3], p.tokens[..., 3]
    assert torch.allclose(y[:, :-1], torch.einsum("ntd,nd->nt", x[:, :-1], p.w))
    assert torch.all(y[:, -1] == 0)  # the query's label is hidden
    assert torch.allclose(p.y_query, (x[:, -1] * p.w).sum(-1))
    with pytest.raises(ValueError):
        in_context_linear_regression(1, 1, 2, generator=torch.Generator())
