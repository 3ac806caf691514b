"""multiscale-closure, paper preset: QG eddy (claims 7-8) and Kolmogorov flow (claims 8-9), 2-D GZ-FCNN closures.

QG: a ``QG2L`` truth at 256² coarsened to 64 with levels 16/32/64, both operators; direct and multiscale closures
at matched parameters for each GZ-FCNN size and seed (offline relative MSE on held-out trajectories), then 10-year
coupled runs of the small nets from 16 initial conditions (time to blow-up, KE-spectrum error over years 5-10).
Kolmogorov flow: an ``NS2D`` truth (2048²; 1024² a flagged fallback) coarsened to 64 with levels 32/64, small nets
trained with and without noise injection, coupled runs from t = 40 to 70.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext
from theorylab.core.rng import seeded
from theorylab.data.pde import NS2D, SpectralCoarsen
from theorylab.data.qg import QG2L
from theorylab.nn.closure import GZFCNN, DirectClosure, MultiscaleClosure, matched_width, parameter_count
from theorylab.probes.closure_checks import offline_relative_mse
from theorylab.probes.rollout_metrics import ke_spectrum_2d
from theorylab.train.closure import (
    CoupledSolver,
    NetClosure,
    closure_trajectories,
    coupled_rollout,
    split_closure_data,
    train_direct,
    train_multiscale,
)


def _operators(names, length: float) -> dict:
    return {
        op: (
            SpectralCoarsen(n_c, op, dims=2, length=length),
            lambda x, n, op=op: SpectralCoarsen(n, op, dims=2, length=length)(x).to(x.dtype),
        )
        for op, n_c in names
    }


def _pair(ctx: RunContext, size: str, levels, channels: int, downscale_input: str, down, tag: str):
    """A multiscale closure of ``size`` GZ-FCNNs and a direct one widened to the same budget (±10%)."""
    with seeded(ctx.seed(f"{tag}/multiscale/init")):
        nets = [GZFCNN.paper(size, channels * (1 + k), channels) for k in range(len(levels))]
        ms = MultiscaleClosure(levels, nets, dims=2, downscale_input=downscale_input, downsample=down)
    width = matched_width(
        lambda w: GZFCNN.count(2, channels, GZFCNN.paper_layers(size, channels, w)), parameter_count(ms)
    )
    with seeded(ctx.seed(f"{tag}/direct/init")):
        direct = DirectClosure(GZFCNN.paper(size, channels, channels, width), levels[-1])
    return direct.to(ctx.device), ms.to(ctx.device)


def _fit(
    ctx: RunContext,
    direct,
    ms,
    split,
    steps: int,
    batch: int,
    lr: float,
    schedule: str,
    tag: str,
    noise: float = 0.0,
    p_clean: float = 1.0,
    mode: str = "sequential",
) -> None:
    kw = dict(
        batch=batch,
        lr=lr,
        schedule=schedule,
        noise=noise,
        p_clean=p_clean,
        check=ctx.check_finite,
        progress=ctx.progress,
    )
    train_direct(direct, split.x_train, split.y_train[-1], steps=steps, generator=ctx.generator(f"{tag}/direct"), **kw)
    train_multiscale(
        ms,
        split.x_train,
        split.y_train,
        steps=[steps] * len(ms.levels),
        mode=mode,
        generator=ctx.generator(f"{tag}/multiscale"),
        **kw,
    )
    direct.eval()
    ms.eval()


def _offline_rows(system: str, op: str, size: str, seed: int, models: dict, split, levels) -> list[dict]:
    rows = []
    for name, model in models.items():
        targets = split.y_test[-1:] if name == "direct" else split.y_test
        for k, err in enumerate(offline_relative_mse(model, split.x_test, targets, chunk=256)):
            rows.append(
                dict(
                    system=system,
                    operator=op,
                    model=name,
                    size=size,
                    seed=seed,
                    level=k,
                    n=model.levels[k],
                    final=model.levels[k] == levels[-1],
                    rel_mse=err,
                    params=parameter_count(model),
                )
            )
    return rows


def _online(
    coarse, models: dict, split, truth: torch.Tensor, steps: int, record_every: int, spectrum, time_unit: float
) -> list[dict]:
    """Coupled runs from ``truth[:, 0]`` with no closure and each model; blow-up times and the spectrum error
    (mean |log10 E − log10 E_truth| over shells 1..N_c/3 − 1, finite runs, second half) against ``truth``."""
    rows = []
    half = truth.shape[1] // 2
    shells = slice(1, int(np.floor(truth.shape[-1] / 3 - 1)) + 1)  # 1 .. N_c/3 − 1, as the KS part
    E_true = spectrum(truth[:, half:])[shells]
    for name, model in [("none", None)] + list(models.items()):
        closure = None if model is None else NetClosure(model, split.in_scale, split.out_scale)
        run, blow = coupled_rollout(CoupledSolver(coarse, closure), truth[:, 0], steps, record_every=record_every)
        finite = torch.isfinite(run.states.flatten(1)).all(1)
        times = torch.where(blow >= 0, blow.double(), float(steps)) * time_unit
        err = (
            float((spectrum(run.states[finite, half:])[shells].log10() - E_true.log10()).abs().mean())
            if bool(finite.any())
            else float("inf")
        )
        rows.append(
            dict(
                model=name,
                runs=len(truth),
                blown_up=float((blow >= 0).double().mean()),
                median_blowup_time=float(times.median()),
                spectrum_error=err,
            )
        )
    return rows


def qg_part(cfg, ctx: RunContext) -> None:
    dev, levels = ctx.device, list(cfg.qg_scales)
    fine = QG2L.preset(cfg.qg_preset, N=cfg.qg_truth_grid, dt=cfg.qg_dt, device=dev)
    coarse = QG2L.preset(cfg.qg_preset, N=levels[-1], dt=cfg.qg_dt, device=dev)
    ops = _operators([(op, levels[-1]) for op in cfg.qg_operators], fine.L)
    n_all = cfg.qg_train_trajectories + cfg.qg_online_trajectories
    x0 = fine.spun_up(n_all, ctx.generator("qg/init"), time=cfg.qg_spinup)
    train = closure_trajectories(
        fine,
        coarse,
        ops,
        levels,
        x0[: cfg.qg_train_trajectories],
        cfg.qg_train_records,
        cfg.qg_record_every,
        progress=ctx.progress,
    )
    online_records = int(round(cfg.qg_online_time / (cfg.qg_dt * cfg.qg_record_every))) + 1
    test = closure_trajectories(
        fine,
        coarse,
        ops,
        levels,
        x0[cfg.qg_train_trajectories :],
        online_records,
        cfg.qg_record_every,
        progress=ctx.progress,
    )

    def spectrum(q: torch.Tensor) -> torch.Tensor:  # depth-weighted total KE spectrum, mean over runs and records
        E = coarse.ke_spectrum(q.reshape(-1, *q.shape[-3:]))[1]
        return ((coarse.H1 * E[:, 0] + coarse.H2 * E[:, 1]) / coarse.H).mean(0)

    offline, online = [], []
    for op in cfg.qg_operators:
        split = split_closure_data(*train[op], test=test[op], device=dev)
        for size in cfg.qg_sizes:
            for seed in range(cfg.qg_seeds):
                tag = f"qg/{op}/{size}/{seed}"
                direct, ms = _pair(ctx, size, levels, 2, cfg.downscale_input, ops[op][1], tag)
                _fit(
                    ctx,
                    direct,
                    ms,
                    split,
                    cfg.paper_steps,
                    cfg.paper_batch,
                    cfg.paper_lr,
                    cfg.paper_schedule,
                    tag,
                    mode=cfg.training,
                )
                models = {"direct": direct, "multiscale": ms}
                offline += _offline_rows("qg", op, size, seed, models, split, levels)
                if seed == 0 and size == ("small" if "small" in cfg.qg_sizes else cfg.qg_sizes[0]):
                    truth = test[op][0].to(dev)
                    rows = _online(
                        coarse,
                        models,
                        split,
                        truth,
                        (online_records - 1) * cfg.qg_record_every,
                        cfg.qg_record_every,
                        spectrum,
                        cfg.qg_dt,
                    )
                    online += [dict(system="qg", operator=op, size=size, noise=False, **r) for r in rows]
    ctx.table("offline", pd.DataFrame(offline))
    ctx.table("online_2d", pd.DataFrame(online))


def _kf_state(ns: NS2D, batch: int, generator: torch.Generator, peak: int = 4, max_velocity: float = 7.0):
    """Random vorticity peaked at |k| = ``peak`` scaled so that max |u| = ``max_velocity`` per state."""
    w = ns.random_state(batch, generator, peak=peak, rms=1.0)
    u_hat, v_hat = ns.velocity_hat(torch.fft.rfft2(w))
    s = (ns.N, ns.N)
    speed = (torch.fft.irfft2(u_hat, s=s) ** 2 + torch.fft.irfft2(v_hat, s=s) ** 2).sqrt()
    return w * (max_velocity / speed.flatten(1).max(1).values).view(-1, 1, 1, 1)


def kolmogorov_part(cfg, ctx: RunContext) -> None:
    dev, levels = ctx.device, list(cfg.kolmogorov_scales)
    kw = dict(nu=cfg.kolmogorov_nu, drag=cfg.kolmogorov_drag, forcing_mode=4, device=dev)
    fine = NS2D(N=cfg.kolmogorov_truth_grid, dt=cfg.kolmogorov_dt, **kw)
    coarse_data = NS2D(N=levels[-1], dt=cfg.kolmogorov_dt, **kw)  # the closure target's coarse right-hand side
    coarse = NS2D(N=levels[-1], dt=cfg.kolmogorov_coarse_dt, **kw)  # the online solver
    ops = _operators([("sharp", levels[-1])], 2 * np.pi)
    n_train, n_test = cfg.kolmogorov_train_trajectories, cfg.kolmogorov_online_trajectories
    w = _kf_state(fine, n_train + n_test, ctx.generator("kf/init")).to(dev)
    w = fine.step(w, int(round(cfg.kolmogorov_warmup / cfg.kolmogorov_dt)))
    every = int(round(cfg.kolmogorov_snapshot_every / cfg.kolmogorov_dt))
    records = int(round((cfg.kolmogorov_end - cfg.kolmogorov_warmup) / cfg.kolmogorov_snapshot_every)) + 1
    train = closure_trajectories(fine, coarse_data, ops, levels, w[:n_train], records, every, progress=ctx.progress)[
        "sharp"
    ]
    test = closure_trajectories(fine, coarse_data, ops, levels, w[n_train:], records, every, progress=ctx.progress)[
        "sharp"
    ]
    split = split_closure_data(*train, test=test, device=dev)
    thin = max(1, (records - 1) // 200)  # ~200 online records
    truth = test[0][:, ::thin].to(dev)
    per_record = int(round(cfg.kolmogorov_snapshot_every / cfg.kolmogorov_coarse_dt)) * thin
    offline, online = [], []
    for noise in (False, True):
        tag = f"kf/{'noise' if noise else 'clean'}"
        direct, ms = _pair(ctx, cfg.kolmogorov_size, levels, 1, cfg.downscale_input, ops["sharp"][1], tag)
        _fit(
            ctx,
            direct,
            ms,
            split,
            cfg.paper_steps,
            cfg.paper_batch,
            cfg.paper_lr,
            cfg.paper_schedule,
            tag,
            noise=cfg.kolmogorov_noise if noise else 0.0,
            p_clean=cfg.kolmogorov_p_clean if noise else 1.0,
            mode=cfg.training,
        )
        models = {"direct": direct, "multiscale": ms}
        offline += [
            dict(r, noise=noise) for r in _offline_rows("kf", "sharp", cfg.kolmogorov_size, 0, models, split, levels)
        ]
        rows = _online(
            coarse,
            models,
            split,
            truth,
            (truth.shape[1] - 1) * per_record,
            per_record,
            lambda x: ke_spectrum_2d(x.cpu()),
            cfg.kolmogorov_coarse_dt,
        )
        online += [dict(system="kf", operator="sharp", size=cfg.kolmogorov_size, noise=noise, **r) for r in rows]
    ctx.table("offline", pd.DataFrame(offline))
    ctx.table("online_2d", pd.DataFrame(online))
    ctx.scalar("kolmogorov_truth_fallback", cfg.kolmogorov_truth_grid < 2048)
