"""graph-tokenization: what a graph tokenization lets a transformer compute.

Paper: Bechler-Speicher, Yehudai, Harari, Sanford, Globerson & Bruna, *Lost in Tokenization: Fundamental Trade-offs
in Graph Tokenization for Transformers*, arXiv 2605.22471 (2026). A transformer sees a graph only through its
tokens: random-walk tokens are lossy (the Shrikhande and 4x4 rook's graphs share them), spectral tokens are lossless
but defined only up to signs and eigenspace rotations, adjacency tokens expose edges but make global questions need
depth; tasks favour different tokenizations and concatenating them helps.

The run: exact checks on the srg(16, 6, 2, 2) pair, spectral reconstruction, the C_12 basis ambiguity and the
eigenvalue 1 of ``P`` (``theory.graphs``, ``data.graph_tokens``); trained models per (task, tokenization, n, L, seed)
(``nn.graph_heads``, ``train.graph_tasks``); RW and adjacency models trained to tell relabelled Shrikhande from
rook, and their pooled-logit gaps (``probes.invariance``); on the paper preset the ``in_K4`` srg discrimination.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data import graph_tokens as gt
from theorylab.nn.graph_heads import GraphTransformer
from theorylab.probes import tokenization_checks as checks
from theorylab.probes.invariance import invariance_gaps, pair_accuracy
from theorylab.studies.graph_tokenization.config import PRESETS, GraphTokenizationConfig
from theorylab.studies.graph_tokenization.figures import figure_depth_curves, figure_heatmap, figure_srg_pair
from theorylab.studies.graph_tokenization.judges import claims
from theorylab.theory import graphs as tg
from theorylab.train.graph_tasks import GraphJob, accuracy, train_graph_models, train_stacked_graph_models

PAPER = "Bechler-Speicher, Yehudai, Harari, Sanford, Globerson & Bruna, arXiv 2605.22471 (2026)"
UNIT_TOL = 1e-9  # |μ - 1| below which an eigenvalue of P counts as 1 (float64 eigvalsh on n <= 128: error ~1e-14)


# --- exact checks (probes.tokenization_checks) ------------------------------------------------------------------
def _srg_exact(cfg: GraphTokenizationConfig, ctx: RunContext) -> None:
    """Claims 1-2: RW tokens of Shrikhande vs rook (t = 1..rw_horizon) against the srg closed form; the two graphs'
    K4 counts, isomorphism, 1-WL hashes; components of G[N(i)] read from relabelled adjacency tokens."""
    S, R = checks.srg_pair(ctx.generator("srg relabel"))
    ctx.table("rw_collision", checks.rw_collision(S, R, cfg.rw_horizon))
    ctx.table("srg_facts", checks.srg_facts(S, R))
    ctx.table("nbhd_components", checks.neighbourhood_components(S, R))


def _spectral_exact(cfg: GraphTokenizationConfig, ctx: RunContext) -> None:
    """Claims 3-4: L rebuilt from spectral tokens (k = n, random signs and eigenspace rotations); the C_n rotation."""
    gen = ctx.generator("spectral exact")
    graphs = [("shrikhande", gt.shrikhande()), ("rook", gt.rook_graph())]
    graphs += [("erdos_renyi", a) for a in gt.erdos_renyi(16, cfg.exact_er_p, gen, cfg.exact_er_graphs)]
    ctx.table("spectral_reconstruction", checks.spectral_reconstruction(graphs, gen))
    ctx.table("basis_ambiguity", checks.basis_ambiguity(cfg.cycle_nodes))


def _bank(ctx: RunContext, cfg: GraphTokenizationConfig, task: str, n: int, replica: int, split: str):
    """Graphs and labels of one bank (a named stream, so the exact checks can redraw the same graphs)."""
    gen = ctx.generator(f"bank {task} {n} {replica} {split}")
    count = cfg.train_graphs if split == "train" else cfg.test_graphs
    if task == "components":
        A, c = gt.component_unions(n, count, gen, cfg.max_components, cfg.p_extra)
        return A, c - 1, None, c
    A = gt.task_graphs(task, n, count, gen, cfg.p_low, cfg.p_high)
    y, pairs = gt.task_labels(task, A, gen, cfg.lambda2_threshold)
    return A, y, pairs, None


def _walk_exact(cfg: GraphTokenizationConfig, ctx: RunContext) -> None:
    """Claim 8: on the components test unions, #{μ(P) within 1e-9 of 1} vs the generated c; tr(P^t) vs Σ μ^t."""
    n = cfg.n_nodes[0]
    A, _, _, c = _bank(ctx, cfg, "components", n, 0, "test")
    mu = tg.walk_eigenvalues(A)  # (B, n)
    traces = tg.walk_traces(A, cfg.trace_steps)  # (B, T)
    powers = torch.stack([(mu**t).sum(-1) for t in range(1, cfg.trace_steps + 1)], -1)
    ctx.table(
        "rw_eigen",
        pd.DataFrame(
            dict(
                graph=np.arange(len(c)),
                n=n,
                components=c.numpy(),
                unit_eigenvalues=((mu - 1).abs() <= UNIT_TOL).sum(-1).numpy(),
                max_trace_error=(traces - powers).abs().amax(-1).numpy(),
                trace_last=traces[:, -1].numpy(),
            )
        ),
    )


# --- training -----------------------------------------------------------------------------------------------------
def _tokens(
    cfg: GraphTokenizationConfig,
    A: torch.Tensor,
    kind: str,
    n_max: int,
    gen: torch.Generator,
    pairs: torch.Tensor | None,
) -> torch.Tensor:
    x = gt.tokenize(
        A,
        kind,
        n_max,
        rw_steps=cfg.rw_steps,
        sign=cfg.spectral_sign,
        basis=cfg.spectral_basis,
        generator=gen,
        dtype=torch.float32,
    )
    return gt.mark_pairs(x, pairs) if pairs is not None else x


def _augment(cfg: GraphTokenizationConfig, kind: str, n: int):
    if cfg.spectral_sign != "random" or gt.eigenvector_columns(kind, n) is None:
        return None
    return lambda x, g: gt.random_sign_flip(x, kind, n, g)


def _train(cfg: GraphTokenizationConfig, ctx: RunContext, device: torch.device) -> None:
    """Accuracy per (task, tokenization, n, L, seed): the models of the whole grid trained together."""
    jobs, meta = [], []
    for n in cfg.n_nodes:
        for replica in range(cfg.seeds):
            for task in cfg.tasks:
                Atr, ytr, ptr, _ = _bank(ctx, cfg, task, n, replica, "train")
                Ate, yte, pte, _ = _bank(ctx, cfg, task, n, replica, "test")
                level = "node" if task in gt.NODE_TASKS else "graph"
                for kind in cfg.tokenizations:
                    gen = ctx.generator(f"tokens {task} {kind} {n} {replica}")
                    xtr = _tokens(cfg, Atr, kind, n, gen, ptr).to(device)
                    xte = _tokens(cfg, Ate, kind, n, gen, pte).to(device)
                    for L in cfg.n_layers:
                        key = dict(task=task, tokenization=kind, n=n, n_layers=L, seed=replica)
                        model = GraphTransformer(
                            xtr.shape[-1],
                            gt.n_classes(task, n, cfg.max_components),
                            level,
                            n_layers=L,
                            d_model=cfg.d_model,
                            n_heads=cfg.n_heads,
                            mlp_mult=cfg.mlp_mult,
                            seed=ctx.seed(f"init {task} {kind} {n} {L} {replica}"),
                        ).to(device)
                        jobs.append(
                            GraphJob(
                                model,
                                xtr,
                                ytr.to(device),
                                gt.node_mask(n, n, (len(xtr),)).to(device),
                                ctx.generator(f"batches {task} {kind} {n} {L} {replica}"),
                                _augment(cfg, kind, n),
                            )
                        )
                        meta.append((key, xte, yte.to(device), gt.node_mask(n, n, (len(xte),)).to(device)))
    ctx.say(f"training {len(jobs)} model(s), {cfg.steps} steps ({'stacked' if cfg.stacked else 'one by one'})")
    t0 = time.perf_counter()
    trainer = train_stacked_graph_models if cfg.stacked else train_graph_models
    try:
        trainer(jobs, steps=cfg.steps, lr=cfg.lr, batch=cfg.batch, decay_frac=cfg.lr_decay_frac)
    except FloatingPointError as e:
        ctx.check_finite(f"graph-model loss ({e})", math.nan)
    seconds = time.perf_counter() - t0
    rows = [
        dict(**key, accuracy=accuracy(j.model, xte, yte, mte), final_loss=j.losses[-1], steps=cfg.steps)
        for j, (key, xte, yte, mte) in zip(jobs, meta)
    ]
    ctx.table("accuracy", pd.DataFrame(rows))
    every = 50  # train_graph_models records the loss every 50 steps and at the last
    recorded = sorted(set(range(0, cfg.steps, every)) | {cfg.steps - 1})
    ctx.table(
        "loss_curve",
        pd.DataFrame(
            [dict(**key, step=s, loss=v) for j, (key, *_) in zip(jobs, meta) for s, v in zip(recorded, j.losses)]
        ),
    )
    ctx.scalar("training_seconds", seconds)


# --- srg pair -----------------------------------------------------------------------------------------------------
def _pair_data(cfg: GraphTokenizationConfig, ctx: RunContext, copies: int, name: str):
    gen = ctx.generator(f"srg pairs {name}")
    S, R = gt.relabelled_pairs(gt.shrikhande(), gt.rook_graph(), copies, gen)
    return S, R, gen


def _srg_tokens(cfg: GraphTokenizationConfig, A: torch.Tensor, kind: str, gen: torch.Generator) -> torch.Tensor:
    if kind == "eigenvalues":  # claim 10's eigenvalue-only spectral tokens: [λ_1..λ_n] at every node
        return gt.tokenize(A, "spectral", generator=gen, dtype=torch.float32)[..., A.shape[-1] :]
    return gt.tokenize(
        A,
        kind,
        rw_steps=cfg.rw_steps,
        sign=cfg.spectral_sign,
        basis=cfg.spectral_basis,
        generator=gen,
        dtype=torch.float32,
    )


def _srg_pair(cfg: GraphTokenizationConfig, ctx: RunContext, device: torch.device) -> None:
    """Claim 5: RW and adjacency models trained to tell relabelled Shrikhande (0) from rook (1); their pooled-logit
    gaps on fresh relabellings and their pair accuracy."""
    Str, Rtr, gtr = _pair_data(cfg, ctx, cfg.pair_train_copies, "train")
    Ste, Rte, gte = _pair_data(cfg, ctx, cfg.pair_test_copies, "test")
    mask_tr = gt.node_mask(16, 16, (2 * cfg.pair_train_copies,)).to(device)
    y = torch.cat([torch.zeros(cfg.pair_train_copies), torch.ones(cfg.pair_train_copies)]).long().to(device)
    jobs, kinds = [], ("random_walk", "adjacency")
    for kind in kinds:
        x = torch.cat([_srg_tokens(cfg, Str, kind, gtr), _srg_tokens(cfg, Rtr, kind, gtr)]).to(device)
        model = GraphTransformer(
            x.shape[-1],
            2,
            "graph",
            n_layers=cfg.pair_n_layers,
            d_model=cfg.d_model,
            n_heads=cfg.n_heads,
            mlp_mult=cfg.mlp_mult,
            seed=ctx.seed(f"pair init {kind}"),
        )
        jobs.append(
            GraphJob(model.to(device), x, y, mask_tr, ctx.generator(f"pair batches {kind}"), _augment(cfg, kind, 16))
        )
    try:
        train_graph_models(jobs, steps=cfg.pair_steps, lr=cfg.lr, batch=cfg.batch, decay_frac=cfg.lr_decay_frac)
    except FloatingPointError as e:
        ctx.check_finite(f"srg-pair loss ({e})", math.nan)
    rows = []
    for kind, j in zip(kinds, jobs):
        a, b = _srg_tokens(cfg, Ste, kind, gte).to(device), _srg_tokens(cfg, Rte, kind, gte).to(device)
        gaps = invariance_gaps(j.model, a, b)
        rows.append(
            dict(
                tokenization=kind,
                steps=cfg.pair_steps,
                n_layers=cfg.pair_n_layers,
                pairs=len(gaps),
                max_logit_gap=float(gaps.max()),
                median_logit_gap=float(gaps.median()),
                pair_accuracy=pair_accuracy(j.model, a, b),
                final_loss=j.losses[-1],
            )
        )
    ctx.table("srg_pair", pd.DataFrame(rows))


def _srg_discrimination(cfg: GraphTokenizationConfig, ctx: RunContext, device: torch.device) -> None:
    """Claim 10 (paper): node-level in_K4 on relabelled srg copies (Shrikhande: no node in a K4; rook: every node),
    for adjacency, RW and eigenvalue-only tokens at each depth of ``srg_n_layers``."""
    rows = []
    if cfg.srg_n_layers:
        Str, Rtr, gtr = _pair_data(cfg, ctx, cfg.pair_train_copies, "k4 train")
        Ste, Rte, gte = _pair_data(cfg, ctx, cfg.pair_test_copies, "k4 test")
        Atr, Ate = torch.cat([Str, Rtr]), torch.cat([Ste, Rte])
        ytr, yte = gt.in_k4(Atr).long().to(device), gt.in_k4(Ate).long().to(device)
        jobs, keys = [], []
        for kind in ("adjacency", "random_walk", "eigenvalues"):
            xtr = _srg_tokens(cfg, Atr, kind, gtr).to(device)
            xte = _srg_tokens(cfg, Ate, kind, gte).to(device)
            for L in cfg.srg_n_layers:
                model = GraphTransformer(
                    xtr.shape[-1],
                    2,
                    "node",
                    n_layers=L,
                    d_model=cfg.d_model,
                    n_heads=cfg.n_heads,
                    mlp_mult=cfg.mlp_mult,
                    seed=ctx.seed(f"k4 init {kind} {L}"),
                ).to(device)
                mtr = gt.node_mask(16, 16, (len(xtr),)).to(device)
                jobs.append(
                    GraphJob(
                        model,
                        xtr,
                        ytr,
                        mtr,
                        ctx.generator(f"k4 batches {kind} {L}"),
                        _augment(cfg, kind, 16) if kind != "eigenvalues" else None,
                    )
                )
                keys.append((kind, L, xte))
        try:
            train_graph_models(jobs, steps=cfg.srg_steps, lr=cfg.lr, batch=cfg.batch, decay_frac=cfg.lr_decay_frac)
        except FloatingPointError as e:
            ctx.check_finite(f"in_K4 srg loss ({e})", math.nan)
        mte = gt.node_mask(16, 16, (len(Ate),)).to(device)
        rows = [
            dict(tokenization=kind, n_layers=L, steps=cfg.srg_steps, accuracy=accuracy(j.model, xte, yte, mte))
            for j, (kind, L, xte) in zip(jobs, keys)
        ]
    ctx.table("srg_discrimination", pd.DataFrame(rows, columns=["tokenization", "n_layers", "steps", "accuracy"]))


@study(
    "graph-tokenization",
    title="Graph tokenization and transformer expressivity: RW tokens are lossy, spectral tokens lossless but "
    "basis-ambiguous, adjacency tokens local; tasks favour different views and concatenation helps",
    paper=PAPER,
    config=GraphTokenizationConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
    # many tiny models: one thread on a shared box
    cpu_threads=1,
)
def run(cfg: GraphTokenizationConfig, ctx: RunContext) -> None:
    ctx.say("exact checks: srg(16, 6, 2, 2) pair, spectral reconstruction, C_n basis rotation, eigenvalue 1 of P")
    _srg_exact(cfg, ctx)
    _spectral_exact(cfg, ctx)
    _walk_exact(cfg, ctx)
    _train(cfg, ctx, ctx.device)
    ctx.say(f"srg pair: RW and adjacency models, {cfg.pair_steps} steps")
    _srg_pair(cfg, ctx, ctx.device)
    if cfg.srg_n_layers:
        ctx.say(f"srg discrimination on in_K4 at L = {cfg.srg_n_layers}")
    _srg_discrimination(cfg, ctx, ctx.device)
    figure_heatmap(ctx, ctx.tables["accuracy"])
    figure_depth_curves(ctx, ctx.tables["accuracy"])
    figure_srg_pair(ctx, gt.shrikhande(), gt.rook_graph(), cfg.rw_steps, ctx.tables["srg_pair"])
