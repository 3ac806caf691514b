"""Order-parameter ODEs: integrate ``dM/dt = F(t, M)`` for a matrix-valued order parameter with event times.

High-dimensional gradient flows that close on a small order parameter (the overlap ``M = W*^T W`` of
Bietti, Bruna & Pillaud-Vivien, arXiv 2310.19793; the teacher-student overlaps of the Saad-Solla / SPOC
simulators) reduce to an ODE on a few numbers whose plateaus last ``d^(k-1)`` time units. Such runs
span many decades of time, so they are integrated with SciPy's adaptive stiff solvers (LSODA, Radau,
BDF) on the flattened state, and plateau exits are located by the solver's root finding (events), not
by scanning a grid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal

import numpy as np
from scipy.integrate import solve_ivp

MatrixRHS = Callable[[float, np.ndarray], np.ndarray]
MatrixEvent = Callable[[float, np.ndarray], float]


@dataclass
class OrderODEResult:
    """``t`` (T,), ``states`` (T, *shape), the first time each event fired (NaN: never), and the solver status."""

    t: np.ndarray
    states: np.ndarray
    events: dict[str, float] = field(default_factory=dict)
    status: int = 0
    message: str = ""
    nfev: int = 0

    @property
    def final(self) -> np.ndarray:
        return self.states[-1]


def run_order_ode(
    rhs: MatrixRHS,
    M0: np.ndarray,
    t_max: float,
    events: dict[str, MatrixEvent] | None = None,
    *,
    terminal: Iterable[str] = (),
    method: Literal["LSODA", "Radau", "BDF", "RK45", "DOP853"] = "LSODA",
    rtol: float = 1e-10,
    atol: float = 1e-13,
    t_eval: np.ndarray | None = None,
    max_step: float = np.inf,
) -> OrderODEResult:
    """Integrate ``dM/dt = rhs(t, M)`` from ``M(0) = M0`` to ``t_max`` (or the first terminal event).

    ``events[name](t, M)`` is a scalar that crosses zero upwards at the event (e.g. ``|M_11| - 1/2`` for a plateau
    exit); its first upward crossing time is reported (NaN if none). Events named in ``terminal`` stop the run.
    ``t_eval``: output times (default: every solver step, which resolves plateaus on a log axis for free).
    """
    M0 = np.asarray(M0, dtype=np.float64)
    if not np.all(np.isfinite(M0)):
        raise ValueError("M0 must be finite")
    if not t_max > 0:
        raise ValueError(f"t_max must be > 0; got {t_max}")
    events = dict(events or {})
    terminal = set(terminal)
    unknown = terminal - set(events)
    if unknown:
        raise ValueError(f"terminal events {sorted(unknown)} are not among the events {sorted(events)}")
    shape = M0.shape

    def flat_rhs(t, y):
        return np.asarray(rhs(t, y.reshape(shape)), dtype=np.float64).reshape(-1)

    names = list(events)
    wrapped = []
    for name in names:

        def ev(t, y, fn=events[name]):
            return float(fn(t, y.reshape(shape)))

        ev.direction = 1.0
        ev.terminal = name in terminal
        wrapped.append(ev)
    sol = solve_ivp(
        flat_rhs,
        (0.0, float(t_max)),
        M0.reshape(-1),
        method=method,
        rtol=rtol,
        atol=atol,
        events=wrapped or None,
        t_eval=t_eval,
        max_step=max_step,
    )
    if sol.status < 0:
        raise RuntimeError(f"order-parameter ODE failed: {sol.message}")
    times = {}
    for i, name in enumerate(names):
        hits = sol.t_events[i]
        # an event already satisfied at t = 0 has no upward crossing: report 0, not "never"
        start = events[name](0.0, M0)
        times[name] = 0.0 if start >= 0 else (float(hits[0]) if len(hits) else float("nan"))
    states = sol.y.T.reshape((len(sol.t),) + shape)
    return OrderODEResult(sol.t, states, times, int(sol.status), str(sol.message), int(sol.nfev))
