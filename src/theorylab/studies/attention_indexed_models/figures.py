"""attention-indexed-models: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def figure_moments(ctx: RunContext, moments: pd.DataFrame, kurtosis: pd.DataFrame) -> None:
    """Predicted vs Monte Carlo mean/covariance entries (identity line); kurtosis vs d (log-log, slope -1 guide)."""
    fig, (a, b) = new_figure(ncols=2, width=10, height=4)
    for i, (kind, g) in enumerate(moments.groupby("kind")):
        a.errorbar(
            g["predicted"], g["measured"], yerr=4 * g["se"], fmt="o", ms=3, color=color(i), label=f"{kind} (bars: 4 se)"
        )
    lim = [moments["predicted"].min(), moments["predicted"].max()]
    a.plot(lim, lim, "k--", lw=0.8, label="identity")
    a.set(xlabel="Isserlis prediction", ylabel="Monte Carlo", title=f"G_ij moments, d = {int(moments['d'].iloc[0])}")
    a.legend(fontsize=7)
    b.errorbar(
        kurtosis["d"],
        kurtosis["measured"],
        yerr=4 * kurtosis["se"],
        fmt="o",
        color=color(0),
        label="Monte Carlo (4 se)",
    )
    b.plot(kurtosis["d"], kurtosis["predicted"], "s", mfc="none", color=color(1), label="12 Tr S⁴ / Tr(S²)²")
    d = np.geomspace(kurtosis["d"].min(), kurtosis["d"].max(), 20)
    b.plot(d, kurtosis["predicted"].iloc[0] * kurtosis["d"].iloc[0] / d, "k:", lw=0.8, label="slope -1")
    b.set(xscale="log", yscale="log", xlabel="d", ylabel="excess kurtosis of G", title="non-Gaussianity is O(1/d)")
    b.legend(fontsize=7)
    ctx.figure("moments_check", fig)


def figure_overlap(ctx: RunContext, path: pd.DataFrame, compare: pd.DataFrame) -> None:
    """ρ vs n/(d² ln d), one panel per link. Tied SGD runs: solid, one colour per d. The tied-vs-direct runs (their
    own step size): grey, tied solid, trace-free direct dashed, PSD-start direct dotted."""
    parts = [path.assign(source="sgd")] + ([compare.assign(source="compare")] if len(compare) else [])
    both = pd.concat(parts, ignore_index=True)
    links = sorted(both["link"].unique())
    fig, axes = new_figure(ncols=len(links), width=4 * len(links), height=3.6)
    axes = np.atleast_1d(axes)
    dims = sorted(path["d"].unique()) if len(path) else []
    for ax, name in zip(axes, links):
        for (source, param, d, seed), g in both[both["link"] == name].groupby(
            ["source", "parametrisation", "d", "seed"]
        ):
            ls = "-" if param == "tied" else "--" if param == "direct" else ":"
            if source == "sgd":
                ax.plot(
                    g["n_scaled"],
                    g["rho"],
                    color=color(dims.index(d)),
                    ls=ls,
                    lw=1.3,
                    label=f"tied, d = {d}" if seed == 0 else None,
                )
            else:
                ax.plot(
                    g["n_scaled"],
                    g["rho"],
                    color="0.45",
                    ls=ls,
                    lw=1.0,
                    label=f"{param}, d = {d} (comparison step)" if seed == 0 else None,
                )
        ax.axhline(0.5, color="gray", lw=0.6, ls=":")
        ax.set(xlabel="n / (d² ln d)", ylabel="ρ", title=name, ylim=(-0.1, 1.02))
        ax.legend(fontsize=6)
    ctx.figure("overlap_vs_scaled_n", fig)
