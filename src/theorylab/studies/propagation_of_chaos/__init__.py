"""propagation-of-chaos: uniform-in-time weak propagation of chaos for noiseless gradient descent.

Paper: M. Glasgow, J. Bruna, "Uniform-in-Time Weak Propagation-of-Chaos in Shallow Neural
Networks", arXiv 2605.22010 (2026).

If the mean-field loss decays fast enough (``int_0^inf L_t^{1/2} dt = O(log d)``, ``L_t <~ t^-c``),
the finite-width network stays close to the mean-field limit for all time:
``sup_t |f_MF - f_m|^2 <~ poly(d) m^{-min(1, c/6)}``. The study uses the mean-field harness of
mean-field-width (exact population loss, projected GD, reference-corrected function gap): it
measures c, the loss integral and the sup-over-time gap's exponent in m for a fast link (He_2),
and reports the same for a slow one (He_4).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.core.cpu import BASE_BYTES
from theorylab.nn.activations import HermiteActivation
from theorylab.studies.propagation_of_chaos.config import PRESETS, PropagationOfChaosConfig
from theorylab.studies.propagation_of_chaos.figures import figure_long_time, figure_loss, figure_sup_gap
from theorylab.studies.propagation_of_chaos.judges import claims
from theorylab.theory.mean_field import max_elements_for, step_halving_gaps
from theorylab.theory.mean_field_rates import (
    loss_decay_summary,
    sup_over_time,
)
from theorylab.train.mean_field import (
    bounded_memory,
    checkpoint_steps,
    sample_sweep,
    sweep_peak_bytes,
    width_sweep,
)

PAPER = "Glasgow, Bruna, arXiv 2605.22010 (2026)"


def _sweep(
    cfg: PropagationOfChaosConfig,
    ctx: RunContext,
    out: tuple[list, list],
    setting: str,
    d: int,
    k: int,
    widths,
    seeds: int,
    steps: int,
    eta: float,
) -> torch.Tensor:
    """One width sweep: appends its loss curve and its gaps to ``out``; returns the reference's particles at T."""
    marks = checkpoint_steps(cfg.checkpoints, steps)
    sw = width_sweep(
        HermiteActivation.he(k),
        d,
        widths,
        seeds,
        cfg.m_ref,
        eta=eta,
        steps=steps,
        checkpoints=marks,
        generator=ctx.generator(f"particles/{setting}/{d}", device=ctx.device),
        device=ctx.device,
        progress=ctx.progress,
        max_elements=max_elements_for(cfg.block_mib),
        inline_gaps=True,
    )
    out[0].append(
        pd.DataFrame(
            {
                "setting": setting,
                "d": d,
                "k": k,
                "eta": eta,
                "step": np.arange(steps + 1),
                "t": sw.history.times,
                "L_mf": sw.history.ref_loss,
            }
        )
    )
    gaps = pd.DataFrame(sw.gap_rows(marks, eta, setting=setting, d=d, k=k, eta=eta))
    out[1].append(gaps.assign(m_gap=lambda f: f["width"] * f["gap"]))
    return sw.history.snapshots[max(sw.history.snapshots)][1]  # only the reference at T is kept


def _memory(cfg: PropagationOfChaosConfig) -> tuple[float, str]:
    """Peak bytes: the largest width sweep (d = max(dims); gaps measured at each checkpoint, so the networks are
    held three times, not once per checkpoint), the reference at T of every step size, and the finite-sample
    phase (each network's samples x (n, d) and labels, the sweeps' snapshots at the first d)."""
    d, marks = max(cfg.dims), len(cfg.checkpoints)
    widths = (
        sweep_peak_bytes(
            len(cfg.widths) * cfg.seeds,
            max(cfg.widths),
            d,
            cfg.m_ref,
            marks,
            keep_networks=False,
            block_mib=cfg.block_mib,
        )
        + (len(cfg.lrs) + 1) * cfg.m_ref * d * 8.0
    )
    samples = 0.0
    if cfg.sample_ns:
        d0, n = cfg.dims[0], max(cfg.sample_ns)
        samples = (
            sweep_peak_bytes(
                cfg.sample_seeds, cfg.sample_width, d0, cfg.m_ref, marks, keep_networks=True, block_mib=cfg.block_mib
            )
            * len(cfg.sample_ns)
            + cfg.sample_seeds * n * (d0 + 1) * 8.0
        )
    need = BASE_BYTES + max(widths, samples)
    fewer = max(1, cfg.seeds // 2)
    return need, (
        f"--set seeds={fewer} (networks per width, now {cfg.seeds}) or fewer/smaller widths: the networks "
        f"take {len(cfg.widths) * cfg.seeds * max(cfg.widths) * d * 24 / 2**30:.1f} GiB of it"
    )


@study(
    "propagation-of-chaos",
    title="Uniform-in-time weak propagation of chaos for noiseless GD",
    paper=PAPER,
    config=PropagationOfChaosConfig,
    presets=PRESETS,
    family="mean field",
    claims=claims,
    memory=_memory,
)
def run(cfg: PropagationOfChaosConfig, ctx: RunContext) -> None:
    with bounded_memory("block_mib", cfg.block_mib, "m_ref, widths, seeds, sample_width or sample_ns"):
        loss, gap, discs = _run(cfg, ctx)
    # Per setting, d and eta: the decay exponent c, the loss integral and the predicted width exponent; and per
    # width the sup over checkpoints of the seed-mean gap, early and late halves.
    rates = pd.DataFrame(
        [
            dict(setting=s, d=d, eta=eta, **loss_decay_summary(g["t"], g["L_mf"], cfg.rate_window))
            for (s, d, eta), g in loss.sort_values("t", kind="stable").groupby(["setting", "d", "eta"])
        ]
    )
    sup = pd.DataFrame(
        [
            dict(setting=s, d=d, eta=eta, width=m, **sup_over_time(g["t"], g["gap"], m))
            for (s, d, eta, m), g in gap.groupby(["setting", "d", "eta", "width"])
        ]
    )
    for name, table in (("loss", loss), ("gaps", gap), ("rates", rates), ("sup_gap", sup)):
        ctx.table(name, table)
    if discs:
        ctx.table("discretisation", pd.concat(discs, ignore_index=True))
    figure_loss(ctx, loss, rates, cfg)
    figure_sup_gap(ctx, sup, rates)
    figure_long_time(ctx, gap)


def _run(cfg: PropagationOfChaosConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame, list[pd.DataFrame]]:
    out, discs = ([], []), []
    etas = sorted(set(cfg.lrs) | {cfg.lr}, reverse=True)
    for d in cfg.dims:
        finals = {
            eta: _sweep(
                cfg, ctx, out, "fast", d, cfg.fast_k, cfg.widths, cfg.seeds, int(round(cfg.steps * cfg.lr / eta)), eta
            )  # the same horizon T for every step size
            for eta in etas
        }
        if len(finals) > 1:
            gaps_at_t = step_halving_gaps(HermiteActivation.he(cfg.fast_k), finals, max_elements_for(cfg.block_mib))
            discs.append(pd.DataFrame([(d, *g) for g in gaps_at_t], columns=["d", "eta", "eta_half", "ref_gap_at_T"]))
        if cfg.slow_k is not None and d == cfg.dims[0]:
            _sweep(cfg, ctx, out, "slow", d, cfg.slow_k, cfg.slow_widths, cfg.slow_seeds, cfg.slow_steps, cfg.lr)
    if cfg.sample_ns:
        d = cfg.dims[0]
        marks = checkpoint_steps(cfg.checkpoints, cfg.steps)
        sweeps = sample_sweep(
            HermiteActivation.he(cfg.fast_k),
            d,
            cfg.sample_width,
            cfg.sample_ns,
            cfg.sample_seeds,
            cfg.m_ref,
            eta=cfg.lr,
            steps=cfg.steps,
            checkpoints=marks,
            device=ctx.device,
            generator=ctx.generator(f"samples/{d}", device=ctx.device),
            progress=ctx.progress,
            max_elements=max_elements_for(cfg.block_mib),
        )
        labels = dict(setting="samples", d=d, k=cfg.fast_k, eta=cfg.lr)
        rows = [r for n, sw in sweeps.items() for r in sw.gap_rows(marks, cfg.lr, **labels, n=n)]
        ctx.table("finite_samples", pd.DataFrame(rows))
    return pd.concat(out[0], ignore_index=True), pd.concat(out[1], ignore_index=True), discs
