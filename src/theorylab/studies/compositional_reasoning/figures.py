"""compositional-reasoning: its figures, drawn from the run's tables (each one only when its table has rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure, theory_line

MARKERS = {"heavy_first": "o", "light_first": "s", "random": "^"}


def figure_stack(ctx: RunContext, stack: pd.DataFrame) -> None:
    """Max pending partials vs n (log-x), per family (panel) and order: mean over trees (markers) and max (dashed),
    with the lines floor(log2 n) and n - 1."""
    if stack.empty:
        return
    fams = list(dict.fromkeys(stack["family"]))
    fig, axes = new_figure(ncols=len(fams), width=3.2 * len(fams), height=3.4)
    axes = np.atleast_1d(axes)
    ns = np.array(sorted(stack["n"].unique()))
    for ax, fam in zip(axes, fams):
        theory_line(ax, ns, np.floor(np.log2(ns)), label="floor(log2 n)", color="k")
        ax.plot(ns, ns - 1, ":", color="0.6", lw=1.6, label="n - 1")
        for i, (order, g) in enumerate(stack[stack["family"] == fam].groupby("order")):
            s = g.groupby("n")["max_pending"].agg(["mean", "max"])
            ax.plot(s.index, s["mean"], MARKERS.get(order, "o"), color=color(i), mfc="none", label=f"{order} (mean)")
            ax.plot(s.index, s["max"], "--", color=color(i), lw=0.8)
        ax.set(xscale="log", yscale="log", xlabel="leaves n", title=fam)
    axes[0].set_ylabel("max pending partials")
    axes[0].legend(fontsize=6)
    ctx.figure("stack_depth", fig)


def figure_rnn_heatmap(ctx: RunContext, gru: pd.DataFrame) -> None:
    """GRU root accuracy (mean over seeds) over (h, n), one panel per order."""
    if gru.empty:
        return
    orders = list(dict.fromkeys(gru["order"]))
    fig, axes = new_figure(ncols=len(orders), width=3.4 * len(orders), height=3.2)
    axes = np.atleast_1d(axes)
    for ax, order in zip(axes, orders):
        grid = gru[gru["order"] == order].pivot_table(index="hidden", columns="n", values="accuracy", aggfunc="mean")
        im = ax.imshow(grid.to_numpy(), origin="lower", vmin=0.5, vmax=1.0, cmap="viridis", aspect="auto")
        ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns])
        ax.set_yticks(range(grid.shape[0]), [str(r) for r in grid.index])
        for (i, j), a in np.ndenumerate(grid.to_numpy()):
            ax.text(j, i, f"{a:.2f}", ha="center", va="center", fontsize=7, color="w" if a < 0.8 else "k")
        ax.set(xlabel="leaves n (caterpillar)", ylabel="GRU state h", title=order)
        ax.grid(False)
    fig.colorbar(im, ax=list(axes), shrink=0.8, label="root accuracy (chance 0.5)")
    ctx.figure("rnn_heatmap", fig)


def figure_depth_vs_d(ctx: RunContext, tf: pd.DataFrame) -> None:
    """Transformer root accuracy vs D = log2 n, one line per depth L, plus the CoT curve; chance at 0.5."""
    if tf.empty:
        return
    fig, ax = new_figure()
    plain = tf[~tf["cot"].astype(bool)]
    for i, (L, g) in enumerate(plain.groupby("n_layers")):
        s = g.groupby("depth")["accuracy"].mean()
        ax.plot(s.index, s.to_numpy(), "o-", color=color(i), label=f"L = {L}")
    cot = tf[tf["cot"].astype(bool)]
    if len(cot):
        s = cot.groupby("depth")["accuracy"].mean()
        ax.plot(s.index, s.to_numpy(), "k*-", label=f"CoT, L = {int(cot['n_layers'].iloc[0])}")
    ax.axhline(0.5, color="0.5", ls=":", lw=1, label="chance")
    ax.set(xlabel="tree depth D = log2 n", ylabel="root accuracy", ylim=(0.4, 1.02), title="transformer depth vs D")
    ax.legend(fontsize=7)
    ctx.figure("depth_vs_D", fig)
