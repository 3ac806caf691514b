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

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.core.cpu import torch_threads
from theorylab.core.rng import seeded
from theorylab.data.pde import NS2D, KSLeaky, ks22_trajectories
from theorylab.data.qg import QG2L
from theorylab.nn.conditional_diffusion import ConditionalDiffusion, mlp_backbone, unet_backbone
from theorylab.nn.unet import diffuse, noise_schedule
from theorylab.probes.level_classifier import classify_pair_levels
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
from theorylab.train.surrogate import surrogate_data
from theorylab.train.thermalizer import fit_unet_emulator

PAPER = "Liu, Zanna, Bruna, arXiv 2603.17750 (2026)"
GAUSS_LEVELS = (0, 10, 50, 100, 200, 400, 700, 999)


def _gauss(cfg: SelfRefiningSurrogateConfig, ctx: RunContext, abar: torch.Tensor) -> pd.DataFrame:
    """The card's AR(1) numbers on the cosine schedule with T = 1000 (``abar``), whatever ``noise_levels`` KS uses."""
    rng = ctx.rng("gauss")
    ab = abar.numpy()
    rows = []
    for delta, mc_levels in ((0.04, (50,)), (0.08, (0, 10, 50, 100, 200))):
        curves = ar1_curves(ab[list(GAUSS_LEVELS)], 0.95, 1.0, delta)
        mc = simulate_chains(
            ab[list(mc_levels)],
            0.95,
            1.0,
            delta,
            cfg.gauss_chains,
            cfg.gauss_steps,
            rng,
            average_last=cfg.gauss_steps // 2,
        )
        for i, c in enumerate(GAUSS_LEVELS):
            row = dict(delta=delta, level=c, **{k: float(v[i]) for k, v in curves.items()})
            if c in mc_levels:
                j = mc_levels.index(c)
                row.update(
                    mc_variance=mc["variance"][j],
                    mc_se=mc["se"][j],
                    mc_max_variance=mc["max_variance"][j],
                    mc_mse=mc["mse"][j],
                )
            rows.append(row)
    table = ctx.table("gauss", pd.DataFrame(rows))
    ctx.scalar("critical_alpha_bar", critical_alpha_bar(0.95, 0.08))
    ctx.scalar("critical_level", critical_level(ab, 0.95, 0.08))
    return table


def _data(cfg: SelfRefiningSurrogateConfig, ctx: RunContext):
    return ks22_trajectories(
        cfg.train_trajectories,
        cfg.train_horizon,
        cfg.test_trajectories,
        cfg.horizon,
        ctx.generator("data/train"),
        ctx.generator("data/test"),
    )


def _train(
    cfg: SelfRefiningSurrogateConfig, ctx: RunContext, train: torch.Tensor, std: float, abar: torch.Tensor
) -> ConditionalDiffusion:
    with seeded(ctx.seed("sns/init")):
        net = ConditionalDiffusion(mlp_backbone(train.shape[-1], 2, 1, cfg.width, cfg.blocks), 2, cfg.noise_levels)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, fused=True)  # fused: ~3x faster Adam step on CPU
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=cfg.steps)
    log = train_sns(
        net,
        (train / std).float(),
        abar,
        steps=cfg.steps,
        batch=cfg.batch,
        optimizer=opt,
        scheduler=sched,
        generator=ctx.generator("sns/train"),
        levels=cfg.noise_levels,
        low_levels=cfg.low_noise_levels,
        low_share=cfg.low_share,
        ce_weight=cfg.ce_weight,
        progress=ctx.progress,
        check=ctx.check_finite,
    )
    ctx.table("training", pd.DataFrame(log))
    ctx.scalar("parameters", sum(p.numel() for p in net.parameters()))
    return net.eval()


def _held_pairs(truth: torch.Tensor, std: float, n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    B, T = truth.shape[:2]
    b = torch.randint(0, B, (n,), generator=g)
    t = torch.randint(1, T, (n,), generator=g)
    return truth[b, t - 1] / std, truth[b, t] / std


def _calibration(cfg, ctx, net, truth, std, abar) -> pd.DataFrame:
    """Held-out pairs noised with the training mixture (independent levels per frame), classified again."""
    g = ctx.generator("calibration")
    prev, cur = _held_pairs(truth, std, cfg.calibration_pairs, g)
    pair = torch.stack([prev, cur], 1).float()
    s = torch.stack(
        [draw_levels(len(pair), cfg.noise_levels, cfg.low_noise_levels, cfg.low_share, g) for _ in range(2)], 1
    )
    read = classify_pair_levels(net, pair, abar, s, g)
    pred, clean = read["predicted"], read["clean_predicted"]
    return ctx.table(
        "calibration",
        dict(
            level_prev=s[:, 0].numpy(),
            level=s[:, 1].numpy(),
            predicted_prev=pred[:, 0].numpy(),
            predicted=pred[:, 1].numpy(),
            clean_prev=clean[:, 0].numpy(),
            clean=clean[:, 1].numpy(),
        ),
    )


def _one_step(cfg, ctx, net, ks, truth, std, betas, abar) -> pd.DataFrame:
    g = ctx.generator("one_step")
    prev, cur = _held_pairs(truth, std, cfg.pairs, g)
    rows = []
    groups = torch.arange(cfg.pairs) % len(cfg.refine_noise_levels)  # each level gets its own share of the pairs (CPU)
    for j, s_star in enumerate(cfg.refine_noise_levels):
        p, c = prev[groups == j], cur[groups == j]
        prop = diffuse(c, abar[torch.full((len(c),), s_star)], torch.randn(c.shape, generator=g, dtype=c.dtype))
        out = {"input": prop}
        calls = {}
        for mode in ("sns", "thermo"):
            out[mode], info = refine(net, p, prop, betas, abar, mode=mode, variant=cfg.variant, generator=g)
            calls[mode] = info["calls"].double().numpy()
        for i in range(len(c)):
            rows.append(
                dict(
                    s_star=s_star,
                    pair=i,
                    **{f"mse_{k}": float((v[i] - c[i]).pow(2).mean()) for k, v in out.items()},
                    calls_sns=calls["sns"][i],
                    calls_thermo=calls["thermo"][i],
                )
            )
    table = ctx.table("one_step", pd.DataFrame(rows))
    # exact-solver proposals: x_t = Φ(x_{t−1}) is the truth's next frame
    exact = ks.step(prev * std, 4) / std
    refined, info = refine(net, prev, exact, betas, abar, mode="sns", variant=cfg.variant, generator=g)
    change = (refined - exact).flatten(1).norm(dim=1) / exact.flatten(1).norm(dim=1)
    ctx.table(
        "no_op",
        dict(
            relative_change=change.numpy(),
            level=info["level"].numpy(),
            level_prev=info["level_prev"].numpy(),
            calls=info["calls"].numpy(),
        ),
    )
    return table


def _rollouts(cfg, ctx, net, ks, train, std, test0, truth, betas, abar):
    emulator = KSLeaky(ks, eta=cfg.leak)
    runs = {}
    plan = [
        ("plain", None, cfg.horizon),
        ("sns", "sns", cfg.horizon),
        ("acdm", "acdm", cfg.baseline_horizon),
        ("thermo", "thermo", cfg.baseline_horizon),
    ]
    for name, mode, horizon in ctx.progress(plan, "rollouts"):
        g = ctx.generator("emulator/noise")  # the same proposal noise for every rollout
        corr = (
            None
            if mode is None
            else SelfRefine(
                net, betas, abar, mode=mode, variant=cfg.variant, generator=ctx.generator(f"refine/{name}"), scale=std
            ).reset(test0)
        )
        step = lambda x, g=g: emulator(x, g)  # noqa: E731
        # each trajectory steps on as soon as its correction is done: the batched calls stay full (2-3x faster)
        with ctx.timed(f"{name}_rollout"), ctx.autocast(cfg.precision):
            runs[name] = (
                rollout(step, test0, horizon) if corr is None else rollout_pipelined(step, test0, horizon, corr)
            )
    rows = []
    for name, r in runs.items():
        T = r.states.shape[1]
        off = off_attractor_time(r.states, std).numpy()
        rho = pearson_t(r.states, truth[:, :T])
        ct = {f"corr_time_{c}": corr_time(rho, c)[0].numpy() for c in (0.8, 0.9, 0.95)}
        calls = r.logs["calls"].double().mean(0).numpy() if "calls" in r.logs else np.zeros(len(test0))
        lvl = r.logs["level_prev"].double().mean(0).numpy() if "level_prev" in r.logs else np.zeros(len(test0))
        for i in range(len(test0)):
            rows.append(
                dict(
                    rollout=name,
                    trajectory=i,
                    horizon=T - 1,
                    off_attractor=off[i],
                    calls_per_step=calls[i],
                    mean_level_prev=lvl[i],
                    **{k: v[i] for k, v in ct.items()},
                )
            )
    table = ctx.table("rollouts", pd.DataFrame(rows))
    window = cfg.spectrum_window
    E_ref = spectrum_1d(train)  # the invariant measure's spectrum from the training ensemble
    E_sns = spectrum_1d(runs["sns"].states[:, -window:])
    E_true = spectrum_1d(truth[:, -window:])
    E_thermo = spectrum_1d(runs["thermo"].states[:, -min(window, cfg.baseline_horizon) :])
    spec = ctx.table(
        "spectrum",
        pd.DataFrame(
            dict(
                mode=np.arange(len(E_ref)),
                reference=E_ref.numpy(),
                sns=E_sns.numpy(),
                ratio=(E_sns / E_ref).numpy(),
                truth_ratio=(E_true / E_ref).numpy(),
                thermo_ratio=(E_thermo / E_ref).numpy(),
                se_log_ratio=spectrum_log_se(runs["sns"].states[:, -window:]).numpy(),
            )
        ),
    )
    levels = ctx.table(
        "sns_levels",
        dict(
            level_prev=runs["sns"].logs["level_prev"].flatten().numpy(),
            level=runs["sns"].logs["level"].flatten().numpy(),
        ),
    )
    rho = {name: pearson_t(r.states, truth[:, : r.states.shape[1]]) for name, r in runs.items()}
    return table, spec, levels, rho


def _surrogate_2d(
    ctx: RunContext,
    tag: str,
    solver,
    w0: torch.Tensor,
    *,
    n_train: int,
    spinup: int,
    horizon: int,
    substeps: int,
    store_n: int,
    channels: int,
    per_channel_std: bool,
    width: int,
    unet_levels: int,
    emulator_steps: int,
    sns_steps: int,
    batch: int,
    clip: float,
    levels: int,
    ce_weight: float,
    abar: torch.Tensor,
    emulator_lr: float,
    sns_lr: float,
    weight_decay: float,
    ema_decay: float,
) -> dict:
    """The paper-scale pieces shared by Kolmogorov flow and the QG jet: truth trajectories stored at ``store_n``
    (every state of ``w0``: the first ``n_train`` for training, the rest as test truths; ``train.surrogate``),
    normalised by the training trajectories' std (per layer when ``per_channel_std``, the card's QG normalisation),
    a learned residual U-Net emulator (unroll 4) and a U-Net SNS model (anchor = the trajectory's first frame, AdamW
    at ``sns_lr``, gradients clipped at ``clip``, weights averaged with ``ema_decay``)."""
    dev = ctx.device
    data = surrogate_data(
        solver,
        w0,
        n_train=n_train,
        spinup=spinup,
        horizon=horizon,
        substeps=substeps,
        store_n=store_n,
        test_truth=True,  # the correlation times compare each rollout with its truth
        per_channel_std=per_channel_std,
        progress=ctx.progress,
        label={"kf": "Kolmogorov", "qg": "QG jet"}.get(tag, tag),
    )
    train = data.train
    g = ctx.generator(f"{tag}/train")
    emulator = fit_unet_emulator(
        train,
        width=width,
        levels=unet_levels,
        init_seed=ctx.seed(f"{tag}/init/emulator"),
        steps=emulator_steps,
        batch=batch,
        lr=emulator_lr,
        weight_decay=weight_decay,
        generator=g,
        device=dev,
        progress=ctx.progress,
        check=ctx.check_finite,
    )
    with seeded(ctx.seed(f"{tag}/init/sns")):
        net = ConditionalDiffusion(
            unet_backbone(2, 2, channels, 1, width, unet_levels), 2, levels, anchors=1, layout="channels"
        ).to(dev)
        ema = ConditionalDiffusion(
            unet_backbone(2, 2, channels, 1, width, unet_levels), 2, levels, anchors=1, layout="channels"
        ).to(dev)
    ema.load_state_dict(net.state_dict())
    opt = torch.optim.AdamW(net.parameters(), lr=sns_lr, weight_decay=weight_decay)
    train_sns(
        net,
        train,
        abar,
        steps=sns_steps,
        batch=batch,
        optimizer=opt,
        generator=g,
        levels=levels,
        ce_weight=ce_weight,
        anchor=True,
        clip=clip,
        ema=ema,
        ema_decay=ema_decay,
        device=dev,
        progress=ctx.progress,
        check=ctx.check_finite,
        description=f"train the U-Net SNS model ({tag})",
    )
    return dict(train=train, test=data.test, x0=data.test_init, emulator=emulator.eval(), sns=ema.eval())


def _corrected_rollouts(
    cfg, ctx: RunContext, tag: str, parts: dict, modes: tuple[str, ...], horizon: int, noise: float, betas, abar
) -> dict:
    """Rollouts of the learned emulator from the test trajectories' first frames, plain and corrected by the SNS
    model in each mode (same emulator noise; pipelined; at ``cfg.precision``), recording about 1000 states."""
    dev = ctx.device
    gn = ctx.generator(f"{tag}/noise")
    emulate = noisy_emulator(parts["emulator"], noise, gn)
    x0 = parts["x0"].to(dev)
    record = max(1, horizon // 1000)
    runs = {}
    for name in ("plain",) + modes:
        gn.manual_seed(ctx.seed(f"{tag}/noise/seed"))
        with ctx.autocast(cfg.precision):
            if name == "plain":
                runs[name] = rollout(emulate, x0, horizon, record_every=record)
                continue
            corr = SelfRefine(
                parts["sns"],
                betas.to(dev),
                abar.to(dev),
                mode=name,
                variant=cfg.variant,
                generator=ctx.generator(f"{tag}/{name}"),
                anchor=True,
            ).reset(x0)
            runs[name] = rollout_pipelined(emulate, x0, horizon, corr, record_every=record)
    return dict(runs=runs, record=record, x0=x0)


def _kolmogorov(cfg: SelfRefiningSurrogateConfig, ctx: RunContext, betas, abar) -> pd.DataFrame:
    dev = ctx.device
    solver = NS2D(
        N=cfg.kolmogorov_solve_grid, nu=cfg.kolmogorov_nu, drag=0.1, forcing_mode=4, dt=cfg.kolmogorov_dt, device=dev
    )
    n_all = cfg.kolmogorov_train_trajectories + cfg.kolmogorov_test_trajectories
    w0 = solver.random_state(n_all, ctx.generator("kf/init"), peak=4, rms=5.0).to(dev)
    parts = _surrogate_2d(
        ctx,
        "kf",
        solver,
        w0,
        n_train=cfg.kolmogorov_train_trajectories,
        spinup=cfg.kolmogorov_spinup,
        horizon=cfg.kolmogorov_train_horizon,
        substeps=cfg.kolmogorov_substeps,
        store_n=cfg.kolmogorov_store_grid,
        channels=1,
        per_channel_std=False,
        width=cfg.kolmogorov_width,
        unet_levels=cfg.kolmogorov_n_downsamplings,
        emulator_steps=cfg.kolmogorov_emulator_steps,
        sns_steps=cfg.kolmogorov_steps,
        batch=cfg.kolmogorov_batch,
        clip=cfg.kolmogorov_clip,
        levels=cfg.noise_levels,
        ce_weight=cfg.ce_weight,
        abar=abar,
        emulator_lr=cfg.surrogate_emulator_lr,
        sns_lr=cfg.surrogate_sns_lr,
        weight_decay=cfg.surrogate_weight_decay,
        ema_decay=cfg.surrogate_ema_decay,
    )
    out = _corrected_rollouts(
        cfg, ctx, "kf", parts, ("sns", "acdm", "thermo"), cfg.kolmogorov_horizon, cfg.kolmogorov_noise, betas, abar
    )
    record, x0 = out["record"], out["x0"]
    truth_ref = parts["test"].double()
    train = parts["train"]
    E_true = ke_spectrum_2d(train[:, -max(1, train.shape[1] // 10) :].double())
    rows = []
    for name, r in out["runs"].items():
        T = min(r.states.shape[1], truth_ref.shape[1] // record)
        rho = pearson_t(r.states[:, :T].cpu(), truth_ref[:, ::record][:, :T].cpu())
        ct, censored = (x.numpy() for x in corr_time(rho, 0.8, dt=record))
        window = max(1, r.states.shape[1] // 10)
        sim = spectral_similarity(ke_spectrum_2d(r.states[:, -window:].cpu()), E_true.cpu())
        calls = r.logs["calls"].double().mean(0).numpy() if "calls" in r.logs else np.zeros(len(x0))
        off = off_attractor_time(r.states.cpu(), 1.0).numpy() * record
        # corr_time is censored (a lower bound) where ρ stayed >= 0.8 over the window the truth covers: the judge
        # compares medians only as far as the censored times allow
        rows += [
            dict(
                rollout=name,
                trajectory=i,
                corr_time_0_8=ct[i],
                corr_censored=bool(censored[i]),
                corr_horizon=(T - 1) * record,
                spectral_similarity=sim,
                calls_per_step=calls[i],
                off_attractor=off[i],
                horizon=cfg.kolmogorov_horizon,
            )
            for i in range(len(x0))
        ]
    return ctx.table("kolmogorov", pd.DataFrame(rows))


def _qg(cfg: SelfRefiningSurrogateConfig, ctx: RunContext, betas, abar) -> pd.DataFrame:
    """The card's QG jet (claim 10): the two-layer QG model (``data.qg.QG2L`` "jet": β 1e-11, r_ek 7e-8, δ 0.1,
    r_d 15 km, U_1 0.025, dt 3600 s) at ``qg_solve_grid``, stored at 64² every 10 solver steps (Δt = 36,000 s), each
    layer normalised by its own std; a U-Net SNS model (6 -> 4 channels, hidden 128, clip 0.5) corrects a learned
    residual U-Net emulator over long rollouts, against the same network's acdm mode."""
    solver = QG2L.preset("jet", N=cfg.qg_solve_grid, dt=cfg.qg_dt, device=ctx.device)
    n_all = cfg.qg_train_trajectories + cfg.qg_test_trajectories
    w0 = solver.random_state(n_all, ctx.generator("qg/init"), velocity=1e-3).to(ctx.device)
    parts = _surrogate_2d(
        ctx,
        "qg",
        solver,
        w0,
        n_train=cfg.qg_train_trajectories,
        spinup=cfg.qg_spinup,
        horizon=cfg.qg_train_horizon,
        substeps=cfg.qg_substeps,
        store_n=cfg.qg_store_grid,
        channels=2,
        per_channel_std=True,
        width=cfg.qg_width,
        unet_levels=cfg.kolmogorov_n_downsamplings,
        emulator_steps=cfg.qg_emulator_steps,
        sns_steps=cfg.qg_steps,
        batch=cfg.kolmogorov_batch,
        clip=cfg.qg_clip,
        levels=cfg.noise_levels,
        ce_weight=cfg.ce_weight,
        abar=abar,
        emulator_lr=cfg.surrogate_emulator_lr,
        sns_lr=cfg.surrogate_sns_lr,
        weight_decay=cfg.surrogate_weight_decay,
        ema_decay=cfg.surrogate_ema_decay,
    )
    out = _corrected_rollouts(cfg, ctx, "qg", parts, ("sns", "acdm"), cfg.qg_horizon, cfg.kolmogorov_noise, betas, abar)
    rows = []
    for name, r in out["runs"].items():
        off = off_attractor_time(r.states.cpu(), 1.0).numpy() * out["record"]
        calls = r.logs["calls"].double().mean(0).numpy() if "calls" in r.logs else np.zeros(len(out["x0"]))
        rows += [
            dict(
                rollout=name,
                trajectory=i,
                blowup_step=int(r.blowup_step[i]),
                off_attractor=off[i],
                completed=bool(r.blowup_step[i] < 0 and np.isinf(off[i])),
                calls_per_step=calls[i],
                horizon=cfg.qg_horizon,
            )
            for i in range(len(out["x0"]))
        ]
    return ctx.table("qg", pd.DataFrame(rows))


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
    betas, abar = noise_schedule(cfg.noise_levels, "cosine")
    abar_1000 = noise_schedule(1000, "cosine")[1]
    # where the quick budget goes: every phase's wall time is a scalar `<phase>_s`
    with ctx.timed("gauss"):
        gauss = _gauss(cfg, ctx, abar_1000)
    # tiny ops (64-point FFTs, batch-16 MLP calls in the rollouts) run faster on one thread than on two; the
    # batch-128 training and the ~100-pair one-step tests use every core (measured: 15.8 -> 10.4 ms per step)
    with ctx.timed("data"), torch_threads(1, ctx.device.type):
        ks, train, std, test0, truth = _data(cfg, ctx)
    with ctx.timed("train"):
        net = _train(cfg, ctx, train, std, abar)
    with ctx.timed("one_step"):
        _calibration(cfg, ctx, net, truth, std, abar)
        one = _one_step(cfg, ctx, net, ks, truth, std, betas, abar)
    with torch_threads(1, ctx.device.type):
        table, spec, levels, rho = _rollouts(cfg, ctx, net, ks, train, std, test0, truth, betas, abar)
    with ctx.timed("figures"):
        figure_tradeoff(ctx, gauss, levels, abar_1000)
        figure_corr(ctx, rho)
        figure_one_step(ctx, one)
        figure_spectrum(ctx, spec)
    if cfg.kolmogorov:
        _kolmogorov(cfg, ctx, betas, abar)
    if cfg.qg:
        _qg(cfg, ctx, betas, abar)
