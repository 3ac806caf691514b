"""Reference algorithms for algorithm-learning studies: the oracles an MPNN is held against.

Wittig, Vasileiou, Nerem, Stoll, Geerts, Wang, Morris, "Which Algorithms Can Graph Neural Networks
Learn?", arXiv 2602.13106 (2026); Nerem, Chen, Dasgupta, Wang, arXiv 2503.19173.

- :func:`bellman_ford`: K-step Bellman–Ford, ``d^{k+1}_v = min(d^k_v, min_u d^k_u + w_uv)``,
  vectorised over edges with ``scatter_reduce`` (many graphs at once when batched with offsets).
- :func:`knapsack_dp`: ``T[i, c] = max(T[i−1, c], T[i−1, c − w_i] + v_i)`` over capacities at once.
- :func:`knapsack_brute_force`: every subset (for checking the DP on small instances).
- :func:`msf_weight`: minimum spanning forest weight (Kruskal with union-find).
- :func:`wl_colors`: 1-WL colour refinement; equal colour histograms mean no MPNN with
  permutation-invariant aggregation can tell two graphs apart (Xu et al.; Morris et al.).
- :func:`knapsack_dp_targets` (every DP-table entry of many instances, as one vector),
  :func:`minimum_spanning_edges` (networkx), and the oracle cross-checks
  :func:`bellman_ford_scipy_error` and :func:`knapsack_brute_force_error`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch
from torch import Tensor

from theorylab.data.graphs import KnapsackInstance, WeightedGraph

UNREACHED = math.inf


def bellman_ford(
    edge_index: Tensor, weight: Tensor, num_nodes: int, sources: Tensor | int, steps: int | None = None
) -> Tensor:
    """Distances after ``steps`` rounds (default ``num_nodes − 1``: exact shortest paths); ``inf`` where unreached.

    ``edge_index``: ``(2, E)`` directed edges ``u -> v``; ``weight``: ``(E,)``; ``sources``: one node or
    a tensor of nodes (several graphs batched with node offsets each have their own source).
    Stops early at a fixed point.
    """
    dist = torch.full((num_nodes,), UNREACHED, dtype=torch.float64)
    dist[torch.as_tensor(sources)] = 0.0
    src, dst = edge_index
    w = weight.to(torch.float64)
    rounds = num_nodes - 1 if steps is None else steps
    for _ in range(rounds):
        new = dist.scatter_reduce(0, dst, dist[src] + w, reduce="amin", include_self=True)
        if torch.equal(new, dist):
            break
        dist = new
    return dist


def knapsack_dp(weights: np.ndarray, values: np.ndarray, capacity: int) -> np.ndarray:
    """The DP table ``T`` of shape ``(n + 1, capacity + 1)``: best value of the first i items within capacity c."""
    weights, values = np.asarray(weights, dtype=np.int64), np.asarray(values, dtype=np.float64)
    if np.any(weights < 1):
        raise ValueError("item weights must be positive integers")
    T = np.zeros((len(weights) + 1, capacity + 1))
    for i, (w, v) in enumerate(zip(weights, values), start=1):
        T[i] = T[i - 1]
        if w <= capacity:
            T[i, w:] = np.maximum(T[i - 1, w:], T[i - 1, :-w] + v)
    return T


def knapsack_brute_force(weights, values, capacity: int) -> float:
    """Best total value over all subsets (2^n; for n <= ~16)."""
    best = 0.0
    n = len(weights)
    for r in range(1, n + 1):
        for subset in itertools.combinations(range(n), r):
            if sum(weights[i] for i in subset) <= capacity:
                best = max(best, float(sum(values[i] for i in subset)))
    return best


def msf_weight(edge_index: Tensor, weight: Tensor, num_nodes: int) -> float:
    """Total weight of a minimum spanning forest of the undirected graph (Kruskal; parallel/reverse edges allowed)."""
    parent = list(range(num_nodes))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    total = 0.0
    order = torch.argsort(weight.to(torch.float64), stable=True)
    u_all, v_all = edge_index[0].tolist(), edge_index[1].tolist()
    w_all = weight.tolist()
    for e in order.tolist():
        ru, rv = find(u_all[e]), find(v_all[e])
        if ru != rv:
            parent[ru] = rv
            total += w_all[e]
    return total


def wl_colors(edge_index: Tensor, num_nodes: int, rounds: int, initial: list | None = None) -> list[list[int]]:
    """1-WL colours per round (round 0 = ``initial`` or all equal), on the undirected simple graph.

    Colours are canonical across calls (a colour is the sorted signature itself, hashed by a shared
    table), so the histograms of two graphs can be compared directly.
    """
    neighbours: list[list[int]] = [[] for _ in range(num_nodes)]
    for u, v in edge_index.t().tolist():
        neighbours[v].append(u)
        if u != v:
            neighbours[u].append(v)
    colours = [0] * num_nodes if initial is None else list(initial)
    history = [colours]
    for _ in range(rounds):
        colours = [hash((colours[v], tuple(sorted(colours[u] for u in set(neighbours[v]))))) for v in range(num_nodes)]
        history.append(colours)
    return history


def knapsack_dp_targets(instances: list[KnapsackInstance]) -> Tensor:
    """The flattened DP tables of ``instances``, concatenated: the node targets of their batched
    :func:`~theorylab.data.graphs.knapsack_graph` DAGs (node (i, c) of each holds ``T[i, c]``)."""
    return torch.cat([torch.as_tensor(knapsack_dp(x.weights, x.values, x.capacity).flatten()) for x in instances])


def bellman_ford_scipy_error(graph: WeightedGraph) -> float:
    """Max |:func:`bellman_ford` − ``scipy.sparse.csgraph.shortest_path``| from the graph's source (inf = inf counts 0).

    The graph must have no parallel edges (the sparse matrix would sum them).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import shortest_path

    d = bellman_ford(graph.edge_index, graph.weight, graph.num_nodes, graph.source).numpy()
    u, v = graph.edge_index.numpy()
    mat = coo_matrix((graph.weight.numpy(), (u, v)), shape=(graph.num_nodes,) * 2).tocsr()
    ref = shortest_path(mat, directed=True, indices=graph.source)
    return float(np.abs(d - ref).max())


def knapsack_brute_force_error(inst: KnapsackInstance) -> float:
    """|DP optimum − brute-force optimum| of one instance (use <= ~16 items)."""
    dp = float(knapsack_dp(inst.weights, inst.values, inst.capacity)[-1, -1])
    return abs(dp - knapsack_brute_force(inst.weights, inst.values, inst.capacity))


def minimum_spanning_edges(graph: WeightedGraph) -> set[tuple[int, int]]:
    """Edges ``(a, b)``, ``a < b``, of networkx's minimum spanning forest of the undirected graph whose edges
    are the directed pairs with ``u < v`` (as :func:`~theorylab.data.graphs.symmetrize` leaves them)."""
    import networkx as nx

    G = nx.Graph()
    G.add_nodes_from(range(graph.num_nodes))
    u, v = graph.edge_index
    half = u < v
    for a, b, w in zip(u[half].tolist(), v[half].tolist(), graph.weight[half].tolist()):
        G.add_edge(a, b, weight=w)
    return {tuple(sorted(e[:2])) for e in nx.minimum_spanning_edges(G, data=False)}
