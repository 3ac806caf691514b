"""Query-key operators: invariant geometry (extraction: tests/probes/test_bilinear_operators.py)."""

from __future__ import annotations

import math

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


# --- numerical tolerances and bounds of the bilinear-attention-operator checks ----------------------


def test_directionality_condition_against_its_formula_and_zero_without_excess():
    from theorylab.theory.bilinear import directionality_condition

    assert directionality_condition(torch.eye(6, dtype=torch.float64)) == 0.0  # equal norms: no excess, score exactly 0
    M = _rand(10, 10, seed=3)
    M[:, 2] *= 8
    r, c = M.norm(dim=1), M.norm(dim=0)
    excess = sum(float((v - v.mean() - 2 * v.std()).clamp(min=0).sum()) for v in (r, c))
    assert directionality_condition(M) == pytest.approx(10 * float(torch.cat([r, c]).max()) / excess)
    assert directionality_condition(M.T) == pytest.approx(directionality_condition(M))  # rows and columns swap


def test_directionality_condition_bounds_the_rounding_of_the_score():
    """A relative perturbation δ of M moves the score by at most ~δ times the condition number."""
    from theorylab.theory.bilinear import directionality_condition

    M = _rand(12, 12, seed=4)
    M[:, 5] *= 6
    delta = 1e-9
    moved = abs(float(directionality_score(M * (1 + delta * _rand(12, 12, seed=5)))) - float(directionality_score(M)))
    assert 0 < moved <= 4 * delta * directionality_condition(M)


def test_skew_quadratic_residual_vanishes_only_for_skew_parts():
    from theorylab.theory.bilinear import skew_quadratic_residual

    M = _rand(16, 16, seed=6)
    S, A = split_sym_skew(M)
    assert skew_quadratic_residual(A, M) < 1e-15
    assert skew_quadratic_residual(S, M) > 1e-2  # a symmetric part does score tokens against themselves
    x = torch.randn(16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    brute = float((((x @ S) * x).sum(-1).abs() / (x.pow(2).sum(-1) * M.norm())).max())
    assert skew_quadratic_residual(S, M) == brute


def test_conjugate_pair_gap():
    from theorylab.theory.bilinear import conjugate_pair_gap

    M = _rand(20, 20, seed=7)
    lam = torch.linalg.eigvals(M)
    assert conjugate_pair_gap(lam, 1.0) < 1e-12  # a real matrix's eigenvalues pair up
    assert conjugate_pair_gap(torch.tensor([1.0 + 0j, 2.0 + 0j]), 1.0) == 0.0  # no complex ones
    assert conjugate_pair_gap(torch.tensor([1 + 2j, 1 - 2j, 3 + 0j]), 1.0) == 0.0
    assert conjugate_pair_gap(torch.tensor([1 + 2j, 1.5 - 2j]), 2.0) == pytest.approx(0.25)  # |(1+2j) - (1.5+2j)| / 2
    assert conjugate_pair_gap(torch.tensor([1 + 2j, 3 + 0j]), 1.0) == math.inf  # an unpaired eigenvalue


def test_random_init_sigma1_bound_by_monte_carlo():
    """σ₁(W_qᵀW_k/√d_h) with N(0, 1/d) entries sits below the bound, close to it at large d."""
    from theorylab.theory.bilinear import random_init_sigma1_bound

    d, dh = 256, 64
    bound = random_init_sigma1_bound(d, dh)
    assert bound == pytest.approx((1 / d) * (16 + 8) ** 2 / 8)
    assert random_init_sigma1_bound(d, dh, sigma2=2 / d) == pytest.approx(2 * bound)
    # W = _rand / √d has N(0, 1/d) entries: M = W_qᵀ W_k / √d_h
    s1 = [
        float(torch.linalg.svdvals(_rand(dh, d, seed=i).T @ _rand(dh, d, seed=50 + i) / (d * math.sqrt(dh)))[0])
        for i in range(5)
    ]
    assert all(0.6 * bound < s < 1.02 * bound for s in s1), (s1, bound)
