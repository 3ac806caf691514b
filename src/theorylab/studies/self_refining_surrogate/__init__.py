"""self-refining-surrogate: one conditional diffusion model for short-time fidelity and long-time consistency.

Paper: Q. Liu, L. Zanna, J. Bruna, "Towards Infinitely Long Neural Simulations: Self-Refining Neural Surrogate
Models for Dynamical Systems", arXiv 2603.17750 (2026). A joint DDPM over a pair of frames (x_{t−1}, x_t), each at
its own noise level, also classifies both levels; at every rollout step it infers how much to trust the previous
frame (ŝ_1) and how far the proposal is from the data (ŝ_2), forward-diffuses x_{t−1} to ŝ_1 and denoises x_t from
ŝ_2 (SNS, no threshold hyperparameter). Quick preset: the exact linear-Gaussian AR(1) trade-off
(:mod:`theorylab.theory.linear_gaussian`, ours) and KS22 with the drifting proposal emulator KSLeaky(η = 0.1),
against the same network's ``acdm`` (trust x_{t−1}) and ``thermo`` (ignore it) modes. The paper preset adds
Kolmogorov flow at Re = 10k with a U-Net SNS model correcting a learned U-Net emulator.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.core.cpu import torch_threads
from theorylab.core.rng import seeded
from theorylab.data.pde import KS1D, NS2D, KSLeaky, coarse_trajectories
from theorylab.nn.conditional_diffusion import ConditionalDiffusion, mlp_backbone, unet_backbone
from theorylab.nn.unet import UNet, diffuse, noise_schedule
from theorylab.probes.rollout_metrics import (
    corr_time,
    ke_spectrum_2d,
    off_attractor_time,
    pearson_t,
    spectral_similarity,
    spectrum_1d,
    spectrum_log_se,
)
from theorylab.studies.self_refining_surrogate.config import PRESETS, SelfRefiningSurrogateConfig
from theorylab.studies.self_refining_surrogate.figures import (
    figure_corr,
    figure_one_step,
    figure_spectrum,
    figure_tradeoff,
)
from theorylab.studies.self_refining_surrogate.judges import claims
from theorylab.theory.linear_gaussian import ar1_curves, critical_alpha_bar, critical_level, simulate_chains
from theorylab.train.rollout import noisy_emulator, rollout, rollout_pipelined
from theorylab.train.self_refine import SelfRefine, draw_levels, refine, train_sns
from theorylab.train.thermalizer import train_emulator

PAPER = "Liu, Zanna, Bruna, arXiv 2603.17750 (2026)"
GAUSS_LEVELS = (0, 10, 50, 100, 200, 400, 700, 999)


def _gauss(cfg: SelfRefiningSurrogateConfig, ctx: RunContext, abar: torch.Tensor) -> pd.DataFrame:
    """The card's AR(1) numbers on the cosine schedule with T = 1000 (``abar``), whatever ``levels`` KS uses."""
    rng = ctx.rng("gauss")
    ab = abar.numpy()
    rows = []
    for delta, mc_levels in ((0.04, (50,)), (0.08, (0, 10, 50, 100, 200))):
        curves = ar1_curves(ab[list(GAUSS_LEVELS)], 0.95, 1.0, delta)
        mc = simulate_chains(ab[list(mc_levels)], 0.95, 1.0, delta, cfg.gauss_chains, cfg.gauss_steps, rng,
                             average_last=cfg.gauss_steps // 2)
        for i, c in enumerate(GAUSS_LEVELS):
            row = dict(delta=delta, level=c, **{k: float(v[i]) for k, v in curves.items()})
            if c in mc_levels:
                j = mc_levels.index(c)
                row.update(mc_variance=mc["variance"][j], mc_se=mc["se"][j], mc_max_variance=mc["max_variance"][j],
                           mc_mse=mc["mse"][j])
            rows.append(row)
    table = ctx.table("gauss", pd.DataFrame(rows))
    ctx.scalar("critical_alpha_bar", critical_alpha_bar(0.95, 0.08))
    ctx.scalar("critical_level", critical_level(ab, 0.95, 0.08))
    return table


def _data(cfg: SelfRefiningSurrogateConfig, ctx: RunContext):
    ks = KS1D.preset("ks22")  # Δt = 4 x 0.25 = 1.0 per stored step
    train = rollout(lambda x: ks.step(x, 4), ks.spun_up(cfg.train_trajectories, ctx.generator("data/train")),
                    cfg.train_horizon).states[:, 1:]
    std = float(train.std())
    test0 = ks.spun_up(cfg.test_trajectories, ctx.generator("data/test"))
    truth = rollout(lambda x: ks.step(x, 4), test0, cfg.horizon).states
    return ks, train, std, test0, truth


def _train(cfg: SelfRefiningSurrogateConfig, ctx: RunContext, train: torch.Tensor, std: float,
           abar: torch.Tensor) -> ConditionalDiffusion:
    with seeded(ctx.seed("sns/init")):
        net = ConditionalDiffusion(mlp_backbone(train.shape[-1], 2, 1, cfg.width, cfg.blocks), 2, cfg.levels)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, fused=True)  # fused: ~3x faster Adam step on CPU
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=cfg.steps)
    start = time.perf_counter()
    log = train_sns(net, (train / std).float(), abar, steps=cfg.steps, batch=cfg.batch, optimizer=opt,
                    scheduler=sched, generator=ctx.generator("sns/train"), levels=cfg.levels,
                    low_levels=cfg.low_levels, low_share=cfg.low_share, ce_weight=cfg.ce_weight,
                    progress=ctx.progress, check=ctx.check_finite)
    ctx.scalar("train_s", time.perf_counter() - start)
    ctx.table("training", pd.DataFrame(log))
    ctx.scalar("parameters", sum(p.numel() for p in net.parameters()))
    return net.eval()


def _held_pairs(truth: torch.Tensor, std: float, n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    B, T = truth.shape[:2]
    b = torch.randint(0, B, (n,), generator=g)
    t = torch.randint(1, T, (n,), generator=g)
    return truth[b, t - 1] / std, truth[b, t] / std


def _calibration(cfg, ctx, net, truth, std, abar) -> pd.DataFrame:
    g = ctx.generator("calibration")
    prev, cur = _held_pairs(truth, std, cfg.calibration_pairs, g)
    pair = torch.stack([prev, cur], 1).float()
    # held-out pairs noised with the training mixture (independent levels per frame)
    s = torch.stack([draw_levels(len(pair), cfg.levels, cfg.low_levels, cfg.low_share, g) for _ in range(2)], 1)
    e = torch.randn(pair.shape, generator=g)
    a = abar.float()[s].view(len(pair), 2, 1, 1)
    with torch.no_grad():
        pred = net(a.sqrt() * pair + (1 - a).sqrt() * e)[1].argmax(-1)
        clean = net(pair)[1].argmax(-1)
    return ctx.table("calibration", dict(level_prev=s[:, 0].numpy(), level=s[:, 1].numpy(),
                                         predicted_prev=pred[:, 0].numpy(), predicted=pred[:, 1].numpy(),
                                         clean_prev=clean[:, 0].numpy(), clean=clean[:, 1].numpy()))


def _one_step(cfg, ctx, net, ks, truth, std, betas, abar) -> pd.DataFrame:
    g = ctx.generator("one_step")
    prev, cur = _held_pairs(truth, std, cfg.pairs, g)
    rows = []
    groups = torch.arange(cfg.pairs) % len(cfg.refine_levels)  # each level gets its own share of the pairs (CPU)
    for j, s_star in enumerate(cfg.refine_levels):
        p, c = prev[groups == j], cur[groups == j]
        prop = diffuse(c, abar[torch.full((len(c),), s_star)], torch.randn(c.shape, generator=g, dtype=c.dtype))
        out = {"input": prop}
        calls = {}
        for mode in ("sns", "thermo"):
            out[mode], info = refine(net, p, prop, betas, abar, mode=mode, variant=cfg.variant, generator=g)
            calls[mode] = info["calls"].double().numpy()
        for i in range(len(c)):
            rows.append(dict(s_star=s_star, pair=i, **{f"mse_{k}": float((v[i] - c[i]).pow(2).mean())
                                                       for k, v in out.items()},
                             calls_sns=calls["sns"][i], calls_thermo=calls["thermo"][i]))
    table = ctx.table("one_step", pd.DataFrame(rows))
    # exact-solver proposals: x_t = Φ(x_{t−1}) is the truth's next frame
    exact = ks.step(prev * std, 4) / std
    refined, info = refine(net, prev, exact, betas, abar, mode="sns", variant=cfg.variant, generator=g)
    change = (refined - exact).flatten(1).norm(dim=1) / exact.flatten(1).norm(dim=1)
    ctx.table("no_op", dict(relative_change=change.numpy(), level=info["level"].numpy(),
                            level_prev=info["level_prev"].numpy(), calls=info["calls"].numpy()))
    return table


def _rollouts(cfg, ctx, net, ks, train, std, test0, truth, betas, abar):
    emulator = KSLeaky(ks, eta=cfg.leak)
    runs = {}
    plan = [("plain", None, cfg.horizon), ("sns", "sns", cfg.horizon), ("acdm", "acdm", cfg.baseline_horizon),
            ("thermo", "thermo", cfg.baseline_horizon)]
    for name, mode, horizon in ctx.progress(plan, "rollouts"):
        g = ctx.generator("emulator/noise")  # the same proposal noise for every rollout
        corr = None if mode is None else SelfRefine(net, betas, abar, mode=mode, variant=cfg.variant,
                                                    generator=ctx.generator(f"refine/{name}"), scale=std).reset(test0)
        start = time.perf_counter()
        step = lambda x, g=g: emulator(x, g)  # noqa: E731
        # each trajectory steps on as soon as its correction is done: the batched calls stay full (2-3x faster)
        runs[name] = rollout(step, test0, horizon) if corr is None else rollout_pipelined(step, test0, horizon, corr)
        ctx.scalar(f"{name}_rollout_s", time.perf_counter() - start)
    rows = []
    for name, r in runs.items():
        T = r.states.shape[1]
        off = off_attractor_time(r.states, std).numpy()
        rho = pearson_t(r.states, truth[:, :T])
        ct = {f"corr_time_{c}": corr_time(rho, c)[0].numpy() for c in (0.8, 0.9, 0.95)}
        calls = r.logs["calls"].double().mean(0).numpy() if "calls" in r.logs else np.zeros(len(test0))
        lvl = r.logs["level_prev"].double().mean(0).numpy() if "level_prev" in r.logs else np.zeros(len(test0))
        for i in range(len(test0)):
            rows.append(dict(rollout=name, trajectory=i, horizon=T - 1, off_attractor=off[i],
                             calls_per_step=calls[i], mean_level_prev=lvl[i], **{k: v[i] for k, v in ct.items()}))
    table = ctx.table("rollouts", pd.DataFrame(rows))
    window = cfg.spectrum_window
    E_ref = spectrum_1d(train)  # the invariant measure's spectrum from the training ensemble
    E_sns = spectrum_1d(runs["sns"].states[:, -window:])
    E_true = spectrum_1d(truth[:, -window:])
    E_thermo = spectrum_1d(runs["thermo"].states[:, -min(window, cfg.baseline_horizon):])
    spec = ctx.table("spectrum", pd.DataFrame(dict(
        mode=np.arange(len(E_ref)), reference=E_ref.numpy(), sns=E_sns.numpy(), ratio=(E_sns / E_ref).numpy(),
        truth_ratio=(E_true / E_ref).numpy(), thermo_ratio=(E_thermo / E_ref).numpy(),
        se_log_ratio=spectrum_log_se(runs["sns"].states[:, -window:]).numpy())))
    levels = ctx.table("sns_levels", dict(level_prev=runs["sns"].logs["level_prev"].flatten().numpy(),
                                          level=runs["sns"].logs["level"].flatten().numpy()))
    rho = {name: pearson_t(r.states, truth[:, :r.states.shape[1]]) for name, r in runs.items()}
    return table, spec, levels, rho


def _kolmogorov(cfg: SelfRefiningSurrogateConfig, ctx: RunContext, betas, abar) -> pd.DataFrame:
    dev = ctx.device
    solver = NS2D(N=cfg.kolmogorov_solve_n, nu=cfg.kolmogorov_nu, drag=0.1, forcing_mode=4, dt=cfg.kolmogorov_dt,
                  device=dev)
    n_all = cfg.kolmogorov_train_trajectories + cfg.kolmogorov_test_trajectories
    # the test trajectories are integrated too (their truth is the reference of corr_time); the kit returns the
    # initial states of the trajectories past n_train, so one spare state is drawn and dropped
    w0 = solver.random_state(n_all + 1, ctx.generator("kf/init"), peak=4, rms=5.0).to(dev)
    data, _ = coarse_trajectories(solver, w0, n_all, cfg.kolmogorov_spinup, cfg.kolmogorov_train_horizon,
                                  cfg.kolmogorov_substeps, cfg.kolmogorov_store_n, progress=ctx.progress)
    std = float(data.std())
    data = data / std
    train, test = data[: cfg.kolmogorov_train_trajectories], data[cfg.kolmogorov_train_trajectories:]
    g = ctx.generator("kf/train")
    with seeded(ctx.seed("kf/init/emulator")):
        emulator = UNet(2, width=cfg.kolmogorov_width, levels=cfg.kolmogorov_levels, residual=True).to(dev)
    opt = torch.optim.AdamW(emulator.parameters(), lr=5e-4, weight_decay=0.05)
    train_emulator(emulator, train, steps=cfg.kolmogorov_emulator_steps, batch=cfg.kolmogorov_batch, max_unroll=4,
                   optimizer=opt, generator=g, device=dev, progress=ctx.progress, check=ctx.check_finite)
    with seeded(ctx.seed("kf/init/sns")):
        bb = unet_backbone(2, 2, 1, 1, cfg.kolmogorov_width, cfg.kolmogorov_levels)
        net = ConditionalDiffusion(bb, 2, cfg.levels, anchors=1, layout="channels").to(dev)
        ema = ConditionalDiffusion(unet_backbone(2, 2, 1, 1, cfg.kolmogorov_width, cfg.kolmogorov_levels), 2,
                                   cfg.levels, anchors=1, layout="channels").to(dev)
    ema.load_state_dict(net.state_dict())
    opt = torch.optim.AdamW(net.parameters(), lr=5e-5, weight_decay=0.05)
    train_sns(net, train, abar, steps=cfg.kolmogorov_steps, batch=cfg.kolmogorov_batch, optimizer=opt, generator=g,
              levels=cfg.levels, ce_weight=cfg.ce_weight, anchor=True, clip=1.0, ema=ema, device=dev,
              progress=ctx.progress, check=ctx.check_finite, description="train the U-Net SNS model")
    emulator.eval()
    ema.eval()
    gn = ctx.generator("kf/noise")
    emulate = noisy_emulator(emulator, cfg.kolmogorov_noise, gn)
    x0 = test[:, 0].double().to(dev)
    truth_ref = test.double()
    record = max(1, cfg.kolmogorov_horizon // 1000)
    rows = []
    E_true = ke_spectrum_2d(train[:, -max(1, train.shape[1] // 10):].double())
    for name, mode in (("plain", None), ("sns", "sns"), ("acdm", "acdm"), ("thermo", "thermo")):
        gn.manual_seed(ctx.seed("kf/noise/seed"))
        corr = None if mode is None else SelfRefine(ema, betas.to(dev), abar.to(dev), mode=mode,
                                                    variant=cfg.variant, generator=ctx.generator(f"kf/{name}"),
                                                    anchor=True).reset(x0)
        r = rollout(emulate, x0, cfg.kolmogorov_horizon, corrector=corr, record_every=record)
        T = min(r.states.shape[1], truth_ref.shape[1] // record)
        rho = pearson_t(r.states[:, :T].cpu(), truth_ref[:, ::record][:, :T].cpu())
        ct = corr_time(rho, 0.8, dt=record)[0].numpy()
        window = max(1, r.states.shape[1] // 10)
        sim = spectral_similarity(ke_spectrum_2d(r.states[:, -window:].cpu()), E_true.cpu())
        calls = r.logs["calls"].double().mean(0).numpy() if "calls" in r.logs else np.zeros(len(x0))
        off = off_attractor_time(r.states.cpu(), 1.0).numpy() * record
        rows += [dict(rollout=name, trajectory=i, corr_time_0_8=ct[i], spectral_similarity=sim,
                      calls_per_step=calls[i], off_attractor=off[i], horizon=cfg.kolmogorov_horizon)
                 for i in range(len(x0))]
    return ctx.table("kolmogorov", pd.DataFrame(rows))


@study(
    "self-refining-surrogate",
    title="SNS: one conditional diffusion model for short-time fidelity and long-time consistency",
    paper=PAPER,
    config=SelfRefiningSurrogateConfig,
    presets=PRESETS,
    family="surrogates",
    claims=claims,
)
def run(cfg: SelfRefiningSurrogateConfig, ctx: RunContext) -> None:
    betas, abar = noise_schedule(cfg.levels, "cosine")
    abar_1000 = noise_schedule(1000, "cosine")[1]
    clock = time.perf_counter()

    def lap(name: str) -> None:  # where the quick budget goes, as scalars (seconds)
        nonlocal clock
        now = time.perf_counter()
        ctx.scalar(f"{name}_s", now - clock)
        clock = now

    gauss = _gauss(cfg, ctx, abar_1000)
    lap("gauss")
    # tiny ops (64-point FFTs, batch-16 MLP calls in the rollouts) run faster on one thread than on two; the
    # batch-128 training and the ~100-pair one-step tests use every core (measured: 15.8 -> 10.4 ms per step)
    with torch_threads(1, ctx.device.type):
        ks, train, std, test0, truth = _data(cfg, ctx)
    lap("data")
    net = _train(cfg, ctx, train, std, abar)
    clock = time.perf_counter()
    _calibration(cfg, ctx, net, truth, std, abar)
    one = _one_step(cfg, ctx, net, ks, truth, std, betas, abar)
    lap("one_step")
    with torch_threads(1, ctx.device.type):
        table, spec, levels, rho = _rollouts(cfg, ctx, net, ks, train, std, test0, truth, betas, abar)
    clock = time.perf_counter()
    figure_tradeoff(ctx, gauss, levels, abar_1000)
    figure_corr(ctx, rho)
    figure_one_step(ctx, one)
    figure_spectrum(ctx, spec)
    lap("figures")
    if cfg.kolmogorov:
        _kolmogorov(cfg, ctx, betas, abar)
