"""ff-vs-attention: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure
from theorylab.probes.lowrank import laser_selection
from theorylab.studies.ff_vs_attention.judges import crossing_steps


def figure_dynamics(ctx: RunContext, curve: pd.DataFrame) -> None:
    fig, ax = new_figure(width=7.5, height=4.2)
    g = curve.groupby("step")
    lines = [
        ("acc_full", "accuracy (full)"),
        ("acc_noFF2", "accuracy (FF2 dropped)"),
        ("P_noise_full", "P(noise) (full)"),
        ("induction_mass", "layer-2 attention on o"),
    ]
    for i, (col, label) in enumerate(lines):
        mean, lo, hi = g[col].mean(), g[col].min(), g[col].max()
        ax.plot(mean.index, mean.values, color=color(i), label=label)
        if curve["seed"].nunique() > 1:
            ax.fill_between(mean.index, lo.values, hi.values, color=color(i), alpha=0.2, lw=0)
    ax.set_xlabel("training step")
    ax.set_ylabel("probability / accuracy at test triggers (p = 0)")
    ax.set_ylim(-0.02, 1.02)
    right = ax.twinx()
    margin = g["ff2_margin"].mean()
    right.plot(margin.index, margin.values, color=color(4), ls="--", label="FF2 margin for noise (right)")
    right.axhline(0, color="0.6", lw=0.8)
    right.set_ylabel("FF2 direct-logit margin of the noise token")
    t_ff, t_icl = crossing_steps(curve)
    for t, name in ((t_ff, "t_FF"), (t_icl, "t_ICL")):
        if t is not None:
            ax.axvline(t, color="0.3", ls=":", lw=1)
            ax.text(t, 1.0, f" {name}", va="top", fontsize=8)
    handles = ax.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=8, loc="center right")
    ax.set_title("FF2 learns the noise association before attention learns in-context recall")
    ctx.figure("training_dynamics", fig)


def figure_ablation(ctx: RunContext, end: pd.DataFrame) -> None:
    fig, ax = new_figure(width=6.0, height=3.8)
    settings = [
        ("full", "P_answer_full", "P_noise_full"),
        ("FF2 dropped", "P_answer_noFF2", "P_noise_noFF2"),
        ("attention 2 dropped", "P_answer_noAttn2", "P_noise_noAttn2"),
    ]
    x = np.arange(len(settings))
    p_o = np.array([end[a].mean() for _, a, _ in settings])
    p_tau = np.array([end[b].mean() for _, _, b in settings])
    ax.bar(x, p_o, color=color(0), label="P(o): in-context answer")
    ax.bar(x, p_tau, bottom=p_o, color=color(1), label="P(noise)")
    ax.bar(x, 1 - p_o - p_tau, bottom=p_o + p_tau, color="0.8", label="P(other)")
    ax.set_xticks(x, [s for s, _, _ in settings])
    ax.set_ylabel("mean probability at test triggers")
    ax.legend(fontsize=8)
    ax.set_title("Where the two answers live")
    ctx.figure("ablation_bars", fig)


def figure_p_sweep(ctx: RunContext, end: pd.DataFrame) -> None:
    sweep = end[end["ff"]].groupby("p_noise")["P_noise_full"].agg(["mean", "min", "max"])
    if len(sweep) < 2:
        return
    fig, ax = new_figure(width=4.8, height=4.0)
    ax.plot([0, 1], [0, 1], color="0.5", ls="--", label="Bayes: P(noise) = p")
    ax.errorbar(
        sweep.index,
        sweep["mean"],
        yerr=[sweep["mean"] - sweep["min"], sweep["max"] - sweep["mean"]],
        fmt="o",
        color=color(0),
        label="trained (seed range)",
    )
    ax.set_xlabel("training noise probability p")
    ax.set_ylabel("P(noise) at test triggers")
    ax.legend(fontsize=8)
    ctx.figure("p_sweep", fig)


def figure_lm(ctx: RunContext, lm: pd.DataFrame) -> None:
    _, test = laser_selection(lm)
    base = lm[(lm["split"] == "test") & ~lm["truncated"]].iloc[0]
    fig, (left, mid, right) = new_figure(ncols=3, width=13.0, height=3.9)
    for i, (layer, t) in enumerate(test.groupby("layer")):
        t = t.sort_values("rank")
        kw = dict(color=color(i), marker="o", label=f"MLP {int(layer)}")
        left.plot(t["rank"], t["icl_acc"], **kw)
        mid.plot(t["rank"], t["P_answer"], **kw)
        mid.plot(t["rank"], t["P_generic"], **{**kw, "ls": "--", "marker": "s", "label": None})
        right.plot(t["rank"], 100 * t["ppl_change"], **kw)
    left.axhline(base["icl_acc"], color="0.4", ls="--", label="no truncation")
    mid.axhline(base["P_answer"], color="0.4", lw=0.8)
    mid.axhline(base["P_generic"], color="0.4", lw=0.8, ls="--")
    right.axhline(10, color="0.6", ls=":", label="+10%")
    generic = lm["generic"].iloc[0]
    for ax, ylabel in (
        (left, "in-context accuracy (test)"),
        (mid, f"P(name) solid, P('{generic}') dashed (test)"),
        (right, "natural-text perplexity change (%)"),
    ):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("rank kept in the MLP input matrix")
        ax.set_ylabel(ylabel)
    left.legend(fontsize=8)
    fig.suptitle(
        f"LASER on a {int(lm['n_layers'].iloc[0])}-layer model trained on real text: in-context name vs "
        f"generic '{generic}'"
    )
    ctx.figure("lm_truncation", fig)
