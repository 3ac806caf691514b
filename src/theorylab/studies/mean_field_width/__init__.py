"""mean-field-width: polynomial width tracks the mean-field limit beyond logarithmic time.

Paper: M. Glasgow, D. Wu, J. Bruna, "Propagation of Chaos in One-hidden-layer Neural Networks
beyond Logarithmic Time", arXiv 2504.13110 (2025).

A one-hidden-layer network in mean-field scaling (particles on the sphere, second layer 1/m) is
trained by projected gradient descent on the exact population loss of a single-index target of
information exponent k, next to a wide reference system. The function gap to the reference is
measured over the whole run, including the long escape from the equator; the paper's claim is
that it stays O(poly(d)/m), not the exp(T)/m of a Grönwall bound, because each particle's local
Hessian is controlled by its velocity (self-concordance).
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.core.cpu import BASE_BYTES
from theorylab.nn.activations import single_index_link
from theorylab.studies.mean_field_width.config import PRESETS, MeanFieldWidthConfig
from theorylab.studies.mean_field_width.figures import (
    figure_gap_vs_time,
    figure_gap_vs_width,
    figure_overlaps,
    figure_reduction,
)
from theorylab.studies.mean_field_width.judges import claims
from theorylab.theory.mean_field import (
    escape_time_summary,
    init_gap_check,
    init_gap_per_width,
    max_elements_for,
    self_concordance_summary,
)
from theorylab.train.mean_field import (
    bounded_memory,
    checkpoint_steps,
    planted_direction,
    reduction_against_reference,
    steps_to_loss_fraction,
    sweep_peak_bytes,
    width_sweep,
)

PAPER = "Glasgow, Wu, Bruna, arXiv 2504.13110 (2025)"
Progress = Callable[[Iterable, str], Iterator]


def _one_setting(item: tuple, progress: Progress | None) -> dict[str, pd.DataFrame]:
    """One (d, k) setting of the grid (a job of ``ctx.map``: here, or a Ray task with ``--executor ray``): every
    table's rows for it. ``item`` = (config, d, k, device, the setting's named generators)."""
    cfg, d, k, device, gens = item
    act, limit, w_star = single_index_link(k), max_elements_for(cfg.block_mib), planted_direction(d, device)
    tables: dict[str, pd.DataFrame] = {}
    steps = (
        cfg.steps
        if cfg.stop_ratio is None
        else steps_to_loss_fraction(
            act,
            d,
            cfg.m_ref,
            eta=cfg.lr,
            stop_ratio=cfg.stop_ratio,
            max_steps=cfg.max_steps,
            max_elements=limit,
            generator=gens["horizon"],
            device=device,
            progress=progress,
            label=f"horizon d={d}, k={k}",
        )
    )
    marks = checkpoint_steps(cfg.checkpoints, steps)
    sweep = width_sweep(
        act,
        d,
        cfg.widths,
        cfg.seeds,
        cfg.m_ref,
        eta=cfg.lr,
        steps=steps,
        checkpoints=marks,
        generator=gens["particles"],
        device=device,
        progress=progress,
        escape_threshold=cfg.escape_threshold,
        max_elements=limit,
    )
    hist, eta = sweep.history, cfg.lr
    tables["loss"] = pd.DataFrame(
        {
            "d": d,
            "k": k,
            "step": np.arange(steps + 1),
            "t": hist.times,
            "L_mf": hist.ref_loss,
            "escaped_fraction": hist.ref_escaped,
        }
    )
    tables["gaps"] = pd.DataFrame(sweep.gap_rows(marks, eta, d=d, k=k)).assign(
        m_gap=lambda f: f["width"] * f["gap"], init_theory=init_gap_per_width(act, d)
    )
    pick = torch.randperm(cfg.m_ref, generator=torch.Generator().manual_seed(0))[: cfg.concordance_particles].to(device)
    tables["self_concordance"] = pd.DataFrame(
        [
            dict(
                d=d,
                k=k,
                step=s,
                t=s * eta,
                L_mf=hist.ref_loss[s],
                **self_concordance_summary(act, hist.snapshots[s][1], w_star, pick, cfg.escape_threshold, limit),
            )
            for s in marks
        ]
    )
    tables["escape"] = pd.DataFrame(sweep.escape_rows(marks, eta, d=d, k=k))
    tables["escape_times"] = pd.DataFrame(
        [dict(d=d, k=k, threshold=cfg.escape_threshold, **escape_time_summary(hist.ref_escape_time))]
    )
    tables["overlaps"] = pd.concat(
        [
            pd.DataFrame({"d": d, "k": k, "step": i, "t": i * eta, "system": name, "s": s})
            for i, name, s in sweep.overlap_samples(marks, w_star)
        ],
        ignore_index=True,
    )
    if (
        cfg.reduction_particles > 0
    ):  # the 1-D reduction beside the reference, and what bounds their gap (judge_reduction)
        red = reduction_against_reference(
            act,
            d,
            hist.snapshots[0][1],
            n=cfg.reduction_particles,
            nodes=cfg.reduction_nodes,
            eta=eta,
            steps=steps,
            max_elements=limit,
        )
        tables["reduction"] = pd.DataFrame(
            [
                dict(
                    d=d,
                    k=k,
                    step=s,
                    t=s * eta,
                    L_ref=hist.ref_loss[s],
                    **{c: v[s] for c, v in red.items()},
                    ref_error=sweep.ref_error[s],
                )
                for s in marks
            ]
        )
    # The independent check of the kernel: E[sigma(g)^2] (quadrature) - E[sigma(<w, x>) sigma(<w', x>)] (Monte Carlo,
    # x ~ N(0, I_d)), from the activation itself, never through K.
    check = init_gap_check(act, d, cfg.init_mc_n, gens["kernel-mc"], device=device)
    tables["kernel_check"] = pd.DataFrame([dict(d=d, k=k, **check)])
    return tables


def _memory(cfg: MeanFieldWidthConfig) -> tuple[float, str]:
    """Peak bytes of the largest (d, k) setting: its width sweep with every network kept at each checkpoint (the
    overlaps, the networks' losses), the reference's snapshots, and one probed particle's Jacobian of the
    self-concordance ratio (d x m_ref, a few copies)."""
    d = max(cfg.dims)
    nets = len(cfg.widths) * cfg.seeds
    sweep = sweep_peak_bytes(
        nets, max(cfg.widths), d, cfg.m_ref, len(cfg.checkpoints), keep_networks=True, block_mib=cfg.block_mib
    )
    jacobian = 4 * max(cfg.m_ref * (d + 1) * 8.0, cfg.block_mib * (1 << 20))
    held = nets * max(cfg.widths) * d * 8.0 * (len(cfg.checkpoints) + 3)
    fewer = max(1, cfg.seeds // 2)
    return BASE_BYTES + sweep + jacobian, (
        f"--set seeds={fewer} (networks per width, now {cfg.seeds}) or "
        f"fewer/smaller widths: the networks take {held / 2**30:.1f} GiB of it"
    )


@study(
    "mean-field-width",
    title="Polynomial width tracks the mean-field limit beyond logarithmic time",
    paper=PAPER,
    config=MeanFieldWidthConfig,
    presets=PRESETS,
    family="mean field",
    claims=claims,
    memory=_memory,
)
def run(cfg: MeanFieldWidthConfig, ctx: RunContext) -> None:
    with bounded_memory("block_mib", cfg.block_mib, "m_ref, widths or seeds"):
        settings = [
            (
                cfg,
                d,
                k,
                str(ctx.device),
                {
                    name: ctx.generator(f"{name}/{d}/{k}", device=ctx.device)
                    for name in ("horizon", "particles", "kernel-mc")
                },
            )
            for d in cfg.dims
            for k in cfg.ks
        ]
        for tables in ctx.map(_one_setting, settings, "settings (d, k)"):
            for name, frame in tables.items():  # in setting order: the tables a one-process run records
                ctx.table(name, frame)
    figure_gap_vs_time(ctx, ctx.tables["gaps"], ctx.tables["loss"])
    figure_gap_vs_width(ctx, ctx.tables["gaps"])
    figure_overlaps(ctx, ctx.tables["overlaps"])
    if "reduction" in ctx.tables:
        figure_reduction(ctx, ctx.tables["reduction"])
