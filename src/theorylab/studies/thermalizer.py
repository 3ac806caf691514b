"""thermalizer: denoising emulator rollouts with a diffusion model of the invariant measure.

Paper: C. Pedersen, L. Zanna, J. Bruna, "Thermalizer: Stable autoregressive neural emulation of
spatiotemporal chaos", arXiv 2503.18731 (ICML 2025). A noise-blind denoiser with a noise-level
classifier, trained only on snapshots of the invariant measure, corrects an emulator on the fly
(Algorithm 1: classify the level ŝ of the current state; if ŝ > s_init denoise from ŝ to s_stop;
abort above s_abort). Quick preset: Kuramoto–Sivashinsky L = 22 with the card's drifting emulator
``KSLeaky`` (an exact solver step plus a (1 + η) leak of the small scales), against the exact
Gaussian model of Algorithm 1 (:mod:`theorylab.theory.thermalize`, ours).

The paper preset adds Kolmogorov flow at Re = 10k: a learned residual U-Net emulator (multi-step loss
with an unroll curriculum, rollout noise 1e-4) and a U-Net thermalizer, 40 rollouts of 1e5 steps.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Annotated

import numpy as np
import pandas as pd
import torch
from pydantic import Field

from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import Undecided
from theorylab.core.fields import Batch, Horizon, SampleSize, Steps, Width
from theorylab.core.plotting import color, new_figure
from theorylab.core.rng import seeded
from theorylab.data.pde import KS1D, NS2D, KSLeaky, coarse_trajectories
from theorylab.nn.unet import DenoiserMLP, PeriodicCNN, UNet, noise_schedule
from theorylab.probes.level_classifier import classify_levels
from theorylab.probes.rollout_metrics import (
    corr_time,
    corrector_cost,
    ke_spectrum_2d,
    off_attractor_time,
    pearson_t,
    spectral_similarity,
    spectrum_1d,
    spectrum_log_se,
)
from theorylab.theory.thermalize import gain_limits, thermalize_gain
from theorylab.train.rollout import Thermalize, float32_denoiser, noisy_emulator, rollout
from theorylab.train.thermalize_gaussian import gaussian_gain_monte_carlo, gaussian_linear_rollouts
from theorylab.train.thermalizer import train_emulator, train_level_denoiser

PAPER = "Pedersen, Zanna, Bruna, arXiv 2503.18731 (2025); ICML 2025"
REF = "arXiv 2503.18731"


class ThermalizerConfig(StudyConfig):
    train_trajectories: SampleSize = Field(48, description="KS22 training trajectories (card: 48)")
    train_horizon: Horizon = Field(800, description="emulator steps per training trajectory after spin-up (card: 800)")
    test_trajectories: SampleSize = Field(16, description="test trajectories (card: 16)")
    horizon: Annotated[Horizon, Field(ge=10)] = Field(1000, description="emulator steps of the test rollouts (card: "
        "1000)")
    noise_levels: int = Field(200, ge=10, le=1000, description="diffusion levels drawn in training and classifier "
        "classes (card: 200 of T = 1000)")
    width: Annotated[Width, Field(ge=8)] = Field(256, description="DenoiserMLP width")
    blocks: int = Field(3, ge=1, le=64, description="DenoiserMLP residual blocks")
    denoiser_steps: Steps = Field(1500, description="Adam steps (one-cycle, peak lr 2e-3; card)")
    batch: Batch = Field(256, description="denoiser batch size")
    s_init: int = Field(10, ge=0, le=999, description="thermalize when the classified level exceeds this")
    s_stop: int = Field(4, ge=0, le=999, description="denoise down to this level")
    s_abort: int = Field(100, ge=0, le=999, description="flag the trajectory diverged above this level")
    leak: float = Field(0.1, ge=0, le=10, description="leak η of the drifting emulator KSLeaky")
    gauss_samples: Annotated[SampleSize, Field(ge=1000)] = Field(200_000, description="Monte Carlo samples of the "
        "Gaussian gain check (card: 2e5)")
    learned_steps: Annotated[Steps, Field(ge=0)] = Field(300, description="Adam steps of the small learned CNN "
        "emulator (reported, not claimed; 0 skips it)")
    learned_horizon: Horizon = Field(60, description="rollout steps of the learned CNN emulator, plain and thermalized")
    kolmogorov: bool = Field(False, description="run the Kolmogorov-flow part (paper preset: claims 8-9)")
    kolmogorov_solve_n: int = Field(256, ge=16, le=4096, description="grid of the Kolmogorov truth solver (paper: "
        "512; ours 256 by default)")
    kolmogorov_store_n: int = Field(64, ge=8, le=1024, description="grid the fields are stored and emulated at")
    kolmogorov_nu: float = Field(1e-4, gt=0, le=1, description="viscosity ν (Re = 10k: 1e-4)")
    kolmogorov_dt: float = Field(1e-3, gt=0, le=1, description="solver step")
    kolmogorov_substeps: int = Field(5, ge=1, le=10_000, description="solver steps per emulator step (card: 5)")
    kolmogorov_spinup: int = Field(10_000, ge=0, le=10_000_000, description="solver spin-up steps (card: 10,000)")
    kolmogorov_train_trajectories: Annotated[SampleSize, Field(ge=2)] = Field(8, description="training trajectories "
        "of the Kolmogorov data")
    kolmogorov_train_horizon: Horizon = Field(2000, description="stored emulator steps per training trajectory")
    kolmogorov_test_trajectories: SampleSize = Field(40, description="test trajectories (card: 40)")
    kolmogorov_horizon: Horizon = Field(100_000, description="emulator steps of the Kolmogorov rollouts (card: 1e5)")
    kolmogorov_width: Annotated[Width, Field(ge=4)] = Field(64, description="U-Net width of the emulator and the "
        "thermalizer (card: hidden 64)")
    kolmogorov_levels: int = Field(3, ge=1, le=6, description="U-Net downsamplings")
    kolmogorov_emulator_steps: Steps = Field(20_000, description="Adam steps of the residual emulator (unroll 1 -> "
        "kolmogorov_unroll)")
    kolmogorov_unroll: int = Field(4, ge=1, le=16, description="largest unroll of the emulator's multi-step loss "
        "(card: 4 for Kolmogorov)")
    kolmogorov_denoiser_steps: Steps = Field(20_000, description="Adam steps of the U-Net thermalizer")
    kolmogorov_batch: Batch = Field(32, description="batch of both Kolmogorov trainings")
    kolmogorov_noise: float = Field(1e-4, ge=0, le=1, description="rollout noise σ of the learned emulator (card: "
        "1e-4)")
    gauss_chains: Annotated[SampleSize, Field(ge=100)] = Field(2000, description="chains of the Gaussian stationarity "
        "check (card: 2e4)")


PRESETS = {
    "quick": Preset.of("quick", "2 CPU cores, ~60 s: KS22, a 0.5M-parameter MLP denoiser, 16 x 800-step rollouts plain "
                                "and thermalized, the Gaussian model",
                       horizon=(800, "CPU budget: ~11 sequential denoiser calls per step make the thermalized rollout "
                                     "the run's largest cost; "
                                     "800 steps are ~25x the plain rollout's median time on the attractor (31 steps), "
                                     "and the spectrum window "
                                     "(the last 500 steps) starts at step 300 (at 600 it started at step 100 and seed "
                                     "5 missed the mode-6 band: 0.834)"),
                       learned_steps=(0, "CPU budget: the learned CNN emulator is reported, not claimed (--set "
                                         "learned_steps=300 adds it, ~7 s)")),
    "paper": Preset.of("paper", "GPU: the KS22 part, plus Kolmogorov flow Re = 10k (256² truth stored at 64²) with a "
                                "learned residual U-Net emulator and a U-Net thermalizer, 40 x 1e5-step rollouts",
                       gauss_chains=(20_000, "card"), kolmogorov=(True, "card: claims 8-9")),
}


def _data(cfg: ThermalizerConfig, ctx: RunContext):
    ks = KS1D.preset("ks22")
    train = rollout(lambda x: ks.step(x, 4), ks.spun_up(cfg.train_trajectories, ctx.generator("data/train")),
                    cfg.train_horizon).states[:, 1:]
    std = float(train.std())
    test0 = ks.spun_up(cfg.test_trajectories, ctx.generator("data/test"))
    truth = rollout(lambda x: ks.step(x, 4), test0, cfg.horizon).states
    return ks, train, std, test0, truth


def _train_denoiser(cfg: ThermalizerConfig, ctx: RunContext, snapshots: torch.Tensor,
                    abar: torch.Tensor) -> DenoiserMLP:
    g = ctx.generator("denoiser")
    with seeded(ctx.seed("denoiser/init")):
        net = DenoiserMLP(snapshots.shape[-1], cfg.width, cfg.blocks, cfg.noise_levels)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=cfg.denoiser_steps)
    log = train_level_denoiser(net, snapshots, abar, steps=cfg.denoiser_steps, batch=cfg.batch, levels=cfg.noise_levels,
                               optimizer=opt,
                               scheduler=sched, generator=g, progress=ctx.progress, check=ctx.check_finite)
    ctx.table("denoiser_training", pd.DataFrame(log))
    return net.eval()


def _gauss(cfg: ThermalizerConfig, ctx: RunContext, betas: torch.Tensor, abar: torch.Tensor) -> tuple[pd.DataFrame,
    pd.DataFrame]:
    g = ctx.generator("gauss")
    var = torch.tensor([1.0, 1e-3, 1e-5], dtype=torch.float64)
    # Algorithm 1 with ε* for N(0, σ²) is a linear map plus independent noise, so its mean gain is the
    # regression slope of x1 on x0 for any probe inputs. Probes at unit scale keep the injected noise
    # (variance w ≈ 2e-4) from swamping the slope at σ² = 1e-5: at the mode's own scale its SE with
    # 2e5 samples is ≈ 0.01, the whole tolerance (seed 1 missed by 0.011); at unit scale ≈ 3e-5.
    # ŝ = 10 -> s_stop = 4
    mc, mc_se = gaussian_gain_monte_carlo(var, cfg.gauss_samples, betas, abar, cfg.noise_levels, g)
    top, floor = gain_limits(10, 4, abar)
    extremes = thermalize_gain(torch.tensor([1e6, 0.0], dtype=torch.float64), 10, 4, betas, abar)
    gains = pd.DataFrame(dict(variance=var.numpy(), monte_carlo=mc.numpy(), monte_carlo_se=mc_se.numpy(),
                              closed_form=thermalize_gain(var, 10, 4, betas, abar).numpy()))
    gains = pd.concat([gains, pd.DataFrame(dict(variance=[1e6, 0.0], monte_carlo=np.nan, closed_form=extremes.numpy(),
                                                limit=[top, floor]))], ignore_index=True)
    ctx.table("gauss_gain", gains)
    grid = torch.tensor([1.0, 0.3, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7], dtype=torch.float64)
    a = torch.where(grid < 1e-5, 1.2, 0.9).double()
    # The same linear emulator rolled out through the rollout kit, thermalized every step (300 steps) and plain
    # (50). Per-step factor of each mode: the lag-1 regression slope of x_{t+1} on x_t over the stationary phase
    # (t >= 100), which the model predicts to be exactly M a (SE ~sqrt((1 - (Ma)^2)/pairs)). Growth of the plain
    # rollout: the per-step factor of its rms over steps 40-50 (least squares on log E‖x_t‖²), next to the same
    # fit of the model's E‖x_t‖² = Σ_k a_k^{2t} σ_k².
    model = gaussian_linear_rollouts(grid, a, cfg.gauss_chains, betas, abar, cfg.noise_levels, g)
    columns = {k: v.numpy() if torch.is_tensor(v) else v for k, v in model.items()}
    stab = ctx.table("gauss_stability", pd.DataFrame(dict(variance=grid.numpy(), a=a.numpy(), **columns)))
    return gains, stab


def _rollouts(cfg: ThermalizerConfig, ctx: RunContext, ks: KS1D, net: DenoiserMLP, std: float, test0: torch.Tensor,
              truth: torch.Tensor, train: torch.Tensor, betas, abar):
    emulator = KSLeaky(ks, eta=cfg.leak)
    # the denoiser sees fields in units of the data std (scale)
    correct = Thermalize(float32_denoiser(net), betas, abar, cfg.s_init, cfg.s_stop, cfg.s_abort,
                         generator=ctx.generator("thermalize"), scale=std)
    runs = {}
    for name, corrector in ctx.progress([("plain", None), ("thermalized", correct)], "rollouts"):
        g = ctx.generator("emulator/noise")  # the same noise for both
        start = time.perf_counter()
        runs[name] = rollout(lambda x, g=g: emulator(x, g), test0, cfg.horizon, corrector=corrector)
        ctx.scalar(f"{name}_rollout_s", time.perf_counter() - start)
    off = {name: off_attractor_time(r.states, std).numpy() for name, r in runs.items()}
    rho = {name: pearson_t(r.states, truth) for name, r in runs.items()}
    ctimes = {f"corr_time_{c}_{name}": corr_time(rho[name], c)[0].numpy() for name in runs for c in (0.8, 0.9, 0.95)}
    cost = {k: v.numpy() for k, v in corrector_cost(runs["thermalized"].logs).items()}
    off_truth = off_attractor_time(truth, std).numpy()
    table = ctx.table("rollouts", dict(trajectory=np.arange(cfg.test_trajectories), off_plain=off["plain"],
                                       off_thermalized=off["thermalized"], off_truth=off_truth, **ctimes, **cost))
    window = min(500, cfg.horizon)
    E_true, E_therm = spectrum_1d(truth[:, -window:]), spectrum_1d(runs["thermalized"].states[:, -window:])
    # The invariant measure's spectrum from the training ensemble (train_trajectories x train_steps snapshots, ~5x the
    # test window at quick): the 16-trajectory test window alone scatters by ~10% per mode, as wide as the claim's band.
    E_ref = spectrum_1d(train)
    # Standard error of ln(E_therm/E_ref) from the spread of per-trajectory time averages (trajectories are
    # independent).
    se_log = spectrum_log_se(runs["thermalized"].states[:, -window:]).numpy()
    tau = int(np.nanmedian(np.where(np.isfinite(table["off_plain"]), table["off_plain"], cfg.horizon)))
    E_plain = spectrum_1d(runs["plain"].states[:, max(1, tau // 2)])
    spec = pd.DataFrame(dict(mode=np.arange(len(E_true)), reference=E_ref.numpy(), truth=E_true.numpy(),
                             thermalized=E_therm.numpy(), plain_half_tau=E_plain.numpy(),
                             ratio=(E_therm / E_ref).numpy(), truth_ratio=(E_true / E_ref).numpy(),
                             se_log_ratio=se_log))
    ctx.table("spectrum", spec)
    rms = {name: r.states.flatten(2).double().pow(2).mean(-1).sqrt() for name, r in runs.items()}
    rms["truth"] = truth.flatten(2).double().pow(2).mean(-1).sqrt()
    extra = dict(space_time={"truth": truth[0, :200, 0], "plain": runs["plain"].states[0, :200, 0], "thermalized": runs[
        "thermalized"].states[0, :200, 0]},
                 rho=rho, calls=runs["thermalized"].logs["calls"].double(), correct=correct)
    return table, spec, rms, extra


def _learned(cfg: ThermalizerConfig, ctx: RunContext, ks: KS1D, train: torch.Tensor, std: float, test0: torch.Tensor,
             truth: torch.Tensor, correct) -> pd.DataFrame:
    """A 3-layer periodic CNN residual emulator trained on one-step pairs (the card's quick-scale learned
    emulator), rolled out plain and thermalized: reported, not claimed."""
    with seeded(ctx.seed("learned/init")):
        net = PeriodicCNN(1, 1, 32, 3)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    log = train_emulator(net, (train / std).float(), steps=cfg.learned_steps, batch=64, optimizer=opt,
                         generator=ctx.generator("learned/data"), check=ctx.check_finite, what="learned emulator loss")
    net.eval()
    gn = ctx.generator("learned/noise")
    emulate = noisy_emulator(net, 1e-4, gn, scale=std)
    rows = []
    for name, corrector in (("plain", None), ("thermalized", correct)):
        gn.manual_seed(ctx.seed("learned/noise/seed"))
        run = rollout(emulate, test0, cfg.learned_horizon, corrector=corrector)
        off = off_attractor_time(run.states, std)
        ct = corr_time(pearson_t(run.states, truth[:, : cfg.learned_horizon + 1]), 0.9)[0]
        rows += [dict(emulator="periodic CNN", rollout=name, trajectory=i, off_attractor=float(off[i]),
                      corr_time_0_9=float(ct[i])) for i in range(len(test0))]
    table = pd.DataFrame(rows).assign(train_loss=log[-1]["loss"] if log else math.nan, horizon=cfg.learned_horizon)
    ctx.table("learned_emulator", table)
    return table


# --------------------------------------------------------------------------------------------
# Kolmogorov flow (paper preset)
# --------------------------------------------------------------------------------------------


def _kolmogorov(cfg: ThermalizerConfig, ctx: RunContext, betas: torch.Tensor, abar: torch.Tensor) -> pd.DataFrame:
    dev = ctx.device
    solver = NS2D(N=cfg.kolmogorov_solve_n, nu=cfg.kolmogorov_nu, drag=0.1, forcing_mode=4, dt=cfg.kolmogorov_dt,
                  device=dev)
    n_all = cfg.kolmogorov_train_trajectories + cfg.kolmogorov_test_trajectories
    w0 = solver.random_state(n_all, ctx.generator("kf/init"), peak=4, rms=5.0).to(dev)
    data, test0 = coarse_trajectories(solver, w0, cfg.kolmogorov_train_trajectories, cfg.kolmogorov_spinup,
                                      cfg.kolmogorov_train_horizon,
                                      # [B, T, 1, n, n]
                                      cfg.kolmogorov_substeps, cfg.kolmogorov_store_n, progress=ctx.progress)
    std = float(data.std())
    data = data / std
    g = ctx.generator("kf/train")
    with seeded(ctx.seed("kf/init/emulator")):
        emulator = UNet(2, width=cfg.kolmogorov_width, levels=cfg.kolmogorov_levels, residual=True).to(dev)
    opt = torch.optim.AdamW(emulator.parameters(), lr=5e-4, weight_decay=0.05)
    train_emulator(emulator, data, steps=cfg.kolmogorov_emulator_steps, batch=cfg.kolmogorov_batch,
                   max_unroll=cfg.kolmogorov_unroll,
                   optimizer=opt, generator=g, device=dev, progress=ctx.progress, check=ctx.check_finite)
    with seeded(ctx.seed("kf/init/denoiser")):
        denoiser = UNet(2, width=cfg.kolmogorov_width, levels=cfg.kolmogorov_levels, classes=cfg.noise_levels).to(dev)
    opt = torch.optim.AdamW(denoiser.parameters(), lr=2e-4, weight_decay=0.05)
    train_level_denoiser(denoiser, data.flatten(0, 1), abar, steps=cfg.kolmogorov_denoiser_steps,
                         batch=cfg.kolmogorov_batch,
                         levels=cfg.noise_levels, optimizer=opt, generator=g, model_kwargs=dict(return_logits=True),
                         device=dev,
                         progress=ctx.progress, check=ctx.check_finite, description="train the U-Net thermalizer")
    emulator.eval()
    denoiser.eval()
    gn = ctx.generator("kf/noise")
    emulate = noisy_emulator(emulator, cfg.kolmogorov_noise, gn)
    therm = Thermalize(float32_denoiser(denoiser, return_logits=True), betas, abar, cfg.s_init, cfg.s_stop, cfg.s_abort,
                       generator=ctx.generator("kf/thermalize"))
    x0 = (test0 / std).double()
    record = max(1, cfg.kolmogorov_horizon // 1000)
    plain = rollout(emulate, x0, cfg.kolmogorov_horizon, record_every=record)
    gn.manual_seed(ctx.seed("kf/noise2"))
    thermal = rollout(emulate, x0, cfg.kolmogorov_horizon, corrector=therm, record_every=record)
    window, B = max(1, thermal.states.shape[1] // 10), data.shape[0]
    E_true = ke_spectrum_2d(data[: B // 2, -window:].double())
    E_true2 = ke_spectrum_2d(data[B // 2:, -window:].double())
    E_therm = ke_spectrum_2d(thermal.states[:, -window:])
    off_p, off_t = off_attractor_time(plain.states, 1.0) * record, off_attractor_time(thermal.states, 1.0) * record
    cost = {k: v.numpy() for k, v in corrector_cost(thermal.logs).items()}
    table = pd.DataFrame(dict(trajectory=np.arange(len(x0)), off_plain=off_p.numpy(), off_thermalized=off_t.numpy(),
                              **cost))
    table = table.assign(horizon=cfg.kolmogorov_horizon, spectral_similarity=spectral_similarity(E_therm, E_true),
                         noise_floor=spectral_similarity(E_true2, E_true))
    ctx.table("kolmogorov", table)
    return table


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure_gain(ctx, betas, abar, gains: pd.DataFrame, spec: pd.DataFrame, std: float) -> None:
    fig, ax = new_figure()
    v = torch.logspace(-8, 2, 200, dtype=torch.float64)
    for i, (sh, st) in enumerate(((10, 4), (20, 4), (10, 2))):
        ax.semilogx(v.numpy(), thermalize_gain(v, sh, st, betas, abar).numpy(), color=color(i), label=f"ŝ = {sh}, "
            f"s_stop = {st}")
    mc = gains.dropna(subset=["monte_carlo"])
    ax.semilogx(mc["variance"], mc["monte_carlo"], "ko", ms=4, label="Monte Carlo (Algorithm 1, optimal ε)")
    # per-mode variance of the normalised field (rfft/N convention x N)
    modes = spec["truth"].to_numpy()[1:] / std**2 * 64
    ax.plot(modes[modes > 0], np.full((modes > 0).sum(), 0.25), "|", color="0.4", ms=10, label="KS22 modes (normalised "
        "variance)")
    ax.set_xlabel("mode variance σ²")
    ax.set_ylabel("mean gain M of one thermalization")
    ax.legend(fontsize=6)
    ctx.figure("gain_curve", fig)


def _figure_rms(ctx, rms: dict, table: pd.DataFrame) -> None:
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


def _figure_spectrum(ctx, spec: pd.DataFrame, abar, cfg: ThermalizerConfig, std: float) -> None:
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


def _figure_space_time(ctx, extra: dict, std: float) -> None:
    fields = extra["space_time"]
    fig, axes = new_figure(ncols=3, width=10)
    lim = 3 * std
    for ax, (name, u) in zip(np.atleast_1d(axes), fields.items()):
        ax.imshow(np.nan_to_num(u.numpy().T, nan=0.0), aspect="auto", origin="lower", cmap="RdBu_r", vmin=-lim,
                  vmax=lim)
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("emulator step")
        ax.set_ylabel("x (grid index)")
    ctx.figure("space_time", fig)


def _figure_correlation(ctx, extra: dict, table: pd.DataFrame) -> None:
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


def _figure_confusion(ctx, calib: pd.DataFrame, levels: int) -> None:
    fig, ax = new_figure()
    h, _, _ = np.histogram2d(calib["level"], calib["predicted"], bins=(np.arange(levels + 1), np.arange(levels + 1)))
    ax.imshow(np.log1p(h).T, origin="lower", cmap="viridis", aspect="auto")
    ax.plot([0, levels], [0, levels], "w--", lw=0.8)
    ax.set_xlabel("true level s")
    ax.set_ylabel("classified level ŝ")
    ctx.figure("confusion", fig)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------

claims = Claims("thermalizer")

S_GAIN = ("Exact Gaussian model: the Monte Carlo mean gain of Algorithm 1 with the optimal denoiser (ŝ = 10 -> s_stop "
          "= 4, cosine T = 1000) matches the closed form M "
          "within 1e-3 at σ² in {1, 1e-3, 1e-5} (probes at unit scale: Monte Carlo SE ≈ 4e-5), and M at σ² = 1e6 and 0 "
          "equals its limits √(ᾱ_stop/ᾱ_ŝ) and √(ᾱ_ŝ/ᾱ_stop)(1 − ᾱ_stop)/(1 − ᾱ_ŝ) to 1e-4.")


@claims.add("gauss-gain", S_GAIN, "ours: exact Gaussian model of " + REF + " Algorithm 1")
def judge_gain(res, v) -> Verdict:
    t = res.table("gauss_gain")
    mc = t.dropna(subset=["monte_carlo"])
    worst = float((mc["monte_carlo"] - mc["closed_form"]).abs().max())
    lim = t.dropna(subset=["limit"])
    lim_err = float((lim["closed_form"] - lim["limit"]).abs().max())
    se = float(mc["monte_carlo_se"].max())
    detail = ("MC vs M: " + ", ".join(
        f"σ² {r.variance:g}: {r.monte_carlo:.4f} vs {r.closed_form:.4f}" for r in mc.itertuples())
              + f" (largest MC SE {se:.1e}); limits {lim_err:.1e}")
    if 4 * se > 1e-3:
        raise Undecided(f"needs more Monte Carlo samples (gauss_samples = {res.config['gauss_samples']}): 4 SE exceeds "
                        f"the 1e-3 tolerance; {detail}")
    # 1e-3: ~20 SE at 2e5 samples (SE ~4e-5), so only a real mismatch between Algorithm 1 and the
    # closed form fails (the card's 0.01 was sized for probes at the mode's own scale, SE ~0.01 at σ² = 1e-5).
    return v.judged(worst <= 1e-3 and lim_err <= 1e-4, worst, "<= 1e-3", 1e-3, detail)


S_STAB = ("A linear emulator with a = 1.2 on modes below σ² = 1e-5 (0.9 elsewhere) grows without thermalization (the "
          "plain rollout's rms grows by a per-step factor "
          "within 0.01 of the model's Σ a^(2t) σ², > 1); thermalized every step at ŝ = 10 it is stable: each mode's "
          "per-step factor, measured from the rollout "
          "(lag-1 regression), matches the Gaussian model's M a within 0.01, max |M a| = 0.900 ± 0.001 < 1, and the "
          "stationary variance matches w/(1 − (Ma)²) within 3%.")


@claims.add("gauss-stability", S_STAB, "ours: exact Gaussian model")
def judge_stability(res, v) -> Verdict:
    t = res.table("gauss_stability")
    peak = float((t["gain"] * t["a"]).abs().max())
    factor_err = (t["factor_thermalized"] - t["factor_theory"]).abs()
    worst_factor = float(factor_err.max())
    measured_peak = float(t["factor_thermalized"].abs().max())
    err = float(((t["stationary_mc"] - t["stationary_theory"]).abs() / t["stationary_theory"]).max())
    growth, growth_theory = float(t["plain_growth"].iloc[0]), float(t["plain_growth_theory"].iloc[0])
    # 0.01 on a factor: > 6 standard errors of the lag-1 slope at the quick 2000 chains x 200 steps
    # (SE <= 0.0015), while a denoiser that does not damp the leak band (M = 1) misses by 0.78 there.
    ok = (abs(peak - 0.9) <= 1e-3 and worst_factor <= 0.01 and measured_peak < 1 and err <= 0.03
          and abs(growth - growth_theory) <= 0.01 and growth > 1)
    leak = t[t["a"] > 1]
    detail = ("thermalized per-step factor (measured vs M a): " + ", ".join(f"σ² {r.variance:g}: "
        f"{r.factor_thermalized:.4f} vs {r.factor_theory:.4f}" for r in t.itertuples())
              + f"; worst {worst_factor:.4f} (need <= 0.01; largest SE {t['factor_thermalized_se'].max():.4f}); "
                f"measured max {measured_peak:.4f} (need < 1), "
              f"model max |Ma| {peak:.4f} (need 0.900 ± 0.001); leak band factor "
              f"{leak['factor_thermalized'].max():.4f} vs a = {leak['a'].max():g} unthermalized; "
              f"stationary variance error max {err:.2%} (need <= 3%); plain rollout growth {growth:.4f} per step vs "
              f"model {growth_theory:.4f} (need within 0.01, > 1)")
    return v.judged(ok, worst_factor, "<= 0.01", 0.01, detail)


S_CAL = (
    "On held-out KS snapshots diffused to s ~ U{0..199}: corr(ŝ, s) >= 0.95, MAE <= 5 levels for s <= 30, and >= 95% "
    "of clean snapshots classified at ŝ <= s_init."
)


@claims.add("classifier-calibrated", S_CAL, REF + ", the noise-level classifier")
def judge_calibration(res, v) -> Verdict:
    t = res.table("calibration")
    c = float(np.corrcoef(t["level"], t["predicted"])[0, 1])
    low = t[t["level"] <= 30]
    mae = float((low["predicted"] - low["level"]).abs().mean())
    clean = float((t["clean_predicted"] <= res.config["s_init"]).mean())
    ok = c >= 0.95 and mae <= 5 and clean >= 0.95
    return v.judged(ok, c, ">= 0.95", 0.95, f"corr {c:.3f}; MAE (s <= 30) {mae:.2f}; clean at ŝ <= s_init: {clean:.1%}")


S_DRIFT = (
    "KSLeaky(η = 0.1) leaves the attractor (rms outside [0.3, 2] data std) in every test trajectory, with median "
    "off-attractor time <= 100 steps, while the truth never does."
)


@claims.add("emulator-drifts", S_DRIFT, REF + ", emulators drift (our controlled emulator)")
def judge_drift(res, v) -> Verdict:
    t = res.table("rollouts")
    med = float(np.median(t["off_plain"]))
    ok = bool(np.isfinite(t["off_plain"]).all()) and med <= 100 and bool(np.isinf(t["off_truth"]).all())
    return v.judged(ok, med, "<= 100", 100, f"plain off-attractor: median {med:.0f}, min {t['off_plain'].min():.0f}; "
                                            f"truth exits: {int(np.isfinite(t['off_truth']).sum())}")


S_STABLE = (
    "The thermalized rollout (same emulator, noise and initial conditions) stays on the attractor for the whole "
    "horizon in >= 90% of trajectories, so R = τ_therm/τ_emu >= 10."
)


@claims.add("stabilizes", S_STABLE, REF + ", thermalization keeps rollouts stable")
def judge_stabilizes(res, v) -> Verdict:
    t = res.table("rollouts")
    share = float(np.isinf(t["off_thermalized"]).mean())
    horizon = res.config["horizon"]
    R = float(np.median(np.where(np.isinf(t["off_thermalized"]), horizon, t["off_thermalized"])) / np.median(t[
        "off_plain"]))
    ok = share >= 0.9 and R >= 10
    return v.judged(ok, share, ">= 0.9", 0.9, f"{share:.0%} stay for {horizon} steps; R >= {R:.0f} (censored); "
                                              f"{t['calls_per_step'].mean():.1f} denoiser calls per step, thermalized "
                                              f"on {t['thermalized_share'].mean():.0%} of steps")


S_SPEC = ("Over the last 500 thermalized steps, E_therm(m)/E_true(m) is in [0.85, 1.15] for every energetic mode m = "
          "1..6, with mean |ln ratio| <= 0.08; "
          "E_true is the invariant measure's spectrum from the training ensemble (the test window alone scatters by "
          "~10% per mode).")


@claims.add("energetic-stats", S_SPEC, REF + "; the Gaussian model's damper is near 1 on energetic modes")
def judge_spectrum(res, v) -> Verdict:
    t = res.table("spectrum").set_index("mode")
    r = t.loc[1:6, "ratio"]
    mean_log = float(np.abs(np.log(r)).mean())
    ok = bool(((r >= 0.85) & (r <= 1.15)).all()) and mean_log <= 0.08
    control = t.loc[1:6, "truth_ratio"]  # the truth's own test window against the same reference: the sampling spread
    detail = ("ratios m = 1..6: " + ", ".join(f"{v:.3f}" for v in r) + " (standard errors of ln ratio: " + ", ".join(
        f"{v:.3f}" for v in t.loc[1:6, "se_log_ratio"])
              + "); the truth's own test window: " + ", ".join(f"{v:.3f}" for v in control))
    return v.judged(ok, mean_log, "<= 0.08", 0.08, detail)


S_FLOOR = (
    "In the leak band the thermalized spectrum stays finite but inflated, as the Gaussian model predicts (modes below "
    "the s_stop floor cannot be restored): E_therm(8)/E_true(8) in [1.5, 10]."
)


@claims.add("noise-floor", S_FLOOR, "ours: the Gaussian model's noise floor")
def judge_floor(res, v) -> Verdict:
    t = res.table("spectrum").set_index("mode")
    r = float(t.loc[8, "ratio"])
    return v.judged(1.5 <= r <= 10, r, "in [1.5, 10]", None, f"ratio at m = 8: {r:.2f}; m = 9, 10: "
                                                             f"{t.loc[9, 'ratio']:.2f}, {t.loc[10, 'ratio']:.2f}")


KF_SKIPPED = (
    "needs paper preset: this config does not run the Kolmogorov-flow part (kolmogorov=false; --set kolmogorov=true "
    "runs it)"
)

S_KF = ("On Kolmogorov flow (Re = 10k), the thermalized learned emulator's median off-attractor time is >= 100x the "
        "plain emulator's, >= 35/40 of its trajectories stay "
        "for the 1e5-step horizon, and its KE spectral similarity to the truth is within 2x the "
        "truth-vs-independent-truth floor (thresholds ours; the paper: > 1e5 steps, ~100x).")


@claims.add("kf-horizon", S_KF, REF + ", ~100x longer stable rollouts on Kolmogorov flow")
def judge_kolmogorov_horizon(res, v) -> Verdict:
    t = res.table("kolmogorov", unless=KF_SKIPPED)
    horizon = int(t["horizon"].iloc[0])
    stay = float(np.isinf(t["off_thermalized"]).mean())
    med_t = float(np.median(np.where(np.isinf(t["off_thermalized"]), horizon, t["off_thermalized"])))
    med_p = float(np.median(np.where(np.isinf(t["off_plain"]), horizon, t["off_plain"])))
    ratio = med_t / max(med_p, 1.0)
    sim, floor = float(t["spectral_similarity"].iloc[0]), float(t["noise_floor"].iloc[0])
    ok = ratio >= 100 and stay >= 35 / 40 and horizon >= 100_000 and sim <= 2 * floor
    detail = (
        f"horizon {horizon}: {stay:.0%} stay; median off-attractor {med_t:.0f} vs plain {med_p:.0f} (ratio "
        f"{ratio:.0f}); spectral similarity {sim:.3f} vs floor {floor:.3f}"
    )
    return v.judged(ok, ratio, ">= 100", 100, detail)


S_COST = (
    "Averaged over the Kolmogorov rollout, thermalization fires on < 50% of steps with <= 10 denoiser calls per "
    "emulator step (the paper's cost argument; reconstructed)."
)


@claims.add("kf-cost", S_COST, REF + ", the cost of thermalization")
def judge_kolmogorov_cost(res, v) -> Verdict:
    t = res.table("kolmogorov", unless=KF_SKIPPED)
    share, calls = float(t["thermalized_share"].mean()), float(t["calls_per_step"].mean())
    return v.judged(share < 0.5 and calls <= 10, share, "< 0.5", 0.5, f"thermalized on {share:.0%} of steps; "
        f"{calls:.2f} denoiser calls per step")


@study(
    "thermalizer",
    title="Thermalizer: denoising emulator rollouts with a diffusion model of the invariant measure",
    paper=PAPER,
    config=ThermalizerConfig,
    presets=PRESETS,
    family="surrogates",
    claims=claims,
)
def run(cfg: ThermalizerConfig, ctx: RunContext) -> None:
    threads = torch.get_num_threads()
    if ctx.device.type == "cpu":
        torch.set_num_threads(1)  # small FFTs and MLPs: the card's measured contention penalty
    try:
        betas, abar = noise_schedule(1000, "cosine")
        gains, _ = _gauss(cfg, ctx, betas, abar)
        ks, train, std, test0, truth = _data(cfg, ctx)
        snapshots = (train.reshape(-1, ks.N) / std).float()
        torch.set_num_threads(threads)  # batch-256 MLP training uses every core
        net = _train_denoiser(cfg, ctx, snapshots, abar)
        torch.set_num_threads(1 if ctx.device.type == "cpu" else threads)
        held = (truth[:, 1:].reshape(-1, ks.N) / std).float()
        held = held[torch.randperm(len(held), generator=ctx.generator("held"))[:4000]]
        calib = classify_levels(net, held, abar, cfg.noise_levels, ctx.generator("calibration"))
        calib = ctx.table("calibration", {k: v.numpy() for k, v in calib.items()})
        table, spec, rms, extra = _rollouts(cfg, ctx, ks, net, std, test0, truth, train, betas, abar)
        _figure_gain(ctx, betas, abar, gains, spec, std)
        _figure_rms(ctx, rms, table)
        _figure_spectrum(ctx, spec, abar, cfg, std)
        _figure_confusion(ctx, calib, cfg.noise_levels)
        _figure_space_time(ctx, extra, std)
        _figure_correlation(ctx, extra, table)
        if cfg.learned_steps:
            _learned(cfg, ctx, ks, train, std, test0, truth, extra["correct"])
        if cfg.kolmogorov:
            torch.set_num_threads(threads)
            _kolmogorov(cfg, ctx, betas, abar)
    finally:
        torch.set_num_threads(threads)

