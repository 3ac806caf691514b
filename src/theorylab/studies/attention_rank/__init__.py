"""attention-rank: rank beats head count in attention.

Paper: N. Amsel, G. Yehudai, J. Bruna, "On the Benefits of Rank in Attention Layers",
arXiv 2407.16153 (2024); ICLR 2025 as "Quality over Quantity in Attention Layers: When Adding
More Heads Hurts".

Task: sets of N uniform points on S^{d-1}; every point must return the point farthest from it.
One full-rank head computes this exactly (Q^T K = -beta I, hard-max); rank-r heads with r < d
cannot approximate it unless the number of heads is exponential in d. The study checks the
exact constructions without training, then trains attention layers (and, at the paper preset,
post-norm encoders) over heads, rank, width multiplier, depth and sequence length. Seeds of one
configuration train as one batched computation (:mod:`theorylab.train.batched`).
"""

from __future__ import annotations

import pandas as pd

from theorylab.core import RunContext, study
from theorylab.probes.farthest_point_errors import construction_errors
from theorylab.studies.attention_rank.config import PRESETS, AttentionRankConfig
from theorylab.studies.attention_rank.figures import figure_constructions, figure_grid, figure_loss
from theorylab.studies.attention_rank.judges import claims
from theorylab.train.batched import AdamWSchedule
from theorylab.train.farthest_point import job_grid, seed_summary, train_job_grid

PAPER = "Amsel, Yehudai, Bruna, arXiv 2407.16153 (2024); ICLR 2025"


def _constructions(cfg: AttentionRankConfig, ctx: RunContext) -> pd.DataFrame:
    table = construction_errors(
        cfg.construction_dim,
        cfg.construction_n_points,
        cfg.construction_sets,
        cfg.hardmax_n_points,
        cfg.betas,
        cfg.rank1_n_heads,
        ctx.generator("constructions"),
        [ctx.generator(f"rank1/H{h}") for h in cfg.rank1_n_heads],
        chunk=cfg.eval_chunk,
        progress=ctx.progress,
    )
    ctx.table("constructions", table)
    return table


def _trained(cfg: AttentionRankConfig, ctx: RunContext) -> pd.DataFrame:
    """Both grids; each seed has its own data stream, shared by every configuration (common random numbers)."""
    grids = job_grid(
        cfg.d,
        cfg.n_points,
        cfg.n_layers,
        cfg.n_heads,
        cfg.width_multipliers,
        cfg.length_n_points,
        cfg.length_ranks,
        cfg.length_n_layers,
        cfg.length_width_multiplier,
    )
    optim = AdamWSchedule(lr=cfg.lr, betas=(0.9, cfg.beta2), weight_decay=cfg.weight_decay, warmup_frac=cfg.warmup_frac)
    table, curves, heads = train_job_grid(
        grids,
        architecture=cfg.architecture,
        d=cfg.d,
        seeds=cfg.seeds,
        init_seed=lambda job, s: int(ctx.rng(f"init/{job.name}/seed{s}").integers(2**62)),
        data_generator=lambda n, s: ctx.generator(f"data/N{n}/seed{s}", device=ctx.device),
        eval_generator=lambda n: ctx.generator(f"eval/N{n}", device=ctx.device),
        eval_sets=cfg.eval_sets,
        probe_sets=cfg.probe_sets,
        batch=cfg.batch,
        steps=cfg.steps,
        optim=optim,
        eval_chunk=cfg.eval_chunk,
        ff_width=cfg.mlp_width,
        norm=cfg.norm,
        device=ctx.device,
        progress=ctx.progress,
        log=ctx.log,
        map_jobs=ctx.map,
    )
    ctx.table("trained", table)
    ctx.table("loss_curves", curves)
    ctx.table("attention_heads", heads)
    return table


@study(
    "attention-rank",
    title="Rank beats head count in attention",
    paper=PAPER,
    config=AttentionRankConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
)
def run(cfg: AttentionRankConfig, ctx: RunContext) -> None:
    constructions = _constructions(cfg, ctx)
    figure_constructions(ctx, constructions)
    trained = _trained(cfg, ctx)
    summary = seed_summary(trained)
    ctx.table("summary", summary)
    figure_grid(
        ctx,
        summary,
        "heads",
        "heads",
        ["depth", "width"],
        "dmse_vs_heads",
        label="L={}, w={}: min over seeds",
        median_label="L={}, w={}: median",
        zero_label="zero predictor (1)",
        xlabel=f"heads H at fixed d = {cfg.d} (rank r = d/H)",
        ylabel="d·MSE",
        legend_size=6,
        title="adding heads at fixed width lowers the rank and raises the error\n(full-rank hard-max construction: 0)",
    )
    figure_grid(
        ctx,
        summary,
        "length",
        "rank",
        "n_points",
        "dmse_vs_rank_by_N",
        label="N = {}",
        median_label=None,
        zero_label="zero predictor",
        xlabel=f"head rank r (d = {cfg.d}, H = d/r)",
        ylabel="d·MSE (min over seeds)",
        title="low rank gets worse with sequence length; full rank does not",
        legend_size=7,
    )
    figure_loss(ctx, ctx.tables["loss_curves"])
    full = summary[summary["rank"] == cfg.d]
    if not full.empty:
        ctx.scalar("full_rank_best_dmse", float(full["dmse_min"].min()))
    ctx.scalar("hardmax_max_dmse", float(constructions.loc[constructions["kind"] == "full_rank_hardmax", "dmse"].max()))
    ctx.scalar("zero_predictor_dmse", 1.0)
