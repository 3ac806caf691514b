"""generative-leap: sample complexity n = Θ(d^{max(1, k*/2)}) for Gaussian multi-index models.

Paper: A. Damian, J. D. Lee, J. Bruna, "The Generative Leap: Sharp Sample Complexity for
Efficiently Learning Gaussian Multi-Index Models", arXiv 2506.05500 (2025).

The Gaussian 3-parity ``y = sign(z1 z2 z3)`` has generative leap k* = 3: every order-1 and order-2
moment of any label transform vanishes, so an order-3 spectral U-statistic is needed, and it
succeeds at ``n ∝ d^{3/2}``. The monomial ``y = z1 z2 z3`` has information exponent 3 but k* = 2:
an order-2 estimator on ``log|y|`` succeeds at ``n ∝ d``. The study checks the exact moments by
Monte Carlo, computes the first-stage leap of each link from samples, and measures the collapse
of the estimators' overlaps in ``n/d^{3/2}`` and ``n/d``. The two-stage link ``sign(z1) sign(z2^2 - 1)``
(degree 1, then degree 2 given ``z1``: leap 2) checks the sequential estimator against each stage's
degree, with a control whose first stage is removed (leap 3). The cpu preset adds the 4-parity with
the order-4 U-statistic (``n ∝ d^2``) for the fitted exponents.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext, study
from theorylab.data.index_models import IndexModel, get_link
from theorylab.probes.index_recovery import k3_overlaps, order2_overlap, sequential_recovery
from theorylab.probes.subspace import captures, overlap
from theorylab.studies.generative_leap.config import PRESETS, GenerativeLeapConfig
from theorylab.studies.generative_leap.figures import figure_crossing, figure_m3_vs_p3, figure_overlap_vs_c
from theorylab.studies.generative_leap.judges import claims
from theorylab.theory.generative import (
    CHI2_MEDIAN,
    SequentialLeap,
    leap_moment_checks,
    staged_link,
    staged_moments,
    top_subspace,
    u_and_v_matrices,
)
from theorylab.theory.hermite import leap_scores
from theorylab.theory.sdr import SAVE

PAPER = "Damian, Lee, Bruna, arXiv 2506.05500 (2025)"


def _sample(ctx: RunContext, stream: str, d: int, link: str, n: int) -> tuple[IndexModel, np.ndarray, np.ndarray]:
    """A model with a random W and n samples, both from the named stream."""
    rng = ctx.rng(stream)
    model = IndexModel.make(d, link, rng)
    X, y, _ = model.sample(n, rng)
    return model, X, y


def _sequential(cfg: GenerativeLeapConfig, ctx: RunContext) -> None:
    """The agnostic sequential estimator on every leap link: which orders it needed, what it found."""
    rows = []
    for name in cfg.leap_links:
        for seed in range(cfg.seeds):
            model, X, y = _sample(ctx, f"sequential/{name}/{seed}", cfg.sequential_dim, name, cfg.sequential_n)
            rows.append(dict(link=name, seed=seed, **sequential_recovery(model, X, y, seed, cfg.chunk)))
    ctx.table("sequential", pd.DataFrame(rows).assign(d=cfg.sequential_dim, n=cfg.sequential_n))


def _staged(cfg: GenerativeLeapConfig, ctx: RunContext) -> None:
    """The two-stage link sign(z1) sign(z2^2 - 1) (leap 2: degree 1, then degree 2 given z1) and its control with the
    median threshold (no degree-1 stage: leap 3): the sequential estimator limited to orders <= 2, and the single-stage
    order-2 estimator SAVE on y (2 directions), at n = alpha d."""
    moments = []
    rows = []
    for threshold, role in ((1.0, "staged"), (CHI2_MEDIAN, "control")):
        link = staged_link(threshold)
        moments += [
            dict(role=role, **r) for r in staged_moments(cfg.moment_n, ctx.rng(f"staged-moments/{role}"), threshold)
        ]
        for d in cfg.staged_dims:
            for alpha in cfg.staged_alphas if role == "staged" else (max(cfg.staged_alphas),):
                for seed in range(cfg.staged_seeds):
                    model, X, y = _sample(ctx, f"staged/{role}/{d}/{alpha}/{seed}", d, link, int(round(alpha * d)))
                    est = SequentialLeap(max_order=2, r_max=3, n_null=2, seed=seed, block=cfg.chunk).fit(X, y)
                    basis = est.components_.T
                    cap = captures(basis, model.W) if basis.shape[1] else np.zeros(2)
                    save = captures(SAVE(2, 10, whiten=False).fit(X, y).components_.T, model.W)
                    rows.append(
                        dict(
                            role=role,
                            link=link.name,
                            d=d,
                            alpha=alpha,
                            n=len(y),
                            seed=seed,
                            stages=";".join(f"k={k}:{m}" for k, m in est.stages_),
                            found=basis.shape[1],
                            leap=est.leap_ if est.leap_ is not None else -1,
                            overlap=overlap(basis, model.W) if basis.shape[1] else 0.0,
                            capture_z1=float(cap[0]),
                            capture_z2=float(cap[1]),
                            single_stage_z1=float(save[0]),
                            single_stage_z2=float(save[1]),
                        )
                    )
    ctx.table("staged_moments", pd.DataFrame(moments))
    ctx.table("staged", pd.DataFrame(rows))


def _parity4(cfg: GenerativeLeapConfig, ctx: RunContext) -> None:
    """The 4-parity with the order-4 U- and V-statistics (top-4 eigenvectors) at n = c d^2."""
    rows = []
    for d in ctx.progress(cfg.parity4_dims, "4-parity order-4 U/V statistics"):
        for c in cfg.parity4_c:
            n = max(int(round(c * d**2)), 8)
            for seed in range(cfg.seeds):
                model, X, y = _sample(ctx, f"p4/{d}/{c}/{seed}", d, "parity4", n)
                u, v = u_and_v_matrices(X, y - y.mean(), 4, block=cfg.chunk, device=str(ctx.device))
                for stat, m in (("U", u), ("V", v)):
                    rows.append(
                        dict(d=d, c=c, n=n, seed=seed, statistic=stat, overlap=overlap(top_subspace(m, 4), model.W))
                    )
    ctx.table("parity4", pd.DataFrame(rows, columns=["d", "c", "n", "seed", "statistic", "overlap"]))


def _parity(cfg: GenerativeLeapConfig, ctx: RunContext) -> pd.DataFrame:
    rows = []
    for d in ctx.progress(cfg.parity_dims, "3-parity U/V statistics"):
        for c in cfg.parity_c:
            n = max(int(round(c * d**1.5)), 8)
            for seed in range(cfg.seeds):
                model, X, y = _sample(ctx, f"p3/{d}/{c}/{seed}", d, "parity3", n)
                for stat, ov in k3_overlaps(model, X, y, cfg.chunk, str(ctx.device)).items():
                    rows.append(dict(d=d, c=c, n=n, seed=seed, statistic=stat, overlap=ov))
    return ctx.table("parity", pd.DataFrame(rows))


def _monomial(cfg: GenerativeLeapConfig, ctx: RunContext) -> pd.DataFrame:
    rows = []
    for d in cfg.monomial_dims:
        for alpha in cfg.monomial_alphas:
            for seed in range(cfg.monomial_seeds):
                model, X, y = _sample(ctx, f"m3/{d}/{alpha}/{seed}", d, "z1z2z3", int(round(alpha * d)))
                rows.append(dict(link="z1z2z3", d=d, alpha=alpha, seed=seed, overlap=order2_overlap(model, X, y)))
    d, n = cfg.order2_dim, int(round(cfg.order2_c * cfg.order2_dim**1.5))
    for seed in range(cfg.seeds):
        model, X, y = _sample(ctx, f"order2-p3/{seed}", d, "parity3", n)
        # Any transform of a +-1 label is affine in it: the identity is every transform.
        rows.append(dict(link="parity3", d=d, alpha=n / d, seed=seed, overlap=order2_overlap(model, X, y, lambda t: t)))
    return ctx.table("order2", pd.DataFrame(rows))


@study(
    "generative-leap",
    title="Sharp sample complexity n = Θ(d^{max(1, k*/2)}) for Gaussian multi-index models",
    paper=PAPER,
    config=GenerativeLeapConfig,
    presets=PRESETS,
    family="index models",
    claims=claims,
)
def run(cfg: GenerativeLeapConfig, ctx: RunContext) -> None:
    ctx.table("moments", pd.DataFrame(leap_moment_checks(cfg.moment_n, ctx.rng("moments"))))
    leaps = [
        dict(link=name, **row)
        for name in cfg.leap_links
        for row in leap_scores(get_link(name), cfg.leap_n, ctx.rng(f"leap/{name}"))
    ]
    ctx.table("leaps", pd.DataFrame(leaps))
    _sequential(cfg, ctx)
    _staged(cfg, ctx)
    parity = _parity(cfg, ctx)
    figure_overlap_vs_c(ctx, parity)
    figure_crossing(ctx, parity)
    _parity4(cfg, ctx)
    order2 = _monomial(cfg, ctx)
    figure_m3_vs_p3(ctx, order2)
