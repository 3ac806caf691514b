"""The float64 identity checks of attention as a diffusion operator: residuals inside their rounding bounds,
and the checks see a real departure (a wrong bandwidth, unequal norms, a skew part)."""

from __future__ import annotations

import math

import numpy as np
import torch

from theorylab.data.manifolds import sphere
from theorylab.theory.diffusion_map_checks import (
    EPS,
    magnetic_identities,
    operator_identities,
    score_roundoff,
    tied_identity,
)
from theorylab.theory.diffusion_maps import random_attention_draw, random_magnetic_draw, random_sym_skew, scores


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_score_roundoff_bounds_the_float64_error_of_the_scores():
    g = _g(0)
    X, S, A0 = random_attention_draw(50, 12, g)
    M = S + A0
    exact = (
        X.numpy().astype(np.longdouble) @ M.numpy().astype(np.longdouble) @ X.numpy().T.astype(np.longdouble)
    ) / np.sqrt(np.longdouble(12))
    err = float(np.abs(scores(X, M).numpy().astype(np.longdouble) - exact).max())
    bound = score_roundoff(X, M)
    assert 0 < err <= bound
    assert bound == 12 * 12 * EPS * float(X.pow(2).sum(-1).max()) * float(M.norm()) / math.sqrt(12)


def test_operator_identities_hold_within_their_tolerances():
    g = _g(1)
    X, S, A0 = random_attention_draw(120, 8, g)
    _, A_other = random_sym_skew(8, g)
    r = operator_identities(X, S, A0, A_other)
    pairs = [
        ("row_sum_error", "tol_rows"),
        ("pi_sum_error", "tol_rows"),
        ("pi_fixed_error", "tol_pi"),
        ("split_error", "tol_split"),
        ("split_softmax_error", "tol_split_softmax"),
        ("poe_formula_error", "tol_poe"),
        ("poe_a_blind_error", "tol_poe_blind"),
        ("detailed_balance", "tol_detailed_balance"),
        ("eig_imag_symmetric", "tol_eig"),
    ]
    for res, tol in pairs:
        assert r[res] <= r[tol], (res, r[res], r[tol])
    assert abs(r["sigma_symmetric"]) <= r["tol_sigma"] and abs(r["eig_top"] - 1) <= r["tol_eig"]
    assert r["poe_asymmetry"] == 0.0 and r["min_entry"] > 0
    assert r["eig_imag_eta1"] > 1e-3  # the skew part makes the spectrum complex


def test_tied_identity_needs_the_key_weights_unless_norms_are_equal():
    d, beta = 16, 1.0
    on_sphere = tied_identity(3.0 * sphere(150, d, generator=_g(2)), beta)
    assert (
        on_sphere["error"] <= on_sphere["tolerance"] and on_sphere["plain_random_walk_error"] <= on_sphere["tolerance"]
    )
    X, _, _ = random_attention_draw(150, d, _g(3))
    unequal = tied_identity(X, beta)
    assert unequal["error"] <= unequal["tolerance"] < 1e-10
    assert unequal["plain_random_walk_error"] > 1e-3 and unequal["wrong_bandwidth_error"] > 1e-3


def test_magnetic_identities_gauge_invariance_and_frustration():
    X, S, A0, phi = random_magnetic_draw(40, 6, _g(4))
    row, lam_gauge = magnetic_identities(X, S, A0, 0.1, phi)
    assert row["hermitian_error"] <= row["tol_hermitian"]
    assert row["eta0_error"] <= row["tol_spectrum"] and row["gauge_error"] <= row["tol_spectrum"]
    assert row["frustration"] > 1e-4  # generic phases lift the bottom of the spectrum
    assert abs(float(lam_gauge[0])) <= 1e-10 * float(lam_gauge[-1])  # pure gauge: the constant mode survives, λ_min = 0
    flat, _ = magnetic_identities(X, S, A0, 0.0, phi)
    assert abs(flat["frustration"]) < 1e-10
