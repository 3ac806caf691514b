"""graph-tokenization: its figures, drawn from the run's tables."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure
from theorylab.data.graph_tokens import random_walk_tokens

ORDER = ("adjacency", "spectral", "random_walk", "concat")


def figure_heatmap(ctx: RunContext, acc: pd.DataFrame) -> None:
    """Test accuracy, task x tokenization, one panel per depth L (mean ± std over seeds, smallest n)."""
    acc = acc[acc["n"] == acc["n"].min()]
    depths = sorted(set(acc["n_layers"]))
    fig, axes = new_figure(ncols=len(depths), width=4.2 * len(depths), height=0.9 + 0.6 * acc["task"].nunique())
    for ax, L in zip(np.atleast_1d(axes), depths):
        g = acc[acc["n_layers"] == L].groupby(["task", "tokenization"])["accuracy"]
        mean, std = g.mean().unstack(), g.std().unstack()
        cols = [k for k in ORDER if k in mean.columns]
        mean, std = mean[cols], std.reindex(columns=cols)
        ax.imshow(mean.values, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.grid(False)
        for i in range(mean.shape[0]):
            for j in range(mean.shape[1]):
                s = std.values[i, j]
                ax.text(
                    j,
                    i,
                    f"{mean.values[i, j]:.3f}" + (f"\n± {s:.3f}" if np.isfinite(s) else ""),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="w" if mean.values[i, j] < 0.6 else "k",
                )
        ax.set_xticks(range(len(cols)), cols, rotation=20, fontsize=7)
        ax.set_yticks(range(mean.shape[0]), list(mean.index), fontsize=7)
        ax.set_title(f"test accuracy, L = {L}, n = {int(acc['n'].min())}")
    ctx.figure("accuracy_heatmap", fig)


def figure_depth_curves(ctx: RunContext, acc: pd.DataFrame) -> None:
    """Accuracy vs depth L per tokenization, for one local task (edge_query or degree) and one global (components)."""
    acc = acc[acc["n"] == acc["n"].min()]
    present = set(acc["task"])
    local = "edge_query" if "edge_query" in present else ("degree" if "degree" in present else None)
    tasks = [t for t in (local, "components") if t in present] or sorted(present)[:1]
    fig, axes = new_figure(ncols=len(tasks))
    for ax, task in zip(np.atleast_1d(axes), tasks):
        for i, kind in enumerate(k for k in ORDER if k in set(acc["tokenization"])):
            g = acc[(acc["task"] == task) & (acc["tokenization"] == kind)].groupby("n_layers")["accuracy"]
            m, s = g.mean(), g.std().fillna(0)
            ax.errorbar(m.index, m.values, yerr=s.values, fmt="o-", color=color(i), label=kind, capsize=2, ms=4)
        ax.set(xscale="log", xlabel="depth L", ylabel="test accuracy", ylim=(0, 1.02), title=task)
        ax.set_xticks(sorted(set(acc["n_layers"])), [str(x) for x in sorted(set(acc["n_layers"]))])
        ax.legend(fontsize=7)
    ctx.figure("depth_curves", fig)


def figure_srg_pair(
    ctx: RunContext, shrikhande: torch.Tensor, rook: torch.Tensor, rw_steps: int, pair: pd.DataFrame
) -> None:
    """The two srg(16, 6, 2, 2) graphs, their RW-token matrices (identical) and the trained models' logit gaps."""
    fig, axes = new_figure(ncols=5, width=17, height=3.4)
    for ax, (name, A) in zip(axes[:2], (("Shrikhande", shrikhande), ("4x4 rook's graph", rook))):
        g = nx.from_numpy_array(A.numpy())
        pos = {v: (v % 4 + 0.15 * (v // 4), v // 4) for v in g}  # the Z4 x Z4 / grid coordinates of both
        nx.draw_networkx(g, pos=pos, ax=ax, node_size=60, with_labels=False, width=0.6, node_color="C0")
        ax.set_title(name)
        ax.set_axis_off()
    for ax, (name, A) in zip(axes[2:4], (("Shrikhande", shrikhande), ("rook", rook))):
        tok = random_walk_tokens(A, rw_steps).numpy()
        ax.imshow(tok, aspect="auto", cmap="magma", extent=(0.5, rw_steps + 0.5, 15.5, -0.5))  # columns are t = 1..K
        ax.grid(False)
        ax.set(xlabel="t", ylabel="vertex", title=f"{name}: RW tokens (P^t)_ii")
    ax = axes[4]
    if len(pair):
        gaps = pair.set_index("tokenization")["max_logit_gap"].clip(lower=1e-12)
        ax.bar(range(len(gaps)), gaps.values, color=[color(i) for i in range(len(gaps))])
        ax.set_xticks(range(len(gaps)), list(gaps.index), fontsize=8)
        ax.axhline(1e-5, color="k", ls="--", lw=0.8, label="1e-5 (claim)")
        ax.set(yscale="log", ylabel="max |logit gap| (0 drawn at 1e-12)", title="trained to tell them apart")
        ax.legend(fontsize=7)
    ctx.figure("srg_pair", fig)
