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

import math
import time
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd
import torch
from pydantic import Field

from theorylab.core.errors import MissingExtra, Undecided
from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.plotting import color, new_figure
from theorylab.data.graphs import (
    WeightedGraph,
    batch,
    bf_tiny_training_set,
    erdos_renyi_weighted,
    grid_weighted,
    knapsack_graph,
    knapsack_instance,
    minimax_distances,
    minimax_tiny_training_set,
    minimax_validation_set,
    random_tree,
    symmetrize,
    wl_indistinguishable_pair,
)
from theorylab.probes.grids import function_grid
from theorylab.theory.algorithms import bellman_ford, knapsack_brute_force, knapsack_dp, msf_weight, wl_colors

if TYPE_CHECKING:
    from theorylab.nn.mpnn import AlignedMPNN

PAPER = "Wittig, Vasileiou, Nerem, Stoll, Geerts, Wang, Morris, arXiv 2602.13106 (2026); Nerem et al., arXiv 2503.19173"
REF = "arXiv 2602.13106"
Loss = Literal["mse", "multiplicative"]
Family = Literal["er", "grid", "tree"]


class MPNNAlgorithmsConfig(StudyConfig):
    eta: tuple[float, ...] = Field((0.0, 1e-3), min_length=1, description="L1 strengths η of the min-aggregation Bellman-Ford models (paper 0, 1e-4, 1e-3, 1e-2)")
    losses: tuple[Loss, ...] = Field(("multiplicative",), min_length=1, description="training losses of the Bellman-Ford models (paper: mse and multiplicative)")
    seeds: int = Field(3, ge=1, le=100, description="seeds per (η, loss) (paper 10)")
    controls: tuple[Literal["sum", "mean"], ...] = Field(("sum", "mean"), description="baseline aggregations trained identically (η = control_eta)")
    regulariser: Literal["l1", "smooth-l1"] = Field("l1", description="sparsity penalty: l1 (Nerem et al.) or smooth-l1, a differentiable surrogate (reconstructed)")
    control_seeds: int = Field(1, ge=1, le=100, description="seeds per baseline aggregation (a control; their large-graph runs dominate the test time; paper 5)")
    control_eta: float = Field(1e-3, ge=0, le=1, description="η of the sum/mean baselines and the knapsack models")
    steps: int = Field(1500, ge=1, le=1_000_000, description="full-batch Adam steps of every model, trained as one stack (card: 5000 at lr 1e-3)")
    lr: float = Field(1e-2, gt=0, le=1, description="Adam learning rate (card: 1e-3, constant)")
    schedule: Literal["constant", "cosine"] = Field("cosine", description="learning-rate schedule: cosine decay to 0, or constant (card)")
    hidden: int = Field(64, ge=1, le=4096, description="width of f_θ: 2 -> hidden -> hidden -> 1")
    big: float = Field(1000.0, gt=0, le=1e9, description="sentinel B: initial state of unreached nodes (−B for knapsack)")
    train_rounds: int = Field(3, ge=1, le=1000, description="message-passing rounds during training")
    test_n: tuple[int, ...] = Field((16, 64, 256, 1024), min_length=1, description="test graph sizes (paper up to 10,000)")
    test_graphs: int = Field(20, ge=1, le=10_000, description="test graphs per (family, n)")
    test_families: tuple[Family, ...] = Field(("er",), min_length=1, description="test graph families: er (G(n, 4/n)), grid, tree")
    er_c: float = Field(4.0, gt=0, le=1000, description="Erdős–Rényi mean out-degree c (p = c/n)")
    grid_x_max: float = Field(200.0, gt=0, le=1e6, description="probe f_θ on x in [0, grid_x_max], w in [1, 10]")
    knap_items: int = Field(4, ge=1, le=20, description="training knapsack instances have 1..knap_items items")
    knap_capacity: int = Field(8, ge=1, le=1000, description="training capacities 1..knap_capacity")
    knap_instances: int = Field(16, ge=1, le=10_000, description="training knapsack instances")
    knap_loss: Loss = Field("multiplicative", description="knapsack training loss (MSE at the same budget stalls at 3-7% error at 50 items)")
    knap_seeds: int = Field(2, ge=1, le=100, description="knapsack seeds (quick 2: each is two trained restarts; paper 10)")
    knap_restarts: int = Field(2, ge=1, le=20, description="independent inits per knapsack seed; each seed keeps the one with the lowest error on held-out training-size instances (never the test sizes)")
    knap_val_instances: int = Field(32, ge=1, le=10_000, description="held-out validation instances drawn like the training set (<= knap_items items, capacity <= knap_capacity)")
    knap_test_items: tuple[int, ...] = Field((5, 10, 20, 50), min_length=1, description="test item counts (capacity = 2 x items)")
    knap_test_instances: int = Field(10, ge=1, le=10_000, description="test instances per item count (the 50-item DAGs, 5,000 nodes x 52 rounds each, dominate the test time; paper 20)")
    mst: bool = Field(False, description="train minimax (bottleneck) models and classify minimum-spanning-tree edges with them (off at quick for the CPU budget: preset mst-cpu)")
    mst_seeds: int = Field(2, ge=1, le=100, description="minimax (MST) seeds (quick: 2, the claim is reported there, judged at paper size)")
    mst_restarts: int = Field(1, ge=1, le=20, description="independent inits per minimax seed; each seed keeps the one with the lowest error on held-out tiny graphs (never a test graph)")
    mst_eta: float = Field(1e-3, ge=0, le=1, description="η of the minimax models (1e-4 is no better: see the module docstring)")
    mst_train_weights: tuple[int, ...] = Field((1, 4, 7, 10), min_length=2, description="integer weight grid of the minimax training paths: one edge per weight, a two-edge path per ordered pair (quick: 20 graphs; paper: 1..10, 110 graphs)")
    mst_judged_n: int = Field(256, ge=2, le=100_000, description="the MST claim is judged only when mst_n reaches this size (paper); below, the verdict reports what it measured as 'not decided'")
    mst_steps: int = Field(1500, ge=1, le=1_000_000, description="full-batch Adam steps of the minimax models")
    mst_val_graphs: int = Field(64, ge=1, le=10_000, description="held-out validation graphs drawn like the minimax training set (one- and two-edge paths, weights U[1, 10])")
    mst_n: tuple[int, ...] = Field((16, 64), min_length=1, description="sizes of the MST test graphs (all-pairs, so n² states)")
    mst_graphs: int = Field(3, ge=1, le=10_000, description="MST test graphs per size")
    wl_models: int = Field(5, ge=1, le=1000, description="random-init models per aggregation on the WL pair")
    wl_rounds: int = Field(6, ge=1, le=100, description="rounds K on the WL pair")
    brute_instances: int = Field(20, ge=1, le=10_000, description="knapsack instances (<= 12 items) checked by brute force")


PRESETS = {
    "quick": Preset.of("quick", "2 CPU cores, under a minute: η ∈ {0, 1e-3} x 3 seeds + sum/mean (1 seed each) as one stack, ER tests up to 1024 nodes; knapsack 2 seeds x 2 restarts "
                                 "(kept on held-out training-size instances), tested to 50 items on 10 instances; WL pair; no minimax (MST) models"),
    "mst-cpu": Preset.of("mst-cpu", "CPU, ~75 s: the quick preset plus minimax (MST) models, 2 seeds on a 4-weight training grid, tested to 64 nodes: "
                                    "mst-minimax measured and reported, judged only at paper size",
                         mst=(True, "claim mst-minimax at reduced size")),
    "paper": Preset.of(
        "paper",
        "η ∈ {0, 1e-4, 1e-3, 1e-2}, both losses, 10 seeds; tests up to 10,000 nodes on ER, grids and trees; MST to 256 nodes",
        eta=((0.0, 1e-4, 1e-3, 1e-2), "card"),
        losses=(("mse", "multiplicative"), "card: both losses"),
        seeds=(10, "card"),
        control_seeds=(5, "more baselines"),
        test_n=((16, 64, 256, 1024, 4096, 10_000), "card: up to 10^4"),
        test_families=(("er", "grid", "tree"), "card: SALSA-CLRS-style families"),
        steps=(5000, "card's step count"),
        knap_seeds=(10, "card"),
        knap_test_instances=(20, "more test instances"),
        mst=(True, "claim mst-minimax"),
        mst_seeds=(10, "card"),
        mst_restarts=(2, "restart selection, as for knapsack"),
        mst_n=((16, 64, 256), "larger MST graphs"),
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
        for eta in cfg.eta:
            rows += [dict(task="bf", aggr="min", eta=eta, loss=loss, seed=s) for s in range(cfg.seeds)]
    for aggr in cfg.controls:
        rows += [dict(task="bf", aggr=aggr, eta=cfg.control_eta, loss=cfg.losses[0], seed=s) for s in range(cfg.control_seeds)]
    rows = [dict(r, restart=0) for r in rows]
    if cfg.mst:
        rows += [dict(task="minimax", aggr="min", eta=cfg.mst_eta, loss=cfg.losses[0], seed=s, restart=k) for s in range(cfg.mst_seeds) for k in range(cfg.mst_restarts)]
    rows += [dict(task="knapsack", aggr="max", eta=cfg.control_eta, loss=cfg.knap_loss, seed=s, restart=k) for s in range(cfg.knap_seeds) for k in range(cfg.knap_restarts)]
    return pd.DataFrame(rows).rename_axis("member").reset_index()


def _init_states(n: int, sources, members: int, big: float, sign: float = 1.0) -> torch.Tensor:
    h = torch.full((n, members), sign * big, dtype=torch.float64)
    h[torch.as_tensor(sources)] = 0.0
    return h


def _knapsack_training_set(cfg: MPNNAlgorithmsConfig, ctx: RunContext, stream: str = "knapsack/train", count: int | None = None) -> list:
    """Instances with 1..knap_items items and capacity 1..knap_capacity (the training distribution);
    ``stream`` "knapsack/validation" gives held-out instances of the same distribution."""
    g = ctx.generator(stream)
    train = []
    for _ in range(cfg.knap_instances if count is None else count):
        items = int(torch.randint(1, cfg.knap_items + 1, (1,), generator=g))
        cap = int(torch.randint(1, cfg.knap_capacity + 1, (1,), generator=g))
        train.append(knapsack_instance(items, cap, g))
    return train


def _train(cfg: MPNNAlgorithmsConfig, ctx: RunContext, members: pd.DataFrame, steps: int | None = None) -> tuple["AlignedMPNN", pd.DataFrame]:
    """The given members as one stack on one disjoint union of their tasks' training graphs; each
    member's loss sees only its own task's graphs (a mask). Returns a network whose member j is the
    j-th row of ``members``.

    The 3-node tasks (Bellman-Ford, baselines, minimax) and the knapsack DAG train as two stacks: a
    stack with mixed min/max aggregation over the knapsack graphs costs about 4x the two apart."""
    from theorylab.nn.mpnn import AlignedMPNN
    from theorylab.train.algorithms import train_members

    tasks = set(members["task"])
    parts = {}
    if "bf" in tasks:
        bf, _ = batch(bf_tiny_training_set())
        parts["bf"] = (bf, bellman_ford(bf.edge_index, bf.weight, bf.num_nodes, bf.source), 1.0, cfg.train_rounds)
    if "minimax" in tasks:
        mm, _ = batch(minimax_tiny_training_set(cfg.mst_train_weights))
        parts["minimax"] = (mm, minimax_distances(mm, mm.source), 1.0, cfg.train_rounds)
    if "knapsack" in tasks:
        knap = _knapsack_training_set(cfg, ctx)
        kg, _ = batch([knapsack_graph(x) for x in knap])
        parts["knapsack"] = (kg, torch.cat([torch.as_tensor(knapsack_dp(x.weights, x.values, x.capacity).flatten()) for x in knap]), -1.0, cfg.knap_items)
    union, ptr = batch([p[0] for p in parts.values()])
    offset = dict(zip(parts, ptr.tolist()))
    S = len(members)
    h0 = torch.zeros(union.num_nodes, S, dtype=torch.float64)
    targets = torch.zeros_like(h0)
    mask = torch.zeros_like(h0, dtype=torch.bool)
    for j, task in enumerate(members["task"]):
        graph, target, sign, _ = parts[task]
        rows = slice(offset[task], offset[task] + graph.num_nodes)
        h0[rows, j] = _init_states(graph.num_nodes, graph.source, 1, cfg.big, sign)[:, 0]
        targets[rows, j] = target
        mask[rows, j] = True
    seeds = [ctx.seed(f"init/{r.task}/{r.aggr}/{r.seed}" + (f"/restart{r.restart}" if r.restart else "")) for r in members.itertuples()]
    model = AlignedMPNN(list(members["aggr"]), seeds=seeds, hidden=cfg.hidden)
    log = train_members(model, union.edge_index, union.weight, h0, targets, eta=torch.tensor(members["eta"].to_numpy(), dtype=torch.float64),
                        losses=list(members["loss"]), steps=cfg.steps if steps is None else steps, lr=cfg.lr, schedule=cfg.schedule, regulariser=cfg.regulariser, rounds=max(p[3] for p in parts.values()),
                        mask=mask, progress=ctx.progress, check=ctx.check_finite)
    log["member"] = members["member"].to_numpy()[log["member"].to_numpy()]
    return model, log.rename(columns={"loss": "train_loss"}).merge(members, on="member")


def _test_graph(family: str, n: int, g: torch.Generator, c: float) -> WeightedGraph:
    if family == "er":
        return erdos_renyi_weighted(n, g, c=c)
    if family == "grid":
        side = max(2, int(round(math.sqrt(n))))
        return grid_weighted(side, side, g)
    return random_tree(n, g)


def _size_generalisation(cfg: MPNNAlgorithmsConfig, ctx: RunContext, model: "AlignedMPNN", members: pd.DataFrame) -> pd.DataFrame:
    bf = members[members["task"] == "bf"]
    mins = bf[bf["aggr"] == "min"]["member"].tolist()
    others = bf[bf["aggr"] != "min"]["member"].tolist()
    net_min = model.subset(mins)
    net_other = model.subset(others) if others else None
    rows = []
    for family in cfg.test_families:
        for n in ctx.progress(cfg.test_n, f"test on {family} graphs"):
            g = ctx.generator(f"test/{family}/{n}")
            graph, _ = batch([_test_graph(family, n, g, cfg.er_c) for _ in range(cfg.test_graphs)])
            t0 = time.perf_counter()
            exact = bellman_ford(graph.edge_index, graph.weight, graph.num_nodes, graph.source)
            t_exact = time.perf_counter() - t0
            keep = exact > 0
            with torch.no_grad():
                t0 = time.perf_counter()
                h_min, rounds = net_min(_init_states(graph.num_nodes, graph.source, len(mins), cfg.big), graph.edge_index, graph.weight, max_rounds=n + 1)
                t_min = time.perf_counter() - t0
                outs = [(mins, h_min)]
                if net_other is not None:
                    # sum/mean have no fixed point: run the rounds the min network needed
                    h_other, _ = net_other(_init_states(graph.num_nodes, graph.source, len(others), cfg.big), graph.edge_index, graph.weight, rounds=rounds)
                    outs.append((others, h_other))
            for cols, h in outs:
                rel = ((h[keep] - exact[keep, None]).abs() / exact[keep, None])
                rel = torch.nan_to_num(rel, nan=float("inf"))
                for j, m in enumerate(cols):
                    rows.append(dict(member=m, family=family, n=n, nodes=graph.num_nodes, rounds=rounds, mean_rel_error=float(rel[:, j].mean()),
                                     max_rel_error=float(rel[:, j].max()), within_1e3=float((rel[:, j] <= 1e-3).float().mean()),
                                     seconds_mpnn=t_min, seconds_exact=t_exact))
    table = pd.DataFrame(rows).merge(members, on="member")
    ctx.table("size_generalization", table)
    return table


def _learned_function(cfg: MPNNAlgorithmsConfig, ctx: RunContext, stacks: list[tuple["AlignedMPNN", pd.DataFrame]]) -> tuple[pd.DataFrame, tuple]:
    """f_θ of every member on the grid x in [0, grid_x_max], w in [1, 10]; ``stacks``: (network, its
    members' rows in order). Returns the table and (X, W, {member: values})."""
    xs = torch.linspace(0, cfg.grid_x_max, 201, dtype=torch.float64)
    ws = torch.linspace(1, 10, 19, dtype=torch.float64)
    rows, by_member = [], {}
    for model, group in stacks:
        S = model.members
        (X, W), values = function_grid(lambda p: model.f(p[:, None, :].expand(-1, S, -1)).squeeze(-1), (xs, ws))
        with torch.no_grad():
            l1 = model.f.l1()
        for j, r in enumerate(group.itertuples()):
            truth = torch.maximum(X, W) if r.task == "minimax" else X + W  # knapsack, like Bellman-Ford, needs x + w
            rel = (values[..., j] - truth).abs() / truth
            by_member[r.member] = values[..., j]
            rows.append(dict(member=r.member, max_rel_error=float(rel.max()), max_rel_error_train_range=float(rel[X <= 10].max()), l1=float(l1[j])))
    table = pd.DataFrame(rows).merge(pd.concat([g for _, g in stacks]), on="member")
    ctx.table("learned_function", table)
    return table, (X, W, by_member)


def _mst(cfg: MPNNAlgorithmsConfig, ctx: RunContext, net: "AlignedMPNN", group: pd.DataFrame) -> pd.DataFrame:
    """``net``: the kept minimax members, one per row of ``group``."""
    import networkx as nx

    mm = group["member"].tolist()
    rows = []
    for n in cfg.mst_n:
        g = ctx.generator(f"mst/{n}")
        for i in range(cfg.mst_graphs):
            graph = symmetrize(erdos_renyi_weighted(n, g, c=cfg.er_c))
            N = graph.num_nodes
            # all-pairs bottleneck distances: one copy of the graph per source node
            copies, ptr = batch([WeightedGraph(graph.edge_index, graph.weight, N, s) for s in range(N)])
            with torch.no_grad():
                h, _ = net(_init_states(copies.num_nodes, copies.source, len(mm), cfg.big), copies.edge_index, copies.weight, max_rounds=N + 1)
            D = h.reshape(N, N, len(mm))
            G = nx.Graph()
            G.add_nodes_from(range(N))
            u, v = graph.edge_index
            half = u < v
            for a, b, w in zip(u[half].tolist(), v[half].tolist(), graph.weight[half].tolist()):
                G.add_edge(a, b, weight=w)
            truth = {tuple(sorted(e[:2])) for e in nx.minimum_spanning_edges(G, data=False)}
            true_weight = msf_weight(graph.edge_index, graph.weight, N)
            for j, m in enumerate(mm):
                # (u, v, w) is a tree edge iff no other u-v path has a smaller bottleneck: w <= D(u, v)
                pred = {(a, b) for a, b, w in zip(u[half].tolist(), v[half].tolist(), graph.weight[half].tolist()) if w <= float(D[a, b, j]) * (1 + 1e-3)}
                tp = len(pred & truth)
                f1 = 2 * tp / max(1, len(pred) + len(truth))
                w_pred = sum(G[a][b]["weight"] for a, b in pred)
                rows.append(dict(member=m, n=n, graph=i, nodes=N, f1=f1, weight_rel_error=abs(w_pred - true_weight) / true_weight, tree_edges=len(truth), predicted=len(pred)))
    table = pd.DataFrame(rows).merge(group, on="member")
    ctx.table("mst", table)
    return table


# --------------------------------------------------------------------------------------------
# Knapsack, reference checks, WL pair
# --------------------------------------------------------------------------------------------


def _select_restarts(cfg: MPNNAlgorithmsConfig, ctx: RunContext, name: str, net: "AlignedMPNN", group: pd.DataFrame, log: pd.DataFrame,
                     graph: WeightedGraph, target: torch.Tensor, sign: float, max_rounds: int) -> tuple["AlignedMPNN", pd.DataFrame]:
    """Keep, per seed, the restart with the lowest mean relative error on held-out graphs drawn like the
    training set (``graph``, exact ``target``): model selection that never sees a test graph. ``net``
    holds one member per row of ``group``; returns the kept members (a sub-network) and their rows,
    and records every restart in the table ``name`` (validation error, final training loss, ‖θ‖₁, kept)."""
    with torch.no_grad():
        h, _ = net(_init_states(graph.num_nodes, graph.source, len(group), cfg.big, sign), graph.edge_index, graph.weight, max_rounds=max_rounds)
    keep = target.abs() > 0
    rel = torch.nan_to_num(((h[keep] - target[keep, None]).abs() / target[keep, None].abs()).mean(0), nan=float("inf"))
    final = log[log["step"] == log["step"].max()].set_index("member")
    table = group.reset_index(drop=True).assign(val_rel_error=rel.numpy(), train_loss=final.loc[group["member"], "train_loss"].to_numpy(),
                                                 l1=final.loc[group["member"], "l1"].to_numpy())
    table["chosen"] = table.index.isin(table.groupby("seed")["val_rel_error"].idxmin().to_numpy())
    ctx.table(name, table)
    pos = [i for i, c in enumerate(table["chosen"]) if c]
    return net.subset(pos), group.iloc[pos]


def _select_knapsack(cfg: MPNNAlgorithmsConfig, ctx: RunContext, net: "AlignedMPNN", knap: pd.DataFrame, log: pd.DataFrame) -> tuple["AlignedMPNN", pd.DataFrame]:
    """Restart selection on every DP-table entry of ``knap_val_instances`` held-out instances with
    <= knap_items items (the training distribution; never the test sizes). An init that stalls (run
    seed 5 at quick: training loss 5e-4 against 2e-5 for its restarts, f_θ off by 0.3 already at
    x <= 40, then 1e-1 error at 50 items) scores ~40x its sibling restart here."""
    val = _knapsack_training_set(cfg, ctx, "knapsack/validation", cfg.knap_val_instances)
    graph, _ = batch([knapsack_graph(x) for x in val])
    target = torch.cat([torch.as_tensor(knapsack_dp(x.weights, x.values, x.capacity).flatten()) for x in val])
    return _select_restarts(cfg, ctx, "knapsack_selection", net, knap, log, graph, target, -1.0, cfg.knap_items + 2)


def _select_minimax(cfg: MPNNAlgorithmsConfig, ctx: RunContext, net: "AlignedMPNN", group: pd.DataFrame, log: pd.DataFrame) -> tuple["AlignedMPNN", pd.DataFrame]:
    """Restart selection on ``mst_val_graphs`` held-out one- and two-edge paths with weights U[1, 10]
    (the training motifs at weights off the training grid; never an MST test graph)."""
    graph, _ = batch(minimax_validation_set(ctx.generator("minimax/validation"), cfg.mst_val_graphs))
    return _select_restarts(cfg, ctx, "minimax_selection", net, group, log, graph, minimax_distances(graph, graph.source), 1.0, cfg.train_rounds + 1)


def _knapsack(cfg: MPNNAlgorithmsConfig, ctx: RunContext, net: "AlignedMPNN", knap: pd.DataFrame) -> pd.DataFrame:
    """``model``: the knapsack stack, one member per row of ``knap``."""
    S = len(knap)
    rows = []
    for items in ctx.progress(cfg.knap_test_items, "test knapsack"):
        gt = ctx.generator(f"knapsack/test/{items}")
        insts = [knapsack_instance(items, 2 * items, gt) for _ in range(cfg.knap_test_instances)]
        test, ptr = batch([knapsack_graph(x) for x in insts])
        with torch.no_grad():
            h, rounds = net(_init_states(test.num_nodes, test.source, S, cfg.big, -1.0), test.edge_index, test.weight, max_rounds=items + 2)
        for i, x in enumerate(insts):
            opt = float(knapsack_dp(x.weights, x.values, x.capacity)[-1, -1])
            for j, (s, k) in enumerate(zip(knap["seed"], knap["restart"])):
                pred = float(h[ptr[i + 1] - 1, j])
                rows.append(dict(items=items, capacity=x.capacity, instance=i, seed=s, restart=k, optimum=opt, predicted=pred, rel_error=abs(pred - opt) / opt, rounds=rounds))
    table = pd.DataFrame(rows)
    ctx.table("knapsack", table)
    return table


def _references(cfg: MPNNAlgorithmsConfig, ctx: RunContext) -> pd.DataFrame:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import shortest_path

    rows = []
    for family in cfg.test_families:
        for n in cfg.test_n:
            g = ctx.generator(f"test/{family}/{n}")  # the same graphs as the MPNN test
            for i in range(cfg.test_graphs):
                graph = _test_graph(family, n, g, cfg.er_c)
                d = bellman_ford(graph.edge_index, graph.weight, graph.num_nodes, graph.source).numpy()
                u, v = graph.edge_index.numpy()
                mat = coo_matrix((graph.weight.numpy(), (u, v)), shape=(graph.num_nodes,) * 2).tocsr()  # duplicates summed: none here
                ref = shortest_path(mat, directed=True, indices=graph.source)
                rows.append(dict(check="bellman-ford vs scipy", family=family, n=n, graph=i, error=float(np.abs(d - ref).max())))
    g = ctx.generator("knapsack/brute")
    for i in range(cfg.brute_instances):
        items = int(torch.randint(1, 13, (1,), generator=g))
        x = knapsack_instance(items, int(torch.randint(1, 4 * items + 1, (1,), generator=g)), g)
        rows.append(dict(check="knapsack DP vs brute force", family="knapsack", n=items, graph=i,
                         error=abs(float(knapsack_dp(x.weights, x.values, x.capacity)[-1, -1]) - knapsack_brute_force(x.weights, x.values, x.capacity))))
    table = pd.DataFrame(rows)
    ctx.table("references", table)
    return table


def _wl(cfg: MPNNAlgorithmsConfig, ctx: RunContext) -> pd.DataFrame:
    from theorylab.nn.mpnn import AlignedMPNN, PairMPNN, pair_init

    c6, tri = wl_indistinguishable_pair()
    rows = []
    seeds = [ctx.seed(f"wl/{i}") for i in range(cfg.wl_models)]
    wl_same = all(sorted(a) == sorted(b) for a, b in zip(wl_colors(c6.edge_index, 6, cfg.wl_rounds), wl_colors(tri.edge_index, 6, cfg.wl_rounds)))
    msf = (msf_weight(c6.edge_index, c6.weight, 6), msf_weight(tri.edge_index, tri.weight, 6))

    def node_run(aggr: str, features: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        net = AlignedMPNN(aggr, seeds=seeds, hidden=cfg.hidden)
        outs = []
        with torch.no_grad():
            for graph in (c6, tri):
                h, _ = net(features[:, None].expand(-1, cfg.wl_models).clone(), graph.edge_index, graph.weight, rounds=cfg.wl_rounds, frontier=False)
                outs.append(h)
        return outs

    for aggr in ("min", "max", "sum", "mean"):
        variants = [("node MPNN", torch.ones(6, dtype=torch.float64))]
        if aggr == "sum":  # the leak control: node ids as features must be detected
            variants.append(("node MPNN + node ids (leak)", torch.arange(6, dtype=torch.float64)))
        for variant, feats in variants:
            a, b = node_run(aggr, feats)
            gap = (a.sort(0).values - b.sort(0).values).abs().amax(0)
            readout = (a.sum(0) - b.sum(0)).abs()
            for i in range(cfg.wl_models):
                rows.append(dict(variant=variant, aggr=aggr, model=i, embedding_gap=float(gap[i]), readout_gap=float(readout[i])))
    for aggr in ("sum",):  # random min/max pair networks saturate to one value on both graphs; sum keeps the multiset
        net = PairMPNN(aggr, seeds=seeds, hidden=16)
        with torch.no_grad():
            a, b = (net(pair_init(gr.edge_index, gr.weight, 6, cfg.wl_models, 2.0), 3) for gr in (c6, tri))
        flat_a, flat_b = a.reshape(36, -1).sort(0).values, b.reshape(36, -1).sort(0).values
        gap = (flat_a - flat_b).abs().amax(0)
        readout = (a.sum((0, 1)) - b.sum((0, 1))).abs()
        for i in range(cfg.wl_models):
            rows.append(dict(variant="pair MPNN (2-WL style)", aggr=aggr, model=i, embedding_gap=float(gap[i]), readout_gap=float(readout[i])))
    table = pd.DataFrame(rows).assign(wl_colours_equal=wl_same, msf_c6=msf[0], msf_two_c3=msf[1])
    ctx.table("wl_pair", table)
    return table


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
        ax.errorbar(stats.index * shift, stats["median"], yerr=[stats["median"] - stats["min"], stats["max"] - stats["median"]], fmt="o-", ms=4, capsize=2,
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
    net = AlignedMPNN("min", seeds=seeds[:1], hidden=cfg.hidden)
    pair = PairMPNN("min", seeds=seeds[:1], hidden=cfg.hidden)
    with torch.no_grad():
        for graph, name, marker in ((c6, "C6", "o"), (tri, "2 x C3", "x")):
            h, _ = net(torch.ones(6, 1, dtype=torch.float64), graph.edge_index, graph.weight, rounds=cfg.wl_rounds, frontier=False)
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

S_REF = "The reference Bellman-Ford agrees with scipy.sparse.csgraph.shortest_path to 1e-9 on every test graph, and the knapsack DP with brute force on every instance of <= 12 items."


@claims.add("reference-bf", S_REF, "oracles (ours)")
def judge_reference(res, v) -> Verdict:
    t = res.table("references")
    worst = t.groupby("check")["error"].max()
    ok = bool((worst <= 1e-9).all())
    return v.judged(ok, float(worst.max()), "<= 1e-9", 1e-9, "; ".join(f"{k}: max error {v:.1e} over {int((t['check'] == k).sum())} cases" for k, v in worst.items()))


def _bf_min(res, eta: float = 1e-3) -> pd.DataFrame:
    t = res.table("size_generalization")
    return t[(t["aggr"] == "min") & (t["task"] == "bf") & np.isclose(t["eta"], eta)]


S_SIZE = ("Trained on <= 10 graphs of <= 3 nodes with η = 1e-3, the min-aggregation MPNN's mean relative error is <= 1e-2 at every test size for every seed, "
          "and flat: err(n_max) <= 2·err(16) + 1e-3 (thresholds ours; the paper states O(ε)).")


@claims.add("size-generalization", S_SIZE, REF + "; Nerem et al. arXiv 2503.19173 (extrapolation guarantee)")
def judge_size(res, v) -> Verdict:
    t = _bf_min(res)
    if t.empty:
        raise Undecided(f"this config trains no min-aggregation model with η = 1e-3 (eta={tuple(res.config.get('eta', ()))})")
    worst = float(t["mean_rel_error"].max())
    flat = []
    for _, g in t.groupby(["family", "loss", "seed"]):
        e = g.set_index("n")["mean_rel_error"]
        flat.append(e[e.index.max()] <= 2 * e[e.index.min()] + 1e-3)
    ok = worst <= 1e-2 and all(flat)
    by_n = t.groupby("n")["mean_rel_error"].max()
    detail = "max over seeds by n: " + ", ".join(f"{n}: {v:.2e}" for n, v in by_n.items()) + f"; flat in {sum(flat)}/{len(flat)} (family, loss, seed)"
    un = _bf_min(res, 0.0)
    if not un.empty:
        detail += "; η = 0 (reported): " + ", ".join(f"{n}: {v:.2e}" for n, v in un.groupby("n")["mean_rel_error"].max().items())
    return v.judged(ok, worst, "<= 1e-2", 1e-2, detail)


S_F = "With η = 1e-3 the learned message function is x + w: max over x in [0, 200], w in [1, 10] of |f_θ(x, w) − (x + w)|/(x + w) <= 1e-2 for every seed (training inputs stay at x <= ~20 besides the sentinel)."


@claims.add("learned-function", S_F, REF + ", the aligned target x + w")
def judge_learned_f(res, v) -> Verdict:
    t = res.table("learned_function")
    t = t[(t["task"] == "bf") & (t["aggr"] == "min")]
    reg = t[np.isclose(t["eta"], 1e-3)]
    if reg.empty:
        raise Undecided(f"this config trains no min-aggregation model with η = 1e-3 (eta={tuple(res.config.get('eta', ()))})")
    worst = float(reg["max_rel_error"].max())
    detail = f"η = 1e-3: max {worst:.2e} (seeds: {', '.join(f'{v:.1e}' for v in reg['max_rel_error'])}); η = 0 (reported): {', '.join(f'{v:.1e}' for v in t[t['eta'] == 0]['max_rel_error'])}"
    return v.judged(worst <= 1e-2, worst, "<= 1e-2", 1e-2, detail)


S_AGG = "Sum- and mean-aggregation MPNNs trained identically have mean relative error >= 0.2 at the largest test size, for every seed."


@claims.add("aggregation-control", S_AGG, REF + ", algorithmic alignment of the aggregation")
def judge_aggregation(res, v) -> Verdict:
    t = res.table("size_generalization")
    t = t[t["aggr"].isin(["sum", "mean"])]
    if t.empty:
        raise Undecided("this config trains no sum/mean baseline (controls=())")
    top = t[t["n"] == t["n"].max()]
    low = float(top["mean_rel_error"].min())
    detail = ", ".join(f"{a}: min {g['mean_rel_error'].min():.3g}" for a, g in top.groupby("aggr")) + f" at n = {int(top['n'].max())}"
    return v.judged(low >= 0.2, low, ">= 0.2", 0.2, detail)


S_L1 = "The regulariser is active: ‖θ‖₁ at η = 1e-3 is <= 0.5 x ‖θ‖₁ at η = 0 for every seed (same initialisation, end of training)."


@claims.add("regulariser-active", S_L1, REF + ", the sparsity regulariser")
def judge_l1(res, v) -> Verdict:
    t = res.table("learned_function")
    t = t[(t["task"] == "bf") & (t["aggr"] == "min")]
    a, b = t[np.isclose(t["eta"], 1e-3)], t[t["eta"] == 0]
    if a.empty or b.empty:
        raise Undecided(f"this config does not train both η = 0 and η = 1e-3 (eta={tuple(res.config.get('eta', ()))})")
    pairs = a.merge(b, on=["seed", "loss"], suffixes=("_reg", "_free"))
    ratio = pairs["l1_reg"] / pairs["l1_free"]
    detail = ", ".join(f"seed {r.seed}: {r.l1_reg:.0f} / {r.l1_free:.0f}" for r in pairs.itertuples())
    return v.judged(bool((ratio <= 0.5).all()), float(ratio.max()), "<= 0.5", 0.5, detail)


S_WL = ("C6 and two disjoint triangles are 1-WL-indistinguishable: for every random-init node MPNN (min, max, sum, mean) the sorted node embeddings and the summed readouts "
        "agree to 1e-6 after K = 6 rounds, although msf_weight gives 5 vs 4; node-id features (a leak) break the tie (gap >= 1e-3), and the pair-based variant separates the graphs in every model.")


@claims.add("wl-impossibility", S_WL, REF + ", tasks standard MPNNs cannot do; 1-WL")
def judge_wl(res, v) -> Verdict:
    t = res.table("wl_pair")
    node = t[t["variant"] == "node MPNN"]
    leak = t[t["variant"].str.contains("leak")]
    pair = t[t["variant"].str.startswith("pair")]
    same = float(node[["embedding_gap", "readout_gap"]].max().max())
    ok = (same <= 1e-6 and bool(t["wl_colours_equal"].iloc[0]) and (t["msf_c6"].iloc[0], t["msf_two_c3"].iloc[0]) == (5.0, 4.0)
          and float(leak["embedding_gap"].min()) >= 1e-3 and float(pair["embedding_gap"].min()) >= 1e-3)
    detail = (f"node MPNN max gap {same:.1e} over {len(node)} models; 1-WL colours equal: {bool(t['wl_colours_equal'].iloc[0])}; MSF {t['msf_c6'].iloc[0]:g} vs {t['msf_two_c3'].iloc[0]:g}; "
              f"leak control min gap {leak['embedding_gap'].min():.3g}; pair MPNN min gap {pair['embedding_gap'].min():.3g}")
    return v.judged(ok, same, "<= 1e-6", 1e-6, detail)


S_KNAP = ("The max-aggregation MPNN trained on <= 4 items / capacity <= 8 reaches mean relative error <= 1e-2 on the optimum at 50 items / capacity 100, for every seed "
          "(each seed keeps the best of its restarts on held-out instances of the training sizes; the test sizes play no part in the choice).")


@claims.add("knapsack-extrapolation", S_KNAP, REF + ", dynamic programs (our DAG encoding)")
def judge_knapsack(res, v) -> Verdict:
    t = res.table("knapsack")
    top = t[t["items"] == t["items"].max()]
    if int(top["items"].max()) < 50:
        raise Undecided(f"this config tests knapsack only up to {int(top['items'].max())} items (the claim is at 50: knap_test_items)")
    per = top.groupby("seed")["rel_error"].mean()
    detail = f"{int(top['items'].max())} items: mean per seed " + ", ".join(f"{v:.2e}" for v in per) + f"; max over instances {top['rel_error'].max():.2e}"
    if "knapsack_selection" in res.tables:
        sel = res.tables["knapsack_selection"]
        detail += "; kept the restart with the lowest held-out <= 4-item error per seed (" + ", ".join(
            f"seed {s}: {g['val_rel_error'].min():.1e} of {', '.join(f'{v:.1e}' for v in g['val_rel_error'])}" for s, g in sel.groupby("seed")) + ")"
    return v.judged(bool(per.max() <= 1e-2), float(per.max()), "<= 1e-2", 1e-2, detail)


S_MST = ("Ours (reconstruction of the paper's MST task): a min-aggregation MPNN trained on tiny one- and two-edge paths with bottleneck targets (f* = max(x, w); per seed the best "
         "of its restarts on held-out tiny paths) classifies minimum-spanning-tree edges (edge in tree iff w_uv <= learned bottleneck distance) with mean F1 >= 0.99 and "
         "spanning-forest weight within 1e-2 of networkx's, for every seed and test size.")


@claims.add("mst-minimax", S_MST, REF + ", minimum spanning trees (our bottleneck encoding)")
def judge_mst(res, v) -> Verdict:
    t = res.table("mst", unless="this config trains no minimax models (mst=false; off at quick for the CPU budget: --preset mst-cpu measures them "
                                "at reduced size in ~75 s on 2 cores, the paper preset judges them)")
    f1 = t.groupby(["seed", "n"])["f1"].mean()
    werr = t.groupby(["seed", "n"])["weight_rel_error"].mean()
    ok = float(f1.min()) >= 0.99 and float(werr.max()) <= 1e-2
    detail = "mean F1 by (seed, n): " + ", ".join(f"{k}: {v:.3f}" for k, v in f1.items()) + f"; worst mean weight error {werr.max():.1e}"
    if "minimax_selection" in res.tables:
        sel = res.tables["minimax_selection"]
        if sel.groupby("seed").size().max() > 1:
            detail += "; kept the restart with the lowest held-out tiny-graph error per seed (" + ", ".join(
                f"seed {s}: {g['val_rel_error'].min():.1e} of {', '.join(f'{v:.1e}' for v in g['val_rel_error'])}" for s, g in sel.groupby("seed")) + ")"
    judged_n = int(res.config.get("mst_judged_n", 256))
    if int(t["n"].max()) < judged_n:
        bad = sorted({int(k[0]) for k, v in f1.items() if v < 0.99} | {int(k[0]) for k, v in werr.items() if v > 1e-2})
        inits = int(res.config.get("mst_restarts", 1))
        grid = tuple(res.config.get("mst_train_weights", ()))
        fits = ""
        if "minimax_selection" in res.tables:
            losses = res.tables["minimax_selection"]["train_loss"]
            fits = f" (final training loss {losses.min():.0e}..{losses.max():.0e} here)"
        raise Undecided(f"at reduced size it measures {detail} (n <= {int(t['n'].max())}, {t['seed'].nunique()} seeds, {inits} init(s) each, training weights {grid}; "
                        f"{'passes' if ok else f'fails F1 >= 0.99 / weight error <= 1e-2 in seeds {bad}'}); judged at paper size (n up to {judged_n}, restart selection). "
                        "Why it is fragile: above the kink max(x, w) is the identity in x, so the n-round min-fixpoint lowers a bottleneck by up to n times "
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
