"""mpnn-algorithms: algorithm-aligned MPNNs trained on tiny graphs hold at any size.

Paper: S. Wittig, A. Vasileiou, R. R. Nerem, T. Stoll, F. Geerts, Y. Wang, C. Morris, "Which
Algorithms Can Graph Neural Networks Learn?", arXiv 2602.13106 (2026), after R. R. Nerem, S. Chen,
S. Dasgupta, Y. Wang, "Graph neural networks extrapolate out-of-distribution for shortest paths",
arXiv 2503.19173.

A recurrent min-aggregation MPNN ``h_v <- min(h_v, min_u f_θ(h_u, w_uv))`` is trained on at most ten
3-node graphs (with an L1 penalty η‖θ‖₁) and tested against exact Bellman–Ford on Erdős–Rényi graphs
up to 1024 nodes (10⁴ at the paper preset): the regularised network's error stays flat, its message
function is x + w far outside the training range, while sum/mean aggregation fail. The same
architecture with max aggregation learns the 0-1 knapsack DP on a layered DAG from ≤ 4 items and
holds at 50 items; with f* = max(x, w) it learns bottleneck distances, which decide minimum
spanning tree edges.

Restarts are ours, for seed robustness: the knapsack models train 2 inits per seed in the same
stack, and each seed keeps the one with the lowest error on held-out instances of the *training*
distribution (never a test size). An init that stalls (run seed 5: training loss 25x its
siblings', f_θ off by 0.3 already at x <= 40, then 1e-1 error at 50 items) shows there at 40x
its sibling's validation error. The paper preset selects the minimax models the same way.

The MST claim is judged at paper size only. Measured on 2 cores (run seeds 0-2, 1500 steps): single
inits reach member F1 0.70-0.998, and neither η = 1e-4 (seed 0: 0.998 x 3; seed 1: 0.58-0.80), a
coarser training grid, nor 4000 steps (seed 0: 0.44-0.85) makes it reliable. The cause is the
encoding: above the kink, max(x, w) is the identity in x, so the min-fixpoint (up to n rounds) can
compose f_θ around cycles, and a deficit δ = max over x > w of x − f_θ(x, w) lowers bottlenecks by
up to ~nδ; the readout "w_uv <= D(u, v)(1 + 1e-3)" then drops true tree edges once nδ exceeds
1e-3·w. A member with f_θ within 1.6e-3 of max(x, w) on the whole training range still scored F1
0.70. Bellman-Ford does not suffer this: x + w grows by w >= 1 per hop, so cycles never lower a
distance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
import pandas as pd
import torch
from pydantic import Field

from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import MissingExtra, Undecided
from theorylab.core.fields import Draws, LearningRate, SampleSize, Seeds, Steps, Width
from theorylab.core.plotting import color, new_figure
from theorylab.data.graphs import (
    batch,
    bf_tiny_training_set,
    erdos_renyi_weighted,
    knapsack_graph,
    knapsack_instance,
    knapsack_instances,
    minimax_distances,
    minimax_tiny_training_set,
    minimax_validation_set,
    random_test_graph,
    symmetrize,
    wl_indistinguishable_pair,
)
from theorylab.probes.algorithm_errors import (
    knapsack_optima,
    message_function_errors,
    mst_classification,
    node_embedding_gaps,
    pair_embedding_gaps,
    shortest_path_errors,
)
from theorylab.theory.algorithms import (
    bellman_ford,
    bellman_ford_scipy_error,
    knapsack_brute_force_error,
    knapsack_dp_targets,
    msf_weight,
    wl_colors,
)
from theorylab.train.algorithms import select_restarts, train_task_stack

if TYPE_CHECKING:
    from theorylab.nn.mpnn import AlignedMPNN

PAPER = "Wittig, Vasileiou, Nerem, Stoll, Geerts, Wang, Morris, arXiv 2602.13106 (2026); Nerem et al., arXiv 2503.19173"
REF = "arXiv 2602.13106"
Loss = Literal["mse", "multiplicative"]
Family = Literal["er", "grid", "tree"]


Sparsity = Annotated[float, Field(ge=0, le=1)]  # L1 (or smooth-L1) penalty strength eta
GraphSize = Annotated[int, Field(ge=2, le=100_000)]  # nodes of a test graph


class MPNNAlgorithmsConfig(StudyConfig):
    sparsities: tuple[Sparsity, ...] = Field((0.0, 1e-3), min_length=1, description="L1 strengths η of the "
        "min-aggregation Bellman-Ford models (paper 0, 1e-4, 1e-3, 1e-2)")
    losses: tuple[Loss, ...] = Field(("multiplicative",), min_length=1, description="training losses of the "
        "Bellman-Ford models (paper: mse and multiplicative)")
    seeds: Seeds = Field(3, description="seeds per (η, loss) (paper 10)")
    controls: tuple[Literal["sum", "mean"], ...] = Field(("sum", "mean"), description="baseline aggregations trained "
        "identically (η = control_sparsity)")
    regulariser: Literal["l1", "smooth-l1"] = Field("l1", description="sparsity penalty: l1 (Nerem et al.) or "
        "smooth-l1, a differentiable surrogate (reconstructed)")
    control_seeds: Seeds = Field(1, description="seeds per baseline aggregation (a control; their large-graph runs "
        "dominate the test time; paper 5)")
    control_sparsity: Sparsity = Field(1e-3, description="η of the sum/mean baselines and the knapsack models")
    steps: Steps = Field(1500, description="full-batch Adam steps of every model, trained as one stack (card: 5000 at "
        "lr 1e-3)")
    lr: LearningRate = Field(1e-2, description="Adam learning rate (card: 1e-3, constant)")
    schedule: Literal["constant", "cosine"] = Field("cosine", description="learning-rate schedule: cosine decay to 0, "
        "or constant (card)")
    width: Width = Field(64, description="width of f_θ: 2 -> hidden -> hidden -> 1")
    big: float = Field(1000.0, gt=0, le=1e9, description="sentinel B: initial state of unreached nodes (−B for "
        "knapsack)")
    train_rounds: int = Field(3, ge=1, le=1000, description="message-passing rounds during training")
    test_nodes: tuple[GraphSize, ...] = Field((16, 64, 256, 1024), min_length=1, description="test graph sizes (paper "
        "up to 10,000)")
    test_graphs: SampleSize = Field(20, description="test graphs per (family, n)")
    test_families: tuple[Family, ...] = Field(("er",), min_length=1, description="test graph families: er (G(n, "
        "4/n)), grid, tree")
    er_degree: float = Field(4.0, gt=0, le=1000, description="Erdős–Rényi mean out-degree c (p = c/n)")
    grid_x_max: float = Field(200.0, gt=0, le=1e6, description="probe f_θ on x in [0, grid_x_max], w in [1, 10]")
    knap_items: int = Field(4, ge=1, le=20, description="training knapsack instances have 1..knap_items items")
    knap_capacity: int = Field(8, ge=1, le=1000, description="training capacities 1..knap_capacity")
    knap_instances: SampleSize = Field(16, description="training knapsack instances")
    knap_loss: Loss = Field("multiplicative", description="knapsack training loss (MSE at the same budget stalls at "
        "3-7% error at 50 items)")
    knap_seeds: Seeds = Field(2, description="knapsack seeds (quick 2: each is two trained restarts; paper 10)")
    knap_restarts: int = Field(2, ge=1, le=20, description="independent inits per knapsack seed; each seed keeps the "
        "one with the lowest error on held-out training-size instances (never the test sizes)")
    knap_val_instances: SampleSize = Field(32, description="held-out validation instances drawn like the training set "
        "(<= knap_items items, capacity <= knap_capacity)")
    knap_test_items: tuple[int, ...] = Field((5, 10, 20, 50), min_length=1, description="test item counts (capacity = "
        "2 x items)")
    knap_test_instances: SampleSize = Field(10, description="test instances per item count (the 50-item DAGs, 5,000 "
        "nodes x 52 rounds each, dominate the test time; paper 20)")
    mst: bool = Field(False, description="train minimax (bottleneck) models and classify minimum-spanning-tree edges "
        "with them (off at quick for the CPU budget: preset mst-cpu)")
    mst_seeds: Seeds = Field(2, description="minimax (MST) seeds (quick: 2, the claim is reported there, judged at "
        "paper size)")
    mst_restarts: int = Field(1, ge=1, le=20, description="independent inits per minimax seed; each seed keeps the "
        "one with the lowest error on held-out tiny graphs (never a test graph)")
    mst_sparsity: Sparsity = Field(1e-3, description="η of the minimax models (1e-4 is no better: see the module "
        "docstring)")
    mst_train_weights: tuple[int, ...] = Field((1, 4, 7, 10), min_length=2, description="integer weight grid of the "
        "minimax training paths: one edge per weight, a two-edge path per ordered pair (quick: 20 graphs; paper: "
        "1..10, 110 graphs)")
    mst_judged_nodes: GraphSize = Field(256, description="the MST claim is judged only when mst_nodes reaches this "
        "size (paper); below, the verdict reports what it measured as 'not decided'")
    mst_steps: Steps = Field(1500, description="full-batch Adam steps of the minimax models")
    mst_val_graphs: SampleSize = Field(64, description="held-out validation graphs drawn like the minimax training "
        "set (one- and two-edge paths, weights U[1, 10])")
    mst_nodes: tuple[GraphSize, ...] = Field((16, 64), min_length=1, description="sizes of the MST test graphs "
        "(all-pairs, so n² states)")
    mst_graphs: SampleSize = Field(3, description="MST test graphs per size")
    wl_models: Draws = Field(5, description="random-init models per aggregation on the WL pair")
    wl_rounds: int = Field(6, ge=1, le=100, description="rounds K on the WL pair")
    brute_instances: SampleSize = Field(20, description="knapsack instances (<= 12 items) checked by brute force")


PRESETS = {
    "quick": Preset.of("quick", "2 CPU cores, under a minute: η ∈ {0, 1e-3} x 3 seeds + sum/mean (1 seed each) as one "
                                "stack, ER tests up to 1024 nodes; knapsack 2 seeds x 2 restarts "
                                 "(kept on held-out training-size instances), tested to 50 items on 10 instances; WL "
                                 "pair; no minimax (MST) models"),
    "mst-cpu": Preset.of("mst-cpu", "CPU, ~75 s: the quick preset plus minimax (MST) models, 2 seeds on a 4-weight "
                                    "training grid, tested to 64 nodes: "
                                    "mst-minimax measured and reported, judged only at paper size",
                         mst=(True, "claim mst-minimax at reduced size")),
    "paper": Preset.of(
        "paper",
        "η ∈ {0, 1e-4, 1e-3, 1e-2}, both losses, 10 seeds; tests up to 10,000 nodes on ER, grids and trees; MST to "
        "256 nodes",
        sparsities=((0.0, 1e-4, 1e-3, 1e-2), "card"),
        losses=(("mse", "multiplicative"), "card: both losses"),
        seeds=(10, "card"),
        control_seeds=(5, "more baselines"),
        test_nodes=((16, 64, 256, 1024, 4096, 10_000), "card: up to 10^4"),
        test_families=(("er", "grid", "tree"), "card: SALSA-CLRS-style families"),
        steps=(5000, "card's step count"),
        knap_seeds=(10, "card"),
        knap_test_instances=(20, "more test instances"),
        mst=(True, "claim mst-minimax"),
        mst_seeds=(10, "card"),
        mst_restarts=(2, "restart selection, as for knapsack"),
        mst_nodes=((16, 64, 256), "larger MST graphs"),
        mst_graphs=(10, "more MST test graphs"),
        mst_train_weights=(tuple(range(1, 11)), "every integer weight: 110 training paths"),
    ),
}


# --------------------------------------------------------------------------------------------
# Members of the stacked Bellman-Ford / minimax model
# --------------------------------------------------------------------------------------------


def _members(cfg: MPNNAlgorithmsConfig) -> pd.DataFrame:
    rows = []
    for loss in cfg.losses:
        for eta in cfg.sparsities:
            rows += [dict(task="bf", aggr="min", eta=eta, loss=loss, seed=s) for s in range(cfg.seeds)]
    for aggr in cfg.controls:
        rows += [dict(task="bf", aggr=aggr, eta=cfg.control_sparsity, loss=cfg.losses[0], seed=s) for s in range(
            cfg.control_seeds)]
    rows = [dict(r, restart=0) for r in rows]
    if cfg.mst:
        rows += [dict(task="minimax", aggr="min", eta=cfg.mst_sparsity, loss=cfg.losses[0], seed=s,
                      restart=k) for s in range(cfg.mst_seeds) for k in range(cfg.mst_restarts)]
    rows += [dict(task="knapsack", aggr="max", eta=cfg.control_sparsity, loss=cfg.knap_loss, seed=s,
                  restart=k) for s in range(cfg.knap_seeds) for k in range(cfg.knap_restarts)]
    return pd.DataFrame(rows).rename_axis("member").reset_index()


def _training_tasks(cfg: MPNNAlgorithmsConfig, ctx: RunContext, tasks: set[str]) -> dict:
    """Each task's training graphs (batched), node targets, sentinel sign and training rounds."""
    parts = {}
    if "bf" in tasks:
        bf, _ = batch(bf_tiny_training_set())
        parts["bf"] = (bf, bellman_ford(bf.edge_index, bf.weight, bf.num_nodes, bf.source), 1.0, cfg.train_rounds)
    if "minimax" in tasks:
        mm, _ = batch(minimax_tiny_training_set(cfg.mst_train_weights))
        parts["minimax"] = (mm, minimax_distances(mm, mm.source), 1.0, cfg.train_rounds)
    if "knapsack" in tasks:  # 1..knap_items items, capacity 1..knap_capacity
        knap = knapsack_instances(cfg.knap_instances, cfg.knap_items, cfg.knap_capacity, ctx.generator(
            "knapsack/train"))
        parts["knapsack"] = (batch([knapsack_graph(x) for x in knap])[0], knapsack_dp_targets(knap), -1.0,
                             cfg.knap_items)
    return parts


def _train(cfg: MPNNAlgorithmsConfig, ctx: RunContext, members: pd.DataFrame, steps: int | None = None) -> tuple[
    "AlignedMPNN", pd.DataFrame]:
    """The given members as one stack on one disjoint union of their tasks' training graphs; each
    member's loss sees only its own task's graphs (a mask). Returns a network whose member j is the
    j-th row of ``members``.

    The 3-node tasks (Bellman-Ford, baselines, minimax) and the knapsack DAG train as two stacks: a
    stack with mixed min/max aggregation over the knapsack graphs costs about 4x the two apart."""
    seeds = [ctx.seed(f"init/{r.task}/{r.aggr}/{r.seed}" + (
        f"/restart{r.restart}" if r.restart else "")) for r in members.itertuples()]
    model, log = train_task_stack(_training_tasks(cfg, ctx, set(members["task"])), list(members["task"]), list(members[
        "aggr"]), seeds,
                                  torch.tensor(members["eta"].to_numpy(), dtype=torch.float64), list(members["loss"]),
                                  hidden=cfg.width,
                                  big=cfg.big, steps=cfg.steps if steps is None else steps, lr=cfg.lr,
                                  schedule=cfg.schedule,
                                  regulariser=cfg.regulariser, progress=ctx.progress, check=ctx.check_finite)
    log["member"] = members["member"].to_numpy()[log["member"].to_numpy()]
    return model, log.rename(columns={"loss": "train_loss"}).merge(members, on="member")


def _size_generalisation(cfg: MPNNAlgorithmsConfig, ctx: RunContext, model: "AlignedMPNN",
                         members: pd.DataFrame) -> pd.DataFrame:
    bf = members[members["task"] == "bf"]
    mins = bf[bf["aggr"] == "min"]["member"].tolist()
    others = bf[bf["aggr"] != "min"]["member"].tolist()
    # sum/mean run the rounds the min network needed
    nets = [model.subset(mins)] + ([model.subset(others)] if others else [])
    rows = []
    for family in cfg.test_families:
        for n in ctx.progress(cfg.test_nodes, f"test on {family} graphs"):
            g = ctx.generator(f"test/{family}/{n}")
            graph, _ = batch([random_test_graph(family, n, g, cfg.er_degree) for _ in range(cfg.test_graphs)])
            stats, rounds, t_min, t_exact = shortest_path_errors(nets, graph, cfg.big, max_rounds=n + 1)
            rows += [dict(member=m, family=family, n=n, nodes=graph.num_nodes, rounds=rounds, **st, seconds_mpnn=t_min,
                          seconds_exact=t_exact)
                     for m, st in zip(mins + others, stats)]
    return ctx.table("size_generalization", pd.DataFrame(rows).merge(members, on="member"))


def _learned_function(cfg: MPNNAlgorithmsConfig, ctx: RunContext, stacks: list[tuple["AlignedMPNN",
    pd.DataFrame]]) -> tuple[pd.DataFrame, tuple]:
    """f_θ of every member on the grid x in [0, grid_x_max], w in [1, 10]; ``stacks``: (network, its
    members' rows in order). Returns the table and (X, W, {member: values})."""
    rows, by_member = [], {}
    for model, group in stacks:
        # knapsack, like Bellman-Ford, needs x + w
        targets = ["max(x, w)" if task == "minimax" else "x + w" for task in group["task"]]
        stats, (X, W, values) = message_function_errors(model.f, targets, cfg.grid_x_max)
        rows += [dict(member=m, **st) for m, st in zip(group["member"].tolist(), stats)]
        by_member.update({m: values[..., j] for j, m in enumerate(group["member"].tolist())})
    table = pd.DataFrame(rows).merge(pd.concat([g for _, g in stacks]), on="member")
    return ctx.table("learned_function", table), (X, W, by_member)


def _mst(cfg: MPNNAlgorithmsConfig, ctx: RunContext, net: "AlignedMPNN", group: pd.DataFrame) -> pd.DataFrame:
    """``net``: the kept minimax members, one per row of ``group``."""
    rows = []
    for n in cfg.mst_nodes:
        g = ctx.generator(f"mst/{n}")
        for i in range(cfg.mst_graphs):
            graph = symmetrize(erdos_renyi_weighted(n, g, c=cfg.er_degree))
            rows += [dict(member=m, n=n, graph=i, nodes=graph.num_nodes, **st) for m, st in zip(group["member"].tolist(
                ), mst_classification(net, graph, cfg.big))]
    return ctx.table("mst", pd.DataFrame(rows).merge(group, on="member"))


# --------------------------------------------------------------------------------------------
# Knapsack, reference checks, WL pair
# --------------------------------------------------------------------------------------------


def _select_knapsack(cfg: MPNNAlgorithmsConfig, ctx: RunContext, net: "AlignedMPNN", knap: pd.DataFrame,
                     log: pd.DataFrame) -> tuple["AlignedMPNN", pd.DataFrame]:
    """Restart selection on every DP-table entry of ``knap_val_instances`` held-out instances with
    <= knap_items items (the training distribution; never the test sizes). An init that stalls (run
    seed 5 at quick: training loss 5e-4 against 2e-5 for its restarts, f_θ off by 0.3 already at
    x <= 40, then 1e-1 error at 50 items) scores ~40x its sibling restart here."""
    val = knapsack_instances(cfg.knap_val_instances, cfg.knap_items, cfg.knap_capacity, ctx.generator(
        "knapsack/validation"))
    graph, _ = batch([knapsack_graph(x) for x in val])
    table, net, kept = select_restarts(net, knap, log, graph, knapsack_dp_targets(val), big=cfg.big, sign=-1.0,
                                       max_rounds=cfg.knap_items + 2)
    ctx.table("knapsack_selection", table)
    return net, kept


def _select_minimax(cfg: MPNNAlgorithmsConfig, ctx: RunContext, net: "AlignedMPNN", group: pd.DataFrame,
                    log: pd.DataFrame) -> tuple["AlignedMPNN", pd.DataFrame]:
    """Restart selection on ``mst_val_graphs`` held-out one- and two-edge paths with weights U[1, 10]
    (the training motifs at weights off the training grid; never an MST test graph)."""
    graph, _ = batch(minimax_validation_set(ctx.generator("minimax/validation"), cfg.mst_val_graphs))
    table, net, kept = select_restarts(net, group, log, graph, minimax_distances(graph, graph.source), big=cfg.big,
                                       sign=1.0, max_rounds=cfg.train_rounds + 1)
    ctx.table("minimax_selection", table)
    return net, kept


def _knapsack(cfg: MPNNAlgorithmsConfig, ctx: RunContext, net: "AlignedMPNN", knap: pd.DataFrame) -> pd.DataFrame:
    """``net``: the kept knapsack members, one per row of ``knap``; test capacity = 2 x items."""
    rows = []
    for items in ctx.progress(cfg.knap_test_items, "test knapsack"):
        gt = ctx.generator(f"knapsack/test/{items}")
        insts = [knapsack_instance(items, 2 * items, gt) for _ in range(cfg.knap_test_instances)]
        optima, preds, rounds = knapsack_optima(net, insts, cfg.big, max_rounds=items + 2)
        for i, (x, opt) in enumerate(zip(insts, optima)):
            rows += [dict(items=items, capacity=x.capacity, instance=i, seed=s, restart=k, optimum=opt, predicted=p,
                          rel_error=abs(p - opt) / opt, rounds=rounds)
                     for s, k, p in zip(knap["seed"], knap["restart"], preds[i])]
    return ctx.table("knapsack", pd.DataFrame(rows))


def _references(cfg: MPNNAlgorithmsConfig, ctx: RunContext) -> pd.DataFrame:
    rows = []
    for family in cfg.test_families:
        for n in cfg.test_nodes:
            g = ctx.generator(f"test/{family}/{n}")  # the same graphs as the MPNN test
            rows += [dict(check="bellman-ford vs scipy", family=family, n=n, graph=i, error=bellman_ford_scipy_error(
                random_test_graph(family, n, g, cfg.er_degree)))
                     for i in range(cfg.test_graphs)]
    g = ctx.generator("knapsack/brute")
    for i in range(cfg.brute_instances):
        items = int(torch.randint(1, 13, (1,), generator=g))
        x = knapsack_instance(items, int(torch.randint(1, 4 * items + 1, (1,), generator=g)), g)
        rows.append(dict(check="knapsack DP vs brute force", family="knapsack", n=items, graph=i,
                         error=knapsack_brute_force_error(x)))
    return ctx.table("references", pd.DataFrame(rows))


def _wl(cfg: MPNNAlgorithmsConfig, ctx: RunContext) -> pd.DataFrame:
    from theorylab.nn.mpnn import AlignedMPNN, PairMPNN

    pair = c6, tri = wl_indistinguishable_pair()
    rows = []
    seeds = [ctx.seed(f"wl/{i}") for i in range(cfg.wl_models)]
    wl_same = all(sorted(a) == sorted(b) for a, b in zip(wl_colors(c6.edge_index, 6, cfg.wl_rounds), wl_colors(
        tri.edge_index, 6, cfg.wl_rounds)))
    msf = (msf_weight(c6.edge_index, c6.weight, 6), msf_weight(tri.edge_index, tri.weight, 6))
    for aggr in ("min", "max", "sum", "mean"):
        variants = [("node MPNN", torch.ones(6, dtype=torch.float64))]
        if aggr == "sum":  # the leak control: node ids as features must be detected
            variants.append(("node MPNN + node ids (leak)", torch.arange(6, dtype=torch.float64)))
        for variant, feats in variants:
            gap, readout = node_embedding_gaps(AlignedMPNN(aggr, seeds=seeds, hidden=cfg.width), pair, feats,
                                               cfg.wl_rounds)
            rows += [dict(variant=variant, aggr=aggr, model=i, embedding_gap=float(gap[i]), readout_gap=float(readout[
                i])) for i in range(cfg.wl_models)]
    # random min/max pair networks saturate to one value on both graphs; sum keeps the multiset
    gap, readout = pair_embedding_gaps(PairMPNN("sum", seeds=seeds, hidden=16), pair, rounds=3, big=2.0)
    rows += [dict(variant="pair MPNN (2-WL style)", aggr="sum", model=i, embedding_gap=float(gap[i]), readout_gap=float(
        readout[i])) for i in range(cfg.wl_models)]
    return ctx.table("wl_pair", pd.DataFrame(rows).assign(wl_colours_equal=wl_same, msf_c6=msf[0], msf_two_c3=msf[1]))


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure_error_vs_n(ctx: RunContext, table: pd.DataFrame) -> None:
    fig, ax = new_figure(width=5.5)
    t = table[table["family"] == table["family"].iloc[0]]
    groups = list(t.groupby(["aggr", "eta", "loss"]))
    for i, ((aggr, eta, loss), g) in enumerate(groups):
        stats = g.groupby("n")["mean_rel_error"].agg(["median", "min", "max"])
        shift = 1 + 0.05 * (i - len(groups) / 2)
        ax.errorbar(stats.index * shift, stats["median"], yerr=[stats["median"] - stats["min"], stats["max"] - stats[
            "median"]], fmt="o-", ms=4, capsize=2,
                    color=color(i), label=f"{aggr}, η = {eta:g}" + (f", {loss}" if t["loss"].nunique() > 1 else ""))
    ax.axhline(1e-2, color="k", ls="--", lw=0.8, label="1e-2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"nodes n ({t['family'].iloc[0]} test graphs; training graphs have 3)")
    ax.set_ylabel("mean relative error vs Bellman-Ford")
    ax.set_title("size generalisation (median over seeds, bars: min-max)", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("error_vs_n", fig)


def _figure_learned_f(ctx: RunContext, grid: tuple, members: pd.DataFrame, cfg: MPNNAlgorithmsConfig) -> None:
    X, W, values = grid
    pick = members[(members["task"] == "bf") & (members["aggr"] == "min")]
    reg = pick[pick["eta"] > 0]
    chosen = [int(pick[pick["eta"] == 0]["member"].iloc[0])] + ([int(reg["member"].iloc[0])] if len(reg) else [])
    fig, axes = new_figure(ncols=len(chosen), width=4.2 * len(chosen))
    axes = np.atleast_1d(axes)
    for ax, m in zip(axes, chosen):
        diff = (values[m] - (X + W)).numpy()
        lim = max(abs(diff).max(), 1e-6)
        im = ax.pcolormesh(X.numpy(), W.numpy(), diff, cmap="RdBu_r", vmin=-lim, vmax=lim, shading="auto")
        ax.add_patch(__import__("matplotlib").patches.Rectangle((0, 1), 10, 9, fill=False, ec="k", lw=1, ls="--"))
        ax.set_xlabel("x (incoming distance)")
        ax.set_ylabel("w (edge weight)")
        ax.set_title(f"f_θ(x, w) − (x + w), η = {members.loc[m, 'eta']:g}, seed {members.loc[m, 'seed']}", fontsize=8)
        fig.colorbar(im, ax=ax)
    ctx.figure("learned_f", fig)


def _figure_knapsack(ctx: RunContext, table: pd.DataFrame) -> None:
    fig, ax = new_figure()
    for s, g in table.groupby("seed"):
        stats = g.groupby("items")["rel_error"].agg(["mean", "max"])
        ax.plot(stats.index, stats["mean"], "o-", color=color(int(s)), label=f"seed {s} (mean)")
        ax.plot(stats.index, stats["max"], "v:", color=color(int(s)), mfc="none", label=f"seed {s} (max)")
    ax.axhline(1e-2, color="k", ls="--", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("items (capacity = 2 x items; training: <= 4 items, capacity <= 8)")
    ax.set_ylabel("relative error of the optimum")
    ax.set_title("max-aggregation MPNN on the knapsack DAG", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("knapsack_vs_items", fig)


def _figure_wl(ctx: RunContext, cfg: MPNNAlgorithmsConfig) -> None:
    from theorylab.nn.mpnn import AlignedMPNN, PairMPNN, pair_init

    c6, tri = wl_indistinguishable_pair()
    seeds = [ctx.seed(f"wl/{i}") for i in range(cfg.wl_models)]
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    net = AlignedMPNN("min", seeds=seeds[:1], hidden=cfg.width)
    pair = PairMPNN("min", seeds=seeds[:1], hidden=cfg.width)
    with torch.no_grad():
        for graph, name, marker in ((c6, "C6", "o"), (tri, "2 x C3", "x")):
            h, _ = net(torch.ones(6, 1, dtype=torch.float64), graph.edge_index, graph.weight, rounds=cfg.wl_rounds,
                       frontier=False)
            ax.plot(np.sort(h[:, 0].numpy()), marker, ms=7, label=name)
            H = pair(pair_init(graph.edge_index, graph.weight, 6, 1, cfg.big), cfg.wl_rounds)
            bx.plot(np.sort(H.flatten().numpy()), marker, ms=5, label=name)
    ax.set_title("node MPNN: identical multisets", fontsize=8)
    bx.set_title("pair MPNN: the multisets differ", fontsize=8)
    for a in (ax, bx):
        a.set_xlabel("sorted index")
        a.set_ylabel("embedding after K rounds")
        a.legend(fontsize=7)
    ctx.figure("wl_pair", fig)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


claims = Claims("mpnn-algorithms")

S_REF = (
    "The reference Bellman-Ford agrees with scipy.sparse.csgraph.shortest_path to 1e-9 on every test graph, and the "
    "knapsack DP with brute force on every instance of <= 12 items."
)


@claims.add("reference-bf", S_REF, "oracles (ours)")
def judge_reference(res, v) -> Verdict:
    t = res.table("references")
    worst = t.groupby("check")["error"].max()
    ok = bool((worst <= 1e-9).all())
    return v.judged(ok, float(worst.max()), "<= 1e-9", 1e-9, "; ".join(f"{k}: max error {v:.1e} over "
        f"{int((t['check'] == k).sum())} cases" for k, v in worst.items()))


def _bf_min(res, eta: float = 1e-3) -> pd.DataFrame:
    t = res.table("size_generalization")
    return t[(t["aggr"] == "min") & (t["task"] == "bf") & np.isclose(t["eta"], eta)]


S_SIZE = ("Trained on <= 10 graphs of <= 3 nodes with η = 1e-3, the min-aggregation MPNN's mean relative error is <= "
          "1e-2 at every test size for every seed, "
          "and flat: err(n_max) <= 2·err(16) + 1e-3 (thresholds ours; the paper states O(ε)).")


@claims.add("size-generalization", S_SIZE, REF + "; Nerem et al. arXiv 2503.19173 (extrapolation guarantee)")
def judge_size(res, v) -> Verdict:
    t = _bf_min(res)
    if t.empty:
        raise Undecided(f"this config trains no min-aggregation model with η = 1e-3 "
                        f"(eta={tuple(res.config.get('sparsities', ()))})")
    worst = float(t["mean_rel_error"].max())
    flat = []
    for _, g in t.groupby(["family", "loss", "seed"]):
        e = g.set_index("n")["mean_rel_error"]
        flat.append(e[e.index.max()] <= 2 * e[e.index.min()] + 1e-3)
    ok = worst <= 1e-2 and all(flat)
    by_n = t.groupby("n")["mean_rel_error"].max()
    detail = "max over seeds by n: " + ", ".join(f"{n}: {v:.2e}" for n, v in by_n.items(
        )) + f"; flat in {sum(flat)}/{len(flat)} (family, loss, seed)"
    un = _bf_min(res, 0.0)
    if not un.empty:
        detail += "; η = 0 (reported): " + ", ".join(f"{n}: {v:.2e}" for n, v in un.groupby("n")["mean_rel_error"].max(
            ).items())
    return v.judged(ok, worst, "<= 1e-2", 1e-2, detail)


S_F = (
    "With η = 1e-3 the learned message function is x + w: max over x in [0, 200], w in [1, 10] of |f_θ(x, w) − (x + "
    "w)|/(x + w) <= 1e-2 for every seed (training inputs stay at x <= ~20 besides the sentinel)."
)


@claims.add("learned-function", S_F, REF + ", the aligned target x + w")
def judge_learned_f(res, v) -> Verdict:
    t = res.table("learned_function")
    t = t[(t["task"] == "bf") & (t["aggr"] == "min")]
    reg = t[np.isclose(t["eta"], 1e-3)]
    if reg.empty:
        raise Undecided(f"this config trains no min-aggregation model with η = 1e-3 "
                        f"(eta={tuple(res.config.get('sparsities', ()))})")
    worst = float(reg["max_rel_error"].max())
    detail = (
        f"η = 1e-3: max {worst:.2e} (seeds: {', '.join(f'{v:.1e}' for v in reg['max_rel_error'])}); η = 0 (reported): "
        f"{', '.join(f'{v:.1e}' for v in t[t['eta'] == 0]['max_rel_error'])}"
    )
    return v.judged(worst <= 1e-2, worst, "<= 1e-2", 1e-2, detail)


S_AGG = (
    "Sum- and mean-aggregation MPNNs trained identically have mean relative error >= 0.2 at the largest test size, for "
    "every seed."
)


@claims.add("aggregation-control", S_AGG, REF + ", algorithmic alignment of the aggregation")
def judge_aggregation(res, v) -> Verdict:
    t = res.table("size_generalization")
    t = t[t["aggr"].isin(["sum", "mean"])]
    if t.empty:
        raise Undecided("this config trains no sum/mean baseline (controls=())")
    top = t[t["n"] == t["n"].max()]
    low = float(top["mean_rel_error"].min())
    detail = ", ".join(f"{a}: min {g['mean_rel_error'].min():.3g}" for a, g in top.groupby(
        "aggr")) + f" at n = {int(top['n'].max())}"
    return v.judged(low >= 0.2, low, ">= 0.2", 0.2, detail)


S_L1 = (
    "The regulariser is active: ‖θ‖₁ at η = 1e-3 is <= 0.5 x ‖θ‖₁ at η = 0 for every seed (same initialisation, end of "
    "training)."
)


@claims.add("regulariser-active", S_L1, REF + ", the sparsity regulariser")
def judge_l1(res, v) -> Verdict:
    t = res.table("learned_function")
    t = t[(t["task"] == "bf") & (t["aggr"] == "min")]
    a, b = t[np.isclose(t["eta"], 1e-3)], t[t["eta"] == 0]
    if a.empty or b.empty:
        raise Undecided(f"this config does not train both η = 0 and η = 1e-3 "
                        f"(eta={tuple(res.config.get('sparsities', ()))})")
    pairs = a.merge(b, on=["seed", "loss"], suffixes=("_reg", "_free"))
    ratio = pairs["l1_reg"] / pairs["l1_free"]
    detail = ", ".join(f"seed {r.seed}: {r.l1_reg:.0f} / {r.l1_free:.0f}" for r in pairs.itertuples())
    return v.judged(bool((ratio <= 0.5).all()), float(ratio.max()), "<= 0.5", 0.5, detail)


S_WL = ("C6 and two disjoint triangles are 1-WL-indistinguishable: for every random-init node MPNN (min, max, sum, "
        "mean) the sorted node embeddings and the summed readouts "
        "agree to 1e-6 after K = 6 rounds, although msf_weight gives 5 vs 4; node-id features (a leak) break the tie "
        "(gap >= 1e-3), and the pair-based variant separates the graphs in every model.")


@claims.add("wl-impossibility", S_WL, REF + ", tasks standard MPNNs cannot do; 1-WL")
def judge_wl(res, v) -> Verdict:
    t = res.table("wl_pair")
    node = t[t["variant"] == "node MPNN"]
    leak = t[t["variant"].str.contains("leak")]
    pair = t[t["variant"].str.startswith("pair")]
    same = float(node[["embedding_gap", "readout_gap"]].max().max())
    ok = (same <= 1e-6 and bool(t["wl_colours_equal"].iloc[0]) and (t["msf_c6"].iloc[0], t["msf_two_c3"].iloc[0]) == (
        5.0, 4.0)
          and float(leak["embedding_gap"].min()) >= 1e-3 and float(pair["embedding_gap"].min()) >= 1e-3)
    detail = (f"node MPNN max gap {same:.1e} over {len(node)} models; 1-WL colours equal: "
              f"{bool(t['wl_colours_equal'].iloc[0])}; MSF {t['msf_c6'].iloc[0]:g} vs {t['msf_two_c3'].iloc[0]:g}; "
              f"leak control min gap {leak['embedding_gap'].min():.3g}; pair MPNN min gap "
              f"{pair['embedding_gap'].min():.3g}")
    return v.judged(ok, same, "<= 1e-6", 1e-6, detail)


S_KNAP = ("The max-aggregation MPNN trained on <= 4 items / capacity <= 8 reaches mean relative error <= 1e-2 on the "
          "optimum at 50 items / capacity 100, for every seed "
          "(each seed keeps the best of its restarts on held-out instances of the training sizes; the test sizes play "
          "no part in the choice).")


@claims.add("knapsack-extrapolation", S_KNAP, REF + ", dynamic programs (our DAG encoding)")
def judge_knapsack(res, v) -> Verdict:
    t = res.table("knapsack")
    top = t[t["items"] == t["items"].max()]
    if int(top["items"].max()) < 50:
        raise Undecided(f"this config tests knapsack only up to {int(top['items'].max())} items (the claim is at 50: "
                        f"knap_test_items)")
    per = top.groupby("seed")["rel_error"].mean()
    detail = f"{int(top['items'].max())} items: mean per seed " + ", ".join(
        f"{v:.2e}" for v in per) + f"; max over instances {top['rel_error'].max():.2e}"
    if "knapsack_selection" in res.tables:
        sel = res.tables["knapsack_selection"]
        detail += "; kept the restart with the lowest held-out <= 4-item error per seed (" + ", ".join(
            f"seed {s}: {g['val_rel_error'].min():.1e} of {', '.join(f'{v:.1e}' for v in g['val_rel_error'])}" for s,
            g in sel.groupby("seed")) + ")"
    return v.judged(bool(per.max() <= 1e-2), float(per.max()), "<= 1e-2", 1e-2, detail)


S_MST = ("Ours (reconstruction of the paper's MST task): a min-aggregation MPNN trained on tiny one- and two-edge "
         "paths with bottleneck targets (f* = max(x, w); per seed the best "
         "of its restarts on held-out tiny paths) classifies minimum-spanning-tree edges (edge in tree iff w_uv <= "
         "learned bottleneck distance) with mean F1 >= 0.99 and "
         "spanning-forest weight within 1e-2 of networkx's, for every seed and test size.")


@claims.add("mst-minimax", S_MST, REF + ", minimum spanning trees (our bottleneck encoding)")
def judge_mst(res, v) -> Verdict:
    t = res.table("mst", unless="this config trains no minimax models (mst=false; off at quick for the CPU budget: "
                                "--preset mst-cpu measures them "
                                "at reduced size in ~75 s on 2 cores, the paper preset judges them)")
    f1 = t.groupby(["seed", "n"])["f1"].mean()
    werr = t.groupby(["seed", "n"])["weight_rel_error"].mean()
    ok = float(f1.min()) >= 0.99 and float(werr.max()) <= 1e-2
    detail = "mean F1 by (seed, n): " + ", ".join(f"{k}: {v:.3f}" for k, v in f1.items(
        )) + f"; worst mean weight error {werr.max():.1e}"
    if "minimax_selection" in res.tables:
        sel = res.tables["minimax_selection"]
        if sel.groupby("seed").size().max() > 1:
            kept = ", ".join(f"seed {s}: {g['val_rel_error'].min():.1e} of "
                             f"{', '.join(f'{v:.1e}' for v in g['val_rel_error'])}" for s, g in sel.groupby("seed"))
            detail += f"; kept the restart with the lowest held-out tiny-graph error per seed ({kept})"
    judged_n = int(res.config.get("mst_judged_nodes", 256))
    if int(t["n"].max()) < judged_n:
        bad = sorted({int(k[0]) for k, v in f1.items() if v < 0.99} | {int(k[0]) for k, v in werr.items() if v > 1e-2})
        inits = int(res.config.get("mst_restarts", 1))
        grid = tuple(res.config.get("mst_train_weights", ()))
        fits = ""
        if "minimax_selection" in res.tables:
            losses = res.tables["minimax_selection"]["train_loss"]
            fits = f" (final training loss {losses.min():.0e}..{losses.max():.0e} here)"
        raise Undecided(f"at reduced size it measures {detail} (n <= {int(t['n'].max())}, {t['seed'].nunique()} seeds, "
                        f"{inits} init(s) each, training weights {grid}; "
                        f"{'passes' if ok else f'fails F1 >= 0.99 / weight error <= 1e-2 in seeds {bad}'}); judged at "
                        f"paper size (n up to {judged_n}, restart selection). "
                        "Why it is fragile: above the kink max(x, w) is the identity in x, so the n-round min-fixpoint "
                        "lowers a bottleneck by up to n times "
                        f"f_θ's deficit there, and the fits{fits} can leave more than the readout's 1e-3 slack")
    return v.judged(ok, float(f1.min()), ">= 0.99", 0.99, detail)


@study(
    "mpnn-algorithms",
    title="MPNNs that learn Bellman-Ford, knapsack and MST from tiny graphs and hold at any size",
    paper=PAPER,
    config=MPNNAlgorithmsConfig,
    presets=PRESETS,
    family="graphs",
    claims=claims,
)
def run(cfg: MPNNAlgorithmsConfig, ctx: RunContext) -> None:
    try:
        import networkx  # noqa: F401
        import torch_geometric  # noqa: F401
    except ImportError as err:
        raise MissingExtra(f"the graphs extra (PyTorch Geometric, networkx; {err})", "graphs") from err
    threads = torch.get_num_threads()
    if ctx.device.type == "cpu":
        torch.set_num_threads(1)  # training on tiny graphs is overhead-bound; one thread is faster on 2 cores
    try:
        members = _members(cfg)
        ctx.table("members", members)
        _references(cfg, ctx)
        is_bf, is_mm, is_knap = (members["task"] == t for t in ("bf", "minimax", "knapsack"))
        # three stacks, each on its own training graphs (a stack pays for the union of its members' graphs)
        model, log = _train(cfg, ctx, members[is_bf])  # member ids 0.. in order: the Bellman-Ford rows come first
        logs, stacks = [log], [(model, members[is_bf])]
        if cfg.mst:
            mm_model, mm_log = _train(cfg, ctx, members[is_mm], steps=cfg.mst_steps)
            logs.append(mm_log)
            mm_model, mm_chosen = _select_minimax(cfg, ctx, mm_model, members[is_mm], mm_log)
            stacks.append((mm_model, mm_chosen))
        torch.set_num_threads(threads)  # the knapsack DAGs are big enough for every core, as are the test graphs
        knap_model, knap_log = _train(cfg, ctx, members[is_knap])
        logs.append(knap_log)
        ctx.table("training", pd.concat(logs, ignore_index=True))
        sizes = _size_generalisation(cfg, ctx, model, members)
        _figure_error_vs_n(ctx, sizes)
        _, grid = _learned_function(cfg, ctx, stacks)
        _figure_learned_f(ctx, grid, members[is_bf], cfg)
        if cfg.mst:
            _mst(cfg, ctx, mm_model, mm_chosen)
        knap_model, knap_chosen = _select_knapsack(cfg, ctx, knap_model, members[is_knap], knap_log)
        _figure_knapsack(ctx, _knapsack(cfg, ctx, knap_model, knap_chosen))
        _wl(cfg, ctx)
        _figure_wl(ctx, cfg)
    finally:
        torch.set_num_threads(threads)
