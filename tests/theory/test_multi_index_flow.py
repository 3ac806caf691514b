"""theory.multi_index: the transpose convention (Monte Carlo), A_M by quadrature vs the Hermite closed form, the
semigroup, Phi and its gradient (torch autograd), the closure of the d-dimensional Grassmann flow on M, the planted
flow, and the escape-time formulas."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

from theorylab.data.index_models import HERMITE_LINKS, multi_index, random_stiefel
from theorylab.theory.hermite import gauss_hermite_nd
from theorylab.theory.multi_index import (
    average,
    averaged_link,
    averaged_norm2,
    escape_rhs_1d,
    escape_time,
    escape_time_asymptotic,
    grad_phi,
    grad_planted,
    grassmann_rhs,
    link_norm2,
    phi,
    planted_loss,
    planted_rhs,
)
from theorylab.theory.order_ode import run_order_ode


def _sym(T):
    return sum(np.transpose(T, p) for p in itertools.permutations(range(T.ndim))) / math.factorial(T.ndim)


def _random_link(rng, r, kmax=4):
    return {k: _sym(rng.standard_normal((r,) * k)) / math.sqrt(math.factorial(k)) for k in range(1, kmax + 1)}


def _contraction(rng, r, top=0.9):
    q1, _ = np.linalg.qr(rng.standard_normal((r, r)))
    q2, _ = np.linalg.qr(rng.standard_normal((r, r)))
    return q1 @ np.diag(rng.uniform(0.2, top, r)) @ q2


def test_transpose_convention_by_monte_carlo():
    # E[f*(W*^T x) | W^T x = z] = (A_M f*)(z) with M = W*^T W: a degree-2 regression of y on z recovers it,
    # and the transposed M (non-symmetric here) does not
    rng = np.random.default_rng(0)
    model = multi_index(5, "staircase", rng)
    W = random_stiefel(5, 2, rng)
    M = model.W.T @ W
    x, y, _ = model.sample(400_000, rng)
    z = x @ W
    feats = np.stack([np.ones(len(z)), z[:, 0], z[:, 1], z[:, 0] ** 2, z[:, 0] * z[:, 1], z[:, 1] ** 2], 1)
    coef = np.linalg.lstsq(feats, y, rcond=None)[0]
    zt = rng.standard_normal((200, 2))
    ft = np.stack([np.ones(200), zt[:, 0], zt[:, 1], zt[:, 0] ** 2, zt[:, 0] * zt[:, 1], zt[:, 1] ** 2], 1) @ coef
    right = np.abs(ft - averaged_link(M, HERMITE_LINKS["staircase"], zt)).max()
    wrong = np.abs(ft - averaged_link(M.T, HERMITE_LINKS["staircase"], zt)).max()
    assert right < 0.05 < wrong


@pytest.mark.parametrize("r", [1, 2, 3])
def test_quadrature_matches_hermite_action(r):
    rng = np.random.default_rng(r)
    link = _random_link(rng, r)
    M = _contraction(rng, r)
    z = rng.standard_normal((20, r))

    def f(u):
        return averaged_link(np.eye(r), link, u)  # A_I f = f: the link itself

    assert np.abs(average(f, M, z, nodes=8) - averaged_link(M, link, z)).max() < 1e-10


def test_semigroup_and_order():
    rng = np.random.default_rng(5)
    link = _random_link(rng, 2)
    M1, M2 = _contraction(rng, 2), _contraction(rng, 2)
    z = rng.standard_normal((5, 2))

    def g(u):
        return averaged_link(np.eye(2), link, u)

    lhs = average(lambda u: average(g, M2, u, 10), M1, z, 10)
    assert np.abs(lhs - average(g, M2 @ M1, z, 10)).max() < 1e-10
    assert np.abs(lhs - average(g, M1 @ M2, z, 10)).max() > 1e-3


def test_one_d_hermite_eigenfunctions():
    from theorylab.theory.hermite import hermite

    t = np.linspace(-2, 2, 9)
    for k in range(7):
        got = average(lambda u, k=k: hermite(k, u[:, 0]), np.array([[0.6]]), t[:, None], 20)
        assert np.abs(got - 0.6**k * hermite(k, t)).max() < 1e-11


def test_norms_by_quadrature():
    rng = np.random.default_rng(2)
    link = _random_link(rng, 2)
    M = _contraction(rng, 2)
    p, w = gauss_hermite_nd(2, 12)
    f = averaged_link(np.eye(2), link, p)
    af = averaged_link(M, link, p)
    assert link_norm2(link) == pytest.approx((w * f**2).sum(), rel=1e-10)
    assert averaged_norm2(M, link) == pytest.approx((w * af**2).sum(), rel=1e-10)
    assert phi(M, link) == pytest.approx(link_norm2(link) - (w * af**2).sum(), abs=1e-10)


def test_staircase_phi_closed_form():
    # z1 + z1 z2: ||f||^2 = 2, ||A_M f||^2 = P11 + (P11 P22 + P12^2) with P = M M^T
    rng = np.random.default_rng(3)
    M = _contraction(rng, 2)
    P = M @ M.T
    assert phi(M, HERMITE_LINKS["staircase"]) == pytest.approx(2 - P[0, 0] - P[0, 0] * P[1, 1] - P[0, 1] ** 2)
    assert phi(np.eye(2), HERMITE_LINKS["staircase"]) == pytest.approx(0, abs=1e-14)
    Q, _ = np.linalg.qr(rng.standard_normal((2, 2)))
    assert phi(M @ Q, HERMITE_LINKS["staircase"]) == pytest.approx(phi(M, HERMITE_LINKS["staircase"]))  # Grassmann


def _phi_torch(M, link):
    tot = 0
    for k, C in link.items():
        T = torch.tensor(C)
        for _ in range(k):
            T = torch.tensordot(T, M, dims=([0], [0]))
        tot = tot + math.factorial(k) * (T**2).sum()
    return -tot


@pytest.mark.parametrize("r", [1, 2, 3])
def test_gradient_against_autograd(r):
    rng = np.random.default_rng(10 + r)
    link = _random_link(rng, r)
    M = rng.standard_normal((r, r)) * 0.5
    Mt = torch.tensor(M, requires_grad=True)
    _phi_torch(Mt, link).backward()
    assert np.abs(grad_phi(M, link) - Mt.grad.numpy()).max() < 1e-10


def test_planted_gradient_by_finite_differences():
    rng = np.random.default_rng(7)
    link = _random_link(rng, 2)
    M = rng.standard_normal((2, 2)) * 0.5
    h = 1e-6
    fd = np.zeros_like(M)
    for i, j in itertools.product(range(2), repeat=2):
        E = np.zeros_like(M)
        E[i, j] = h
        fd[i, j] = (planted_loss(M + E, link) - planted_loss(M - E, link)) / (2 * h)
    assert np.abs(fd - grad_planted(M, link)).max() < 1e-6


def test_planted_r1_closed_form():
    # card: dm/dt = (1 - m^2) sum_k 2k k! c_k^2 m^(k-1); He_3/sqrt(6): 6 m^2 (1 - m^2)
    rhs = planted_rhs(HERMITE_LINKS["planted-trap"])
    for m in (-0.3, 0.1, 0.7):
        assert rhs(0, np.array([[m]]))[0, 0] == pytest.approx(6 * m**2 * (1 - m**2))


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_r1_rhs_is_the_escape_ode(k):
    rhs = grassmann_rhs(HERMITE_LINKS[f"pure-he{k}"])
    for m in (-0.4, 0.05, 0.8):
        assert rhs(0, np.array([[m]]))[0, 0] == pytest.approx(escape_rhs_1d(k)(0, np.array([[m]]))[0, 0])


def test_grassmann_flow_closes_on_M():
    # integrate dW/dt = -(I - W W^T) W* grad_M Phi(W*^T W) in d = 8 and compare W*^T W(t) with the r x r ODE
    rng = np.random.default_rng(4)
    d, link = 8, HERMITE_LINKS["non-staircase"]
    Ws, W0 = random_stiefel(d, 2, rng), random_stiefel(d, 2, rng)

    def full(t, w):
        W = w.reshape(d, 2)
        return (-(np.eye(d) - W @ W.T) @ Ws @ grad_phi(Ws.T @ W, link)).reshape(-1)

    ts = np.array([0.5, 2.0, 6.0])
    big = solve_ivp(full, (0, 6), W0.reshape(-1), t_eval=ts, rtol=1e-11, atol=1e-13)
    small = run_order_ode(grassmann_rhs(link), Ws.T @ W0, 6.0, t_eval=ts)
    for i in range(3):
        W = big.y[:, i].reshape(d, 2)
        assert np.abs(Ws.T @ W - small.states[i]).max() < 1e-7
        assert np.abs(W.T @ W - np.eye(2)).max() < 1e-7  # the projected flow stays on St(d, 2)


def test_escape_formulas():
    assert escape_time(1, 1e3) == pytest.approx(math.log(999 / 3) / 4, rel=1e-12)
    assert escape_time(2, 1e5) / escape_time_asymptotic(2, 1e5) == pytest.approx(1, rel=2e-4)
    assert escape_time(3, 1e5) / escape_time_asymptotic(3, 1e5) == pytest.approx(1, rel=1e-4)
    with pytest.raises(ValueError, match="d"):
        escape_time(2, 3.0)


def test_average_rejects_non_contraction():
    with pytest.raises(ValueError, match="op"):
        average(lambda u: u[:, 0], 1.5 * np.eye(2), np.zeros((1, 2)))


def test_hermite_links_evaluate_their_tensors():
    # data.index_models.HermiteLink (multiset expansion) vs theory's Hermite-tensor contraction vs explicit formulas
    from theorylab.data.index_models import HermiteLink, hermite_link

    rng = np.random.default_rng(8)
    z = rng.standard_normal((50, 2))
    explicit = {"staircase": z[:, 0] + z[:, 0] * z[:, 1], "non-staircase": z[:, 0] + (z[:, 1] ** 2 - 1) / math.sqrt(2)}
    for name, ref in explicit.items():
        assert np.abs(hermite_link(name)(z) - ref).max() < 1e-12
    for k in (1, 2, 3, 4):
        lk = hermite_link(f"pure-he{k}")
        assert link_norm2(lk) == pytest.approx(1.0)
    link = _random_link(rng, 3)
    hl = HermiteLink("random", 3, link)
    z3 = rng.standard_normal((40, 3))
    assert np.abs(hl(z3) - averaged_link(np.eye(3), link, z3)).max() < 1e-10
    with pytest.raises(ValueError, match="symmetric"):
        HermiteLink("bad", 2, {2: np.array([[0.0, 1.0], [0.0, 0.0]])})
    with pytest.raises(KeyError, match="unknown Hermite link"):
        hermite_link("nope")
