"""mpnn-algorithms: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure
from theorylab.data.graphs import (
    wl_indistinguishable_pair,
)
from theorylab.studies.mpnn_algorithms.config import MPNNAlgorithmsConfig


def figure_error_vs_n(ctx: RunContext, table: pd.DataFrame) -> None:
    fig, ax = new_figure(width=5.5)
    t = table[table["family"] == table["family"].iloc[0]]
    groups = list(t.groupby(["aggr", "eta", "loss"]))
    for i, ((aggr, eta, loss), g) in enumerate(groups):
        stats = g.groupby("n")["mean_rel_error"].agg(["median", "min", "max"])
        shift = 1 + 0.05 * (i - len(groups) / 2)
        ax.errorbar(
            stats.index * shift,
            stats["median"],
            yerr=[stats["median"] - stats["min"], stats["max"] - stats["median"]],
            fmt="o-",
            ms=4,
            capsize=2,
            color=color(i),
            label=f"{aggr}, η = {eta:g}" + (f", {loss}" if t["loss"].nunique() > 1 else ""),
        )
    ax.axhline(1e-2, color="k", ls="--", lw=0.8, label="1e-2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"nodes n ({t['family'].iloc[0]} test graphs; training graphs have 3)")
    ax.set_ylabel("mean relative error vs Bellman-Ford")
    ax.set_title("size generalisation (median over seeds, bars: min-max)", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("error_vs_n", fig)


def figure_learned_f(ctx: RunContext, grid: tuple, members: pd.DataFrame, cfg: MPNNAlgorithmsConfig) -> None:
    X, W, values = grid
    pick = members[(members["task"] == "bf") & (members["aggr"] == "min")]
    reg = pick[pick["eta"] > 0]
    chosen = [int(pick[pick["eta"] == 0]["member"].iloc[0])] + ([int(reg["member"].iloc[0])] if len(reg) else [])
    fig, axes = new_figure(ncols=len(chosen), width=4.2 * len(chosen))
    axes = np.atleast_1d(axes)
    for ax, m in zip(axes, chosen):
        diff = (values[m] - (X + W)).numpy()
        lim = max(abs(diff).max(), 1e-6)
        im = ax.pcolormesh(X.numpy(), W.numpy(), diff, cmap="RdBu_r", vmin=-lim, vmax=lim, shading="auto")
        ax.add_patch(__import__("matplotlib").patches.Rectangle((0, 1), 10, 9, fill=False, ec="k", lw=1, ls="--"))
        ax.set_xlabel("x (incoming distance)")
        ax.set_ylabel("w (edge weight)")
        ax.set_title(f"f_θ(x, w) − (x + w), η = {members.loc[m, 'eta']:g}, seed {members.loc[m, 'seed']}", fontsize=8)
        fig.colorbar(im, ax=ax)
    ctx.figure("learned_f", fig)


def figure_knapsack(ctx: RunContext, table: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for s, g in table.groupby("seed"):
        stats = g.groupby("items")["rel_error"].agg(["mean", "max"])
        ax.plot(stats.index, stats["mean"], "o-", color=color(int(s)), label=f"seed {s} (mean)")
        ax.plot(stats.index, stats["max"], "v:", color=color(int(s)), mfc="none", label=f"seed {s} (max)")
    ax.axhline(1e-2, color="k", ls="--", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("items (capacity = 2 x items; training: <= 4 items, capacity <= 8)")
    ax.set_ylabel("relative error of the optimum")
    ax.set_title("max-aggregation MPNN on the knapsack DAG", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("knapsack_vs_items", fig)


def figure_wl(ctx: RunContext, cfg: MPNNAlgorithmsConfig) -> None:
    from theorylab.nn.mpnn import AlignedMPNN, PairMPNN, pair_init

    c6, tri = wl_indistinguishable_pair()
    seeds = [ctx.seed(f"wl/{i}") for i in range(cfg.wl_models)]
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    net = AlignedMPNN("min", seeds=seeds[:1], hidden=cfg.width)
    pair = PairMPNN("min", seeds=seeds[:1], hidden=cfg.width)
    with torch.no_grad():
        for graph, name, marker in ((c6, "C6", "o"), (tri, "2 x C3", "x")):
            h, _ = net(
                torch.ones(6, 1, dtype=torch.float64),
                graph.edge_index,
                graph.weight,
                rounds=cfg.wl_rounds,
                frontier=False,
            )
            ax.plot(np.sort(h[:, 0].numpy()), marker, ms=7, label=name)
            H = pair(pair_init(graph.edge_index, graph.weight, 6, 1, cfg.big), cfg.wl_rounds)
            bx.plot(np.sort(H.flatten().numpy()), marker, ms=5, label=name)
    ax.set_title("node MPNN: identical multisets", fontsize=8)
    bx.set_title("pair MPNN: the multisets differ", fontsize=8)
    for a in (ax, bx):
        a.set_xlabel("sorted index")
        a.set_ylabel("embedding after K rounds")
        a.legend(fontsize=7)
    ctx.figure("wl_pair", fig)
