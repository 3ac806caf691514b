"""How far an algorithm-aligned MPNN is from the algorithm it should execute, on graphs of any size.

Wittig, Vasileiou, Nerem, Stoll, Geerts, Wang, Morris, "Which Algorithms Can Graph Neural Networks
Learn?", arXiv 2602.13106 (2026); Nerem, Chen, Dasgupta, Wang, arXiv 2503.19173. Every function takes
a stacked network (``net(h0, edge_index, weight, rounds=... | max_rounds=...) -> (h (N, S), rounds)``,
e.g. :class:`theorylab.nn.mpnn.AlignedMPNN`, one column per member) and returns plain numbers per member.

- :func:`shortest_path_errors`: relative error against exact Bellman–Ford (size generalisation).
- :func:`message_function_errors`: the learned message function f_θ(x, w) against x + w or max(x, w)
  on a grid far beyond the training range.
- :func:`mst_classification`: minimum-spanning-tree edges read off learned bottleneck distances.
- :func:`knapsack_optima`: the learned max-plus DP's optimum on knapsack DAGs.
- :func:`mean_relative_errors`: one number per member on held-out graphs (restart selection).
- :func:`node_embedding_gaps`, :func:`pair_embedding_gaps`: can a network tell two graphs apart (1-WL).
"""

from __future__ import annotations

import time

import torch
from torch import Tensor

from theorylab.data.graphs import KnapsackInstance, WeightedGraph, batch, initial_states, knapsack_graph
from theorylab.probes.grids import function_grid
from theorylab.theory.algorithms import bellman_ford, knapsack_dp, minimum_spanning_edges, msf_weight


def shortest_path_errors(
    nets: list, graph: WeightedGraph, big: float, max_rounds: int
) -> tuple[list[dict], int, float, float]:
    """Relative error ``|h_v − d_v|/d_v`` over the nodes with exact distance ``d_v > 0`` (NaN counted as inf).

    ``nets[0]`` runs from :func:`~theorylab.data.graphs.initial_states` to its fixed point (at most
    ``max_rounds``); the others (sum/mean aggregation have no fixed point) run the rounds it needed.
    Returns one dict per member of every net in order (``mean_rel_error``, ``max_rel_error``,
    ``within_1e3``: the fraction within 1e-3), the rounds, and the seconds of ``nets[0]`` and of the exact
    Bellman–Ford.
    """
    t0 = time.perf_counter()
    exact = bellman_ford(graph.edge_index, graph.weight, graph.num_nodes, graph.source)
    t_exact = time.perf_counter() - t0
    keep = exact > 0
    outs = []
    with torch.no_grad():
        t0 = time.perf_counter()
        h, rounds = nets[0](
            initial_states(graph.num_nodes, graph.source, nets[0].members, big),
            graph.edge_index,
            graph.weight,
            max_rounds=max_rounds,
        )
        t_first = time.perf_counter() - t0
        outs.append(h)
        for net in nets[1:]:
            outs.append(
                net(
                    initial_states(graph.num_nodes, graph.source, net.members, big),
                    graph.edge_index,
                    graph.weight,
                    rounds=rounds,
                )[0]
            )
    rows = []
    for h in outs:
        rel = (h[keep] - exact[keep, None]).abs() / exact[keep, None]
        rel = torch.nan_to_num(rel, nan=float("inf"))
        for j in range(h.shape[1]):
            rows.append(
                dict(
                    mean_rel_error=float(rel[:, j].mean()),
                    max_rel_error=float(rel[:, j].max()),
                    within_1e3=float((rel[:, j] <= 1e-3).float().mean()),
                )
            )
    return rows, rounds, t_first, t_exact


MESSAGE_TARGETS = {"x + w": lambda x, w: x + w, "max(x, w)": torch.maximum}


def message_function_errors(
    mlp, targets: list[str], x_max: float, train_x_max: float = 10.0
) -> tuple[list[dict], tuple[Tensor, Tensor, Tensor]]:
    """The stacked message function ``mlp`` (S members, 2 inputs, e.g. ``AlignedMPNN.f``) on the grid x in
    [0, x_max] (201 points), w in [1, 10] (19 points), against ``targets[j]`` ("x + w" for Bellman–Ford and
    the knapsack DP, "max(x, w)" for bottleneck distances).

    Returns per member ``max_rel_error`` (the whole grid), ``max_rel_error_train_range`` (x <= train_x_max)
    and ``l1`` (‖θ‖₁), and the grid ``(X, W, values (201, 19, S))``.
    """
    xs = torch.linspace(0, x_max, 201, dtype=torch.float64)
    ws = torch.linspace(1, 10, 19, dtype=torch.float64)
    S = mlp.members
    (X, W), values = function_grid(lambda p: mlp(p[:, None, :].expand(-1, S, -1)).squeeze(-1), (xs, ws))
    with torch.no_grad():
        l1 = mlp.l1()
    rows = []
    for j, name in enumerate(targets):
        truth = MESSAGE_TARGETS[name](X, W)
        rel = (values[..., j] - truth).abs() / truth
        rows.append(
            dict(
                max_rel_error=float(rel.max()),
                max_rel_error_train_range=float(rel[X <= train_x_max].max()),
                l1=float(l1[j]),
            )
        )
    return rows, (X, W, values)


def mst_classification(net, graph: WeightedGraph, big: float, slack: float = 1e-3) -> list[dict]:
    """Classify the edges of an undirected ``graph`` (both directions, one weight per pair) as minimum
    spanning forest edges from the network's all-pairs bottleneck distances D (one copy of the graph per
    source, run to the fixed point): ``(u, v, w)`` is a tree edge iff ``w <= D(u, v)(1 + slack)`` (no other
    u-v path has a smaller largest weight). Scored against networkx's forest.

    Returns per member ``f1`` (edge sets), ``weight_rel_error`` (predicted vs true forest weight),
    ``tree_edges`` and ``predicted`` (counts).
    """
    N = graph.num_nodes
    copies, _ = batch([WeightedGraph(graph.edge_index, graph.weight, N, s) for s in range(N)])
    with torch.no_grad():
        h, _ = net(
            initial_states(copies.num_nodes, copies.source, net.members, big),
            copies.edge_index,
            copies.weight,
            max_rounds=N + 1,
        )
    D = h.reshape(N, N, net.members)
    u, v = graph.edge_index
    half = u < v
    edges = list(zip(u[half].tolist(), v[half].tolist(), graph.weight[half].tolist()))
    weight = {(a, b): w for a, b, w in edges}
    truth = minimum_spanning_edges(graph)
    true_weight = msf_weight(graph.edge_index, graph.weight, N)
    rows = []
    for j in range(net.members):
        pred = {(a, b) for a, b, w in edges if w <= float(D[a, b, j]) * (1 + slack)}
        tp = len(pred & truth)
        f1 = 2 * tp / max(1, len(pred) + len(truth))
        w_pred = sum(weight[a, b] for a, b in pred)
        rows.append(
            dict(
                f1=f1,
                weight_rel_error=abs(w_pred - true_weight) / true_weight,
                tree_edges=len(truth),
                predicted=len(pred),
            )
        )
    return rows


def knapsack_optima(
    net, instances: list[KnapsackInstance], big: float, max_rounds: int
) -> tuple[list[float], list[list[float]], int]:
    """The exact optimum of each instance and each member's prediction (the state of node (n, C) after the
    max-plus fixed point from ``−big``, layer 0 at 0) on the batched knapsack DAGs; and the rounds run."""
    test, ptr = batch([knapsack_graph(x) for x in instances])
    with torch.no_grad():
        h, rounds = net(
            initial_states(test.num_nodes, test.source, net.members, big, -1.0),
            test.edge_index,
            test.weight,
            max_rounds=max_rounds,
        )
    optima = [float(knapsack_dp(x.weights, x.values, x.capacity)[-1, -1]) for x in instances]
    preds = [[float(h[ptr[i + 1] - 1, j]) for j in range(net.members)] for i in range(len(instances))]
    return optima, preds, rounds


def mean_relative_errors(net, graph: WeightedGraph, target: Tensor, big: float, sign: float, max_rounds: int) -> Tensor:
    """Per member, the mean of ``|h_v − y_v|/|y_v|`` over the nodes with ``y_v != 0`` after the fixed point
    from ``sign · big`` (NaN counted as inf); shape ``(S,)``."""
    with torch.no_grad():
        h, _ = net(
            initial_states(graph.num_nodes, graph.source, net.members, big, sign),
            graph.edge_index,
            graph.weight,
            max_rounds=max_rounds,
        )
    keep = target.abs() > 0
    return torch.nan_to_num(((h[keep] - target[keep, None]).abs() / target[keep, None].abs()).mean(0), nan=float("inf"))


def node_embedding_gaps(
    net, graphs: tuple[WeightedGraph, WeightedGraph], features: Tensor, rounds: int
) -> tuple[Tensor, Tensor]:
    """Run a node MPNN (all members) on two graphs of equal size from node ``features`` ``(N,)`` for exactly
    ``rounds`` rounds; returns per member the largest gap between the sorted node embeddings and the gap
    between the summed readouts. Both are 0 (to rounding) on 1-WL-indistinguishable graphs."""
    outs = []
    with torch.no_grad():
        for graph in graphs:
            h, _ = net(
                features[:, None].expand(-1, net.members).clone(),
                graph.edge_index,
                graph.weight,
                rounds=rounds,
                frontier=False,
            )
            outs.append(h)
    a, b = outs
    return (a.sort(0).values - b.sort(0).values).abs().amax(0), (a.sum(0) - b.sum(0)).abs()


def pair_embedding_gaps(
    net, graphs: tuple[WeightedGraph, WeightedGraph], rounds: int, big: float
) -> tuple[Tensor, Tensor]:
    """:func:`node_embedding_gaps` for a pair network (:class:`theorylab.nn.mpnn.PairMPNN`) started from
    :func:`~theorylab.nn.mpnn.pair_init` (0 on the diagonal, the weight on edges, ``big`` elsewhere)."""
    from theorylab.nn.mpnn import pair_init

    M = net.f.members
    with torch.no_grad():
        a, b = (net(pair_init(gr.edge_index, gr.weight, gr.num_nodes, M, big), rounds) for gr in graphs)
    flat_a, flat_b = (
        a.reshape(a.shape[0] * a.shape[1], -1).sort(0).values,
        b.reshape(b.shape[0] * b.shape[1], -1).sort(0).values,
    )
    return (flat_a - flat_b).abs().amax(0), (a.sum((0, 1)) - b.sum((0, 1))).abs()
