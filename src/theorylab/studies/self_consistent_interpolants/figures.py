"""self-consistent-interpolants: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure
from theorylab.data.images import display_image
from theorylab.theory.scsi_gaussian import covariance_ellipse

MEAN = np.array([1.0, -0.5])


COV = np.array([[1.0, 0.5], [0.5, 0.5]])


def figure_gauss(ctx: RunContext, curve: pd.DataFrame, observed: pd.DataFrame, sigma: float) -> None:
    fig, (left, right) = new_figure(ncols=2, width=10.5, height=4.2)
    left.plot(*covariance_ellipse(COV, MEAN), color="k", lw=2, label="truth S (theory)")
    o = observed.iloc[0]
    left.plot(
        *covariance_ellipse(np.array([[o.c11, o.c12], [o.c12, o.c22]]), MEAN),
        color="0.6",
        ls="--",
        label=f"observed Cov(y) (σ = {sigma})",
    )
    raw = curve[curve["weights"] == "raw"]
    picks = raw["step"].unique()[[len(raw["step"].unique()) // 4, len(raw["step"].unique()) // 2, -1]]
    for i, step in enumerate(picks):
        r = raw[raw["step"] == step].iloc[0]
        left.plot(
            *covariance_ellipse(np.array([[r.c11, r.c12], [r.c12, r.c22]]), MEAN),
            color=color(i),
            ls=":",
            marker="",
            label=f"Cov(T(y)) at step {int(step)}",
        )
    left.set_aspect("equal")
    left.legend(fontsize=7)
    left.set_title("2-σ ellipses")
    for w, g in curve.groupby("weights"):
        g = g[g["step"] > 0]
        right.semilogy(
            g["step"], g["cov_error"], color=color(0), ls="-" if w == "raw" else "--", label=f"covariance error ({w})"
        )
        right.semilogy(
            g["step"],
            g["residual"],
            color=color(1),
            ls="-" if w == "raw" else "--",
            label=f"self-consistency residual R ({w})",
        )
    right.axhline(0.12, color="0.5", lw=0.8, ls=":")
    right.set_xlabel("training step")
    right.legend(fontsize=7)
    right.set_title("convergence to the fixed point")
    ctx.figure("gauss_ellipses", fig)


def figure_moons(ctx: RunContext, table: pd.DataFrame, scatter: dict[str, np.ndarray]) -> None:
    kinds = list(table["channel"].unique())
    fig, axes = new_figure(ncols=1 + 2 * len(kinds), width=3.3 * (1 + 2 * len(kinds)), height=3.4)
    axes = np.atleast_1d(axes)
    axes[0].scatter(*scatter["clean"][:2000].T, s=2, color="k")
    axes[0].set_title("clean (held out)")
    for i, kind in enumerate(kinds):
        end = table[(table["channel"] == kind) & (table["weights"] == "raw")].iloc[-1]
        axes[1 + 2 * i].scatter(*scatter[f"observed/{kind}"][:2000].T, s=2, color="0.5")
        axes[1 + 2 * i].set_title(f"observed ({kind}): SW2 {end.sw2_observed:.3f}", fontsize=9)
        if f"restored/{kind}" in scatter:
            axes[2 + 2 * i].scatter(*scatter[f"restored/{kind}"][:2000].T, s=2, color=color(i))
        axes[2 + 2 * i].set_title(f"restored: SW2 {end.sw2:.3f} (ratio {end.ratio:.2f})", fontsize=9)
    for ax in axes:
        ax.set_xlim(-2.0, 3.0)
        ax.set_ylim(-2.0, 2.5)
        ax.set_aspect("equal")
    ctx.figure("moons_panels", fig)


def figure_moons_convergence(ctx: RunContext, table: pd.DataFrame) -> None:
    fig, ax = new_figure(width=5.5, height=3.8)
    for i, (kind, t) in enumerate(table.groupby("channel")):
        for w, g in t.groupby("weights"):
            ax.plot(g["step"], g["sw2"], color=color(i), ls="-" if w == "raw" else "--", label=f"{kind} ({w})")
        ax.axhline(t["sw2_observed"].iloc[0], color=color(i), lw=0.8, ls=":")
    ax.axhline(table["sw2_floor"].iloc[0], color="k", lw=0.8, ls=":", label="two clean draws")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("sliced W2 to held-out clean samples")
    ax.legend(fontsize=7)
    ax.set_title("distance against iteration (dotted: observed data)")
    ctx.figure("moons_convergence", fig)


def figure_digits(ctx: RunContext, grid: dict[str, np.ndarray]) -> None:
    fig, axes = new_figure(ncols=10, nrows=3, width=10, height=3.3)
    for r, key in enumerate(("clean", "observed", "restored")):
        for c in range(10):
            ax = axes[r, c]
            img, kw = display_image(grid[key][c])
            ax.imshow(img, **kw)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            if c == 0:
                ax.set_ylabel(key)
    ctx.figure("digits_grid", fig)
