"""monomial-networks: its figures, drawn from the run's tables (each one only when its table has rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure, theory_line
from theorylab.theory import polynomial_nets as pn


def figure_landscape(ctx: RunContext, crit: pd.DataFrame, gd: pd.DataFrame) -> None:
    """L(S) for every |S| <= r (x: |S|, y: loss), coloured by Hessian index; stars: GD endpoints."""
    if crit.empty:
        return
    fig, ax = new_figure(width=5.0, height=3.8)
    rng = np.random.default_rng(0)
    jitter = rng.uniform(-0.12, 0.12, len(crit))
    sc = ax.scatter(
        crit["s"] + jitter,
        crit["loss_closed"],
        c=crit["negative"],
        cmap="viridis",
        s=36,
        edgecolors="k",
        linewidths=0.4,
        label="A_S (colour: Hessian index)",
    )
    fig.colorbar(sc, ax=ax, label="negative Hessian eigenvalues")
    if not gd.empty:
        ax.scatter(
            gd["nearest_s"] + 0.3,
            gd["loss"],
            marker="*",
            s=90,
            color="tab:red",
            alpha=0.6,
            label="GD endpoints (polished)",
        )
    ax.set(
        xlabel="|S|",
        ylabel="loss L",
        xticks=sorted(crit["s"].unique()),
        yscale="log",
        title="critical values of the k = 2 Gaussian landscape",
    )
    ax.legend(fontsize=7)
    ctx.figure("critical_landscape", fig)


def figure_dimensions(ctx: RunContext, jac: pd.DataFrame, cases) -> None:
    """Jacobian rank vs r per (d, k), with min(r d, binom(d + k - 1, k)) and the AH exceptions marked."""
    if jac.empty:
        return
    groups = list(dict.fromkeys((int(d), int(k)) for d, k in zip(jac["d"], jac["k"])))
    fig, ax = new_figure(width=5.6, height=3.8)
    for i, (d, k) in enumerate(groups):
        g = jac[(jac["d"] == d) & (jac["k"] == k)].sort_values("r")
        rs = np.arange(1, int(g["r"].max()) + 2)
        ax.plot(rs, [pn.expected_dimension(d, k, r) for r in rs], "--", color=color(i), lw=0.8)
        theory_line(ax, rs, [pn.ah_dimension(d, k, r) for r in rs], color=color(i), lw=1.2, label=f"d={d}, k={k} (AH)")
        ax.plot(g["r"], g["rank"], "o", color=color(i), mfc="none")
        exc = g[[(d, k, int(r)) in pn.AH_EXCEPTIONS for r in g["r"]]]
        ax.plot(exc["r"], exc["rank"], "x", color="k", ms=9)
    ax.set(
        xlabel="width r",
        ylabel="Jacobian rank (markers) / dimension (lines)",
        title="dimension counts: dashed min(rd, binom), x = AH exception",
    )
    ax.legend(fontsize=6, ncol=2)
    ctx.figure("dimension_table", fig)


def figure_metrics(ctx: RunContext, gd: pd.DataFrame) -> None:
    """Histograms of polished GD endpoint losses under the Gaussian, Rademacher and mixture metrics."""
    if gd.empty:
        return
    metrics = list(dict.fromkeys(gd["metric"]))
    fig, axes = new_figure(ncols=len(metrics), width=3.2 * len(metrics), height=3.0)
    for i, (ax, m) in enumerate(zip(np.atleast_1d(axes), metrics)):
        g = gd[gd["metric"] == m]
        ax.hist(g["loss"], bins=30, color=color(i))
        ax.set(xlabel="endpoint loss", title=f"{m} ({int((g['grad_norm'] <= 1e-8).sum())}/{len(g)} converged)")
    np.atleast_1d(axes)[0].set_ylabel("runs")
    ctx.figure("metric_comparison", fig)
