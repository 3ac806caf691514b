"""local-perturbation-geometry: its figures, drawn from the run's tables (each one only when its table has rows)."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import NullFormatter, ScalarFormatter

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure, theory_line
from theorylab.theory.extremes import expected_max_normal


def draw_all(ctx: RunContext) -> None:
    tb = ctx.tables
    if len(tb["order"]):
        fig, (a1, a2) = new_figure(ncols=2, width=8, height=3.4)
        o = tb["order"]
        for i, (pair, g) in enumerate(o[o["seed"] == o["seed"].min()].groupby("pair")):
            a1.plot(g["eta"], g["defect"], "o", color=color(i), mfc="none", ms=4, label=pair)
            a1.plot(g["eta"], g["eta"] * g["kappa"], "-", color=color(i), lw=1)
        a1.axhline(0.10, color="0.6", ls=":", label="onset c = 0.10")
        a1.set(xscale="log", yscale="log", xlabel="step size eta", ylabel="order defect c(eta) (lines: eta kappa)")
        a1.legend(fontsize=6)
        on = tb["onset"]
        a2.plot(on["eta_pred"], on["eta_dagger"], "o", label="bracket 0.10/kappa")
        a2.plot(on["eta_pred_drop"], on["eta_dagger"], "x", label="control: H_A g_B dropped")
        a2.plot(on["eta_pred_flip"], on["eta_dagger"], "+", label="control: sign flipped")
        lim = np.array([min(on["eta_dagger"].min(), on["eta_pred"].min()) / 2, on["eta_dagger"].max() * 2])
        theory_line(a2, lim, lim, label="measured = predicted", color="k")
        for f in (1.5, 1 / 1.5):
            a2.plot(lim, lim * f, color="0.6", ls=":", lw=1)
        a2.set(xscale="log", yscale="log", xlabel="predicted onset", ylabel="measured onset eta_dagger")
        for axis in (a2.xaxis, a2.yaxis):
            axis.set_minor_formatter(NullFormatter())
        a2.legend(fontsize=6)
        ctx.figure("order", fig)
    if len(tb["window"]):
        fig, ax = new_figure(width=4.2, height=3.4)
        for i, (d, g) in enumerate(tb["window"].groupby("direction")):
            for _, gs in g.groupby("seed"):
                ax.plot(gs["scale"], gs["rel_error"], "o-", color=color(i), mfc="none", ms=4, label=d)
        ax.axhline(0.1, color="0.6", ls=":", label="10 %")
        ax.axvline(1e-2, color="0.6", ls="--", lw=0.8, label="paper's window 1e-2")
        ax.set(xscale="log", yscale="log", xlabel="|delta| / |theta_0|", ylabel="|dL - g^T delta| / |g^T delta|")
        ax.legend(fontsize=6)
        ctx.figure("window", fig)
    if len(tb["taylor"]):
        fig, ax = new_figure(width=4.2, height=3.4)
        for i, (d, g) in enumerate(tb["taylor"].groupby("direction")):
            for _, gs in g.groupby("seed"):
                ax.plot(gs["t"], gs["eps_lin"], "o", color=color(i), mfc="none", label=d)
            ax.axvline(g["r01"].mean(), color=color(i), ls=":", lw=1)
        t = np.array(sorted(tb["taylor"]["t"].unique()))
        theory_line(ax, t, t * tb["taylor"]["eps_lin"].min() / t.min(), label="slope 1", color="k")
        ax.axhline(0.1, color="0.6", lw=0.8)
        ax.set(xscale="log", yscale="log", xlabel="|delta| (unit direction x t)", ylabel="eps_lin")
        ax.legend(fontsize=7)
        ctx.figure("taylor", fig)
    if len(tb["interference"]):
        fig, (a1, a2) = new_figure(ncols=2, width=8, height=3.4)
        g = tb["interference"]
        a1.plot(g["hessian_term"].abs(), g["mixed"].abs(), "o", mfc="none")
        lim = [g["hessian_term"].abs().min(), g["hessian_term"].abs().max()]
        theory_line(a1, lim, lim, label="I = t^2 d_A^T H d_B", color="k")
        a1.set(xscale="log", yscale="log", xlabel="|t^2 d_A^T H d_B|", ylabel="|mixed difference I|")
        a2.plot(g["t"], g["residual"], "o", mfc="none", label="e(t)")
        t = np.array(sorted(g["t"].unique()))
        theory_line(a2, t, g["residual"].max() * (t / t.max()) ** 3, label="slope 3", color="k")
        a2.set(xscale="log", yscale="log", xlabel="t", ylabel="e(t)")
        for ax in (a1, a2):
            ax.legend(fontsize=7)
        ctx.figure("interference", fig)
    if len(tb["drift"]):
        fig, ax = new_figure(width=4.2, height=3.4)
        d = tb["drift"]
        s = d[d["kind"] == "sgd"].groupby("s")["mean_cos"].agg(["mean", "std"]).fillna(0.0)
        ax.errorbar(s.index, s["mean"], s["std"], fmt="o-", capsize=3, label="mean cos (principal angles)")
        ax.axhline(0.9, color="0.6", ls=":", label="claim: <= 0.9 at s = 100")
        ax.set(xlabel="SGD steps s", ylabel="mean cosine, top-8 gradient subspaces")
        ax.legend(fontsize=7)
        ctx.figure("drift", fig)
    if len(tb["bestofn"]):
        fig, ax = new_figure(width=4.2, height=3.4)
        g = tb["bestofn"]
        ns = np.unique(np.geomspace(2, int(g["n"].max()) * 2, 10).round().astype(int))
        r = g.iloc[0]
        theory_line(
            ax, ns, [r["s"] * r["grad_norm"] * expected_max_normal(n) for n in ns], label="s |g| e_N", color="k"
        )
        ax.errorbar(g["n"], g["mean_gain"], 2 * g["se"], fmt="o", capsize=3, label="best-of-N gain (±2 SE)")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set(xlabel="N", ylabel="mean best-of-N loss decrease")
        ax.legend(fontsize=7)
        ctx.figure("bestofn", fig)
    if len(tb["caa"]):
        fig, ax = new_figure(width=4.2, height=3.4)
        g = tb["caa"]
        for i, kind in enumerate(("edit_jvp", "edit_full_step", "random")):
            k = g[g["kind"] == kind]
            ax.plot(k["layer"] + 0.1 * (i - 1), k["cos"], "o", color=color(i), mfc="none", label=kind)
        ax.axhline(0.3, color="0.6", ls=":")
        ax.set(xlabel="layer l (residual after l blocks)", ylabel="cos(delta h, v_CAA)")
        ax.legend(fontsize=7)
        ctx.figure("caa", fig)
