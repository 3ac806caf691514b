"""Query-key operators: invariant geometry (extraction: tests/probes/test_bilinear_operators.py)."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.bilinear_operators import head_operators
from theorylab.probes.spectra import effective_rank, stable_rank
from theorylab.theory.bilinear import (
    balanced_factorization,
    directionality_score,
    inertia,
    rotation_content,
    split_sym_skew,
    symmetry_score,
)


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_split_and_scores_and_orthogonal_invariance():
    M = _rand(8, 8)
    S, A = split_sym_skew(M)
    assert torch.allclose(S + A, M) and torch.allclose(S, S.T) and torch.allclose(A, -A.T)
    assert float(M.pow(2).sum()) == pytest.approx(float(S.pow(2).sum() + A.pow(2).sum()))
    Q, _ = torch.linalg.qr(_rand(8, 8, seed=1))
    assert float(symmetry_score(Q.T @ M @ Q)) == pytest.approx(float(symmetry_score(M)))
    assert inertia(Q.T @ M @ Q) == inertia(M)
    assert rotation_content(Q.T @ M @ Q) == pytest.approx(rotation_content(M))
    assert float(symmetry_score(S)) == pytest.approx(1.0) and float(symmetry_score(A)) == pytest.approx(0.0)
    assert rotation_content(A) == pytest.approx(1.0) and rotation_content(S) == 0.0
    assert inertia(torch.diag(torch.tensor([1.0, -2.0, 0.0], dtype=torch.float64))) == (1, 1, 1)


def test_directionality_flips_under_transpose_and_balanced_gauge():
    M = _rand(16, 16)
    M[:, 3] *= 12  # one key direction dominates
    d = directionality_score(M)
    assert float(d) > 0.5 and float(directionality_score(M.T)) == pytest.approx(-float(d))
    WQ, WK = balanced_factorization(M)
    assert torch.allclose(WQ @ WK.T, M, atol=1e-10)
    assert torch.allclose(WQ.norm(dim=0), WK.norm(dim=0))  # balanced: equal column norms


def test_random_init_symmetry_is_near_half():
    d, dh = 64, 16
    s = [float(symmetry_score(_rand(dh, d, seed=i).T @ _rand(dh, d, seed=100 + i))) for i in range(20)]
    assert abs(sum(s) / len(s) - (0.5 + 1 / (2 * d))) < 0.05


def test_spectra():
    W = torch.diag(torch.tensor([3.0, 1.0, 0.0], dtype=torch.float64))
    assert float(stable_rank(W)) == pytest.approx(10 / 9)
    assert float(effective_rank(torch.eye(5, dtype=torch.float64))) == pytest.approx(5.0)


def test_head_geometry_from_factors_matches_the_full_matrices():
    from theorylab.theory.bilinear import head_geometry

    model = ToyTransformer(d_model=32, n_heads=4, n_layers=2, vocab_size=11, seed=3).double()
    with torch.no_grad():
        model.blocks[1].attn.W_K[0] = model.blocks[1].attn.W_Q[0]  # one symmetric (tied) head
        model.blocks[0].attn.W_K[:, :, 5] *= 6  # a key direction dominates: directional heads
    ops = head_operators(model)
    geo = head_geometry(ops)
    for op, row in zip(ops, geo.itertuples()):
        M = op.M.double()
        assert row.symmetry == pytest.approx(float(symmetry_score(M)), abs=1e-12)
        assert row.directionality == pytest.approx(float(directionality_score(M)), abs=1e-10)
        assert (row.inertia_pos, row.inertia_neg, row.inertia_zero) == inertia(M, rel_tol=1e-8)
        assert row.rotation == pytest.approx(rotation_content(M), abs=1e-8)
        assert row.stable_rank == pytest.approx(float(stable_rank(M)), rel=1e-10)
        assert row.effective_rank == pytest.approx(float(effective_rank(M)), rel=1e-8)
    assert geo.loc[4, "symmetry"] == pytest.approx(1.0) and (geo["directionality"].abs() > 0).any()
