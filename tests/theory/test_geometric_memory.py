"""theory.geometric_memory: codes, exact weights (run through ToyTransformer), margin and parameter closed forms,
against a plain NumPy evaluation of the card's formulas and brute-force counts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from theorylab.data.facts import random_bijections
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.theory.geometric_memory import (
    code_length,
    construction_config,
    construction_margin,
    construction_weights,
    parameter_counts,
    recall_bound,
    sign_codes,
)


def _numpy_reference(table: np.ndarray, k: int, gate: float = 2.0) -> np.ndarray:
    """Logits (N·R, N) from the card's formulas, written independently of the state dict: h = e_s + e_r; answer_j =
    sum_r' ReLU(h_r'j - M(1 - h_rel r')) - ReLU(-h_r'j - M(1 - h_rel r')); logit_a = <u_a, answer>."""
    rr, n = table.shape
    codes = np.array([[1 - 2 * ((a % 2**k) >> j & 1) for j in range(k)] for a in range(n)], float)
    out = []
    for r in range(rr):
        for s in range(n):
            blocks = np.stack([codes[table[q, s]] for q in range(rr)])  # (R, k)
            rel = np.eye(rr)[r]
            relu = lambda x: np.maximum(x, 0)  # noqa: E731
            ans = sum(relu(blocks[q] - gate * (1 - rel[q])) - relu(-blocks[q] - gate * (1 - rel[q])) for q in range(rr))
            out.append(codes @ ans)
    return np.array(out)


def _model(facts, k):
    m = ToyTransformer(**construction_config(facts.n_entities, facts.n_relations, k), seed=0).double()
    m.load_state_dict(construction_weights(facts.table, k))
    return m


@pytest.mark.parametrize("n,r", [(2, 1), (13, 2), (32, 3), (33, 2)])
def test_construction_through_toy_transformer_matches_reference(n, r):
    facts = random_bijections(n, r, torch.Generator().manual_seed(n + r))
    k = code_length(n)
    seq, tgt = facts.queries()
    logits = _model(facts, k)(seq)[:, -1].detach().numpy()
    ref = _numpy_reference(facts.table.numpy(), k)
    np.testing.assert_array_equal(logits, ref)
    assert (logits.argmax(1) == tgt.numpy()).all()  # 100% recall
    top = logits[np.arange(len(tgt)), tgt.numpy()]
    others = logits.copy()
    others[np.arange(len(tgt)), tgt.numpy()] = -np.inf
    assert (top - others.max(1)).min() == 2.0 == construction_margin(n, k)


def test_one_bit_fewer_collides_and_respects_the_bound():
    facts = random_bijections(40, 1, torch.Generator().manual_seed(0))
    k = code_length(40) - 1  # 5 bits, 40 > 32
    seq, tgt = facts.queries()
    logits = _model(facts, k)(seq)[:, -1].detach()
    strict = [(row[t] > np.delete(row.numpy(), t).max()).item() for row, t in zip(logits, tgt)]
    assert np.mean(strict) <= recall_bound(40, k) < 1 and construction_margin(40, k) == 0.0


def test_codes_inner_products():
    for n, k in [(8, 3), (11, 4), (16, 4)]:
        U = sign_codes(n, k)
        G = U @ U.T
        assert torch.all(G.diagonal() == k)
        off = G[~torch.eye(n, dtype=torch.bool)]
        assert off.max() == k - 2  # distinct codes: at most k - 2, attained (entities 0, 1)
    assert len({tuple(u) for u in sign_codes(9, 3).tolist()}) == 8  # 9 > 2^3: a collision
    assert code_length(2) == 1 and code_length(1024) == 10 and code_length(1025) == 11


def test_recall_bound_is_the_pigeonhole_maximum():
    # brute force over every code assignment for tiny N: the best strict recall of any map [N] -> {±1}^k
    for n, k in [(3, 1), (5, 2)]:
        best = 0
        for assign in itertools.product(range(2**k), repeat=n):
            counts = np.bincount(assign, minlength=2**k)
            best = max(best, sum(counts[a] == 1 for a in assign))
        assert best / n == pytest.approx(recall_bound(n, k))


@pytest.mark.parametrize("n,r,k", [(10, 1, 4), (37, 3, 6), (64, 2, 5)])
def test_parameter_counts_match_brute_force(n, r, k):
    facts = random_bijections(n, r, torch.Generator().manual_seed(1))
    m = _model(facts, k)
    c = parameter_counts(n, r, k)
    assert c["dense_total"] == sum(p.numel() for p in m.parameters())
    assert c["nonzero_total"] == sum(int(p.count_nonzero()) for p in m.parameters())
    mlp = m.blocks[0].mlp
    assert c["nonzero_mlp"] == sum(int(p.count_nonzero()) for p in mlp.parameters())
    assert c["dense_mlp"] == sum(p.numel() for p in mlp.parameters())


def test_bad_input():
    with pytest.raises(ValueError, match="n_entities"):
        code_length(1)
    with pytest.raises(ValueError, match="gate"):
        construction_weights(torch.zeros(1, 4, dtype=torch.long), 2, gate=1.0)
    with pytest.raises(ValueError, match="table"):
        construction_weights(torch.zeros(4, dtype=torch.long), 2)
