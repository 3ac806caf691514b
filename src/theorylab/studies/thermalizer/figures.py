"""thermalizer: its figures, drawn from the run's tables."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import torch

from theorylab.core.plotting import color, new_figure
from theorylab.studies.thermalizer.config import ThermalizerConfig
from theorylab.theory.thermalize import thermalize_gain


def figure_gain(ctx, betas, abar, gains: pd.DataFrame, spec: pd.DataFrame, std: float) -> None:
    fig, ax = new_figure()
    v = torch.logspace(-8, 2, 200, dtype=torch.float64)
    for i, (sh, st) in enumerate(((10, 4), (20, 4), (10, 2))):
        ax.semilogx(
            v.numpy(), thermalize_gain(v, sh, st, betas, abar).numpy(), color=color(i), label=f"ŝ = {sh}, s_stop = {st}"
        )
    mc = gains.dropna(subset=["monte_carlo"])
    ax.semilogx(mc["variance"], mc["monte_carlo"], "ko", ms=4, label="Monte Carlo (Algorithm 1, optimal ε)")
    # per-mode variance of the normalised field (rfft/N convention x N)
    modes = spec["truth"].to_numpy()[1:] / std**2 * 64
    ax.plot(
        modes[modes > 0],
        np.full((modes > 0).sum(), 0.25),
        "|",
        color="0.4",
        ms=10,
        label="KS22 modes (normalised variance)",
    )
    ax.set_xlabel("mode variance σ²")
    ax.set_ylabel("mean gain M of one thermalization")
    ax.legend(fontsize=6)
    ctx.figure("gain_curve", fig)


def figure_rms(ctx, rms: dict, table: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, name in enumerate(("truth", "plain", "thermalized")):
        r = rms[name]
        with warnings.catch_warnings():  # every plain trajectory is NaN after its blow-up: all-NaN columns are expected
            warnings.simplefilter("ignore", RuntimeWarning)
            q = np.nanquantile(r.numpy(), [0.25, 0.5, 0.75], axis=0)
        t = np.arange(r.shape[1])
        ax.plot(t, q[1], color=color(i), label=name)
        ax.fill_between(t, q[0], q[2], color=color(i), alpha=0.2)
    med = np.nanmedian(table["off_plain"])
    ax.axvline(med, color=color(1), ls=":", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("emulator step")
    ax.set_ylabel("rms(u)")
    ax.legend(fontsize=7)
    ctx.figure("rms_trace", fig)


def figure_spectrum(ctx, spec: pd.DataFrame, abar, cfg: ThermalizerConfig, std: float) -> None:
    fig, ax = new_figure()
    m = spec["mode"].to_numpy()
    ax.semilogy(m[1:], spec["reference"][1:], "k-", label="truth (training ensemble)")
    ax.semilogy(m[1:], spec["truth"][1:], "k:", lw=0.8, label="truth (test window, same size as thermalized)")
    ax.semilogy(m[1:], spec["thermalized"][1:], "o", ms=3, color=color(0), label="thermalized (last 500 steps)")
    ax.semilogy(m[1:], spec["plain_half_tau"][1:], "x", ms=3, color=color(1), label="plain emulator at τ/2")
    floor = float(1 - abar[cfg.s_stop]) * std**2 / 64  # per-mode noise floor of s_stop in E(m) units
    ax.axhline(floor, color="k", ls="--", lw=0.8, label="s_stop noise floor")
    ax.set_xlabel("Fourier mode m")
    ax.set_ylabel("E(m)")
    ax.legend(fontsize=6)
    ctx.figure("spectrum", fig)


def figure_space_time(ctx, extra: dict, std: float) -> None:
    fields = extra["space_time"]
    fig, axes = new_figure(ncols=3, width=10)
    lim = 3 * std
    for ax, (name, u) in zip(np.atleast_1d(axes), fields.items()):
        ax.imshow(
            np.nan_to_num(u.numpy().T, nan=0.0), aspect="auto", origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim
        )
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("emulator step")
        ax.set_ylabel("x (grid index)")
    ctx.figure("space_time", fig)


def figure_correlation(ctx, extra: dict, table: pd.DataFrame) -> None:
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    for i, (name, rho) in enumerate(extra["rho"].items()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ax.plot(np.nanmedian(rho.numpy(), 0), color=color(i + 1), label=name)
    for c in (0.8, 0.9, 0.95):
        ax.axhline(c, color="k", ls=":", lw=0.6)
    ax.set_xlim(0, 150)
    ax.set_xlabel("emulator step")
    ax.set_ylabel("Pearson ρ with the truth (median)")
    ax.legend(fontsize=7)
    calls = extra["calls"].numpy()
    bx.plot(np.median(calls, 1), color=color(0), lw=0.8)
    bx.set_xlabel("emulator step")
    bx.set_ylabel("denoiser calls per step (median over trajectories)")
    ctx.figure("correlation_and_calls", fig)


def figure_confusion(ctx, calib: pd.DataFrame, levels: int) -> None:
    fig, ax = new_figure()
    h, _, _ = np.histogram2d(calib["level"], calib["predicted"], bins=(np.arange(levels + 1), np.arange(levels + 1)))
    ax.imshow(np.log1p(h).T, origin="lower", cmap="viridis", aspect="auto")
    ax.plot([0, levels], [0, levels], "w--", lw=0.8)
    ax.set_xlabel("true level s")
    ax.set_ylabel("classified level ŝ")
    ctx.figure("confusion", fig)
