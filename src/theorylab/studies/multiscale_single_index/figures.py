"""multiscale-single-index: its figures, drawn from the run's tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def figure_edgeworth(ctx: RunContext, t: pd.DataFrame) -> None:
    """Relative first-chaos deviation vs d (log-log), ±2 SE, with the fitted and predicted a d^(-1/2)."""
    from theorylab.studies.multiscale_single_index.judges import fit_edgeworth

    fig, ax = new_figure()
    q = t[t["link"] == "quadratic"].sort_values("d")
    ax.errorbar(q["d"], q["rel_dev"], yerr=2 * q["rel_se"], fmt="o", color=color(0), label="quadratic link (±2 SE)")
    d = np.geomspace(q["d"].min() / 1.5, q["d"].max() * 1.5, 50)
    a, _ = fit_edgeworth(q)
    ax.plot(d, a / np.sqrt(d), color=color(0), lw=1, label=f"fit a d^-1/2, a = {a:.3f}")
    ax.plot(
        d,
        q["predicted"].iloc[0] * math.sqrt(q["d"].iloc[0]) / np.sqrt(d),
        "k--",
        lw=0.8,
        label="prediction 1/sqrt(1.5) d^-1/2",
    )
    lin = t[t["link"] == "linear"].sort_values("d")
    ax.errorbar(
        lin["d"],
        lin["rel_dev"].abs().clip(lower=1e-6),
        yerr=2 * lin["rel_se"],
        fmt="s",
        color=color(1),
        label="linear link |deviation| (±2 SE)",
    )
    ax.set(xscale="log", yscale="log", xlabel="d", ylabel="E[y z]/(c1 c1) - 1", title="first chaos, K = 2, flat w")
    ax.legend(fontsize=7)
    ctx.figure("edgeworth", fig)


def figure_sgd_overlaps(ctx: RunContext, path: pd.DataFrame) -> None:
    """Signed min overlap vs n/(d^(K-1) log d), one curve per d (median and quartiles over seeds), one panel per K."""
    Ks = sorted(path["K"].unique())
    fig, axes = new_figure(ncols=len(Ks), width=5 * len(Ks), height=4)
    axes = np.atleast_1d(axes)
    for ax, K in zip(axes, Ks):
        for i, (d, g) in enumerate(path[path["K"] == K].groupby("d")):
            q = g.groupby("n_scaled")["min_overlap"].quantile([0.25, 0.5, 0.75]).unstack()
            ax.plot(q.index, q[0.5], color=color(i), label=f"d = {d}")
            ax.fill_between(q.index, q[0.25], q[0.75], color=color(i), alpha=0.2)
        ax.axhline(0.5, color="k", lw=0.6, ls=":")
        ax.axhline(0.0, color="k", lw=0.4)
        ax.set(
            xlabel="n / (d^(K-1) log d)",
            ylabel="min_l <u_l, w_l> (signed)",
            title=f"spherical SGD, K = {K}",
            ylim=(-1.02, 1.02),
        )
        ax.legend(fontsize=7)
    ctx.figure("sgd_overlaps", fig)


def figure_unfolding_vs_sgd(ctx: RunContext, unfolding: pd.DataFrame, sgd: pd.DataFrame) -> None:
    """n_0.5 vs d (log-log) per method with reference slopes ceil(K/2) and K - 1. In the quick preset only the SGD
    runs exist (K = 2); the unfolding baselines are paper-preset only and the title says so."""
    from theorylab.studies.multiscale_single_index.judges import crossing_n

    fig, ax = new_figure()
    i = 0
    for K, g in sgd.groupby("K"):
        # a run that never reaches 0.5 (NaN) counts as infinitely late in the median, then is left off the plot
        med = g.assign(n05=g["n05"].fillna(np.inf)).groupby("d")["n05"].median()
        med = med[np.isfinite(med)]
        if len(med):
            ax.plot(med.index, med.values, "o-", color=color(i), label=f"SGD, K = {K} (median)")
            ax.plot(
                med.index,
                med.values[0] * (med.index / med.index[0]) ** (K - 1),
                "--",
                color=color(i),
                lw=0.8,
                label=f"slope K - 1 = {K - 1}",
            )
            i += 1
    for est, g in unfolding.groupby("estimator"):
        ns = pd.Series({d: crossing_n(h) for d, h in g.groupby("d")}).dropna()
        if len(ns):
            K = int(g["K"].iloc[0])
            slope = math.ceil(K / 2) if est == "balanced" else K - 1
            ax.plot(ns.index, ns.values, "s-", color=color(i), label=f"{est} unfolding, K = {K}")
            ax.plot(
                ns.index,
                ns.values[0] * (ns.index / ns.index[0]) ** slope,
                ":",
                color=color(i),
                lw=0.8,
                label=f"slope {slope}",
            )
            i += 1
    note = "" if len(unfolding) else " (unfolding baselines: paper preset only)"
    ax.set(xscale="log", yscale="log", xlabel="d", ylabel="n at min overlap 0.5", title="sample cost" + note)
    ax.legend(fontsize=6)
    ctx.figure("unfolding_vs_sgd", fig)
