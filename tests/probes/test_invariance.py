"""probes.invariance: exact invariance of a no-position model on identical token multisets; gaps it can detect."""

from __future__ import annotations

import pytest
import torch

from theorylab.data import graph_tokens as gt
from theorylab.nn.graph_heads import GraphTransformer
from theorylab.probes.invariance import invariance_gap, invariance_gaps, pair_accuracy


def _pairs(kind: str, copies: int = 8):
    S, R = gt.relabelled_pairs(gt.shrikhande(), gt.rook_graph(), copies, torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(1)
    return (
        gt.tokenize(S, kind, generator=gen, dtype=torch.float32),
        gt.tokenize(R, kind, generator=gen, dtype=torch.float32),
    )


def test_rw_tokens_give_identical_pooled_logits_adjacency_does_not():
    a, b = _pairs("random_walk")
    model = GraphTransformer(a.shape[-1], 2, "graph", n_layers=2, seed=0)
    assert invariance_gap(model, a, b) <= 1e-5
    assert pair_accuracy(model, a, b) == 0.5
    a, b = _pairs("adjacency")
    model = GraphTransformer(a.shape[-1], 2, "graph", n_layers=2, seed=0)
    assert invariance_gap(model, a, b) > 1e-3  # different inputs: the probe sees the difference


def test_gap_is_zero_under_token_permutation_and_positive_for_a_positional_model():
    a, _ = _pairs("adjacency")
    perm = a[:, torch.randperm(16, generator=torch.Generator().manual_seed(2))]
    model = GraphTransformer(a.shape[-1], 3, "graph", seed=1)
    gaps = invariance_gaps(model, a, perm)
    assert gaps.shape == (8,) and float(gaps.max()) <= 1e-5

    class Positional(torch.nn.Module):  # a model that reads token order: the probe must flag it
        def forward(self, x, mask=None):
            return x[:, 0, :3]

    assert invariance_gap(Positional(), a, perm) > 0.5


def test_bad_inputs():
    a, b = _pairs("random_walk")
    model = GraphTransformer(a.shape[-1], 2, "node", seed=0)
    with pytest.raises(ValueError, match="pooled"):
        invariance_gap(model, a, b)
    with pytest.raises(ValueError, match="one shape"):
        invariance_gap(model, a, b[:2])
