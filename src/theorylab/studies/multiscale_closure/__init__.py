"""multiscale-closure: fine-to-coarse and coarse-to-fine networks for subgrid closure.

Paper: K. Otness, L. Zanna, J. Bruna, "Data-driven multiscale modeling for correcting dynamical systems",
arXiv 2303.17496 (Mach. Learn.: Sci. Technol., 2025). A coarse solver misses the effect of the unresolved scales;
a network learns that missing tendency, the closure S = C(F_fine(u)) − F_coarse(C u), from the resolved state. The
multiscale closure first predicts S at a coarser grid n_0 (downscale), then builds it up level by level to N_c
(buildup, residual on the level below), for about the parameters of one direct net.

Quick preset: Kuramoto–Sivashinsky (ks32pi truth, 256 -> 64, one extra level at 32): the exact closure algebra and
the Germano identity of the chain of scales (ours, `probes.closure_checks`), the closure's size, offline skill of
direct and multiscale 1-D GZ-FCNNs at matched budgets, and online runs of the closure coupled to the coarse ETDRK4
solver (`train.closure.CoupledSolver`). The paper preset adds QG eddy and Kolmogorov flow (`paper.py`).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.core.rng import seeded
from theorylab.data.pde import KS1D, SpectralCoarsen, closure_target, tendency
from theorylab.nn.closure import GZFCNN, DirectClosure, MultiscaleClosure, parameter_count
from theorylab.probes.closure_checks import (
    closure_algebra,
    full_band,
    germano_errors,
    linear_only,
    offline_relative_mse,
)
from theorylab.probes.rollout_metrics import corr_time, log_spectral_distance, pearson_t, spectrum_1d
from theorylab.studies.multiscale_closure.config import PRESETS, MultiscaleClosureConfig
from theorylab.studies.multiscale_closure.figures import (
    figure_germano,
    figure_offline_by_size,
    figure_spectrum,
    figure_tracking,
)
from theorylab.studies.multiscale_closure.judges import claims
from theorylab.studies.multiscale_closure.paper import kolmogorov_part, qg_part
from theorylab.train.closure import (
    CoupledSolver,
    NetClosure,
    closure_trajectories,
    coupled_rollout,
    split_closure_data,
    train_direct,
    train_multiscale,
)

PAPER = "Otness, Zanna, Bruna, arXiv 2303.17496 (2023); Mach. Learn.: Sci. Technol. (2025)"


def _operators(cfg: MultiscaleClosureConfig):
    L, op = cfg.domain_length, cfg.operator
    C = SpectralCoarsen(cfg.scales[-1], op, length=L)
    return C, (lambda x, n: SpectralCoarsen(n, op, length=L)(x).to(x.dtype))


def _data(cfg: MultiscaleClosureConfig, ctx: RunContext):
    fine = KS1D(L=cfg.domain_length, N=cfg.truth_grid, dt=cfg.dt)  # the kit's ks32pi (no dealiasing at N = 256)
    systems = {n: KS1D(L=cfg.domain_length, N=n, dt=cfg.coarse_dt, dealias=True) for n in cfg.scales}
    C, down = _operators(cfg)
    x0 = fine.spun_up(cfg.trajectories, ctx.generator("ks/init"), time=cfg.spinup)
    keep = -(-cfg.germano_snapshots // cfg.trajectories)  # records whose fine states the Germano check reuses
    snaps: list[torch.Tensor] = []
    states, targets = closure_trajectories(
        fine,
        systems[cfg.scales[-1]],
        {cfg.operator: (C, down)},
        cfg.scales,
        x0,
        cfg.snapshots,
        round(cfg.snapshot_every / cfg.dt),
        on_record=lambda t, x: snaps.append(x) if t < keep else None,
    )[cfg.operator]
    return fine, systems, states, targets, torch.cat(snaps)[: cfg.germano_snapshots]


def _exact(cfg: MultiscaleClosureConfig, ctx: RunContext, fine, systems, snaps, states, targets) -> None:
    n0, nc, L = cfg.scales[0], cfg.scales[-1], cfg.domain_length
    coarse, small = systems[nc], systems[n0]
    C = SpectralCoarsen(nc, cfg.operator, length=L)
    algebra = closure_algebra(fine, coarse, C, snaps)
    ctx.table("algebra", pd.DataFrame([dict(check=k, value=v, operator=cfg.operator) for k, v in algebra.items()]))
    sharp = [SpectralCoarsen(n, "sharp", length=L) for n in (nc, n0)]
    variants = {
        "sharp (dealiased band)": (sharp[0], sharp[1], sharp[1]),
        "full band (consistent)": (full_band(nc), full_band(n0), full_band(n0)),
        "mismatched band (control)": (sharp[0], sharp[1], full_band(n0)),
    }
    rows = [
        dict(variant=name, snapshot=i, error=float(e))
        for name, (c, d, c0) in variants.items()
        for i, e in enumerate(germano_errors(fine, coarse, small, c, d, c0, snaps))
    ]
    ctx.table("germano", pd.DataFrame(rows))
    figure_germano(ctx, pd.DataFrame(rows))
    # the closure's size against the coarse model's own nonlinear tendency, for the run's operator (all data)
    # and for full-band truncation (the Germano snapshots)
    ub = states.reshape(-1, 1, nc)
    nl = torch.fft.irfft(coarse.nonlinear(torch.fft.rfft(ub, dim=-1)), n=nc, dim=-1)
    S_full = closure_target(fine, coarse, full_band(nc), snaps)
    nl_full = tendency(coarse, full_band(nc)(snaps)) - tendency(linear_only(coarse), full_band(nc)(snaps))
    ctx.table(
        "closure_size",
        pd.DataFrame(
            [
                dict(operator=cfg.operator, samples=len(ub), ratio=float(targets[-1].std() / nl.std())),
                dict(operator="full band", samples=len(snaps), ratio=float(S_full.std() / nl_full.std())),
            ]
        ),
    )


def _train(cfg: MultiscaleClosureConfig, ctx: RunContext, split) -> dict:
    _, down = _operators(cfg)
    with seeded(ctx.seed("direct/init")):
        direct = DirectClosure(GZFCNN.quick(1, 1, cfg.direct_width, cfg.n_layers, cfg.kernel), cfg.scales[-1])
    with seeded(ctx.seed("multiscale/init")):
        nets = [GZFCNN.quick(1 + k, 1, cfg.multiscale_width, cfg.n_layers, cfg.kernel) for k in range(len(cfg.scales))]
        ms = MultiscaleClosure(cfg.scales, nets, dims=1, downscale_input=cfg.downscale_input, downsample=down)
    start = time.perf_counter()
    log = train_direct(
        direct,
        split.x_train,
        split.y_train[-1],
        steps=cfg.direct_steps,
        batch=cfg.batch,
        lr=cfg.lr,
        generator=ctx.generator("direct/train"),
        check=ctx.check_finite,
        progress=ctx.progress,
    )
    ctx.scalar("direct_train_s", time.perf_counter() - start)
    start = time.perf_counter()
    log += train_multiscale(
        ms,
        split.x_train,
        split.y_train,
        steps=[cfg.multiscale_steps] * len(cfg.scales),
        batch=cfg.batch,
        lr=cfg.lr,
        generator=ctx.generator("multiscale/train"),
        mode=cfg.training,
        check=ctx.check_finite,
        progress=ctx.progress,
    )
    ctx.scalar("multiscale_train_s", time.perf_counter() - start)
    ctx.table("training", pd.DataFrame(log))
    models = {"direct": direct.eval(), "multiscale": ms.eval()}
    rows = []
    for name, model in models.items():
        targets = split.y_test[-1:] if name == "direct" else split.y_test
        for k, err in enumerate(offline_relative_mse(model, split.x_test, targets)):
            n = model.levels[k]
            rows.append(
                dict(
                    system="ks",
                    operator=cfg.operator,
                    model=name,
                    size="quick",
                    seed=0,
                    level=k,
                    n=n,
                    final=n == cfg.scales[-1],
                    rel_mse=err,
                    params=parameter_count(model),
                )
            )
    ctx.table("offline", pd.DataFrame(rows))
    return models


def _online(
    cfg: MultiscaleClosureConfig, ctx: RunContext, coarse: KS1D, states: torch.Tensor, n_train: int, models: dict, split
) -> None:
    truth = states[:, n_train:]  # [B, T, 1, N_c]: the filtered truth on the test window
    every = round(cfg.snapshot_every / cfg.coarse_dt)
    horizon = (truth.shape[1] - 1) * every
    m_max = int(np.floor(cfg.scales[-1] / 3 - 1))  # modes 1 .. N_c/3 − 1 (card): 1 .. 20 at N_c = 64
    half = truth.shape[1] // 2
    runs, rows, summary = {}, [], []
    for name in ctx.progress(["none", "direct", "multiscale"], "online runs"):
        closure = None if name == "none" else NetClosure(models[name], split.in_scale, split.out_scale)
        start = time.perf_counter()
        run, blow = coupled_rollout(CoupledSolver(coarse, closure), truth[:, 0], horizon, record_every=every)
        ctx.scalar(f"online_{name}_s", time.perf_counter() - start)
        runs[name] = run.states
        rho = pearson_t(run.states, truth)
        ct, censored = corr_time(rho, cfg.corr_threshold, dt=cfg.snapshot_every)
        finite = torch.isfinite(run.states.flatten(1)).all(1)
        rows += [
            dict(
                model=name,
                trajectory=i,
                finite=bool(finite[i]),
                blowup_step=int(blow[i]),
                corr_time=float(ct[i]),
                censored=bool(censored[i]),
            )
            for i in range(len(truth))
        ]
        E_t, E_p = spectrum_1d(truth[:, half:]), spectrum_1d(run.states[:, half:])
        summary.append(
            dict(
                model=name,
                lsd=log_spectral_distance(E_p[: m_max + 1], E_t[: m_max + 1]),
                modes=m_max,
                median_corr_time=float(ct.median()),
                finite=float(finite.double().mean()),
                horizon=horizon * cfg.coarse_dt,
            )
        )
        ctx.table(
            "tracking",
            pd.DataFrame(
                dict(
                    model=name,
                    time=np.arange(rho.shape[1]) * cfg.snapshot_every,
                    rho_median=rho.nanmedian(0).values.numpy(),
                    rho_q25=rho.nanquantile(0.25, 0).numpy(),
                    rho_q75=rho.nanquantile(0.75, 0).numpy(),
                )
            ),
        )
    ctx.table("online", pd.DataFrame(rows))
    ctx.table("online_summary", pd.DataFrame(summary))
    spec = []
    for name, traj in [("truth", truth)] + list(runs.items()):
        xh = torch.fft.rfft(traj[:, half:].double(), dim=-1) / traj.shape[-1]
        per = xh.abs().pow(2).flatten(1, -2).mean(1)  # [B, modes]: spectrum_1d per trajectory
        pooled = spectrum_1d(traj[:, half:])
        spec += [
            dict(
                model=name,
                mode=m,
                E=float(pooled[m]),
                q25=float(per[:, m].nanquantile(0.25)),
                q75=float(per[:, m].nanquantile(0.75)),
            )
            for m in range(1, m_max + 1)
        ]
    spec = ctx.table("spectrum", pd.DataFrame(spec))
    figure_spectrum(ctx, spec)
    figure_tracking(ctx, ctx.tables["tracking"])


@study(
    "multiscale-closure",
    title="Multiscale closures: fine-to-coarse then coarse-to-fine networks for the subgrid tendency",
    paper=PAPER,
    config=MultiscaleClosureConfig,
    presets=PRESETS,
    family="surrogates",
    claims=claims,
    # Small FFTs and convolutions (24-64 fields of 64 points): one intra-op thread. With two on a loaded 2-core
    # box a training step was measured ~10x slower (the PDE kit's solver loops: ~90x).
    cpu_threads=1,
)
def run(cfg: MultiscaleClosureConfig, ctx: RunContext) -> None:
    start = time.perf_counter()
    fine, systems, states, targets, snaps = _data(cfg, ctx)
    ctx.scalar("data_s", time.perf_counter() - start)
    _exact(cfg, ctx, fine, systems, snaps, states, targets)
    n_train = int(cfg.train_fraction * cfg.snapshots)
    split = split_closure_data(states, targets, n_train)
    models = _train(cfg, ctx, split)
    _online(cfg, ctx, systems[cfg.scales[-1]], states, n_train, models, split)
    if cfg.qg:
        qg_part(cfg, ctx)
        figure_offline_by_size(ctx, ctx.tables["offline"])
    if cfg.kolmogorov:
        kolmogorov_part(cfg, ctx)
