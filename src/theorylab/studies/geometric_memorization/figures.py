"""geometric-memorization: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def figure_construction(ctx: RunContext, hist: pd.DataFrame, construction: pd.DataFrame, tight: pd.DataFrame) -> None:
    """Left: the margin histogram of the construction over every fact (all at 2 and above, even numbers).
    Right: accuracy vs k / ceil(log2 N), the step from < 1 (one bit fewer) to 1."""
    fig, (a, b) = new_figure(ncols=2, width=10, height=4)
    groups = list(hist.groupby(["n", "r"]))
    for i, ((n, r), g) in enumerate(groups):  # side by side, 0.04 apart: every margin is an even integer
        a.bar(
            g["margin"] + 0.04 * (i - (len(groups) - 1) / 2),
            g["count"],
            width=0.035,
            color=color(i),
            label=f"N = {n}, R = {r}",
        )
    a.set(
        yscale="log",
        xlabel="margin (target logit - best other)",
        ylabel="facts",
        xlim=(-0.5, 4.5),
        title="construction margins (every fact: 2)",
    )
    a.legend(fontsize=6)
    both = pd.concat([construction, tight])
    for i, (n, g) in enumerate(both.groupby("n")):
        g = g.groupby("k", as_index=False)["accuracy"].min()
        b.plot(g["k"] / np.ceil(np.log2(n)), g["accuracy"], "o-", color=color(i), label=f"N = {n}")
    b.set(xlabel="k / ceil(log2 N)", ylabel="strict recall", ylim=(-0.05, 1.05), title="one bit fewer: collisions")
    b.legend(fontsize=7)
    ctx.figure("construction_margin", fig)


def figure_capacity(ctx: RunContext, training: pd.DataFrame) -> None:
    """Accuracy of the trained models vs d / (R log2 N), one line per (N, R): lines collapse if d ∝ R log N."""
    fig, ax = new_figure()
    for i, ((n, r), g) in enumerate(training.groupby(["n", "r"])):
        g = g.groupby("d", as_index=False)["accuracy"].mean()
        ax.plot(g["d"] / (r * np.ceil(np.log2(n))), g["accuracy"], "o-", color=color(i), label=f"N = {n}, R = {r}")
    ax.set(
        xscale="log",
        xlabel="d / (R ceil(log2 N))",
        ylabel="training accuracy",
        ylim=(-0.05, 1.05),
        title="capacity of trained one-layer models",
    )
    ax.legend(fontsize=7)
    ctx.figure("capacity_curves", fig)


def figure_superposition(ctx: RunContext, points: pd.DataFrame) -> None:
    """Held-out embedding coordinates: predicted from the own attributes' unembedding rows vs actual, and the
    shuffled-bijection control."""
    fig, ax = new_figure()
    for i, fit in enumerate(("real", "control")):
        g = points[points["fit"] == fit]
        ax.scatter(
            g["actual"],
            g["predicted"],
            s=5,
            alpha=0.6,
            color=color(i),
            label="own attributes" if fit == "real" else "shuffled bijections",
        )
    if len(points):
        lim = float(np.abs(points[["actual", "predicted"]].to_numpy()).max())
        ax.plot([-lim, lim], [-lim, lim], color="k", lw=0.8, ls="--")
    ax.set(
        xlabel="actual e_s coordinate",
        ylabel="predicted from [U_pi1(s), ..., U_piR(s)]",
        title="superposition (held-out subjects)",
    )
    ax.legend(fontsize=7)
    ctx.figure("superposition_scatter", fig)


def figure_transfer(ctx: RunContext, curve: pd.DataFrame) -> None:
    """Accuracy on new bijections vs steps of E-only training, trained vs random frozen MLP."""
    fig, ax = new_figure()
    for i, ((mlp, d), g) in enumerate(curve.groupby(["mlp", "d"])):
        g = g.groupby("step", as_index=False)["accuracy"].mean()
        ax.plot(g["step"], g["accuracy"], "o-", color=color(i), label=f"{mlp} MLP, d = {d}")
    ax.set(
        xlabel="E-only training steps",
        ylabel="accuracy on new bijections",
        ylim=(-0.05, 1.05),
        title="transfer of the selector MLP",
    )
    ax.legend(fontsize=7)
    ctx.figure("transfer_curve", fig)
