"""Training grids of attention models on the farthest-point task, the seeds of each configuration batched.

Amsel, Yehudai, Bruna, *On the Benefits of Rank in Attention Layers*, arXiv 2407.16153 (Fig. 1 and
Fig. N): every point of a set of N uniform points on ``S^{d-1}`` must return the point farthest from
it (:mod:`theorylab.data.nearest_points`); the models are one attention layer of ``H·w`` heads of
rank ``r`` (Eq. 1) or the paper code's post-norm encoder. A configuration is an
:class:`AttentionJob`; its seeds train as one :class:`~theorylab.train.batched.StackedModels` through
:func:`~theorylab.train.batched.train_stacked`, each seed on its own data stream. After training,
each seed's d·MSE on fresh sets and its first layer's attention statistics (entropy, arg-max hits on
the farthest point) are measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from theorylab.core.errors import Diverged
from theorylab.core.executors import JobExecutor
from theorylab.data.nearest_points import NearestPointSets, d_mse, nearest_point_sets
from theorylab.nn.toy_transformer import ToyTransformer, attention_only
from theorylab.probes.attention_stats import argmax_hit_rate, attention_entropy, attention_patterns
from theorylab.train.batched import AdamWSchedule, StackedModels, evaluate_stacked, train_stacked

Progress = Callable[[Iterable], Iterator]
HEAD_COLUMNS = ["job", "seed", "layer", "head", "argmax_hit", "entropy"]


@dataclass(frozen=True)
class AttentionJob:
    """One trained configuration; its seeds train together."""

    depth: int
    heads: int  # per multi-head module
    rank: int
    width: int
    n_points: int

    @property
    def name(self) -> str:
        return f"L{self.depth}-H{self.heads}-r{self.rank}-w{self.width}-N{self.n_points}"


def job_grid(
    d: int,
    n_points: int,
    depths: Sequence[int],
    heads: Sequence[int],
    widths: Sequence[int],
    lengths: Sequence[int],
    length_ranks: Sequence[int],
    length_depth: int,
    length_width: int,
) -> dict[AttentionJob, set[str]]:
    """The configurations of the two grids, each once, in order, with the grids that use it.

    "heads" (Fig. 1): depth x heads H (rank d/H) x width multiplier w at ``n_points``;
    "length" (Fig. N): set size N x rank r (H = d/r) at ``length_depth`` and ``length_width``.
    """
    grids: dict[AttentionJob, set[str]] = {}
    for depth in depths:
        for h in heads:
            for w in widths:
                grids.setdefault(AttentionJob(depth, h, d // h, w, n_points), set()).add("heads")
    for n in lengths:
        for r in length_ranks:
            grids.setdefault(AttentionJob(length_depth, d // r, r, length_width, n), set()).add("length")
    return grids


def build_attention_model(
    architecture: Literal["attention", "encoder"],
    d: int,
    job: AttentionJob,
    seed: int,
    *,
    ff_width: int = 2048,
    norm: Literal["sphere", "layer", "rms"] = "sphere",
) -> ToyTransformer:
    """The trained architecture: one attention layer (arXiv 2407.16153, Eq. 1) or the paper code's post-norm encoder.

    The lone attention layer has scores ``x_i^T Q_h^T K_h x_j`` with the 1/sqrt(r) scale folded into Q
    (``qk_scale = 1``) and full-rank ``V_h``. (An explicit 1/sqrt(r) scale slows the growth of the
    inverse temperature the full-rank head needs: at 600 steps its d·MSE is about 0.2 instead of 0.1.)
    In the encoder, as in the paper's code (w copies of ``torch.nn.MultiheadAttention``), scores carry
    1/sqrt(r) and each head's value/output rank is r; ``job.depth`` post-norm blocks with a ReLU FF block
    of width ``ff_width``.
    """
    total = job.heads * job.width
    if architecture == "attention":
        return attention_only(d, total, job.rank, qk_scale=1.0, seed=seed)
    return ToyTransformer(
        d_model=d,
        n_layers=job.depth,
        n_heads=total,
        head_rank=job.rank,
        value_dim=job.rank,
        mlp_width=ff_width,
        activation="relu",
        norm=norm,
        norm_position="post",
        bias=True,
        seed=seed,
    )


def train_job(
    job: AttentionJob,
    models: StackedModels,
    data_generators: Sequence[torch.Generator],
    eval_x: Tensor,
    eval_y: Tensor,
    probe: NearestPointSets,
    *,
    d: int,
    batch: int,
    steps: int,
    optim: AdamWSchedule,
    eval_chunk: int,
    device: torch.device | str = "cpu",
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[list[dict], pd.DataFrame, pd.DataFrame]:
    """Train the stacked seeds of ``job`` on fresh farthest-point sets with the d·MSE loss; measure each seed.

    Seed ``s`` draws ``batch`` sets of ``job.n_points`` per step from ``data_generators[s]``. Returns
    (one row per seed: d·MSE on ``eval_x``/``eval_y``, best head's arg-max hit rate and mean entropy of
    the first layer's patterns on ``probe``, first diverged step or -1; the loss curve; one row per
    head). A seed whose loss is not finite is logged through ``log`` and gets NaN measurements;
    :class:`~theorylab.core.errors.Diverged` is raised when every seed diverged.
    """
    seeds = range(models.size)

    def batches(step: int) -> tuple[Tensor, Tensor]:
        sets = [nearest_point_sets(d, job.n_points, batch, g, device=device) for g in data_generators]
        return torch.stack([s.sequence for s in sets]), torch.stack([s.targets for s in sets])

    trace = train_stacked(
        models, batches, d_mse, steps=steps, optim=optim, progress=progress, description=f"train {job.name}"
    )
    curve = trace.table(member_labels=list(seeds)).rename(columns={"member": "seed"}).assign(job=job.name)
    diverged = trace.diverged_at
    if diverged.min() >= 0:
        raise Diverged(f"training loss of every seed of {job.name}", int(diverged.min()))
    for s in np.flatnonzero(diverged >= 0):
        if log is not None:
            log(f"{job.name}: seed {s} diverged at step {diverged[s]}; excluded from its configuration's min/median")
    preds = evaluate_stacked(models, eval_x[None].expand(models.size, *eval_x.shape), chunk=eval_chunk)
    errors = (preds - eval_y).pow(2).sum(-1).mean(dim=(1, 2)).double().cpu().numpy()
    rows, heads = [], []
    for s in seeds:
        hit, entropy = (float("nan"), float("nan"))
        if diverged[s] < 0:
            # First layer: where each head of each query looks (entropy and arg-max accuracy).
            patterns = attention_patterns(models.member(s), probe.sequence)[0]
            hits = argmax_hit_rate(patterns, probe.index.to(patterns.device)).cpu().numpy()
            entropies = attention_entropy(patterns).double().cpu().numpy()
            hit, entropy = float(hits.max()), float(entropies.mean())
            heads.append(
                pd.DataFrame(
                    {
                        "job": job.name,
                        "seed": s,
                        "layer": 0,
                        "head": np.arange(len(hits)),
                        "argmax_hit": hits,
                        "entropy": entropies,
                    }
                )
            )
        rows.append(
            dict(
                job=job.name,
                depth=job.depth,
                heads=job.heads,
                rank=job.rank,
                width=job.width,
                total_heads=job.heads * job.width,
                n_points=job.n_points,
                seed=s,
                dmse=float(errors[s]) if diverged[s] < 0 else float("nan"),
                argmax_hit_best_head=hit,
                entropy_mean=entropy,
                diverged_step=int(diverged[s]),
            )
        )
    head_table = pd.concat(heads, ignore_index=True) if heads else pd.DataFrame(columns=HEAD_COLUMNS)
    return rows, curve, head_table


@dataclass(frozen=True)
class GridJobItem:
    """One configuration of a grid with everything its training needs: picklable, so that it can run as a task
    elsewhere (:meth:`~theorylab.core.context.RunContext.map`) and give what it gives here."""

    job: AttentionJob
    grids: str
    architecture: str
    d: int
    init_seeds: tuple[int, ...]
    data_generators: tuple[torch.Generator, ...]
    eval_x: Tensor
    eval_y: Tensor
    probe: NearestPointSets
    batch: int
    steps: int
    optim: AdamWSchedule
    eval_chunk: int
    ff_width: int
    norm: str
    device: str


def train_grid_item(
    item: GridJobItem, progress: Progress | None = None
) -> tuple[list[dict], pd.DataFrame, pd.DataFrame, list[str]]:
    """:func:`train_job` on one grid item: (rows with their "grids", loss curve, heads, log lines)."""
    models = StackedModels(
        [
            build_attention_model(
                item.architecture,
                item.d,
                item.job,
                seed,  # type: ignore[arg-type]
                ff_width=item.ff_width,
                norm=item.norm,
            )  # type: ignore[arg-type]
            for seed in item.init_seeds
        ]
    ).to(item.device)
    lines: list[str] = []
    rows, curve, heads = train_job(
        item.job,
        models,
        item.data_generators,
        item.eval_x,
        item.eval_y,
        item.probe,
        d=item.d,
        batch=item.batch,
        steps=item.steps,
        optim=item.optim,
        eval_chunk=item.eval_chunk,
        device=item.device,
        progress=progress,
        log=lines.append,
    )
    for row in rows:
        row["grids"] = item.grids
    return rows, curve, heads, lines


def train_job_grid(
    grids: Mapping[AttentionJob, set[str]],
    *,
    architecture: Literal["attention", "encoder"],
    d: int,
    seeds: int,
    init_seed: Callable[[AttentionJob, int], int],
    data_generator: Callable[[int, int], torch.Generator],
    eval_generator: Callable[[int], torch.Generator],
    eval_sets: int,
    probe_sets: int,
    batch: int,
    steps: int,
    optim: AdamWSchedule,
    eval_chunk: int,
    ff_width: int = 2048,
    norm: Literal["sphere", "layer", "rms"] = "sphere",
    device: torch.device | str = "cpu",
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
    map_jobs: Callable[..., list] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Train every job of ``grids`` (from :func:`job_grid`) with :func:`train_job`.

    Returns (trained, loss curves, heads).

    The random streams are named by the caller: ``init_seed(job, s)`` seeds seed ``s``'s model,
    ``data_generator(n_points, s)`` is seed ``s``'s training stream (called afresh for every job, so
    jobs of one set size see the same sets: common random numbers), and ``eval_generator(n_points)``
    draws, once per set size, ``eval_sets`` evaluation sets then ``probe_sets`` probe sets. The
    trained table has one row per (job, seed) with a "grids" column and the columns d, architecture, steps.

    Every job becomes a :class:`GridJobItem` holding its streams, and ``map_jobs(train_grid_item, items,
    description)`` trains them (``RunContext.map``: here or as Ray tasks; default: here, one after another, with
    ``progress``); the outputs are merged in job order, so the tables do not depend on where the jobs ran.
    """
    evals: dict[int, tuple] = {}
    items = []
    for job in grids:
        if job.n_points not in evals:
            gen = eval_generator(job.n_points)
            sets = nearest_point_sets(d, job.n_points, eval_sets, gen, device=device)
            probe = nearest_point_sets(d, job.n_points, probe_sets, gen, device=device)
            evals[job.n_points] = (sets.sequence, sets.targets, probe)
        items.append(
            GridJobItem(
                job,
                ",".join(sorted(grids[job])),
                architecture,
                d,
                tuple(init_seed(job, s) for s in range(seeds)),
                tuple(data_generator(job.n_points, s) for s in range(seeds)),
                *evals[job.n_points],
                batch=batch,
                steps=steps,
                optim=optim,
                eval_chunk=eval_chunk,
                ff_width=ff_width,
                norm=norm,
                device=str(device),
            )
        )
    if map_jobs is None:
        outputs = JobExecutor().map(train_grid_item, items, progress, "configurations")
    else:
        outputs = map_jobs(train_grid_item, items, "configurations")
    rows, curves, heads = [], [], []
    for job_rows, curve, head_table, lines in outputs:
        rows += job_rows
        curves.append(curve)
        heads.append(head_table)
        for line in lines if log is not None else ():
            log(line)
    table = pd.DataFrame(rows).assign(d=d, architecture=architecture, steps=steps)
    return table, pd.concat(curves, ignore_index=True), pd.concat(heads, ignore_index=True)


def seed_summary(trained: pd.DataFrame) -> pd.DataFrame:
    """Min and median d·MSE over seeds per configuration (diverged seeds, NaN, excluded).

    The paper reports the min over 5 seeds."""
    keys = ["grids", "depth", "heads", "rank", "width", "total_heads", "n_points"]
    return trained.groupby(keys, as_index=False)["dmse"].agg(dmse_min="min", dmse_median="median", seeds="count")


def grid_summary(trained: pd.DataFrame, grid: str, **equal: object) -> pd.DataFrame:
    """:func:`seed_summary` of the configurations of one grid ("heads" or "length") whose columns equal ``equal``
    (e.g. ``depth=1, n_points=16``), in :func:`seed_summary`'s row order."""
    s = seed_summary(trained)
    keep = s["grids"].str.contains(grid)
    for column, value in equal.items():
        keep &= s[column] == value
    return s[keep]
