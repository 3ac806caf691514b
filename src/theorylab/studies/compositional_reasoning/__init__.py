"""compositional-reasoning: tree-structured questions (CRQs) for transformers, RNNs and chain of thought.

Paper: Yehudai, Amsel & Bruna, *Compositional Reasoning with Transformers, RNNs, and Chain of Thought*, arXiv
2503.01544 (NeurIPS 2025). A CRQ is a rooted tree with a vector z_v at each node; a leaf answers z_v and an internal
node the child answer best aligned with z_v (Sec. 2); Boolean formulas are the case m = 1. Transformers need depth
growing with n, RNNs need Theta(log n) state when the tree arrives in a suitable order, CoT transformers need n
tokens. The paper is theoretical: the quick preset checks the exact statements we can compute (Boolean encoding,
streaming fold = recursion, the floor(log2 n) heavy-first memory bound and its failure in light-first order) and
trains two GRUs on caterpillar formulas in the two orders; the cpu preset runs a reduced GRU sweep (claim 6), the
cpu-transformer preset reduced transformer sweeps (D = 2, 3; claims 7-8), and the paper preset the card's sweeps.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from theorylab.core import RunContext, study
from theorylab.data.crq import (
    FAMILIES,
    PAD,
    boolean_crq_labels,
    boolean_labels,
    euler_tour,
    sample_forest,
    sphere_labels,
)
from theorylab.nn.rnn import RNN
from theorylab.studies.compositional_reasoning.config import PRESETS, CompositionalReasoningConfig
from theorylab.studies.compositional_reasoning.figures import figure_depth_vs_d, figure_rnn_heatmap, figure_stack
from theorylab.studies.compositional_reasoning.judges import claims
from theorylab.theory.crq import boolean_values, fold_evaluate, heavy_first_bound, recursive_answers
from theorylab.train.crq import (
    crq_transformer,
    rnn_accuracy,
    sample_formulas,
    train_rnn_stack,
    train_transformer,
    transformer_accuracy,
)

PAPER = "Yehudai, Amsel & Bruna, arXiv 2503.01544 (NeurIPS 2025)"
STACK_ORDERS = ("heavy_first", "light_first", "random")


def _leaf_grid(family: str, top: int) -> list[int]:
    """n = 2..top for every family; powers of 2 only for complete binary trees."""
    if family == "complete_binary":
        return [1 << k for k in range(1, int(top).bit_length()) if 1 << k <= top]
    return list(range(2, top + 1))


def _per_n(total: int, grid: list[int]) -> list[int]:
    """Split ``total`` trees over the grid as evenly as possible (the first ones get one more)."""
    q, r = divmod(total, len(grid))
    return [q + (i < r) for i in range(len(grid))]


def _boolean(cfg: CompositionalReasoningConfig, ctx: RunContext) -> None:
    """Claim 1: CRQ evaluation of the +-e encoding vs direct AND/OR evaluation, at every node."""
    rows = []
    for fam in FAMILIES:
        grid = _leaf_grid(fam, cfg.exact_max_leaves)
        for n, count in zip(grid, _per_n(cfg.exact_trees // len(FAMILIES), grid)):
            if count == 0:
                continue
            rng = ctx.rng(f"boolean {fam} {n}")
            forest = sample_forest(fam, n, count, rng)
            labels = boolean_labels(forest, rng)
            direct = boolean_values(forest, labels)  # (B, N)
            crq = recursive_answers(forest, boolean_crq_labels(forest, labels))[..., 0] > 0  # (B, N)
            wrong = (direct != crq) & forest.valid
            rows.append(
                dict(
                    family=fam,
                    n=n,
                    trees=count,
                    root_agree=int((direct[:, 0] == crq[:, 0]).sum()),
                    node_mismatches=int(wrong.sum()),
                    root_true=int(direct[:, 0].sum()),
                )
            )
    ctx.table("boolean", pd.DataFrame(rows))


def _pad_stack(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenate (nodes, types, z) of several forests, padding events with PAD and labels with zeros."""
    T = max(p[0].shape[1] for p in parts)
    N = max(p[2].shape[1] for p in parts)
    m = parts[0][2].shape[2]
    nodes = np.concatenate([np.pad(p[0], ((0, 0), (0, T - p[0].shape[1]))) for p in parts])
    types = np.concatenate([np.pad(p[1], ((0, 0), (0, T - p[1].shape[1])), constant_values=PAD) for p in parts])
    z = np.concatenate([np.pad(p[2], ((0, 0), (0, N - p[2].shape[1]), (0, 0))) for p in parts])
    assert z.shape[2] == m
    return nodes, types, z


def _fold(cfg: CompositionalReasoningConfig, ctx: RunContext) -> None:
    """Claim 2: the streaming fold (each order in turn) returns the recursive root answer, bitwise."""
    meta, parts, refs = [], [], []
    k = 0
    for fam in FAMILIES:
        grid = _leaf_grid(fam, cfg.exact_max_leaves)
        for n, count in zip(grid, _per_n(cfg.exact_trees // len(FAMILIES), grid)):
            if count == 0:
                continue
            order = STACK_ORDERS[k % len(STACK_ORDERS)]
            k += 1
            rng = ctx.rng(f"fold {fam} {n}")
            forest = sample_forest(fam, n, count, rng)
            z = sphere_labels(forest, cfg.label_dim, rng)
            nodes, types = euler_tour(forest, order, rng)
            parts.append((nodes, types, z))
            refs.append(recursive_answers(forest, z)[:, 0])
            meta.append(dict(family=fam, n=n, order=order, trees=count))
    nodes, types, z = _pad_stack(parts)
    root, _ = fold_evaluate(nodes, types, z)
    ref = np.concatenate(refs)
    rows, start = [], 0
    for row, r in zip(meta, refs):
        got = root[start : start + len(r)]
        start += len(r)
        rows.append(
            dict(**row, bitwise_equal=int((got == r).all(axis=1).sum()), max_abs_diff=float(np.abs(got - r).max()))
        )
    assert start == len(ref)
    ctx.table("fold", pd.DataFrame(rows))


def _stack(cfg: CompositionalReasoningConfig, ctx: RunContext) -> None:
    """Claims 3-4: the pending-partials meter of the streaming fold per (family, n, order)."""
    rows = []
    for n in ctx.progress(cfg.stack_leaves, "pending-partials meter"):
        parts, meta = [], []
        for fam in FAMILIES:
            rng = ctx.rng(f"stack {fam} {n}")
            forest = sample_forest(fam, n, cfg.stack_trees, rng)
            z = sphere_labels(forest, 1, rng)  # the meter does not depend on the labels
            for order in STACK_ORDERS:
                nodes, types = euler_tour(forest, order, rng)
                parts.append((nodes, types, z))
                meta.append((fam, order))
        nodes, types, z = _pad_stack(parts)
        _, most = fold_evaluate(nodes, types, z)
        for i, (fam, order) in enumerate(meta):
            for t, p in enumerate(most[i * cfg.stack_trees : (i + 1) * cfg.stack_trees]):
                rows.append(dict(family=fam, n=n, order=order, tree=t, max_pending=int(p)))
    t = pd.DataFrame(rows)
    t["log2_floor"] = heavy_first_bound(t["n"].to_numpy())
    ctx.table("stack", t)


def _stacks(keys: list[dict], cap: int) -> list[list[dict]]:
    """Group the GRU runs into stacks trained as one block-diagonal GRU: runs of one n (one token length), in order
    of h, while the summed state stays <= ``cap`` (a run with h >= cap is alone)."""
    out: list[list[dict]] = []
    for n in sorted({k["n"] for k in keys}):
        group: list[dict] = []
        for k in sorted((k for k in keys if k["n"] == n), key=lambda k: k["hidden"]):
            if group and sum(g["hidden"] for g in group) + k["hidden"] > cap:
                out.append(group)
                group = []
            group.append(k)
        out.append(group)
    return out


def _gru(cfg: CompositionalReasoningConfig, ctx: RunContext) -> None:
    """Claims 5-6: GRUs reading caterpillar formulas in postfix, per (n, h, order, seed). Runs of one n are trained
    together as block-diagonal stacks (``gru_stack_hidden``); each keeps its own data stream, init and Adam."""
    keys = [
        dict(n=n, hidden=h, order=order, seed=seed)
        for n in cfg.gru_leaves
        for h in cfg.gru_hidden
        for order in cfg.gru_orders
        for seed in range(cfg.gru_seeds)
    ]
    rows, curves = [], []
    for group in ctx.progress(_stacks(keys, cfg.gru_stack_hidden), "GRU stacks"):
        models, draws = [], []
        for k in group:
            n, h, order, seed = k["n"], k["hidden"], k["order"], k["seed"]
            rng = ctx.rng(f"gru data {n} {h} {order} {seed}")
            models.append(
                RNN(
                    "gru",
                    vocab_size=5,
                    hidden=h,
                    embedding=cfg.gru_embedding,
                    seed=ctx.seed(f"gru init {n} {h} {order} {seed}"),
                ).to(ctx.device)
            )
            draws.append(lambda c, rng=rng, order=order, n=n: sample_formulas("caterpillar", n, c, rng, order=order))
        t0 = time.perf_counter()
        losses = train_rnn_stack(
            models,
            draws,
            steps=cfg.gru_steps,
            batch=cfg.gru_batch,
            lr=cfg.gru_lr,
            device=ctx.device,
            check=ctx.check_finite,
        )
        seconds = (time.perf_counter() - t0) / len(group)  # the stack's time, shared evenly
        for k, model, loss in zip(group, models, losses):
            test = sample_formulas(
                "caterpillar",
                k["n"],
                cfg.eval_formulas,
                ctx.rng(f"gru test {k['n']} {k['order']} {k['seed']}"),
                order=k["order"],
                balanced=True,
            )
            acc = rnn_accuracy(model, test, chunk=cfg.chunk, device=ctx.device)
            every = max(1, len(loss) // 50)
            curves += [dict(**k, step=s, loss=float(np.mean(loss[s : s + every]))) for s in range(0, len(loss), every)]
            rows.append(dict(**k, accuracy=acc, final_loss=float(np.mean(loss[-50:])), seconds=seconds))
    order = {o: i for i, o in enumerate(cfg.gru_orders)}
    sort = ["n", "hidden", "order_rank", "seed"]
    table = pd.DataFrame(rows).assign(order_rank=lambda t: t["order"].map(order)).sort_values(sort)
    ctx.table("gru", table.drop(columns="order_rank").reset_index(drop=True))
    ctx.table("gru_curve", pd.DataFrame(curves))


def _transformer(cfg: CompositionalReasoningConfig, ctx: RunContext) -> None:
    """Claims 7-8: causal transformers on node tokens of complete binary formulas, without and with CoT."""
    rows = []
    for D in cfg.tf_tree_depths:
        n = 1 << D
        runs = [(L, False) for L in cfg.tf_n_layers] + [(cfg.tf_cot_n_layers, True)]
        for L, cot in runs:
            for seed in range(cfg.tf_seeds):
                tag = f"{D} {L} {cot} {seed}"
                rng = ctx.rng(f"tf data {tag}")
                model = crq_transformer(
                    n, L, d_model=cfg.tf_d_model, n_heads=cfg.tf_n_heads, cot=cot, seed=ctx.seed(f"tf init {tag}")
                ).to(ctx.device)
                t0 = time.perf_counter()
                losses = train_transformer(
                    model,
                    lambda k, rng=rng, n=n: sample_formulas(
                        "complete_binary", n, k, rng, task="nodes", order="given", balanced=True
                    ),
                    steps=cfg.tf_steps,
                    batch=cfg.tf_batch,
                    lr=cfg.tf_lr,
                    cot=cot,
                    device=ctx.device,
                    check=ctx.check_finite,
                )
                seconds = time.perf_counter() - t0
                test = sample_formulas(
                    "complete_binary",
                    n,
                    cfg.eval_formulas,
                    ctx.rng(f"tf test {D} {seed}"),
                    task="nodes",
                    order="given",
                    balanced=True,
                )
                acc = transformer_accuracy(model, test, cot=cot, chunk=cfg.chunk, device=ctx.device)
                rows.append(
                    dict(
                        depth=D,
                        n=n,
                        n_layers=L,
                        cot=cot,
                        seed=seed,
                        accuracy=acc,
                        final_loss=float(np.mean(losses[-50:])),
                        seconds=seconds,
                    )
                )
    ctx.table(
        "transformer",
        pd.DataFrame(rows, columns=["depth", "n", "n_layers", "cot", "seed", "accuracy", "final_loss", "seconds"]),
    )


@study(
    "compositional-reasoning",
    title="Compositional reasoning questions: log-depth transformers, log-state RNNs in heavy-first order, CoT",
    paper=PAPER,
    config=CompositionalReasoningConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
    # small recurrent models: one thread on a shared box
    cpu_threads=1,
)
def run(cfg: CompositionalReasoningConfig, ctx: RunContext) -> None:
    ctx.say(f"Boolean encoding and fold = recursion on {cfg.exact_trees} trees each (n <= {cfg.exact_max_leaves})")
    _boolean(cfg, ctx)
    _fold(cfg, ctx)
    _stack(cfg, ctx)
    figure_stack(ctx, ctx.tables["stack"])
    ctx.say(f"GRU: n {cfg.gru_leaves} x h {cfg.gru_hidden} x {cfg.gru_orders}, {cfg.gru_steps} steps")
    _gru(cfg, ctx)
    figure_rnn_heatmap(ctx, ctx.tables["gru"])
    if cfg.tf_tree_depths:
        ctx.say(f"transformers: D {cfg.tf_tree_depths} x L {cfg.tf_n_layers} (+ CoT L = {cfg.tf_cot_n_layers})")
    _transformer(cfg, ctx)
    figure_depth_vs_d(ctx, ctx.tables["transformer"])
