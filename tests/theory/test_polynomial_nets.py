"""k = 2 Gaussian closed forms, the critical-point family and the AH dimension counts, against independent checks."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from theorylab.theory import polynomial_nets as pn


def _teacher(d, seed):
    rng = np.random.default_rng(seed)
    lam = np.sort(rng.uniform(-2, 2, d))
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return lam, V, (V * lam) @ V.T


def test_gaussian_quadratic_moment_matches_monte_carlo():
    rng = np.random.default_rng(0)
    B = rng.standard_normal((3, 3))
    B = (B + B.T) / 2
    q = np.einsum("ni,ij,nj->n", x := rng.standard_normal((400_000, 3)), B, x) ** 2
    assert abs(q.mean() - pn.gaussian_quadratic_moment(B)) <= 5 * q.std() / np.sqrt(len(q))


def test_rademacher_moment_matches_enumeration():
    rng = np.random.default_rng(1)
    B = rng.standard_normal((4, 4))
    B = (B + B.T) / 2
    pts = np.array(np.meshgrid(*[[-1.0, 1.0]] * 4)).reshape(4, -1).T
    assert np.isclose(np.mean(np.einsum("ni,ij,nj->n", pts, B, pts) ** 2), pn.rademacher_quadratic_moment(B))


def test_gradient_matches_finite_differences():
    lam, V, As = _teacher(4, 2)
    rng = np.random.default_rng(3)
    A = rng.standard_normal((4, 4))
    A = (A + A.T) / 2
    E = rng.standard_normal((4, 4))
    E = (E + E.T) / 2
    h = 1e-6
    fd = (pn.gaussian_loss(A + h * E, As) - pn.gaussian_loss(A - h * E, As)) / (2 * h)
    assert np.isclose(fd, np.sum(pn.gaussian_gradient(A, As) * E), rtol=1e-7)


@pytest.mark.parametrize("d,r", [(4, 1), (5, 2), (6, 3)])
def test_every_A_S_is_stationary_with_the_closed_form_loss(d, r):
    lam, V, As = _teacher(d, d + r)
    pts = pn.critical_points(lam, r)
    assert len(pts) == sum(comb(d, s) for s in range(r + 1))
    for p in pts:
        W, a = pn.realise(lam, V, p["S"], r)
        A = W.T @ (a[:, None] * W)
        G = pn.gaussian_gradient(A, As)
        # parameter gradients: w_i^T G w_i and 2 a_i G w_i
        assert np.abs(np.einsum("ri,ij,rj->r", W, G, W)).max() < 1e-12
        assert np.abs(2 * a[:, None] * (W @ G)).max() < 1e-12
        assert np.isclose(pn.gaussian_loss(A, As), p["loss"], rtol=1e-12)


def test_global_minimum_matches_multistart_optimisation():
    d, r = 4, 2
    lam, V, As = _teacher(d, 11)
    best = pn.global_minimum(lam, r)

    def f(th):
        W, a = th[: r * d].reshape(r, d), th[r * d :]
        return float(pn.gaussian_loss(W.T @ (a[:, None] * W), As))

    rng = np.random.default_rng(0)
    found = min(
        minimize(f, rng.standard_normal(r * (d + 1)), method="BFGS", options=dict(gtol=1e-10)).fun for _ in range(15)
    )
    assert found >= best["loss"] - 1e-7 and found <= best["loss"] + 1e-6


def test_global_minimum_is_not_always_top_r_by_magnitude():
    lam = np.array([-3.0, -2.9, 0.5, 2.0, 2.1, 2.2])  # the trace term penalises leaving a large same-sign block
    best = pn.global_minimum(lam, 2)["S"]
    top = tuple(sorted(np.argsort(-np.abs(lam))[:2]))
    assert best == (0, 5) and top == (0, 1)


def test_saddle_slopes_match_finite_differences():
    lam, V, As = _teacher(5, 4)
    S = (1,)
    pts = {p["S"]: p for p in pn.critical_points(lam, 2)}
    W, a = pn.realise(lam, V, S, 1)
    A = W.T @ (a[:, None] * W)
    others = [j for j in range(5) if j not in S]
    h = 1e-6
    fd = [
        (
            pn.gaussian_loss(A + h * np.outer(V[:, j], V[:, j]), As)
            - pn.gaussian_loss(A - h * np.outer(V[:, j], V[:, j]), As)
        )
        / (2 * h)
        for j in others
    ]
    assert np.allclose(fd, pn.saddle_slopes(lam, S), rtol=1e-6)
    assert np.isclose(pts[S]["t"], pn.t_shift(lam, S))


def test_dimension_counts_and_generic_rank():
    assert pn.ah_dimension(5, 2, 3) == 15 - 3 == 5 * 3 - 3
    assert pn.ah_dimension(4, 2, 6) == 10
    assert [pn.ah_dimension(*c) for c in sorted(pn.AH_EXCEPTIONS)] == [14, 34, 34, 69]
    assert pn.ah_dimension(5, 3, 8) == 35 and pn.ah_dimension(3, 3, 3) == 9
    assert pn.generic_rank(3, 4) == 6 and pn.generic_rank(5, 3) == 8 and pn.generic_rank(3, 3) == 4
    assert pn.generic_rank(4, 3) == 5 and pn.generic_rank(6, 2) == 6
    assert pn.fibre_dimension(6, 2, 2) == 3
    with pytest.raises(ValueError, match="d >= 1"):
        pn.ah_dimension(0, 2, 1)


def test_polynomial_jacobian_matches_finite_differences():
    rng = np.random.default_rng(7)
    W, a, X = rng.standard_normal((3, 4)), rng.standard_normal(3), rng.standard_normal((9, 4))
    J = pn.polynomial_jacobian(W, a, X, 3)
    th = np.concatenate([W.ravel(), a])
    f = lambda t: np.einsum("nr,r->n", (X @ t[:12].reshape(3, 4).T) ** 3, t[12:])  # noqa: E731
    h = 1e-6
    fd = np.stack([(f(th + h * e) - f(th - h * e)) / (2 * h) for e in np.eye(15)], 1)
    assert np.allclose(J, fd, atol=1e-6)


@pytest.mark.parametrize("case", [(3, 4, 5), (5, 3, 7), (4, 3, 5), (4, 2, 3), (3, 3, 2)])
def test_jacobian_rank_matches_tensor_space_rank(case):
    """Independent reference: the rank of the Jacobian of theta -> sum a_i w_i^{(x)k} in the d^k tensor entries."""
    d, k, r = case
    got = pn.jacobian_rank(d, k, r, np.random.default_rng(0))["rank"]
    g = torch.Generator().manual_seed(1)
    theta = torch.randn(r * (d + 1), dtype=torch.float64, generator=g)

    def tensor(t):
        W, a = t[: r * d].reshape(r, d), t[r * d :]
        out = 0
        for i in range(r):
            T = W[i]
            for _ in range(k - 1):
                T = torch.tensordot(T, W[i], dims=0)
            out = out + a[i] * T
        return out.reshape(-1)

    J = torch.autograd.functional.jacobian(tensor, theta)
    ref = int(torch.linalg.matrix_rank(J, rtol=1e-9))
    assert got == ref == pn.ah_dimension(d, k, r)


def test_bad_input():
    with pytest.raises(ValueError, match="eigenvalues"):
        pn.critical_points(np.array([]), 1)
    with pytest.raises(ValueError, match="exceeds the width"):
        pn.realise(np.array([1.0, 2.0, 3.0]), np.eye(3), (0, 1), 1)


@pytest.mark.parametrize("d,r,seed", [(5, 1, 0), (5, 2, 1), (6, 3, 2)])
def test_derived_index_matches_autograd_hessian(d, r, seed):
    """Our index formula against the negative eigenvalues of the dense (W, a) Hessian (torch.autograd)."""
    lam, V, As = _teacher(d, seed)
    At = torch.tensor(As)

    def f(th):
        W, a = th[: r * d].reshape(r, d), th[r * d :]
        D = W.T @ (a[:, None] * W) - At
        return 2 * (D**2).sum() + torch.trace(D) ** 2

    seen = set()
    for p in pn.critical_points(lam, r):
        if p["s"] != r:
            continue
        W, a = pn.realise(lam, V, p["S"], r)
        H = torch.autograd.functional.hessian(f, torch.tensor(np.concatenate([W.ravel(), a])))
        index = int((torch.linalg.eigvalsh(H) < -1e-8).sum())
        assert index == pn.derived_index(lam, p["S"])
        seen.add(index)
    assert len(seen) > 2  # the check sees several different indices
