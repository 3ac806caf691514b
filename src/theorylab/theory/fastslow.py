"""A fast-slow (singularly perturbed) CTMC toy: the fast chain's stationary law is the slow manifold.

Gao (arXiv 2606.16730, 2026) reads pretraining as a fast-slow flow and states that, under a linear-generator
assumption, the equilibrium manifold ``x = phi(y)`` of the fast variable is the stationary distribution of a master
equation. The toy here is one instance of that statement (reconstructed from the abstract; the paper's own example
may differ):

- fast: ``eps dx/dt = Q(y)^T x`` on S states, ``q_ij(y) = a_ij exp(b_ij y)`` for ``i != j`` and
  ``q_ii = -sum_{j != i} q_ij`` (:func:`ctmc_generator`);
- slow: ``dy/dt = c^T x - y``.

Tikhonov's theorem (and Fenichel's, for the invariant manifold) gives ``x(t) = p_st(y(t)) + O(eps)`` after an
``O(eps log 1/eps)`` transient, with ``Q(y)^T p_st(y) = 0``, ``1^T p_st = 1`` (:func:`ctmc_stationary`). Matching the
next order of ``eps`` in ``x = p_st + eps x_1 + O(eps^2)`` gives ``Q(y)^T x_1 = d p_st / dt`` along the slow flow,
``1^T x_1 = 0`` (:func:`tikhonov_correction`), so ``x - p_st - eps x_1 = O(eps^2)``.

Numbers in, numbers out (numpy / SciPy). The reference integrator is SciPy's ``solve_ivp(method="Radau")``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from theorylab.theory.markov import stationary


@dataclass(frozen=True)
class FastSlowToy:
    """The toy's parameters: off-diagonal rate prefactors ``a`` and exponents ``b`` (S, S; diagonals unused) and the
    slow readout ``c`` (S,)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray

    @classmethod
    def draw(cls, rng: np.random.Generator, states: int = 4) -> "FastSlowToy":
        """``a_ij ~ U[0.5, 2]``, ``b_ij ~ U[-1, 1]``, ``c ~ U[-1, 1]^S`` (the card's toy)."""
        if states < 2:
            raise ValueError(f"the fast chain needs at least 2 states; got {states}")
        a = rng.uniform(0.5, 2.0, (states, states))
        b = rng.uniform(-1.0, 1.0, (states, states))
        c = rng.uniform(-1.0, 1.0, states)
        return cls(a, b, c)

    @property
    def states(self) -> int:
        return len(self.c)

    def Q(self, y: float) -> np.ndarray:
        return ctmc_generator(self.a, self.b, y)

    def dQ(self, y: float) -> np.ndarray:
        """``dQ/dy``: off-diagonal ``b_ij q_ij(y)``, rows summing to 0."""
        q = self.a * self.b * np.exp(self.b * y)
        np.fill_diagonal(q, 0.0)
        np.fill_diagonal(q, -q.sum(axis=1))
        return q


def ctmc_generator(a: np.ndarray, b: np.ndarray, y: float) -> np.ndarray:
    """The generator ``Q(y)``: ``q_ij = a_ij exp(b_ij y)`` off the diagonal, ``q_ii = -sum_{j != i} q_ij`` (rows sum to
    0). ``a`` must be positive off the diagonal (an irreducible chain)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape != b.shape:
        raise ValueError(f"a and b must be square and of one shape; got {a.shape} and {b.shape}")
    off = ~np.eye(len(a), dtype=bool)
    if (a[off] <= 0).any():
        raise ValueError("the rate prefactors a_ij (i != j) must be positive")
    q = np.where(off, a * np.exp(b * y), 0.0)
    np.fill_diagonal(q, -q.sum(axis=1))
    return q


def ctmc_stationary(Q: np.ndarray) -> np.ndarray:
    """The stationary law of a CTMC generator: the normalised null vector of ``Q^T`` (``p^T Q = 0``, ``1^T p = 1``).

    Uniformisation: ``P = I + Q / lam`` with ``lam > max_i |q_ii|`` is a row-stochastic matrix with the same stationary
    law, found by :func:`theorylab.theory.markov.stationary`."""
    q = np.asarray(Q, dtype=np.float64)
    if q.ndim != 2 or q.shape[0] != q.shape[1]:
        raise ValueError(f"Q must be square; got shape {q.shape}")
    if not np.allclose(q.sum(axis=1), 0.0, atol=1e-9 * max(1.0, np.abs(q).max())):
        raise ValueError("Q must be a generator: its rows must sum to 0")
    lam = 1.05 * np.abs(np.diag(q)).max() + 1e-300
    return stationary(np.eye(len(q)) + q / lam)


def stationary_derivative(toy: FastSlowToy, y: float) -> np.ndarray:
    """``d p_st / dy`` from differentiating ``Q^T p = 0``: ``Q^T p' = -(dQ/dy)^T p`` with ``1^T p' = 0``."""
    return manifold_terms(toy, y).dp_dy


def _solve_zero_sum(Q: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The unique ``v`` with ``Q^T v = rhs`` and ``1^T v = 0`` (``1^T rhs = 0`` makes it solvable)."""
    s = len(Q)
    system = np.vstack([Q.T, np.ones((1, s))])
    v, *_ = np.linalg.lstsq(system, np.append(rhs, 0.0), rcond=None)
    return v


@dataclass(frozen=True)
class ManifoldTerms:
    """Everything the slow manifold gives at one ``y``, each solved once: ``Q(y)``, ``p_st``, ``d p_st/dy``, the
    reduced velocity ``c^T p_st - y`` and the Tikhonov correction ``x_1``."""

    Q: np.ndarray
    p: np.ndarray
    dp_dy: np.ndarray
    velocity: float
    x1: np.ndarray


def manifold_terms(toy: FastSlowToy, y: float) -> ManifoldTerms:
    """:class:`ManifoldTerms` at ``y`` (one stationary solve and two zero-sum solves, shared by the functions below)."""
    q = toy.Q(y)
    p = ctmc_stationary(q)
    dp_dy = _solve_zero_sum(q, -toy.dQ(y).T @ p)
    velocity = float(toy.c @ p - y)
    return ManifoldTerms(q, p, dp_dy, velocity, _solve_zero_sum(q, dp_dy * velocity))


def slow_velocity(toy: FastSlowToy, y: float) -> float:
    """The reduced (slow-manifold) flow ``dy/dt = c^T p_st(y) - y``."""
    return float(toy.c @ ctmc_stationary(toy.Q(y)) - y)


def tikhonov_correction(toy: FastSlowToy, y: float) -> np.ndarray:
    """The first-order correction ``x_1(y)``: ``Q(y)^T x_1 = d p_st/dt = p_st'(y) (c^T p_st(y) - y)``, ``1^T x_1 = 0``.

    Then ``x = p_st(y) + eps x_1(y) + O(eps^2)`` on the slow manifold (Tikhonov; Fenichel's invariant manifold)."""
    return manifold_terms(toy, y).x1


@dataclass(frozen=True)
class FastSlowPath:
    """A solved trajectory: times (N,), fast state x (N, S), slow state y (N,)."""

    t: np.ndarray
    x: np.ndarray
    y: np.ndarray
    eps: float


def simulate_fast_slow(
    toy: FastSlowToy, eps: float, t_end: float = 5.0, n_points: int = 451, rtol: float = 1e-10, atol: float = 1e-12
) -> FastSlowPath:
    """Integrate ``eps dx/dt = Q(y)^T x``, ``dy/dt = c^T x - y`` from ``x(0)`` uniform, ``y(0) = 0`` to ``t_end`` with
    SciPy's stiff Radau solver (analytic Jacobian), read on ``n_points`` equally spaced times."""
    if not eps > 0:
        raise ValueError(f"eps must be positive; got {eps}")
    s = toy.states

    def rhs(_t: float, z: np.ndarray) -> np.ndarray:
        x, y = z[:s], z[s]
        return np.append(toy.Q(y).T @ x / eps, toy.c @ x - y)

    def jac(_t: float, z: np.ndarray) -> np.ndarray:
        x, y = z[:s], z[s]
        j = np.zeros((s + 1, s + 1))
        j[:s, :s] = toy.Q(y).T / eps
        j[:s, s] = toy.dQ(y).T @ x / eps
        j[s, :s] = toy.c
        j[s, s] = -1.0
        return j

    t_eval = np.linspace(0.0, t_end, n_points)
    z0 = np.append(np.full(s, 1.0 / s), 0.0)
    sol = solve_ivp(rhs, (0.0, t_end), z0, method="Radau", t_eval=t_eval, rtol=rtol, atol=atol, jac=jac)
    if not sol.success:
        raise RuntimeError(f"Radau failed at eps = {eps}: {sol.message}")
    return FastSlowPath(sol.t, sol.y[:s].T, sol.y[s], eps)


def manifold_errors(toy: FastSlowToy, path: FastSlowPath, t_min: float = 0.5) -> tuple[float, float]:
    """``(e_0, e_1)``: ``max_{t in [t_min, t_end]} ||x - p_st(y)||_1`` and the same with ``p_st + eps x_1``."""
    keep = path.t >= t_min - 1e-12
    e0 = e1 = 0.0
    for x, y in zip(path.x[keep], path.y[keep]):
        m = manifold_terms(toy, y)
        e0 = max(e0, float(np.abs(x - m.p).sum()))
        e1 = max(e1, float(np.abs(x - m.p - path.eps * m.x1).sum()))
    return e0, e1


def frozen_chain_limit(Q: np.ndarray, mixing_times: float = 50.0) -> tuple[np.ndarray, float]:
    """The fast chain at frozen y run from the uniform law for ``mixing_times`` relaxation times ``1 / gap`` (gap: the
    smallest non-zero ``-Re`` eigenvalue of Q), by the matrix exponential: ``(x(t_end), t_end)``. An independent
    reference for :func:`ctmc_stationary`."""
    from scipy.linalg import expm

    q = np.asarray(Q, dtype=np.float64)
    gap = float(np.sort(-np.linalg.eigvals(q).real)[1])
    t_end = mixing_times / gap
    x = expm(q.T * t_end) @ np.full(len(q), 1.0 / len(q))
    return x, t_end


def loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def fit_variational_phi(
    toy: FastSlowToy,
    seed: int,
    *,
    steps: int = 3000,
    batch: int = 256,
    width: int = 32,
    lr: float = 1e-2,
    final_lr: float = 1e-4,
    y_range: tuple[float, float] = (-2.0, 2.0),
):
    """The variational manifold ``phi_theta(y) = softmax(MLP(y))`` (MLP 1 -> width -> width -> S, tanh), trained to
    minimise ``E_y ||Q(y)^T phi_theta(y)||^2`` on ``y ~ U[y_range]`` (Adam, ``lr`` cosine-decayed to ``final_lr``,
    float64). ``p_st`` is the only minimiser on the simplex (the null space of ``Q^T`` is one-dimensional), so the
    residual measures the distance to the manifold. Returns ``(phi, losses)``: ``phi(y: ndarray) -> (len(y), S)``
    ndarray, and ``phi_untrained`` is the same net at its initialisation (``phi.untrained``)."""
    import copy
    import math

    import torch

    from theorylab.core.rng import seeded

    s = toy.states
    with seeded(seed):
        net = torch.nn.Sequential(
            torch.nn.Linear(1, width),
            torch.nn.Tanh(),
            torch.nn.Linear(width, width),
            torch.nn.Tanh(),
            torch.nn.Linear(width, s),
        ).double()
    initial = copy.deepcopy(net)
    a, b = torch.as_tensor(toy.a), torch.as_tensor(toy.b)
    off = ~torch.eye(s, dtype=torch.bool)
    gen = torch.Generator().manual_seed(seed)

    def generator_t(y: torch.Tensor) -> torch.Tensor:  # (N,) -> (N, S, S), the batched Q(y)
        q = torch.where(off, a * torch.exp(b * y[:, None, None]), torch.zeros(()).double())
        return q - torch.diag_embed(q.sum(-1))

    opt = torch.optim.Adam(net.parameters(), lr=lr)
    ratio = final_lr / lr
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: ratio + (1 - ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, k / max(1, steps - 1))))
    )
    losses = []
    lo, hi = y_range
    for _ in range(steps):
        y = lo + (hi - lo) * torch.rand(batch, generator=gen, dtype=torch.float64)
        phi = net(y[:, None]).softmax(-1)  # (N, S)
        resid = torch.einsum("nji,nj->ni", generator_t(y), phi)  # Q(y)^T phi
        loss = resid.pow(2).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())

    def wrap(model: torch.nn.Module):
        @torch.no_grad()
        def phi(y: np.ndarray) -> np.ndarray:
            return model(torch.as_tensor(np.asarray(y, float))[:, None]).softmax(-1).numpy()

        return phi

    fitted = wrap(net)
    fitted.untrained = wrap(initial)
    return fitted, np.asarray(losses)


def correction_errors(toy: FastSlowToy, path: FastSlowPath, t_min: float = 0.5) -> dict[str, float]:
    """``e_0``, ``e_1`` (:func:`manifold_errors`) and two broken corrections, for the claim's negative controls:
    ``e_1_flipped`` (``p_st - eps x_1``: a wrong sign) and ``e_1_unnormalised`` (``x_1`` the minimum-norm solution of
    ``Q^T v = d p_st/dt`` alone, without ``1^T x_1 = 0``)."""
    keep = path.t >= t_min - 1e-12
    out = dict(e0=0.0, e1=0.0, e1_flipped=0.0, e1_unnormalised=0.0)
    for x, y in zip(path.x[keep], path.y[keep]):
        m = manifold_terms(toy, y)
        p, x1 = m.p, m.x1
        raw, *_ = np.linalg.lstsq(m.Q.T, m.dp_dy * m.velocity, rcond=None)
        for key, guess in (
            ("e0", p),
            ("e1", p + path.eps * x1),
            ("e1_flipped", p - path.eps * x1),
            ("e1_unnormalised", p + path.eps * raw),
        ):
            out[key] = max(out[key], float(np.abs(x - guess).sum()))
    return out
