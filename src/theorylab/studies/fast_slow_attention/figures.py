"""fast-slow-attention: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def figure_manifold_tracking(ctx: RunContext, track: pd.DataFrame, errors: pd.DataFrame) -> None:
    """Left: x(t) (solid) and p_st(y(t)) (dashed) per state at one eps. Right: e0, e1 vs eps with slope guides."""
    fig, (ax, bx) = new_figure(ncols=2, width=10, height=4)
    for i, g in track.groupby("state"):
        ax.plot(g["t"], g["x"], color=color(int(i)), lw=1.5, label=f"x_{i}")
        ax.plot(g["t"], g["p_st"], color=color(int(i)), ls="--", lw=1)
    ax.set_xlabel("t")
    ax.set_ylabel("probability")
    ax.set_title(f"x(t) (solid) and p_st(y(t)) (dashed), eps = {track['eps'].iloc[0]:g}", fontsize=9)
    ax.legend(fontsize=7)
    eps = errors["eps"].to_numpy()
    bx.loglog(eps, errors["e0"], "o", color=color(0), label="e0 = max ||x - p_st||_1")
    bx.loglog(eps, errors["e1"], "s", color=color(1), label="e1 (with eps x1)")
    for k, col, ref in ((1, 0, errors["e0"].iloc[0]), (2, 1, errors["e1"].iloc[0])):
        bx.loglog(eps, ref * (eps / eps[0]) ** k, color=color(col), lw=0.8, ls=":", label=f"slope {k}")
    bx.set_xlabel("eps")
    bx.set_ylabel("error on t in [0.5, 5]")
    bx.legend(fontsize=7)
    ctx.figure("manifold_tracking", fig)


def figure_phi_fit(ctx: RunContext, phi: pd.DataFrame) -> None:
    """phi_theta(y) (markers) against p_st(y) (lines) per state; the untrained net dotted."""
    fig, ax = new_figure(width=6, height=4)
    for i, g in phi.groupby("state"):
        ax.plot(g["y"], g["p_st"], color=color(int(i)), lw=1.5, label=f"p_st state {i}")
        ax.plot(g["y"][::8], g["phi"][::8], "o", ms=3, color=color(int(i)))
        ax.plot(g["y"], g["phi_untrained"], ":", lw=0.8, color=color(int(i)))
    ax.set_xlabel("y")
    ax.set_ylabel("probability")
    ax.set_title("phi_theta (markers) vs p_st (lines); untrained dotted", fontsize=9)
    ax.legend(fontsize=7)
    ctx.figure("phi_fit", fig)


def figure_gate_trajectory(ctx: RunContext, curve: pd.DataFrame) -> None:
    """Gate RMS of the coupled model per layer and P vs tokens, mean ± SD over seeds."""
    fig, ax = new_figure(width=6, height=4)
    c = curve[curve["variant"] == "coupled"]
    for k, ((P, layer), g) in enumerate(c.groupby(["P", "layer"])):
        s = g.groupby("tokens")["gate_rms"].agg(["mean", "std"]).fillna(0.0)
        ax.errorbar(
            s.index,
            s["mean"],
            yerr=s["std"],
            color=color(k),
            marker="o",
            ms=3,
            capsize=2,
            label=f"P = {P}, layer {layer}",
        )
    ax.axhline(0.1, color="grey", ls="--", lw=0.8, label="claim threshold 0.1")
    ax.set_xlabel("training tokens")
    ax.set_ylabel("gate RMS")
    ax.legend(fontsize=7)
    ctx.figure("gate_trajectory", fig)


def figure_ablation_losses(ctx: RunContext, curve: pd.DataFrame) -> None:
    """Validation loss of each variant vs tokens, mean ± seed SD."""
    fig, ax = new_figure(width=6, height=4)
    per_model = curve.drop_duplicates(["seed", "variant", "P", "step"])
    for k, ((variant, P), g) in enumerate(per_model.groupby(["variant", "P"])):
        s = g.groupby("tokens")["val_loss"].agg(["mean", "std"]).fillna(0.0)
        label = variant if variant == "dense" else f"{variant}, P = {P}"
        ax.errorbar(
            s.index + 2000 * k,
            s["mean"],
            yerr=s["std"],
            color=color(k),
            marker="os^vD"[k % 5],
            ms=4,
            capsize=2,
            lw=1,
            label=label,
        )
    ax.set_xlabel("training tokens (markers offset for legibility)")
    ax.set_ylabel("validation loss (nats / char)")
    ax.legend(fontsize=7)
    ctx.figure("ablation_losses", fig)


def figure_depth_smoothness(ctx: RunContext, depth: pd.DataFrame) -> None:
    """||θ_{l+1} - θ_l||_F / ||θ_l||_F per matrix type vs layer l (mean over seeds; descriptive)."""
    fig, ax = new_figure(width=6, height=4)
    d = depth[depth["variant"] == "coupled"] if (depth["variant"] == "coupled").any() else depth
    for k, (m, g) in enumerate(d.groupby("matrix")):
        s = g.groupby("layer")["rel_diff"].mean()
        ax.plot(s.index + 0.5, s.to_numpy(), marker="o", color=color(k), label=m)
    ax.set_xlabel("between layers l and l + 1")
    ax.set_ylabel("||θ_{l+1} - θ_l|| / ||θ_l||")
    ax.set_title("depth smoothness (coupled, mean over seeds)", fontsize=9)
    ax.set_xticks(np.arange(d["layer"].max() + 1) + 0.5)
    ax.legend(fontsize=7)
    ctx.figure("depth_smoothness", fig)
