"""multi-index-gradient-flow: two-timescale Grassmannian gradient flow on Gaussian multi-index models.

Paper: Bietti, Bruna & Pillaud-Vivien, *On learning Gaussian multi-index models with gradient flow*, arXiv 2310.19793
(CPAM 78(12):2354-2435, 2025). The link is refitted infinitely fast, so the subspace follows the Grassmann gradient
flow of ``Phi(M) = ||f*||^2 - ||A_M f*||^2``, which closes on the r x r overlap ``M = W*^T W``
(``theory.multi_index``, integrated by ``theory.order_ode``). The quick preset checks the averaging operator's
semigroup by quadrature, the loss identity by Monte Carlo, the Hermite escape times and saddle-to-saddle plateaus of
the ODE, global convergence, a planted trap, and runs the finite-d algorithm (``train.two_timescale``) at toy size.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.index_models import hermite_link, multi_index, random_stiefel
from theorylab.studies.multi_index_gradient_flow.config import PRESETS, MultiIndexGradientFlowConfig
from theorylab.studies.multi_index_gradient_flow.figures import (
    figure_escape_scaling,
    figure_phi,
    figure_planted,
    figure_saddle_to_saddle,
)
from theorylab.studies.multi_index_gradient_flow.judges import claims
from theorylab.theory.hermite import hermite
from theorylab.theory.multi_index import (
    average,
    escape_rhs_1d,
    escape_time,
    escape_time_asymptotic,
    grassmann_rhs,
    phi,
    planted_rhs,
)
from theorylab.theory.order_ode import run_order_ode
from theorylab.train.two_timescale import hermite_features, ridge, train_two_timescale

PAPER = "Bietti, Bruna & Pillaud-Vivien, arXiv 2310.19793 (CPAM 78(12), 2025)"
CONVERGED = 1e-4  # ||M^T M - I||_F at which a run stops: 10x inside claim 6's 1e-3


def _row1(M: np.ndarray) -> float:
    """``||M_{1,:}||``: cosine of the angle between w*_1 and span(W) (basis-free; |M_11| depends on W's basis)."""
    return float(np.sqrt((M @ M.T)[0, 0]))


def _smin(M: np.ndarray) -> float:
    return float(np.linalg.svd(M, compute_uv=False)[-1])


def _dist(M: np.ndarray) -> float:
    return float(np.linalg.norm(M.T @ M - np.eye(len(M))))


EVENTS = {
    "first": lambda t, M: _row1(M) - 0.5,
    "second": lambda t, M: _smin(M) - 0.5,
    "converged": lambda t, M: CONVERGED - _dist(M),
}


def _monotone(states: np.ndarray, link) -> float:
    """Largest rise of Phi between two consecutive solver steps (<= 0 for a descent)."""
    values = np.array([phi(M, link) for M in states])
    return float(np.diff(values).max()) if len(values) > 1 else 0.0


def _random_contraction(rng: np.random.Generator, r: int, top: float) -> np.ndarray:
    q1, _ = np.linalg.qr(rng.standard_normal((r, r)))
    q2, _ = np.linalg.qr(rng.standard_normal((r, r)))
    s = rng.uniform(0, top, r)
    s[0] = top  # the operator norm reaches the card's bound
    return q1 @ np.diag(s) @ q2


def _semigroup(cfg: MultiIndexGradientFlowConfig, ctx: RunContext) -> None:
    """Claim 1: A_{M1}(A_{M2} g) = A_{M2 M1} g for a random degree-4 polynomial g (r = 2), and A_m He_k = m^k He_k."""
    rng = ctx.rng("semigroup")
    M1, M2 = (_random_contraction(rng, 2, cfg.contraction_norm) for _ in range(2))
    powers = [(a, b) for a in range(5) for b in range(5) if a + b <= 4]
    coef = rng.standard_normal(len(powers))

    def g(z):
        return sum(c * z[:, 0] ** a * z[:, 1] ** b for c, (a, b) in zip(coef, powers))

    z = rng.standard_normal((cfg.semigroup_n, 2))
    rows = []
    for i in range(len(z)):
        lhs = average(lambda u: average(g, M2, u, cfg.quad_nodes), M1, z[i : i + 1], cfg.quad_nodes)[0]
        rhs = average(g, M2 @ M1, z[i : i + 1], cfg.quad_nodes)[0]
        wrong = average(g, M1 @ M2, z[i : i + 1], cfg.quad_nodes)[0]  # the other order: must differ
        rows.append(
            dict(
                check="semigroup",
                k=-1,
                point=i,
                value=lhs,
                reference=rhs,
                error=abs(lhs - rhs),
                other_order_gap=abs(lhs - wrong),
            )
        )
    m = rng.uniform(-cfg.contraction_norm, cfg.contraction_norm)
    t = rng.standard_normal(cfg.semigroup_n)
    for k in range(7):
        val = average(lambda u, k=k: hermite(k, u[:, 0]), np.array([[m]]), t[:, None], cfg.quad_nodes)
        ref = m**k * hermite(k, t)
        rows.append(
            dict(
                check="hermite-1d",
                k=k,
                point=-1,
                value=float(val[0]),
                reference=float(ref[0]),
                error=float(np.abs(val - ref).max()),
                other_order_gap=math.nan,
            )
        )
    ctx.table("semigroup", pd.DataFrame(rows))
    ctx.scalar("semigroup_M1_opnorm", float(np.linalg.norm(M1, 2)))


def _loss_identity(cfg: MultiIndexGradientFlowConfig, ctx: RunContext) -> None:
    """Claim 2: the loss of the ridge-fitted best link at a random W matches Phi(W*^T W) (staircase)."""
    rng = ctx.rng("loss identity")
    model = multi_index(cfg.mc_dim, "staircase", rng)
    W = random_stiefel(cfg.mc_dim, 2, rng)
    M = model.W.T @ W
    half = cfg.mc_n // 2
    x, y, _ = model.sample(2 * half, rng)
    F = hermite_features(torch.as_tensor(x @ W), cfg.mc_degree)
    yt = torch.as_tensor(y)
    a = ridge(F[:half], yt[:half], 1e-10)
    res2 = ((yt[half:] - F[half:] @ a) ** 2).numpy()
    est, se = float(res2.mean()), float(res2.std(ddof=1) / math.sqrt(half))
    ctx.table(
        "loss_identity",
        pd.DataFrame(
            [
                dict(
                    d=cfg.mc_dim,
                    n_fit=half,
                    n_test=half,
                    phi=phi(M, hermite_link("staircase")),
                    estimate=est,
                    se=se,
                    sigma_max=float(np.linalg.svd(M, compute_uv=False)[0]),
                    sigma_min=_smin(M),
                )
            ]
        ),
    )


def _escape(cfg: MultiIndexGradientFlowConfig, ctx: RunContext, rows_path: list) -> None:
    """Claim 3: r = 1 pure He_k escape times from m0 = d^-1/2 by the ODE, the integral and the asymptote."""
    rows = []
    for k in sorted(set(cfg.escape_orders) | {4}):
        link = hermite_link(f"pure-he{k}") if k <= 4 else {k: np.full((1,) * k, 1 / math.sqrt(math.factorial(k)))}
        for d in cfg.escape_dims:
            t_int = escape_time(k, d)
            row = dict(
                k=k,
                d=d,
                t_integral=t_int,
                t_asymptotic=escape_time_asymptotic(k, d),
                t_ode=math.nan,
                phi_max_rise=math.nan,
                final_dist=math.nan,
                method="quadrature",
            )
            if k in cfg.escape_orders:
                res = run_order_ode(
                    escape_rhs_1d(k),
                    np.array([[d**-0.5]]),
                    10 * t_int + 100,
                    {"half": lambda t, M: abs(M[0, 0]) - 0.5, "converged": EVENTS["converged"]},
                    terminal=["converged"],
                    rtol=cfg.ode_rtol,
                    atol=1e-15,
                )
                row.update(
                    t_ode=res.events["half"],
                    phi_max_rise=_monotone(res.states, link),
                    final_dist=_dist(res.final),
                    method="ode",
                )
                rows_path += [
                    dict(flow=f"He_{k}", d=d, t=t, m=float(M[0, 0]), phi=phi(M, link))
                    for t, M in zip(res.t, res.states)
                ]
            rows.append(row)
    ctx.table("escape", pd.DataFrame(rows))


def _r2(cfg: MultiIndexGradientFlowConfig, ctx: RunContext) -> None:
    """Claims 4-6: staircase and non-staircase ODEs from the card's seeded Gaussian M(0) = G/sqrt(d) (entries
    N(0, 1/d); one G for all d, so only the scale changes with d) and from the seed-free M(0) = I/sqrt(d); the card
    asks to report both, and ``r2_start`` picks the one claims 4-5 are judged on."""
    G = ctx.rng("M0").standard_normal((2, 2))
    # The draw's shape explains its plateau times: the initial overlaps |G_i,:|^2/d of w*_1, w*_2 with span(W),
    # sigma_min(G), and whether both teacher rows lie along one student direction (|cos| near 1).
    ctx.scalar("M0_row1_sq", float(G[0] @ G[0]))
    ctx.scalar("M0_row2_sq", float(G[1] @ G[1]))
    ctx.scalar("M0_sigma_min", _smin(G))
    ctx.scalar("M0_cos_rows", float(G[0] @ G[1] / np.linalg.norm(G[0]) / np.linalg.norm(G[1])))
    rows, path = [], []
    for name in ("staircase", "non-staircase"):
        link = hermite_link(name)
        for start, base in (("identity", np.eye(2)), ("gaussian", G)):
            for d in cfg.r2_dims:
                M0 = base / math.sqrt(d)
                if np.linalg.norm(M0, 2) >= 1:
                    raise ValueError(f"'r2_dims': d = {d:g} is too small for a Gaussian M(0) of norm < 1")
                res = run_order_ode(
                    grassmann_rhs(link), M0, 1e3 * d, EVENTS, terminal=["converged"], rtol=cfg.ode_rtol, atol=1e-15
                )
                rows.append(
                    dict(
                        link=name,
                        start=start,
                        d=d,
                        t_first=res.events["first"],
                        t_second=res.events["second"],
                        t_end=float(res.t[-1]),
                        final_dist=_dist(res.final),
                        phi_max_rise=_monotone(res.states, link),
                        phi_end=phi(res.final, link),
                    )
                )
                for t, M in zip(res.t, res.states):
                    s = np.linalg.svd(M, compute_uv=False)
                    path.append(
                        dict(link=name, start=start, d=d, t=t, s_max=s[0], s_min=s[-1], m1=_row1(M), phi=phi(M, link))
                    )
    ctx.table("r2", pd.DataFrame(rows))
    ctx.table("r2_path", pd.DataFrame(path))


def _planted(cfg: MultiIndexGradientFlowConfig, ctx: RunContext) -> None:
    """Claim 7: planted (link fixed) vs two-timescale flows of He_3/sqrt(6), r = 1, from +-m0."""
    link = hermite_link("planted-trap")
    rows, path = [], []
    for flow, rhs in (("planted", planted_rhs(link)), ("two-timescale", grassmann_rhs(link))):
        for m0 in (-cfg.planted_m0, cfg.planted_m0):
            res = run_order_ode(
                rhs,
                np.array([[m0]]),
                cfg.planted_time,
                {"reach": lambda t, M: abs(M[0, 0]) - 0.999},
                rtol=cfg.ode_rtol,
                atol=1e-15,
            )
            rows.append(
                dict(
                    flow=flow, m0=m0, t_end=float(res.t[-1]), m_end=float(res.final[0, 0]), t_reach=res.events["reach"]
                )
            )
            path += [dict(flow=flow, m0=m0, t=t, m=float(M[0, 0])) for t, M in zip(res.t, res.states)]
    ctx.table("planted", pd.DataFrame(rows))
    ctx.table("planted_path", pd.DataFrame(path))


def _finite_d(cfg: MultiIndexGradientFlowConfig, ctx: RunContext) -> None:
    """Claim 8: finite-d two-timescale runs vs the ODE started from the same M(0), on the ODE time axis."""
    kinds = ("hermite", "random") if cfg.fd_features == "both" else (cfg.fd_features,)
    steps = max(1, round(cfg.fd_time / cfg.fd_lr))
    path, track = [], []
    for name in cfg.fd_links:
        link = hermite_link(name)
        for d in cfg.fd_dims:
            for seed in range(cfg.fd_seeds):
                rng = ctx.rng(f"fd {name} {d} {seed}")
                W_star, W0 = random_stiefel(d, link.r, rng), random_stiefel(d, link.r, rng)
                M0 = W_star.T @ W0
                for batch in cfg.fd_batches:
                    for kind in kinds:
                        run = train_two_timescale(
                            link,
                            W_star,
                            W0,
                            steps=steps,
                            lr=cfg.fd_lr,
                            batch=batch,
                            generator=ctx.generator(f"fd {name} {d} {seed} {batch} {kind}"),
                            features=kind,
                            n_features=cfg.fd_n_features,
                            log_every=cfg.fd_log_every,
                            device=ctx.device,
                        )
                        ode = run_order_ode(
                            grassmann_rhs(link), M0, float(run.t[-1]), t_eval=run.t, rtol=1e-10, atol=1e-13
                        )
                        key = dict(link=name, d=d, batch=batch, features=kind, seed=seed)
                        m_fd = np.array([_row1(M) for M in run.M])
                        s_fd = np.array([_smin(M) for M in run.M])
                        m_ode = np.array([_row1(M) for M in ode.states])
                        s_ode = np.array([_smin(M) for M in ode.states])
                        done = np.flatnonzero((m_ode >= 0.9) & (s_ode >= 0.9))
                        end = int(done[0]) if len(done) else len(run.t) - 1
                        window = slice(0, end + 1)
                        track.append(
                            dict(
                                **key,
                                dev_m1=float(np.abs(m_fd - m_ode)[window].max()),
                                dev_smin=float(np.abs(s_fd - s_ode)[window].max()),
                                t_window=float(run.t[end]),
                                reached=bool(len(done)),
                                smin_final=float(s_fd[-1]),
                            )
                        )
                        for source, m, s in (("finite-d", m_fd, s_fd), ("ode", m_ode, s_ode)):
                            path += [
                                dict(**key, source=source, t=float(t), m1=float(a), s_min=float(b))
                                for t, a, b in zip(run.t, m, s)
                            ]
    ctx.table(
        "finite_d", pd.DataFrame(path, columns=["link", "d", "batch", "features", "seed", "source", "t", "m1", "s_min"])
    )
    ctx.table(
        "tracking",
        pd.DataFrame(
            track,
            columns=[
                "link",
                "d",
                "batch",
                "features",
                "seed",
                "dev_m1",
                "dev_smin",
                "t_window",
                "reached",
                "smin_final",
            ],
        ),
    )


@study(
    "multi-index-gradient-flow",
    title="Two-timescale Grassmannian gradient flow on Gaussian multi-index models (overlap ODE, Hermite escape "
    "times, planted trap)",
    paper=PAPER,
    config=MultiIndexGradientFlowConfig,
    presets=PRESETS,
    family="index models",
    claims=claims,
    # small r x r ODEs and (n, 15) ridge fits: one thread is fastest on a shared box
    cpu_threads=1,
)
def run(cfg: MultiIndexGradientFlowConfig, ctx: RunContext) -> None:
    ctx.say("quadrature checks of A_M")
    _semigroup(cfg, ctx)
    ctx.say(f"loss identity by Monte Carlo ({cfg.mc_n} samples)")
    _loss_identity(cfg, ctx)
    ctx.say("escape-time ODEs")
    paths: list = []
    _escape(cfg, ctx, paths)
    ctx.table("escape_path", pd.DataFrame(paths))
    ctx.say("r = 2 saddle-to-saddle ODEs")
    _r2(cfg, ctx)
    _planted(cfg, ctx)
    if cfg.fd_dims:
        ctx.say(f"finite-d two-timescale runs at d = {cfg.fd_dims}, n = {cfg.fd_batches}")
    _finite_d(cfg, ctx)
    figure_escape_scaling(ctx, ctx.tables["escape"])
    figure_saddle_to_saddle(ctx, ctx.tables["r2_path"], ctx.tables["finite_d"], cfg.r2_start)
    figure_phi(ctx, ctx.tables["r2_path"], cfg.r2_start)
    figure_planted(ctx, ctx.tables["planted_path"])
