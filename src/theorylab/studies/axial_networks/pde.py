"""axial-networks: the PDE claims (9-11), next-step forecasting on the kit's equations.

Claims 9-10 (paper): an axial transformer (:class:`~theorylab.nn.axial.XViT`) against its full-attention
counterpart (:class:`~theorylab.nn.field_vit.FieldViT`, same width, layers, heads and patch): our stand-ins for
X-CViT / X-MPP against CViT / MPP, which are not rebuilt here. Claim 11 (reconstructed, CPU minutes): an axial
CNN (:class:`~theorylab.nn.axial.XFieldCNN`) pretrained on AdvDiff1D + AdvDiff2D, fine-tuned on AdvDiff3D.
Every task comes from the kit's solvers (`data.pde.generate`), never a download; trajectories are split
between training and test; loss NMSE, metric nRMSE (`train.forecast`).

The advection-diffusion tasks keep one grid spacing h = 2π/16 in every dimension (L = h N) and put the
initial energy at wavelength 8 h (peak mode N/8), so a kernel learned in grid units means the same physics in
1-D, 2-D and 3-D: what lets a dimension-free model carry it across dimensions.
"""

from __future__ import annotations

import copy
import math
from statistics import median

import pandas as pd

from theorylab.core import RunContext
from theorylab.core.rng import seeded
from theorylab.data.pde import KS1D, NS2D, generate
from theorylab.data.pde_equations import AdvectionDiffusion, Burgers1D, DiffReact2D
from theorylab.nn.axial import XFieldCNN, XViT
from theorylab.nn.field_vit import FieldViT, ZeroPadToDims
from theorylab.studies.axial_networks.config import TASKS
from theorylab.train.forecast import (
    ForecastSet,
    forecast_pairs,
    nrmse,
    persistence_nrmse,
    split_trajectories,
    steps_to_reach,
    train_forecaster,
)

H = 2 * math.pi / 16  # grid spacing of every advection-diffusion task


def _advdiff(dim: int, n: int, velocity: float, kappa: float) -> AdvectionDiffusion:
    return AdvectionDiffusion(dim=dim, N=n, velocity=(velocity,) * dim, kappa=kappa, dt=0.01, L=H * n, peak=n / 8)


def task_system(name: str, grids: tuple[int, int, int]) -> tuple[object, int, float]:
    """(solver, save_every, spin-up time) of a named task on grids (1-D points, 2-D and 3-D points per axis)."""
    n1, n2, n3 = grids
    table = {
        "AdvDiff1D": (_advdiff(1, n1, 1.0, 0.01), 5, 0.0),
        "AdvDiff2D": (_advdiff(2, n2, 1.0, 0.01), 5, 0.0),
        "AdvDiff3D": (_advdiff(3, n3, 1.0, 0.01), 5, 0.0),
        "AdvDiff3D-pre": (_advdiff(3, n3, 0.5, 0.02), 5, 0.0),  # another velocity and diffusivity: a 3-D task
        "NS2D": (NS2D.preset("kolmo_re1k", N=n2), 40, 2.0),
        "DiffReact2D": (DiffReact2D(N=n2), 10, 1.0),
        "KS1D": (KS1D(L=22.0 * n1 / 64, N=n1, dt=0.25), 1, 50.0),
        "Burgers1D": (Burgers1D(N=n1, nu=0.01, dt=1e-3), 10, 0.0),
    }
    assert set(table) == set(TASKS), "the task table and config.TASKS must list the same tasks"
    if name not in table:
        raise ValueError(f"unknown PDE task {name!r}; known: {', '.join(table)}")
    return table[name]


def task_sets(
    name: str, grids: tuple[int, int, int], ctx: RunContext, n_traj: int, frames: int, history: int
) -> tuple[ForecastSet, ForecastSet]:
    """(train, test) forecast pairs of one task; the test trajectories are a random 25 % (>= 1)."""
    system, every, spinup = task_system(name, grids)
    fields, _ = generate(system, n_traj, (frames - 1) * every, every, spinup, ctx.seed(f"pde data/{name}"))
    train, test = split_trajectories(fields, 0.25, ctx.generator(f"pde split/{name}"))
    return forecast_pairs(name, train, history), forecast_pairs(name, test, history)


# ------------------------------------------------------------------------------------------------------------
# Claim 11: the mini-foundation test
# ------------------------------------------------------------------------------------------------------------


def mini_foundation(cfg, ctx: RunContext) -> pd.DataFrame:
    """Per seed: XFieldCNN pretrained on AdvDiff1D + AdvDiff2D, then fine-tuned ``mini_finetune_steps`` on
    AdvDiff3D, against the same net trained from scratch for as many steps; test nRMSE curves."""
    sets = {
        name: task_sets(name, cfg.mini_grids, ctx, cfg.mini_traj, cfg.mini_frames, 1)
        for name in ("AdvDiff1D", "AdvDiff2D", "AdvDiff3D")
    }
    pre_sets = [sets["AdvDiff1D"][0], sets["AdvDiff2D"][0]]
    target, test = sets["AdvDiff3D"]
    rows = []
    for s in ctx.progress(range(cfg.mini_seeds), "mini-foundation seeds"):

        def make():
            return XFieldCNN(1, 1, cfg.mini_width, cfg.mini_n_layers, 5)

        with seeded(ctx.seed(f"mini/{s}/init")):
            pre, scratch = make(), make()
        train_forecaster(
            pre,
            pre_sets,
            cfg.mini_pretrain_steps,
            cfg.pde_batch,
            cfg.pde_lr,
            ctx.generator(f"mini/{s}/pretrain"),
            ctx.check_finite,
            ctx.device,
        )
        zero_shot = nrmse(pre, test, device=ctx.device)
        for arm, net in (("pretrained", pre), ("scratch", scratch)):
            out = train_forecaster(
                net,
                [target],
                cfg.mini_finetune_steps,
                cfg.pde_batch,
                cfg.pde_lr,
                ctx.generator(f"mini/{s}/finetune"),
                ctx.check_finite,
                ctx.device,
                eval_sets=[test],
                eval_every=max(1, cfg.mini_finetune_steps // 4),
            )
            for step, values in out["curve"]:
                rows.append(dict(seed=s, arm=arm, step=step, nrmse=values[test.name]))
        rows.append(dict(seed=s, arm="zero-shot", step=0, nrmse=zero_shot))
    ctx.scalar("mini_persistence_nrmse", persistence_nrmse(test, 1))
    return ctx.table("mini_foundation", pd.DataFrame(rows))


# ------------------------------------------------------------------------------------------------------------
# Claims 9-10: axial against full-attention transformers
# ------------------------------------------------------------------------------------------------------------


def _xvit(cfg, channels: int) -> XViT:
    return XViT(
        cfg.pde_history * channels,
        channels,
        cfg.vit_d_model,
        cfg.vit_n_layers,
        cfg.vit_n_heads,
        cfg.vit_patch,
        pos_embed=True,
    )


def _vit(cfg, grid: tuple[int, ...], channels: int) -> FieldViT:
    return FieldViT(
        grid, cfg.pde_history * channels, channels, cfg.vit_d_model, cfg.vit_n_layers, cfg.vit_n_heads, cfg.vit_patch
    )


def x_comparable(cfg, ctx: RunContext) -> pd.DataFrame:
    """Claim 9: on each 2-D task, XViT and FieldViT trained from scratch for the same steps; test nRMSE per seed."""
    rows = []
    for name in ctx.progress(cfg.pde_tasks_2d, "2-D tasks (axial vs full attention)"):
        train, test = task_sets(name, cfg.pde_grids, ctx, cfg.pde_traj, cfg.pde_frames, cfg.pde_history)
        channels = train.y.shape[1]
        for s in range(cfg.pde_seeds):
            for model in ("XViT", "FieldViT"):
                with seeded(ctx.seed(f"x-comparable/{name}/{s}/{model}")):
                    net = _xvit(cfg, channels) if model == "XViT" else _vit(cfg, tuple(train.y.shape[2:]), channels)
                train_forecaster(
                    net,
                    [train],
                    cfg.pde_pretrain_steps,
                    cfg.pde_batch,
                    cfg.pde_lr,
                    ctx.generator(f"x-comparable/{name}/{s}/order"),
                    ctx.check_finite,
                    ctx.device,
                )
                rows.append(
                    dict(
                        task=name,
                        seed=s,
                        model=model,
                        nrmse=nrmse(net, test, device=ctx.device),
                        persistence=persistence_nrmse(test, channels),
                        params=sum(p.numel() for p in net.parameters()),
                    )
                )
    return ctx.table("x_comparable", pd.DataFrame(rows))


PRETRAIN = {
    "XViT 1D+2D+3D": ("KS1D", "NS2D", "AdvDiff2D", "AdvDiff3D-pre"),
    "XViT 2D": ("NS2D", "AdvDiff2D"),
    "FieldViT 2D": ("NS2D", "AdvDiff2D"),
    "FieldViT 1D+2D zero-pad": ("KS1D", "NS2D", "AdvDiff2D"),
}
TARGETS = ("Burgers1D", "AdvDiff1D", "AdvDiff3D")


def multidim_pretraining(cfg, ctx: RunContext) -> pd.DataFrame:
    """Claim 10: four pretrainings (rows ``phase="pretrain"``: test nRMSE on the 2-D tasks), then the two axial
    ones and a from-scratch XViT fine-tuned on each unseen target (``phase="finetune"``: nRMSE curves)."""
    names = sorted({t for ts in PRETRAIN.values() for t in ts} | set(TARGETS))
    data = {n: task_sets(n, cfg.pde_grids, ctx, cfg.pde_traj, cfg.pde_frames, cfg.pde_history) for n in names}
    rows = []
    for s in ctx.progress(range(cfg.pde_seeds), "multi-dimension pretraining seeds"):
        nets = {}
        for arm, tasks in PRETRAIN.items():
            with seeded(ctx.seed(f"multidim/{s}/{arm}")):
                if arm.startswith("XViT"):
                    net = _xvit(cfg, 1)
                elif "zero-pad" in arm:
                    net = ZeroPadToDims(_vit(cfg, (cfg.pde_grids[1],) * 2, 1), 2, cfg.pde_grids[1])
                else:
                    net = _vit(cfg, (cfg.pde_grids[1],) * 2, 1)
            train_forecaster(
                net,
                [data[t][0] for t in tasks],
                cfg.pde_pretrain_steps,
                cfg.pde_batch,
                cfg.pde_lr,
                ctx.generator(f"multidim/{s}/{arm}/order"),
                ctx.check_finite,
                ctx.device,
            )
            for t in ("NS2D", "AdvDiff2D"):
                rows.append(
                    dict(
                        phase="pretrain",
                        seed=s,
                        arm=arm,
                        task=t,
                        step=cfg.pde_pretrain_steps,
                        nrmse=nrmse(net, data[t][1], device=ctx.device),
                    )
                )
            nets[arm] = net
        for target in TARGETS:
            train, test = data[target]
            for arm in ("XViT 1D+2D+3D", "XViT 2D", "XViT scratch"):
                net = nets[arm] if arm != "XViT scratch" else None
                if net is None:
                    with seeded(ctx.seed(f"multidim/{s}/scratch/{target}")):
                        net = _xvit(cfg, 1)
                else:  # fine-tune a copy: the same pretrained weights start every target
                    net = copy.deepcopy(nets[arm])
                out = train_forecaster(
                    net,
                    [train],
                    cfg.pde_finetune_steps,
                    cfg.pde_batch,
                    cfg.pde_lr,
                    ctx.generator(f"multidim/{s}/{target}/finetune"),
                    ctx.check_finite,
                    ctx.device,
                    eval_sets=[test],
                    eval_every=cfg.pde_evaluate_every,
                )
                for step, values in out["curve"]:
                    rows.append(dict(phase="finetune", seed=s, arm=arm, task=target, step=step, nrmse=values[target]))
    return ctx.table("multidim_pretraining", pd.DataFrame(rows))


def finetune_summary(t: pd.DataFrame) -> pd.DataFrame:
    """Per target: median over seeds of the final nRMSE per arm, and the median first step at which the
    multi-dimension model reaches the from-scratch model's final nRMSE (per seed; None counts as never)."""
    ft = t[t["phase"] == "finetune"]
    rows = []
    for target, g in ft.groupby("task"):
        last = g[g["step"] == g["step"].max()]
        final = last.groupby("arm")["nrmse"].median()
        reach = []
        for _, gs in g.groupby("seed"):
            goal = gs[(gs["arm"] == "XViT scratch") & (gs["step"] == gs["step"].max())]["nrmse"].iloc[0]
            curve = [(int(r.step), {target: r.nrmse}) for r in gs[gs["arm"] == "XViT 1D+2D+3D"].itertuples()]
            hit = steps_to_reach(sorted(curve, key=lambda c: c[0]), target, goal)
            reach.append(math.inf if hit is None else hit)
        rows.append(
            dict(
                task=target,
                multi=final.get("XViT 1D+2D+3D"),
                two_d=final.get("XViT 2D"),
                scratch=final.get("XViT scratch"),
                steps=int(g["step"].max()),
                reach_step=median(reach),
            )
        )
    return pd.DataFrame(rows)
