"""self-refining-surrogate: its figures, drawn from the run's tables."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import torch

from theorylab.core.plotting import color, new_figure
from theorylab.theory.linear_gaussian import ar1_curves, critical_alpha_bar


def figure_tradeoff(ctx, gauss: pd.DataFrame, levels: pd.DataFrame, abar: torch.Tensor) -> None:
    fig, ax = new_figure()
    c = np.arange(len(abar))
    cur = ar1_curves(abar.numpy(), 0.95, 1.0, 0.04)
    ax.semilogy(c, cur["mse"], color=color(0), label="one-step MSE (δ = 0.04)")
    ax.semilogy(c, np.abs(cur["V"] - 1), color=color(1), label="|V_c/Σ − 1| (δ = 0.04)")
    crit = np.nonzero(abar.numpy() < critical_alpha_bar(0.95, 0.08))[0][0]
    ax.axvline(crit, color="0.5", ls="--", lw=0.8, label=f"c* (δ = 0.08) ≈ {crit}")
    mc = gauss[(gauss["delta"] == 0.04) & gauss["mc_variance"].notna()]
    ax.errorbar(
        mc["level"], (mc["mc_variance"] - 1).abs(), yerr=2 * mc["mc_se"], fmt="ko", ms=4, label="Monte Carlo ± 2 s.e."
    )
    ax.set_ylim(1e-3, 10)  # |V_c/Σ − 1| drops to 0 at c = T − 1 (V = Σ exactly); below 1e-3 is not informative
    ax2 = ax.twinx()
    # SNS's choices sit at small c: 200 bins of width 5 show their spread; the share per bin is on the right axis
    ax2.hist(
        levels["level_prev"],
        bins=200,
        range=(0, len(abar)),
        color="0.6",
        alpha=0.6,
        weights=np.full(len(levels), 1 / max(1, len(levels))),
    )
    ax2.set_ylabel("share of ŝ_1 chosen by SNS (KS rollouts)")
    ax.set_xlabel("conditioning level c")
    ax.legend(fontsize=6)
    ctx.figure("tradeoff", fig)


def figure_corr(ctx, rho: dict) -> None:
    fig, ax = new_figure()
    for i, (name, r) in enumerate(rho.items()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            q = np.nanquantile(r.numpy(), [0.25, 0.5, 0.75], axis=0)
        t = np.arange(r.shape[1])
        ax.plot(t, q[1], color=color(i), label=name)
        ax.fill_between(t, q[0], q[2], color=color(i), alpha=0.2)
    for th in (0.8, 0.9, 0.95):
        ax.axhline(th, color="0.6", lw=0.6, ls=":")
    ax.set_xlim(0, 120)
    ax.set_xlabel("step")
    ax.set_ylabel("ρ_t (median, IQR)")
    ax.legend(fontsize=6)
    ctx.figure("corr_decay", fig)


def figure_one_step(ctx, one: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, col in enumerate(("mse_input", "mse_sns", "mse_thermo")):
        g = one.groupby("s_star")[col]
        m, se = g.mean(), g.std() / np.sqrt(g.count())
        ax.errorbar(m.index, m, yerr=1.96 * se, fmt="o-", color=color(i), label=col[4:], ms=4)
    ax.set_yscale("log")
    ax.set_xlabel("proposal noise level s*")
    ax.set_ylabel("MSE to the truth (normalised units)")
    ax.legend(fontsize=6)
    ctx.figure("one_step", fig)


def figure_spectrum(ctx, spec: pd.DataFrame) -> None:
    fig, ax = new_figure()
    s = spec[spec["mode"] >= 1]
    ax.semilogy(s["mode"], s["ratio"], "o-", color=color(0), label="SNS / reference", ms=3)
    ax.semilogy(s["mode"], s["thermo_ratio"], "s-", color=color(1), label="thermo / reference", ms=3)
    ax.semilogy(s["mode"], s["truth_ratio"], "k.", label="truth window / reference")
    ax.fill_between(
        s["mode"],
        np.exp(-2 * s["se_log_ratio"]),
        np.exp(2 * s["se_log_ratio"]),
        color="0.85",
        label="± 2 s.e. (sampling)",
    )
    ax.axhspan(0.8, 1.25, color=color(2), alpha=0.1)
    ax.set_xlabel("Fourier mode m")
    ax.set_ylabel("E(m) ratio")
    ax.legend(fontsize=6)
    ctx.figure("spectrum", fig)
