"""representation-collapse: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def _guide(ax, L, y0: float, slope: float, label: str) -> None:
    L = np.asarray(sorted(L), dtype=float)
    ax.plot(L, y0 * (L / L[0]) ** slope, color="0.5", ls=":", lw=1, label=label)


def figure_dilution(ctx: RunContext, edit: pd.DataFrame, bound: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, (variant, g) in enumerate(edit.groupby("variant", sort=False)):
        m = g.groupby("L")["sensitivity"].agg(["median", "min", "max"])
        ax.errorbar(
            m.index,
            m["median"],
            yerr=[m["median"] - m["min"], m["max"] - m["median"]],
            color=color(i),
            marker="o",
            ms=4,
            capsize=2,
            label=f"S(L): {variant}",
        )
    b = bound.groupby("L")[["change", "bound"]].median()
    ax.plot(b.index, b["change"], color=color(2), marker="s", ms=3, label="one attention layer: |Δo| (median)")
    ax.plot(b.index, b["bound"], color=color(2), ls="--", label="its bound B(L) (median)")
    main = edit[edit["variant"] == "model"].groupby("L")["sensitivity"].median()
    _guide(ax, main.index, float(main.iloc[0]), -1.0, "slope -1")
    ax.set(xscale="log", yscale="log", xlabel="context length L", ylabel="change of the last state")
    ax.legend(fontsize=7)
    ctx.figure("dilution", fig)


def figure_count_gap(ctx: RunContext, count: pd.DataFrame) -> None:
    fig, ax = new_figure()
    positive = count.loc[count["gap"] > 0, "gap"]
    floor = float(positive.min()) / 10 if len(positive) else 1e-12
    for i, (dtype, g) in enumerate(count.groupby("dtype", sort=False)):
        for k, gm in g.groupby("model"):
            gm = gm.sort_values("L")
            ax.plot(
                gm["L"],
                gm["gap"].where(gm["gap"] > 0, floor),
                color=color(i),
                marker="o",
                ms=3,
                alpha=0.7,
                label=dtype if k == gm["model"].min() and k == g["model"].min() else None,
            )
            same = gm[gm["identical"]]
            ax.scatter(same["L"], np.full(len(same), floor), marker="x", s=60, color=color(i), zorder=3)
    f64 = count[count["dtype"] == "float64"].groupby("L")["gap"].median()
    _guide(ax, f64.index, float(f64.iloc[0]), -2.0, "slope -2")
    ax.set(xscale="log", yscale="log", xlabel="run length L of [a]^L b", ylabel="count gap G(L)")
    ax.set_title("x at the floor: bit-identical last states", fontsize=8)
    ax.legend(fontsize=7)
    ctx.figure("count_gap", fig)


def figure_collapse_vs_accuracy(ctx: RunContext, recall: pd.DataFrame) -> None:
    last = recall[recall["layer"] == recall["layer"].max()]
    fig, ax = new_figure()
    twin = ax.twinx()
    for axis, col, i in ((ax, "calibrated_cosine", 0), (twin, "accuracy", 1)):
        m = last.groupby("L")[col].agg(["mean", "std"])
        axis.errorbar(m.index, m["mean"], yerr=m["std"].fillna(0), color=color(i), marker="o", capsize=2)
        axis.set_ylabel(col.replace("_", " "), color=color(i))
    ax.set(xscale="log", xlabel="context length L")
    ctx.figure("collapse_vs_accuracy", fig)
    fig, ax = new_figure()
    for i, (layer, g) in enumerate(recall.groupby("layer")):
        m = g.groupby("L")["erank_per_token"].mean()
        ax.plot(m.index, m.values, color=color(i), marker="o", ms=3, label=f"layer {layer}")
    ax.set(xscale="log", xlabel="context length L", ylabel="effective rank / L")
    ax.legend(fontsize=7)
    ctx.figure("erank_vs_length", fig)
