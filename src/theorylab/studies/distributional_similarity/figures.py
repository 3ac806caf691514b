"""distributional-similarity: its figures, drawn from the run's tables and probe encodings."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure
from theorylab.theory.info import bhattacharyya_coefficient


def figure_fingerprints(
    ctx: RunContext, mu: torch.Tensor, var: torch.Tensor, labels: np.ndarray, info: pd.DataFrame
) -> None:
    """BC matrices of the two most informative latent dimensions of runs 0 and 1, probes sorted by their label."""
    order = np.argsort(labels, kind="stable")
    fig, axes = new_figure(ncols=2, nrows=2, width=8, height=8)
    for row, run in enumerate((0, 1)):
        dims = info[(info["run"] == run) & (info["channel"] != "all")].nlargest(2, "I")
        for col, (c, bits) in enumerate(zip(dims["channel"], dims["I"])):
            d = int(c[1:])
            bc = bhattacharyya_coefficient(mu[run][:, d : d + 1], var[run][:, d : d + 1])[order][:, order]
            ax = axes[row][col]
            ax.imshow(bc.numpy(), vmin=0, vmax=1, cmap="viridis")
            ax.set_title(f"run {run}, {c}: {bits:.2f} bits", fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle("fingerprints (Bhattacharyya coefficients; probes sorted by label)", fontsize=9)
    ctx.figure("fingerprints", fig)


def figure_nmi_matrix(ctx: RunContext, dim_nmi: pd.DataFrame) -> None:
    """NMI between the active latent dimensions of all runs, ordered by run then by a greedy clustering."""
    fig, ax = new_figure(width=6, height=5.5)
    if dim_nmi.empty:
        ax.text(0.5, 0.5, "no active dimensions", ha="center")
        ctx.figure("nmi_matrix", fig)
        return
    keys = sorted({(r.run_a, r.dim_a) for r in dim_nmi.itertuples()}, key=lambda k: (k[0], int(k[1][1:])))
    index = {k: i for i, k in enumerate(keys)}
    m = np.eye(len(keys))
    for r in dim_nmi.itertuples():
        m[index[r.run_a, r.dim_a], index[r.run_b, r.dim_b]] = r.nmi
    # cluster: order dimensions by their best match in run 0's dimensions (fragments line up across runs)
    anchors = [i for i, k in enumerate(keys) if k[0] == keys[0][0]]
    groups = np.argmax(m[:, anchors], axis=1)
    order = np.lexsort((np.arange(len(keys)), groups))
    im = ax.imshow(m[order][:, order], vmin=0, vmax=1, cmap="magma")
    ticks = [f"{keys[i][0]}:{keys[i][1]}" for i in order]
    ax.set_xticks(range(len(keys)), ticks, rotation=90, fontsize=5)
    ax.set_yticks(range(len(keys)), ticks, fontsize=5)
    ax.set_title("NMI between active latent dimensions (run:dim)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.046)
    ctx.figure("nmi_matrix", fig)


def figure_invariance(ctx: RunContext, pairs: pd.DataFrame) -> None:
    """CKA against NMI for each pair of runs, before and after reparametrising the second run (paired markers)."""
    fig, ax = new_figure()
    for r in pairs.itertuples():
        ax.annotate(
            "",
            xy=(r.cka_transformed, r.nmi_transformed),
            xytext=(r.cka, r.nmi),
            arrowprops=dict(arrowstyle="->", color="0.6", lw=0.8),
        )
    ax.scatter(pairs["cka"], pairs["nmi"], color=color(0), label="runs a, b")
    ax.scatter(
        pairs["cka_transformed"], pairs["nmi_transformed"], color=color(1), marker="s", label="a, reparametrised b"
    )
    ax.set(xlabel="linear CKA of the means", ylabel="NMI of the fingerprints", xlim=(0, 1.02), ylim=(0, 1.02))
    ax.legend(fontsize=7)
    ctx.figure("invariance", fig)


def figure_noise_sweep(ctx: RunContext, noise: pd.DataFrame, n_probes: int) -> None:
    """I against the σ scale c for every run's full channel and its informative dimensions."""
    fig, ax = new_figure()
    for r, g in noise.groupby("run"):
        full = g[g["channel"] == "all"]
        ax.plot(full["c"], full["I"], color=color(int(r)), marker="o", label=f"run {r}: all latents")
        start = g[(g["channel"] != "all") & (g["c"] == 1.0) & (g["I"] >= 0.1)]["channel"]
        for c in start:
            d = g[g["channel"] == c]
            ax.plot(d["c"], d["I"], color=color(int(r)), lw=0.8, alpha=0.5)
    ax.axhline(math.log2(n_probes), color="0.4", ls="--", lw=1, label="log2 N")
    ax.axhline(2.0, color="0.4", ls=":", lw=1, label="discrete ground truth I(a) = 2 bits")
    ax.set(xscale="log", xlabel="σ scale c", ylabel="I (bits)")
    ax.legend(fontsize=6)
    ctx.figure("noise_sweep", fig)
