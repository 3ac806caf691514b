"""truth-subspaces: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def _base(frame: pd.DataFrame, base: dict, final_norm: str = "layer") -> pd.DataFrame:
    return frame[
        (frame["n"] == base["n"])
        & (frame["n_layers"] == base["n_layers"])
        & np.isclose(frame["rho"], base["rho"])
        & (frame["final_norm"] == final_norm)
    ]


def figure_two_phase(
    ctx: RunContext, curve: pd.DataFrame, probes: pd.DataFrame, theory: pd.DataFrame, base: dict
) -> None:
    """Memorisation accuracy, y-probe accuracy (pre/post norm) and y'-loss on one log step axis; L_mem and L_Bayes
    as horizontal lines; markers are seed means with min-max bars."""
    c, p = _base(curve, base), _base(probes, base)
    p = p[p["metric"] == "probe"]
    th = theory[(theory["n"] == base["n"]) & np.isclose(theory["rho"], base["rho"])].iloc[0]
    fig, (ax, bx) = new_figure(ncols=2, width=10, height=4)
    series = [("memorisation acc.", c.groupby("step")["mem_acc"])]
    series += [(f"probe {s}", g.groupby("step")["value"]) for s, g in p.groupby("site") if s.startswith("y/")]
    for i, (name, grp) in enumerate(series):
        m, lo, hi = grp.mean(), grp.min(), grp.max()
        ax.errorbar(m.index, m.values, yerr=[m - lo, hi - m], marker="o", ms=3, color=color(i), label=name)
    ax.set(xscale="log", xlabel="step", ylabel="accuracy", ylim=(0.4, 1.02), title="memorise first, truth later")
    ax.legend(fontsize=7)
    grp = c.groupby("step")["loss_y2"]
    m, lo, hi = grp.mean(), grp.min(), grp.max()
    bx.errorbar(m.index, m.values, yerr=[m - lo, hi - m], marker="o", ms=3, color=color(0), label="y'-loss")
    bx.axhline(th["loss_mem"], color=color(1), ls="--", label=f"L_mem = {th['loss_mem']:.3f}")
    bx.axhline(th["loss_bayes"], color=color(2), ls="--", label=f"L_Bayes = {th['loss_bayes']:.3f}")
    bx.set(xscale="log", xlabel="step", ylabel="nats", title=f"y'-loss (N = {base['n']}, ρ = {base['rho']})")
    bx.legend(fontsize=7)
    ctx.figure("two_phase", fig)


def figure_probe_sites(ctx: RunContext, probes: pd.DataFrame) -> None:
    """Final probe balanced accuracy by site (rows: configurations; columns: sites), seed means."""
    p = probes[probes["metric"] == "probe"]
    last = p[p["step"] == p["step"].max()]
    grid = last.groupby(["n", "n_layers", "rho", "final_norm", "site"])["value"].mean().unstack("site")
    fig, ax = new_figure(width=1.2 * grid.shape[1] + 3, height=0.45 * grid.shape[0] + 1.5)
    im = ax.imshow(grid.to_numpy(), vmin=0.5, vmax=1.0, cmap="viridis", aspect="auto")
    ax.set_xticks(range(grid.shape[1]), grid.columns, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(grid.shape[0]), [f"N={a} L={b} ρ={c} {d}" for a, b, c, d in grid.index], fontsize=7)
    for (i, j), val in np.ndenumerate(grid.to_numpy()):
        ax.text(j, i, f"{val:.2f}", ha="center", va="center", fontsize=6, color="w")
    fig.colorbar(im, ax=ax, label="balanced accuracy")
    ax.set_title("final probe accuracy by site (position / layer or pre-post final norm)")
    ctx.figure("probe_sites_heatmap", fig)


def figure_rho_sweep(ctx: RunContext, probes: pd.DataFrame, base: dict) -> None:
    """t_truth vs ρ (log-log): medians over seeds with quartile bars; runs that never separate are left out."""
    p = probes[
        (probes["metric"] == "probe")
        & (probes["site"] == "y/post")
        & (probes["final_norm"] == "layer")
        & (probes["n"] == base["n"])
        & (probes["n_layers"] == base["n_layers"])
    ]
    rows = []
    for (rho, _seed), g in p.groupby(["rho", "seed"]):
        hit = g[g["value"] >= 0.9]["step"]
        rows.append(dict(rho=rho, t=float(hit.min()) if len(hit) else np.nan))
    t = pd.DataFrame(rows).dropna()
    fig, ax = new_figure()
    if len(t):
        q = t.groupby("rho")["t"].quantile([0.25, 0.5, 0.75]).unstack()
        x = 1 - np.asarray(q.index, float)
        ax.errorbar(x, q[0.5], yerr=[q[0.5] - q[0.25], q[0.75] - q[0.5]], marker="o", color=color(0))
        ax.set_xlim(x.min() / 3, x.max() * 3)  # a single ρ (quick) still gets a visible, non-degenerate axis
        ax.set_ylim(q[0.25].min() / 3, q[0.75].max() * 3)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="1 - ρ",
        ylabel="t_truth (first step with y-probe >= 0.9)",
        title="when truth becomes linearly decodable, by ρ",
    )
    ctx.figure("rho_sweep", fig)


def figure_norm_by_context(ctx: RunContext, norms: pd.DataFrame, base: dict) -> None:
    """Histograms of the pre-norm residual norm at x' for true vs false contexts, first logged step and end."""
    b = _base(norms, base)
    b = b[b["seed"] == b["seed"].min()]
    steps = sorted(set(b["step"]))
    fig, axes = new_figure(ncols=len(steps), width=5 * len(steps), height=3.5)
    for ax, step in zip(np.atleast_1d(axes), steps):
        s = b[b["step"] == step]
        for i, (label, flag) in enumerate((("true context", True), ("false context", False))):
            ax.hist(s[s["true"] == flag]["norm"], bins=40, alpha=0.6, density=True, color=color(i), label=label)
        ax.set(xlabel="|residual at x'| (before the final norm)", ylabel="density", title=f"step {step}")
        ax.legend(fontsize=7)
    ctx.figure("norm_by_context", fig)
