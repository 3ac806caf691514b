"""axial-networks: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure


def figure_equivariance(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure(width=7)
    labels = [f"{r.layer}{' +PE' if r.pe else ''}" for r in t.drop_duplicates(["layer", "pe"]).itertuples()]
    dims = sorted(t["d"].unique())
    w = 0.8 / len(dims)
    for k, d in enumerate(dims):
        g = t[t["d"] == d]
        vals = [
            np.log10(max(float(g[(g["layer"] + np.where(g["pe"], " +PE", "")) == lab]["error"].max()), 1e-16))
            for lab in labels
        ]
        ax.bar(
            np.arange(len(labels)) + (k - (len(dims) - 1) / 2) * w,
            np.array(vals) + 16,
            w,
            bottom=-16,
            color=color(k),
            label=f"d = {d}",
        )
    ax.axhline(-5, color="0.4", ls="--", lw=1, label="claim: PE off <= 1e-5")
    ax.axhline(-3, color="0.4", ls=":", lw=1, label="claim: PE on >= 1e-3")
    ax.set_xticks(np.arange(len(labels)), labels, rotation=30, ha="right", fontsize=7)
    ax.set(ylabel="log10 max |f(Πx) − Πf(x)| (float32)")
    ax.legend(fontsize=7)
    ctx.figure("equivariance-bar", fig)


def figure_cost(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure()
    sweep = t[t["group"].isin(["sweep", "card"])]
    for k, d in enumerate((2, 3)):
        g = sweep[sweep["d"] == d].sort_values("n")
        n = np.linspace(g["n"].min(), g["n"].max(), 50)
        ax.plot(n, n**d * d * n, color=color(k), lw=1, label=f"d = {d}: N Σ n_i")
        ax.plot(n, n ** (2 * d), color=color(k), lw=1, ls="--", label=f"d = {d}: N² (full)")
        ax.plot(g["n"], g["counted"], "o", color=color(k), ms=4, label=f"d = {d}: counted (SXAttention)")
    ax.set(xscale="log", yscale="log", xlabel="points per axis n", ylabel="score entries per sample and head")
    ax.legend(fontsize=6)
    ctx.figure("cost", fig)


def figure_expressivity(ctx: RunContext, t: pd.DataFrame) -> None:
    fig, ax = new_figure(width=6)
    cases = t.drop_duplicates(["target", "d"])[["target", "d"]].values.tolist()
    for k, model in enumerate(("SX", "GX")):
        g = t[t["model"] == model].set_index(["target", "d"])
        vals = [float(g.loc[(tg, d), "rel_mse"]) if (tg, d) in g.index else np.nan for tg, d in cases]
        ax.bar(np.arange(len(cases)) + (k - 0.5) * 0.35, vals, 0.35, color=color(k), label=model)
    for i, (tg, d) in enumerate(cases):
        theory = float(t[(t["target"] == tg) & (t["d"] == d)]["theory"].iloc[0])
        ax.hlines(theory, i - 0.4, i + 0.4, color="k", lw=1.5, label="theory (SX)" if i == 0 else None)
    ax.set_xticks(np.arange(len(cases)), [f"{tg} (d = {d})" for tg, d in cases], fontsize=7)
    ax.set(ylabel="least-squares relative MSE", ylim=(0, 1.1))
    ax.legend(fontsize=7)
    ctx.figure("expressivity", fig)


def figure_gp(ctx: RunContext, gp: pd.DataFrame, all_dims: pd.DataFrame | None) -> None:
    fig, ax = new_figure()
    ax.plot(gp["d"], gp["accuracy"], "o-", color=color(0), label="XCNN trained on 2-D (held-out / zero-shot)")
    if all_dims is not None and len(all_dims):
        for k, (model, g) in enumerate(all_dims.groupby("model"), start=1):
            m = g.groupby("d")["accuracy"].agg(["mean", "min", "max"])
            ax.errorbar(
                m.index,
                m["mean"],
                yerr=[m["mean"] - m["min"], m["max"] - m["mean"]],
                marker="s",
                ms=4,
                capsize=2,
                color=color(k),
                label=f"{model} trained per d (mean, min-max)",
            )
    ax.axhline(0.5, color="0.5", ls=":", lw=1, label="chance")
    ax.set(xlabel="dimension d", ylabel="test accuracy", ylim=(0.4, 1.02))
    ax.set_xticks(sorted(set(gp["d"]) | (set(all_dims["d"]) if all_dims is not None else set())))
    ax.legend(fontsize=7)
    ctx.figure("gp-accuracy", fig)


def figure_pde_transfer(ctx: RunContext, mini: pd.DataFrame | None, multidim: pd.DataFrame | None) -> None:
    """Fine-tuning curves on unseen-dimension targets: median test nRMSE over seeds (min-max band) per arm."""
    panels = [("AdvDiff3D (claim 11: XFieldCNN)", mini)] if mini is not None else []
    if multidim is not None:
        ft = multidim[multidim["phase"] == "finetune"]
        panels += [(f"{task} (claim 10: XViT)", g) for task, g in ft.groupby("task")]
    if not panels:
        return
    fig, axes = new_figure(ncols=len(panels), width=3.2 * len(panels))
    for ax, (title, t) in zip(np.atleast_1d(axes), panels):
        for k, (arm, g) in enumerate(t[t["arm"] != "zero-shot"].groupby("arm")):
            m = g.groupby("step")["nrmse"].agg(["median", "min", "max"])
            ax.plot(m.index, m["median"], "o-", ms=3, color=color(k), label=arm)
            ax.fill_between(m.index, m["min"], m["max"], color=color(k), alpha=0.2)
        ax.set(title=title, xlabel="fine-tuning step", ylabel="test nRMSE (one step)", yscale="log")
        ax.title.set_fontsize(8)
        ax.legend(fontsize=6)
    ctx.figure("pde-transfer", fig)
