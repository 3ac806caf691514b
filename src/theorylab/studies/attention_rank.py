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

from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
import pandas as pd
import torch
from pydantic import Field, model_validator

from theorylab.core import Claims, Diverged, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import Undecided
from theorylab.core.plotting import color, log_ticks, new_figure, sim_points
from theorylab.data.nearest_points import d_mse, nearest_point_sets
from theorylab.nn.attention_constructions import fit_head_weights, full_rank_head, random_rank1_heads
from theorylab.nn.toy_transformer import ToyTransformer, attention_only
from theorylab.probes.attention_stats import argmax_hit_rate, attention_entropy, attention_patterns
from theorylab.train.batched import AdamWSchedule, StackedModels, evaluate_stacked, train_stacked

PAPER = "Amsel, Yehudai, Bruna, arXiv 2407.16153 (2024); ICLR 2025"
REF = "arXiv 2407.16153"

Count = Annotated[int, Field(ge=1, le=65536)]
Length = Annotated[int, Field(ge=2, le=8192)]
Beta = Annotated[float, Field(gt=0, le=1e6)]


class AttentionRankConfig(StudyConfig):
    # --- task ---------------------------------------------------------------------------------
    d: int = Field(16, ge=2, le=1024, description="dimension d of the sphere S^{d-1} (quick 16, paper 64)")
    n_points: int = Field(8, ge=2, le=8192, description="set size N of the heads grid (quick 8, paper 16)")
    # --- training-free constructions -----------------------------------------------------------
    construction_d: int = Field(16, ge=2, le=1024, description="dimension of the construction checks (card: 16)")
    construction_points: int = Field(8, ge=2, le=8192, description="set size of the softmax and rank-1 checks (card: 8)")
    construction_sets: int = Field(2000, ge=100, le=1_000_000, description="sets per construction measurement (rank-1: as many again held out)")
    hardmax_lengths: tuple[Length, ...] = Field((2, 8, 64, 256), min_length=1, description="set sizes for the exact hard-max check")
    betas: tuple[Beta, ...] = Field((10.0, 30.0, 100.0, 300.0), min_length=2, description="inverse temperatures of the softmax full-rank head")
    rank1_heads: tuple[Count, ...] = Field((1, 4, 16, 64, 256), min_length=2, description="head counts of the random rank-1 construction")
    # --- trained grid (Fig. 1): depth x heads x width multiplier, at n_points ----------------
    architecture: Literal["attention", "encoder"] = Field(
        "attention", description="'attention': one attention layer alone (V_h full rank); 'encoder': post-norm residual blocks with an FF block"
    )
    depths: tuple[Count, ...] = Field((1,), min_length=1, description="numbers of layers L ('attention' allows only 1)")
    heads: tuple[Count, ...] = Field((1, 4, 16), min_length=1, description="heads H per multi-head module; rank r = d / H")
    width_multipliers: tuple[Count, ...] = Field((1,), min_length=1, description="w independent multi-head modules summed (H*w heads of rank r)")
    # --- trained grid (Fig. N): rank x sequence length ----------------------------------------
    lengths: tuple[Length, ...] = Field((4, 8, 16), description="set sizes N of the length grid (empty: skip it)")
    length_ranks: tuple[Count, ...] = Field((16, 4, 1), description="head ranks r of the length grid (H = d / r)")
    length_depth: int = Field(1, ge=1, le=64, description="layers in the length grid (paper: 2)")
    length_width: int = Field(1, ge=1, le=4096, description="width multiplier in the length grid (paper: 64)")
    # --- encoder (architecture='encoder') -------------------------------------------------------
    norm: Literal["sphere", "layer", "rms"] = Field("sphere", description="post-norm of the encoder (paper code: learned-scale sphere norm)")
    ff_width: int = Field(2048, ge=0, le=65536, description="FF width of the encoder blocks (paper: 2048; 0 = none)")
    # --- optimisation ----------------------------------------------------------------------------
    steps: int = Field(600, ge=1, le=10_000_000, description="training steps (quick 600, paper 1e5)")
    batch: int = Field(128, ge=1, le=65536, description="sets per step (quick 128, paper 256)")
    lr: float = Field(1e-2, gt=0, le=1.0, description="AdamW peak learning rate (paper 1e-2)")
    beta2: float = Field(0.95, gt=0, lt=1, description="AdamW beta2 (paper 0.95; beta1 = 0.9)")
    weight_decay: float = Field(0.0, ge=0, le=1.0, description="AdamW weight decay (paper 0)")
    warmup_frac: float = Field(0.05, ge=0, le=0.5, description="linear warm-up fraction, then cosine decay (paper 5%)")
    seeds: int = Field(1, ge=1, le=1024, description="seeds per configuration, trained as one batch (paper 5; min over seeds reported)")
    eval_sets: int = Field(4096, ge=64, le=10_000_000, description="fresh sets per evaluation (card: 4096)")
    eval_chunk: int = Field(1024, ge=1, le=1_000_000, description="sets evaluated at once (memory vs speed)")
    probe_sets: int = Field(512, ge=16, le=100_000, description="sets for the attention-pattern statistics")

    @model_validator(mode="after")
    def _consistent(self) -> "AttentionRankConfig":
        for h in self.heads:
            if self.d % h:
                raise ValueError(f"'heads' = {h} must divide d = {self.d} (rank r = d / H)")
        for r in self.length_ranks:
            if r > self.d or self.d % r:
                raise ValueError(f"'length_ranks' = {r} must divide d = {self.d}")
        if self.architecture == "attention":
            if max(self.depths) > 1 or (self.lengths and self.length_depth > 1):
                raise ValueError("'depths' and 'length_depth' must be 1 when architecture='attention' (use 'encoder' for depth)")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: the card's quick sizes (d = 16, N = 8, H in {1, 4, 16}, 600 steps, one seed) and a short length grid",
    ),
    "paper": Preset.of(
        "paper",
        "GPU: the paper's Fig. 1 grid at d = 64 and its Fig. N grid (1e5 steps, 5 seeds, min over seeds)",
        d=(64, "Fig. 1 and Fig. N use d = 64"),
        n_points=(16, "Fig. 1 uses N = 16"),
        architecture=("encoder", "the paper's code trains post-norm encoder layers with an FF block at every depth"),
        depths=((1, 3, 5), "Fig. 1 rows"),
        heads=((1, 2, 4, 8, 16, 32, 64), "Fig. 1 x-axis: r = 64 / H"),
        width_multipliers=((1, 8, 64), "attention parameters d^2, d^2.5, d^3"),
        lengths=((4, 16, 64, 256), "Fig. N x-axis"),
        length_ranks=((1, 8, 16, 32, 64), "Fig. N lines"),
        length_depth=(2, "Fig. N uses 2 layers"),
        length_width=(64, "Fig. N uses w = 64"),
        steps=(100_000, "1000 epochs x 100 batches"),
        batch=(256, "paper batch size"),
        seeds=(5, "paper: 5 seeds, minimum reported"),
        eval_chunk=(256, "bounds GPU memory at 4096 heads"),
    ),
    "slice": Preset.of(
        "slice",
        "one GPU for ~15 minutes: 1 layer at d = 64, N = 16, r in {64, 16, 1}, 20k steps",
        d=(64, "the paper's dimension"),
        n_points=(16, "Fig. 1 uses N = 16"),
        architecture=("encoder", "the paper's layer"),
        heads=((1, 4, 64), "r = 64, 16, 1"),
        lengths=((), "no length grid in the slice"),
        steps=(20_000, "a fifth of the paper's steps"),
        batch=(256, "paper batch size"),
        seeds=(2, "two seeds, batched"),
    ),
}


# --------------------------------------------------------------------------------------------
# Training-free constructions
# --------------------------------------------------------------------------------------------


def _constructions(cfg: AttentionRankConfig, ctx: RunContext) -> pd.DataFrame:
    d, n, count = cfg.construction_d, cfg.construction_points, cfg.construction_sets
    rows = []
    gen = ctx.generator("constructions")
    hard = full_rank_head(d, dtype=torch.float64)
    for length in cfg.hardmax_lengths:
        sets = nearest_point_sets(d, length, count, gen, dtype=torch.float64)
        err = _chunked_dmse(hard, sets.sequence, sets.targets, cfg.eval_chunk)
        rows.append(dict(kind="full_rank_hardmax", param=float("inf"), n_points=length, split="test", dmse=err))
    sets = nearest_point_sets(d, n, count, gen, dtype=torch.float64)
    for beta in cfg.betas:
        err = _chunked_dmse(full_rank_head(d, beta, dtype=torch.float64), sets.sequence, sets.targets, cfg.eval_chunk)
        rows.append(dict(kind="full_rank_softmax", param=float(beta), n_points=n, split="test", dmse=err))
    train = nearest_point_sets(d, n, count, gen)
    test = nearest_point_sets(d, n, count, gen)
    for h in ctx.progress(cfg.rank1_heads, "random rank-1 heads"):
        model = random_rank1_heads(d, h, ctx.generator(f"rank1/H{h}"))
        fit_head_weights(model, train.sequence, train.targets)
        for split, sets in (("train", train), ("test", test)):
            rows.append(dict(kind="random_rank1", param=float(h), n_points=n, split=split, dmse=_chunked_dmse(model, sets.sequence, sets.targets, cfg.eval_chunk)))
    table = pd.DataFrame(rows).assign(d=d)
    ctx.table("constructions", table)
    return table


@torch.no_grad()
def _chunked_dmse(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, chunk: int) -> float:
    heads = sum(block.attn.cfg.n_heads for block in model.blocks)
    chunk = max(1, min(chunk, 2**22 // (heads * x.shape[1] ** 2)))  # bound the (sets, H, T, T) scores
    total = 0.0
    for i in range(0, x.shape[0], chunk):
        total += float(d_mse(model(x[i : i + chunk]), y[i : i + chunk])) * len(x[i : i + chunk])
    return total / x.shape[0]


# --------------------------------------------------------------------------------------------
# Trained models
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One trained configuration; its seeds train together."""

    depth: int
    heads: int  # per multi-head module
    rank: int
    width: int
    n_points: int

    @property
    def name(self) -> str:
        return f"L{self.depth}-H{self.heads}-r{self.rank}-w{self.width}-N{self.n_points}"


def _jobs(cfg: AttentionRankConfig) -> tuple[list[Job], dict[Job, set[str]]]:
    grids: dict[Job, set[str]] = {}
    for depth in cfg.depths:
        for h in cfg.heads:
            for w in cfg.width_multipliers:
                grids.setdefault(Job(depth, h, cfg.d // h, w, cfg.n_points), set()).add("heads")
    for n in cfg.lengths:
        for r in cfg.length_ranks:
            grids.setdefault(Job(cfg.length_depth, cfg.d // r, r, cfg.length_width, n), set()).add("length")
    return list(grids), grids


def build_model(cfg: AttentionRankConfig, job: Job, seed: int) -> ToyTransformer:
    """The trained architecture: one attention layer (card, Eq. 1) or the paper code's post-norm encoder.

    The lone attention layer follows the card: scores ``x_i^T Q_h^T K_h x_j`` with the 1/sqrt(r)
    scale folded into Q (``qk_scale = 1``) and full-rank ``V_h``. (An explicit 1/sqrt(r) scale slows
    the growth of the inverse temperature the full-rank head needs: at 600 steps its d·MSE is about
    0.2 instead of 0.1.) In the encoder, as in the paper's code (w copies of
    ``torch.nn.MultiheadAttention``), scores carry 1/sqrt(r) and each head's value/output rank is r.
    """
    total = job.heads * job.width
    if cfg.architecture == "attention":
        return attention_only(cfg.d, total, job.rank, qk_scale=1.0, seed=seed)
    return ToyTransformer(
        d_model=cfg.d, n_layers=job.depth, n_heads=total, head_rank=job.rank, value_dim=job.rank, mlp_width=cfg.ff_width,
        activation="relu", norm=cfg.norm, norm_position="post", bias=True, seed=seed,
    )


def _train_job(cfg: AttentionRankConfig, ctx: RunContext, job: Job, eval_x: torch.Tensor, eval_y: torch.Tensor, probe) -> tuple[list[dict], pd.DataFrame, pd.DataFrame]:
    device = ctx.device
    seeds = range(cfg.seeds)
    init = [int(ctx.rng(f"init/{job.name}/seed{s}").integers(2**62)) for s in seeds]
    models = StackedModels([build_model(cfg, job, seed) for seed in init]).to(device)
    # Each seed has its own data stream, shared by every configuration (common random numbers).
    gens = [ctx.generator(f"data/N{job.n_points}/seed{s}", device=device) for s in seeds]

    def batches(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        sets = [nearest_point_sets(cfg.d, job.n_points, cfg.batch, g, device=device) for g in gens]
        return torch.stack([s.sequence for s in sets]), torch.stack([s.targets for s in sets])

    optim = AdamWSchedule(lr=cfg.lr, betas=(0.9, cfg.beta2), weight_decay=cfg.weight_decay, warmup_frac=cfg.warmup_frac)
    log = train_stacked(models, batches, d_mse, steps=cfg.steps, optim=optim, progress=ctx.progress, description=f"train {job.name}")
    curve = log.table(member_labels=list(seeds)).rename(columns={"member": "seed"}).assign(job=job.name)
    diverged = log.diverged_at
    if diverged.min() >= 0:
        raise Diverged(f"training loss of every seed of {job.name}", int(diverged.min()))
    for s in np.flatnonzero(diverged >= 0):
        ctx.log(f"{job.name}: seed {s} diverged at step {diverged[s]}; excluded from its configuration's min/median")
    s_count = models.size
    preds = evaluate_stacked(models, eval_x[None].expand(s_count, *eval_x.shape), chunk=cfg.eval_chunk)
    errors = (preds - eval_y).pow(2).sum(-1).mean(dim=(1, 2)).double().cpu().numpy()
    rows, heads = [], []
    for s in seeds:
        hit, entropy = (float("nan"), float("nan"))
        if diverged[s] < 0:
            # First layer: where each head of each query looks (card: entropy and arg-max accuracy).
            patterns = attention_patterns(models.member(s), probe.sequence)[0]
            hits = argmax_hit_rate(patterns, probe.index.to(patterns.device)).cpu().numpy()
            entropies = attention_entropy(patterns).double().cpu().numpy()
            hit, entropy = float(hits.max()), float(entropies.mean())
            heads.append(pd.DataFrame({"job": job.name, "seed": s, "layer": 0, "head": np.arange(len(hits)), "argmax_hit": hits, "entropy": entropies}))
        rows.append(
            dict(
                job=job.name, depth=job.depth, heads=job.heads, rank=job.rank, width=job.width, total_heads=job.heads * job.width,
                n_points=job.n_points, seed=s, dmse=float(errors[s]) if diverged[s] < 0 else float("nan"),
                argmax_hit_best_head=hit, entropy_mean=entropy, diverged_step=int(diverged[s]),
            )
        )
    head_table = pd.concat(heads, ignore_index=True) if heads else pd.DataFrame(columns=["job", "seed", "layer", "head", "argmax_hit", "entropy"])
    return rows, curve, head_table


def _trained(cfg: AttentionRankConfig, ctx: RunContext) -> pd.DataFrame:
    jobs, grids = _jobs(cfg)
    rows, curves, heads = [], [], []
    evals: dict[int, tuple] = {}
    for job in ctx.progress(jobs, "configurations"):
        if job.n_points not in evals:
            gen = ctx.generator(f"eval/N{job.n_points}", device=ctx.device)
            sets = nearest_point_sets(cfg.d, job.n_points, cfg.eval_sets, gen, device=ctx.device)
            probe = nearest_point_sets(cfg.d, job.n_points, cfg.probe_sets, gen, device=ctx.device)
            evals[job.n_points] = (sets.sequence, sets.targets, probe)
        job_rows, curve, head_table = _train_job(cfg, ctx, job, *evals[job.n_points])
        for row in job_rows:
            row["grids"] = ",".join(sorted(grids[job]))
        rows += job_rows
        curves.append(curve)
        heads.append(head_table)
    table = pd.DataFrame(rows).assign(d=cfg.d, architecture=cfg.architecture, steps=cfg.steps)
    ctx.table("trained", table)
    ctx.table("loss_curves", pd.concat(curves, ignore_index=True))
    ctx.table("attention_heads", pd.concat(heads, ignore_index=True))
    return table


def summarise(trained: pd.DataFrame) -> pd.DataFrame:
    """Min and median d·MSE over seeds per configuration (diverged seeds excluded)."""
    keys = ["grids", "depth", "heads", "rank", "width", "total_heads", "n_points"]
    return trained.groupby(keys, as_index=False)["dmse"].agg(dmse_min="min", dmse_median="median", seeds="count")


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure_constructions(ctx: RunContext, table: pd.DataFrame) -> None:
    fig, (left, right) = new_figure(ncols=2)
    soft = table[table["kind"] == "full_rank_softmax"].sort_values("param")
    sim_points(left, soft["param"], soft["dmse"], label="full-rank softmax head", color=color(0))
    left.plot(soft["param"], soft["dmse"], color=color(0), lw=1)
    hard = table[table["kind"] == "full_rank_hardmax"]
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel(r"inverse temperature $\beta$")
    left.set_ylabel("d·MSE")
    left.set_title(f"full rank: d·MSE -> 0 as β grows (hard-max: max {hard['dmse'].max():.1e})", fontsize=8)
    left.legend(fontsize=7)
    rank1 = table[table["kind"] == "random_rank1"]
    for i, (split, grp) in enumerate(rank1.groupby("split")):
        grp = grp.sort_values("param")
        right.plot(grp["param"], grp["dmse"], "o-", color=color(i + 1), label=f"random rank-1 heads ({split})", ms=4)
    right.axhline(1.0, color="grey", ls=":", lw=1, label="zero predictor")
    right.set_xscale("log")
    right.set_ylim(0, 1.08)  # linear: the point is how little of the way to 0 they get
    log_ticks(right, sorted(rank1["param"].unique()))
    right.set_xlabel("heads H (rank 1, least-squares readout)")
    right.set_ylabel("d·MSE")
    right.set_title("many rank-1 heads stay near the zero predictor", fontsize=8)
    right.legend(fontsize=7)
    ctx.figure("construction_curves", fig)


def _figure_heads(ctx: RunContext, summary: pd.DataFrame, d: int) -> None:
    grid = summary[summary["grids"].str.contains("heads")]
    if grid.empty:
        return
    fig, ax = new_figure()
    for i, ((depth, width), grp) in enumerate(grid.groupby(["depth", "width"])):
        grp = grp.sort_values("heads")
        ax.plot(grp["heads"], grp["dmse_min"], "o-", color=color(i), label=f"L={depth}, w={width}: min over seeds", ms=5)
        ax.plot(grp["heads"], grp["dmse_median"], "x--", color=color(i), lw=0.8, label=f"L={depth}, w={width}: median")
    ax.axhline(1.0, color="grey", ls=":", lw=1, label="zero predictor (1)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_ticks(ax, sorted(grid["heads"].unique()))
    ax.set_xlabel(f"heads H at fixed d = {d} (rank r = d/H)")
    ax.set_ylabel("d·MSE")
    ax.set_title("adding heads at fixed width lowers the rank and raises the error\n(full-rank hard-max construction: 0)", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("dmse_vs_heads", fig)


def _figure_lengths(ctx: RunContext, summary: pd.DataFrame, d: int) -> None:
    grid = summary[summary["grids"].str.contains("length")]
    if grid.empty:
        return
    fig, ax = new_figure()
    for i, (n, grp) in enumerate(grid.groupby("n_points")):
        grp = grp.sort_values("rank")
        ax.plot(grp["rank"], grp["dmse_min"], "o-", color=color(i), label=f"N = {n}", ms=5)
    ax.axhline(1.0, color="grey", ls=":", lw=1, label="zero predictor")
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_ticks(ax, sorted(grid["rank"].unique()))
    ax.set_xlabel(f"head rank r (d = {d}, H = d/r)")
    ax.set_ylabel("d·MSE (min over seeds)")
    ax.set_title("low rank gets worse with sequence length; full rank does not", fontsize=8)
    ax.legend(fontsize=7)
    ctx.figure("dmse_vs_rank_by_N", fig)


def _figure_loss(ctx: RunContext, curves: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for i, (job, grp) in enumerate(curves.groupby("job", sort=False)):
        first = grp[grp["seed"] == grp["seed"].min()]
        ax.plot(first["step"] + 1, first["loss"], color=color(i), lw=1, label=job)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training d·MSE (first seed)")
    ax.legend(fontsize=5, ncol=2)
    ctx.figure("training_curves", fig)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


claims = Claims("attention-rank")


S_HARDMAX = "One full-rank hard-max head (Q^T K = -I, V = I) computes the farthest-point target exactly at every sequence length."


@claims.add("hardmax-exact", S_HARDMAX, REF + ", Sec. 3 (full-rank construction)")
def judge_hardmax(res, v) -> Verdict:
    t = res.table("constructions")
    hard = t[t["kind"] == "full_rank_hardmax"]
    worst = float(hard["dmse"].max())
    detail = "; ".join(f"N={int(r.n_points)}: {r.dmse:.1e}" for r in hard.itertuples()) + " (exact construction: 0 up to rounding, tol 1e-12)"
    return v.judged(worst <= 1e-12, worst, 0.0, 1e-12, detail)


S_SOFTMAX = "The full-rank softmax head (Q^T K = -beta I) converges to the target as beta grows: d·MSE falls strictly in beta and is <= 0.05 at beta = 300 (d = 16, N = 8)."


@claims.add("softmax-limit", S_SOFTMAX, REF + ", Sec. 3 (softmax approximation)")
def judge_softmax(res, v) -> Verdict:
    t = res.table("constructions")
    soft = t[t["kind"] == "full_rank_softmax"].sort_values("param")
    errs = soft["dmse"].to_numpy()
    falls = bool(np.all(np.diff(errs) < 0))
    top_beta, last = float(soft["param"].iloc[-1]), float(errs[-1])
    detail = ", ".join(f"β={b:g}: {e:.4f}" for b, e in zip(soft["param"], errs)) + f"; strictly decreasing: {falls}"
    if top_beta < 300:
        raise Undecided(f"this config's betas stop at {top_beta:g}; the claim needs beta >= 300 in 'betas': {detail}")
    return v.judged(falls and last <= 0.05, last, 0.0, 0.05, detail + f" (at β={top_beta:g}: need <= 0.05)")


S_RANK1 = "Random rank-1 hard-max heads with a least-squares readout stay far from the target: d·MSE >= 0.5 on held-out sets at H = d^2 heads, and it falls by less than 0.5 from H = 1."


@claims.add("rank1-floor", S_RANK1, REF + ", Sec. 4 (rank-1 lower bound)")
def judge_rank1(res, v) -> Verdict:
    t = res.table("constructions")
    d = int(t["d"].iloc[0])
    test = t[(t["kind"] == "random_rank1") & (t["split"] == "test")].sort_values("param")
    h_max = float(test["param"].iloc[-1])
    at_max, at_one = float(test["dmse"].iloc[-1]), float(test["dmse"].iloc[0])
    drop = at_one - at_max
    detail = f"held-out d·MSE: H={int(test['param'].iloc[0])}: {at_one:.4f}, H={int(h_max)}: {at_max:.4f} (need >= 0.5); drop {drop:.4f} (need < 0.5)"
    if h_max < d * d:
        raise Undecided(f"this config's rank1_heads stop at H = {int(h_max)}; the claim needs H >= d^2 = {d * d}: {detail}")
    return v.judged(at_max >= 0.5 and drop < 0.5, at_max, ">= 0.5", 0.5, detail)


S_HEADS = "Trained one-layer attention at fixed d: one full-rank head reaches d·MSE <= 0.2, while H >= 4 heads of rank r = d/H <= d/4 stay >= 0.35, at least 3x worse."


def _one_layer_w1(res) -> pd.DataFrame:
    s = summarise(res.table("trained"))
    cfg = res.config
    return s[(s["depth"] == 1) & (s["width"] == 1) & (s["n_points"] == cfg["n_points"]) & s["grids"].str.contains("heads")]


@claims.add("trained-heads-hurt", S_HEADS, REF + ", Fig. 1 (quick analogue at d = 16)")
def judge_heads(res, v) -> Verdict:
    d = res.config["d"]
    s = _one_layer_w1(res)
    full = s[s["rank"] == d]
    low = s[s["rank"] <= d // 4]
    if full.empty or low.empty:
        raise Undecided(f"this config's heads grid {sorted(s['heads'].unique().tolist())} at depth 1, w = 1 lacks H = 1 or any H >= 4 (both are needed)")
    full_err = float(full["dmse_min"].iloc[0])
    low_min = float(low["dmse_min"].min())
    ratio = low_min / full_err
    detail = (f"min over seeds: H=1 (r={d}): {full_err:.4f} (need <= 0.2); "
              + ", ".join(f"H={int(r.heads)} (r={int(r.rank)}): {r.dmse_min:.4f}" for r in low.itertuples())
              + f" (need >= 0.35); ratio {ratio:.2f} (need >= 3)")
    ok = full_err <= 0.2 and low_min >= 0.35 and ratio >= 3
    return v.judged(ok, ratio, ">= 3", 3, detail)


def _paper_scale(res) -> bool:
    return res.config["d"] == 64 and res.config["n_points"] == 16


S_FIG1 = "Fig. 1, one layer, d = 64, N = 16: rank 64 reaches d·MSE <= 0.05 at every width, rank 32 stays >= 0.25 and ranks 1-16 stay >= 0.4 (paper: 1.5e-2/7e-3/2e-3 vs 0.70/0.43/0.31)."


@claims.add("fig1-one-layer", S_FIG1, REF + ", Fig. 1")
def judge_fig1(res, v) -> Verdict:
    s = summarise(res.table("trained"))
    s = s[(s["depth"] == 1) & (s["n_points"] == 16) & s["grids"].str.contains("heads")]
    if not _paper_scale(res) or s[s["rank"] == 64].empty or s[s["rank"] < 64].empty:
        raise Undecided(f"needs paper preset: the claim is about one layer at d = 64, N = 16 with rank 64 and lower ranks; this config trains d = {res.config['d']}, N = {res.config['n_points']}")
    full, r32, low = s[s["rank"] == 64], s[s["rank"] == 32], s[s["rank"] <= 16]
    ok = bool((full["dmse_min"] <= 0.05).all() and (r32["dmse_min"] >= 0.25).all() and (low["dmse_min"] >= 0.4).all())
    widths = sorted(int(w) for w in s["width"].unique())
    partial = "" if {1, 8, 64} <= set(widths) else f" (partial grid: widths {widths} of the card's 1, 8, 64; ranks {sorted(int(r) for r in s['rank'].unique())})"
    detail = "; ".join(f"r={int(r.rank)}, w={int(r.width)}: {r.dmse_min:.4f}" for r in s.sort_values(["rank", "width"]).itertuples()) + partial
    return v.judged(ok, float(full["dmse_min"].max()), "<= 0.05", 0.05, detail)


S_PARAMS = "More attention parameters do not help low rank: for r <= 32, going from w = 1 to w = 64 leaves d·MSE >= 0.25, while r = 64 at w = 1 is <= 0.05."


@claims.add("params-do-not-help", S_PARAMS, REF + ", Fig. 1 (width multiplier)")
def judge_params(res, v) -> Verdict:
    s = summarise(res.table("trained"))
    s = s[(s["depth"] == 1) & (s["n_points"] == 16) & s["grids"].str.contains("heads")]
    wide = s[(s["width"] == 64) & (s["rank"] <= 32)]
    full = s[(s["width"] == 1) & (s["rank"] == 64)]
    if not _paper_scale(res) or wide.empty or full.empty:
        raise Undecided(f"needs paper preset: the claim compares w = 1 and w = 64 at d = 64, N = 16; this config trains d = {res.config['d']}, N = {res.config['n_points']}, "
                        f"w in {list(res.config['width_multipliers'])}")
    low = float(wide["dmse_min"].min())
    full_err = float(full["dmse_min"].iloc[0])
    detail = f"min over r <= 32 at w = 64: {low:.4f} (need >= 0.25); r = 64 at w = 1: {full_err:.4f} (need <= 0.05)"
    return v.judged(low >= 0.25 and full_err <= 0.05, low, ">= 0.25", 0.25, detail)


S_LENGTH = ("Low-rank error grows with sequence length while full rank stays near zero (paper Fig. N at d = 64: full rank <= 0.1 for N up to 256, "
            "each r < 64 grows by >= 0.2 from N = 16 to 256; on a reduced grid: full rank <= 0.2 and low rank grows by >= 0.1 from the shortest to the longest N).")


@claims.add("length-hurts-low-rank", S_LENGTH, REF + ", Fig. N")
def judge_length(res, v) -> Verdict:
    s = summarise(res.table("trained"))
    s = s[s["grids"].str.contains("length")]
    d = res.config["d"]
    lengths = sorted(s["n_points"].unique())
    if len(lengths) < 2 or s[s["rank"] == d].empty or s[s["rank"] < d].empty:
        raise Undecided(f"this config's length grid (lengths {list(res.config['lengths'])}, ranks {list(res.config['length_ranks'])}) needs >= 2 lengths, full rank and some r < d")
    paper = d == 64 and 16 in lengths and 256 in lengths
    n_ref, n_max = (16, 256) if paper else (lengths[0], lengths[-1])
    full_tol, growth_tol = (0.1, 0.2) if paper else (0.2, 0.1)
    full = s[s["rank"] == d]
    full_worst = float(full["dmse_min"].max())
    growths = {}
    for r, grp in s[s["rank"] < d].groupby("rank"):
        by_n = grp.set_index("n_points")["dmse_min"]
        growths[int(r)] = float(by_n[n_max] - by_n[n_ref])
    ok = full_worst <= full_tol and min(growths.values()) >= growth_tol
    scale = "paper thresholds (Fig. N)" if paper else f"reduced grid at d = {d} (qualitative thresholds; the card's apply at the paper preset)"
    detail = (f"{scale}: full rank max over N = {full_worst:.4f} (need <= {full_tol}); growth N={n_ref}->{n_max}: "
              + ", ".join(f"r={r}: {g:+.4f}" for r, g in sorted(growths.items())) + f" (need >= {growth_tol})")
    return v.judged(ok, min(growths.values()), f">= {growth_tol}", growth_tol, detail)


S_DEPTH = "Depth rescues low rank on short sequences: at N = 16, w = 1, three layers at r = d/4 reach a d·MSE at least 0.2 below one layer (paper, d = 64, r = 16: ~0.12 vs >= 0.45)."


@claims.add("depth-helps-short", S_DEPTH, REF + ", Fig. 1 (depth)")
def judge_depth(res, v) -> Verdict:
    s = summarise(res.table("trained"))
    d = res.config["d"]
    s = s[(s["width"] == 1) & (s["n_points"] == 16) & (s["rank"] == d // 4) & s["grids"].str.contains("heads")]
    by_depth = s.set_index("depth")["dmse_min"]
    if not _paper_scale(res) or 1 not in by_depth or 3 not in by_depth:
        raise Undecided(f"needs paper preset: the claim compares depths 1 and 3 at d = 64, N = 16, w = 1, r = d/4; this config trains d = {d}, N = {res.config['n_points']}, "
                        f"depths {list(res.config['depths'])}")
    gain = float(by_depth[1] - by_depth[3])
    detail = f"r = {d // 4}: 1 layer {by_depth[1]:.4f}, 3 layers {by_depth[3]:.4f}; gain {gain:.4f} (need >= 0.2)"
    return v.judged(gain >= 0.2, gain, ">= 0.2", 0.2, detail)


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
    _figure_constructions(ctx, constructions)
    trained = _trained(cfg, ctx)
    summary = summarise(trained)
    ctx.table("summary", summary)
    _figure_heads(ctx, summary, cfg.d)
    _figure_lengths(ctx, summary, cfg.d)
    _figure_loss(ctx, ctx.tables["loss_curves"])
    full = summary[summary["rank"] == cfg.d]
    if not full.empty:
        ctx.scalar("full_rank_best_dmse", float(full["dmse_min"].min()))
    ctx.scalar("hardmax_max_dmse", float(constructions.loc[constructions["kind"] == "full_rank_hardmax", "dmse"].max()))
    ctx.scalar("zero_predictor_dmse", 1.0)
