"""rmt-diffusion: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from theorylab.core import RunContext
from theorylab.core.plotting import color, log_ticks, new_figure, sim_points, theory_line


def figure_kappa(ctx: RunContext, kappa: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, (gamma, grp) in enumerate(sorted(kappa.groupby("gamma"), key=lambda t: t[0])):
        theory_line(ax, grp["sigma2"], grp["ratio"], label=f"γ = d/n = {gamma:.3g}", color=color(i))
        if gamma < 1:
            ax.axhline(1 / (1 - gamma), ls="--", lw=0.8, color=color(i))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\sigma^2$")
    ax.set_ylabel(r"$\kappa(\sigma^2)/\sigma^2$")
    ax.set_title("renormalised noise level (dashed: 1/(1-γ))")
    ax.legend(fontsize=7)
    ctx.figure("kappa_renorm", fig)


def figure_mean(ctx: RunContext, mean: pd.DataFrame) -> None:
    ns = sorted(mean["n"].unique())
    n_show = min(ns, key=lambda v: abs(np.log(v / 400)))
    fig, ax = new_figure()
    for i, (s2, grp) in enumerate(mean[mean["n"] == n_show].groupby("sigma2")):
        theory_line(ax, grp["lambda"], grp["rmt"], color=color(i), label=f"RMT, σ²={s2:g}")
        ax.plot(grp["lambda"], grp["naive"], ":", color=color(i), lw=1, label=f"naive λ/(λ+σ²), σ²={s2:g}")
        every = max(1, len(grp) // 25)
        sim_points(ax, grp["lambda"][::every], grp["sim_mean"][::every], 2 * grp["sim_se"][::every], color=color(i))
    ax.set_xscale("log")
    ax.set_xlabel(r"eigenvalue $\lambda_k$")
    ax.set_ylabel(r"$E[\hat\Sigma(\hat\Sigma+\sigma^2)^{-1}]_{kk}$")
    ax.set_title(f"mean denoiser gain per eigenmode (n = {n_show}; markers: simulation ± 2 SE)")
    ax.legend(fontsize=6)
    ctx.figure("mean_equiv", fig)


def figure_variance(ctx: RunContext, var: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, (n, grp) in enumerate(var.groupby("n")):
        jitter = np.linspace(-0.08, 0.08, len(grp))
        sim_points(ax, n * np.exp(jitter), grp["ratio"], 2 * grp["ratio_se"], color=color(i), ms=2, alpha=0.5)
    theory_line(
        ax, sorted(var["n"].unique()), [1.0] * var["n"].nunique(), color="k", label="theory: κ²/(n−df₂)·factors"
    )
    log_ticks(ax, sorted(var["n"].unique()))
    ax.set_xlabel("n")
    ax.set_ylabel(r"Var$[v^\top D(x)]\cdot(n-\mathrm{df}_2)/\kappa^2$ / factors")
    ax.set_title("variance equivalent: scaling × anisotropy × inhomogeneity")
    ax.legend(fontsize=7)
    ctx.figure("variance_scaling", fig)


def figure_sampling_map(ctx: RunContext, smap: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, ((n, s), grp) in enumerate(smap.groupby(["n", "sigma"])):
        sim_points(
            ax,
            grp["theory_var"],
            grp["sim_var"],
            2 * grp["var_ratio_se"] * grp["theory_var"],
            color=color(i),
            label=f"n={n}, σ={s:g}",
        )
    lo, hi = smap["theory_var"].min(), smap["theory_var"].max()
    theory_line(ax, [lo, hi], [lo, hi], color="k", label="theory = simulation")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("deterministic-equivalent variance of the PF-ODE map")
    ax.set_ylabel("simulated variance over data sets")
    ax.legend(fontsize=6)
    ctx.figure("sampling_map_variance", fig)


def _tile(img: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return img.reshape(shape)[..., 0] if len(shape) == 3 else img.reshape(shape[:2])


def figure_deep_samples(
    ctx: RunContext, deep_1: np.ndarray, deep_2: np.ndarray, linear_1: np.ndarray, shape: tuple[int, ...], backbone: str
) -> None:
    """The same seeds (columns) through the deep denoiser of split 1, of split 2, and the linear map of split 1."""
    if len(shape) < 2:
        return
    from matplotlib.figure import Figure

    rows = [np.concatenate([_tile(img, shape) for img in part], axis=1) for part in (deep_1, deep_2, linear_1)]
    fig = Figure(figsize=(1.0 * len(deep_1) + 1.5, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    ax.imshow(np.concatenate(rows, axis=0).clip(-1, 1), cmap="gray", vmin=-1, vmax=1)
    h = shape[0]
    ax.set_xticks([])
    ax.set_yticks([(i + 0.5) * h for i in range(3)])
    ax.set_yticklabels([f"{backbone}, split 1", f"{backbone}, split 2", "linear, split 1"], fontsize=8)
    ax.set_title("same noise seeds: deep EDM denoisers on two disjoint splits vs the linear map")
    ctx.figure("deep_vs_linear_samples", fig)


def figure_cross_split(
    ctx: RunContext,
    cross: pd.DataFrame,
    samples: dict,
    shape: tuple[int, ...],
    deep: tuple[int, str, pd.DataFrame] | None = None,
) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    ax = fig.add_subplot(1, 2, 1)
    stats = cross.groupby("n").agg(
        cross_med=("cross_mse", "median"),
        cross_lo=("cross_mse", lambda s: s.quantile(0.25)),
        cross_hi=("cross_mse", lambda s: s.quantile(0.75)),
        near_med=("nearest_mse_1", "median"),
        near_lo=("nearest_mse_1", lambda s: s.quantile(0.25)),
        near_hi=("nearest_mse_1", lambda s: s.quantile(0.75)),
    )
    ns = stats.index.to_numpy()
    for i, (key, label) in enumerate((("cross", "cross-split MSE (same seed)"), ("near", "nearest-training MSE"))):
        err = np.vstack([stats[f"{key}_med"] - stats[f"{key}_lo"], stats[f"{key}_hi"] - stats[f"{key}_med"]])
        sim_points(ax, ns, stats[f"{key}_med"], err, label=label, color=color(i))
        ax.plot(ns, stats[f"{key}_med"], "-", lw=0.8, color=color(i))
    if deep is not None:  # the deep pair at its split size: open markers
        n_deep, backbone, t = deep
        for i, (col, label) in enumerate((("cross_mse", "cross-split"), ("nearest_mse_1", "nearest-training"))):
            q = t[col].quantile([0.25, 0.5, 0.75]).to_numpy()
            ax.errorbar(
                [n_deep * 1.05],
                [q[1]],
                yerr=[[q[1] - q[0]], [q[2] - q[1]]],
                fmt="D",
                mfc="none",
                color=color(i),
                label=f"{backbone} EDM: {label}",
            )
    log_ticks(ax, ns)
    ax.set_yscale("log")
    ax.set_xlabel("n per split")
    ax.set_ylabel("MSE per pixel (median, IQR)")
    ax.set_title("linear diffusion maps on disjoint splits")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    if len(shape) >= 2:
        # One montage: a row per (n, split), the same six seeds in the columns.
        h, w = shape[:2]
        tiles = [
            np.concatenate(
                [img.reshape(shape)[..., 0] if len(shape) == 3 else img.reshape(h, w) for img in split[:6]], axis=1
            )
            for pair in samples.values()
            for split in pair
        ]
        sub = fig.add_subplot(1, 2, 2)
        sub.imshow(np.concatenate(tiles, axis=0).clip(-1, 1), cmap="gray", vmin=-1, vmax=1)
        sub.set_xticks([])
        sub.set_yticks([(i + 0.5) * h for i in range(len(tiles))])
        sub.set_yticklabels([f"n={n}, split {k + 1}" for n in samples for k in range(2)], fontsize=7)
        sub.set_title("same seeds, maps from the two splits")
    ctx.figure("cross_split_vs_n", fig)
