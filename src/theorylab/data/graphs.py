"""Weighted graphs for algorithm-learning studies, as plain tensors (PyTorch Geometric ``Data`` on request).

Wittig et al., "Which Algorithms Can Graph Neural Networks Learn?", arXiv 2602.13106 (2026), and
Nerem et al., arXiv 2503.19173: train an MPNN on a handful of tiny graphs, test it on graphs 10x-100x
larger. Every generator returns a :class:`WeightedGraph` (directed edges ``u -> v`` with weights and
a source); :func:`batch` joins many into one disconnected graph with node offsets, so an algorithm
or a model runs over all of them in one pass.

- :func:`bf_tiny_training_set`: the three Bellman–Ford motifs (one edge; a two-edge path; a node with
  two competing in-edges, both outcomes) with weights from a small grid (reconstructed).
- :func:`erdos_renyi_weighted`: G(n, p = c/n), weights U[1, 10], restricted to the part reachable
  from a random source.
- :func:`knapsack_graph`: a 0-1 knapsack instance as a layered DAG over (item i, capacity c) whose
  longest (max-plus) path from layer 0 to (n, C) is the DP optimum.
- :func:`wl_indistinguishable_pair`: the 6-cycle and two disjoint triangles (1-WL cannot tell them apart).
- :func:`knapsack_instances` (random instances of bounded size), :func:`random_test_graph` (an ER graph,
  a grid or a tree by name), :func:`initial_states` (the sentinel start of an algorithm-aligned MPNN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


@dataclass
class WeightedGraph:
    """Directed weighted graph: ``edge_index`` ``(2, E)`` (long), ``weight`` ``(E,)`` (float64), ``num_nodes``,
    ``source``."""

    edge_index: Tensor
    weight: Tensor
    num_nodes: int
    source: int | Tensor = 0

    def undirected(self) -> "WeightedGraph":
        """Both directions of every edge."""
        ei = torch.cat([self.edge_index, self.edge_index.flip(0)], dim=1)
        return WeightedGraph(ei, torch.cat([self.weight, self.weight]), self.num_nodes, self.source)

    def to_pyg(self):
        """A PyTorch Geometric ``Data`` (``edge_attr`` = weights as a column, ``source`` kept); needs the graphs
        extra."""
        try:
            from torch_geometric.data import Data
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError('PyTorch Geometric is needed here: pip install "theorylab[graphs]"') from err
        return Data(
            edge_index=self.edge_index,
            edge_attr=self.weight[:, None],
            num_nodes=self.num_nodes,
            source=torch.as_tensor(self.source),
        )


def batch(graphs: list[WeightedGraph]) -> tuple[WeightedGraph, Tensor]:
    """One disjoint union (sources: a tensor of the graphs' sources) and ``ptr`` (node offsets, length G + 1)."""
    sizes = torch.tensor([g.num_nodes for g in graphs])
    ptr = torch.cat([torch.zeros(1, dtype=torch.long), sizes.cumsum(0)])
    ei = torch.cat([g.edge_index + ptr[i] for i, g in enumerate(graphs)], dim=1)
    w = torch.cat([g.weight for g in graphs])
    sources = torch.cat([torch.as_tensor(g.source).reshape(-1) + ptr[i] for i, g in enumerate(graphs)])
    return WeightedGraph(ei, w, int(ptr[-1]), sources), ptr


def _graph(edges: list[tuple[int, int]], weights: list[float], n: int, source: int = 0) -> WeightedGraph:
    ei = torch.tensor(edges, dtype=torch.long).t().reshape(2, -1)
    return WeightedGraph(ei, torch.tensor(weights, dtype=torch.float64), n, source)


def bf_tiny_training_set(grid=range(1, 11)) -> list[WeightedGraph]:
    """At most 10 tiny directed graphs with source 0 covering the Bellman–Ford motifs (reconstructed).

    (a) s -> v; (b) s -> u -> v; (c) s -> v and s -> u -> v, once with the direct edge winning and
    once with the path winning. Weights come from ``grid`` (its ends and middle).
    """
    g = sorted(set(int(x) for x in grid))
    if len(g) < 2 or g[0] < 0:
        raise ValueError("grid needs at least two non-negative weights")
    lo, hi, mid = g[0], g[-1], g[len(g) // 2]
    graphs = [_graph([(0, 1)], [w], 2) for w in (lo, mid, hi)]
    graphs += [_graph([(0, 1), (1, 2)], ws, 3) for ws in ((lo, hi), (mid, lo), (hi, mid))]
    graphs += [
        _graph([(0, 2), (0, 1), (1, 2)], [lo, mid, mid], 3),  # direct edge wins
        _graph([(0, 2), (0, 1), (1, 2)], [hi, lo, lo], 3),  # path wins
        _graph([(0, 2), (0, 1), (1, 2)], [mid, lo, hi], 3),
        _graph([(0, 2), (0, 1), (1, 2)], [hi, mid, lo], 3),
    ]
    return graphs[:10]


def minimax_tiny_training_set(grid=range(1, 11)) -> list[WeightedGraph]:
    """Tiny directed graphs for bottleneck (minimax) distances, f*(x, w) = max(x, w): one edge s -> v per
    weight, and the path s -> u -> v for every ordered pair of weights, equal ones included, so both
    sides of the kink x = w are covered and the kink itself is pinned (the BF motifs meet only three
    such pairs, and a grid without x = w leaves the kink anywhere between its points)."""
    g = sorted(set(int(x) for x in grid))
    if len(g) < 2 or g[0] < 0:
        raise ValueError("grid needs at least two non-negative weights")
    graphs = [_graph([(0, 1)], [w], 2) for w in g]
    return graphs + [_graph([(0, 1), (1, 2)], [a, b], 3) for a in g for b in g]


def minimax_validation_set(
    generator: torch.Generator, count: int, w_low: float = 1.0, w_high: float = 10.0
) -> list[WeightedGraph]:
    """Held-out graphs with the motifs of :func:`minimax_tiny_training_set` (s -> v, s -> u -> v) and
    weights U[w_low, w_high] (off the training grid); a quarter single edges, the rest two-edge paths."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    w = w_low + (w_high - w_low) * torch.rand(count, 2, generator=generator, dtype=torch.float64)
    return [
        _graph([(0, 1)], [float(w[i, 0])], 2) if i % 4 == 0 else _graph([(0, 1), (1, 2)], w[i].tolist(), 3)
        for i in range(count)
    ]


def erdos_renyi_weighted(
    n: int, generator: torch.Generator, c: float = 4.0, w_low: float = 1.0, w_high: float = 10.0
) -> WeightedGraph:
    """Directed G(n, p = c/n), weights U[w_low, w_high], kept to the nodes reachable from a random source (relabelled,
    source 0)."""
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    p = min(1.0, c / n)
    # Sample edges by rejection-free pairs: for sparse p draw E ~ Bin(n(n-1), p) endpoints, drop loops and repeats.
    e = int(torch.binomial(torch.tensor(float(n * (n - 1))), torch.tensor(p), generator=generator).item())
    u = torch.randint(0, n, (e,), generator=generator)
    v = torch.randint(0, n - 1, (e,), generator=generator)
    v = v + (v >= u).long()  # no self-loops
    key = torch.unique(u * n + v)
    u, v = key // n, key % n
    w = w_low + (w_high - w_low) * torch.rand(len(u), generator=generator, dtype=torch.float64)
    source = int(torch.randint(0, n, (1,), generator=generator))
    # reachable set by BFS over the sparse adjacency
    order = torch.argsort(u)
    u, v, w = u[order], v[order], w[order]
    starts = torch.searchsorted(u, torch.arange(n + 1))
    seen = torch.zeros(n, dtype=torch.bool)
    seen[source] = True
    frontier = [source]
    while frontier:
        nxt = []
        for a in frontier:
            for b in v[starts[a] : starts[a + 1]].tolist():
                if not seen[b]:
                    seen[b] = True
                    nxt.append(b)
        frontier = nxt
    keep = seen[u] & seen[v]
    relabel = torch.full((n,), -1, dtype=torch.long)
    nodes = torch.nonzero(seen).flatten()
    relabel[nodes] = torch.arange(len(nodes))
    ei = torch.stack([relabel[u[keep]], relabel[v[keep]]])
    return WeightedGraph(ei, w[keep], len(nodes), int(relabel[source]))


@dataclass
class KnapsackInstance:
    weights: np.ndarray
    values: np.ndarray
    capacity: int

    def node(self, item: int, cap: int) -> int:
        return item * (self.capacity + 1) + cap


def knapsack_instance(
    items: int, capacity: int, generator: torch.Generator, max_weight: int = 10, max_value: float = 10.0
) -> KnapsackInstance:
    """Integer weights in 1..max_weight, values U[1, max_value]."""
    w = torch.randint(1, max_weight + 1, (items,), generator=generator).numpy()
    v = (1 + (max_value - 1) * torch.rand(items, generator=generator, dtype=torch.float64)).numpy()
    return KnapsackInstance(w, v, capacity)


def knapsack_instances(
    count: int, max_items: int, max_capacity: int, generator: torch.Generator
) -> list[KnapsackInstance]:
    """``count`` instances, each with 1..max_items items and capacity 1..max_capacity (uniform; item count, then
    capacity, then :func:`knapsack_instance`'s weights and values, drawn in that order per instance)."""
    out = []
    for _ in range(count):
        items = int(torch.randint(1, max_items + 1, (1,), generator=generator))
        cap = int(torch.randint(1, max_capacity + 1, (1,), generator=generator))
        out.append(knapsack_instance(items, cap, generator))
    return out


def knapsack_graph(inst: KnapsackInstance) -> WeightedGraph:
    """Layered DAG: node (i, c) gets ``(i−1, c) -> (i, c)`` (weight 0) and ``(i−1, c−w_i) -> (i, c)`` (weight v_i).

    Sources: every layer-0 node (value 0 at every capacity). The max-plus distance of node (i, c)
    from the sources is the DP entry T[i, c]; the optimum sits at (n, C).
    """
    n, C = len(inst.weights), inst.capacity
    caps = torch.arange(C + 1)
    src, dst, wts = [], [], []
    for i in range(1, n + 1):
        src.append((i - 1) * (C + 1) + caps)
        dst.append(i * (C + 1) + caps)
        wts.append(torch.zeros(C + 1, dtype=torch.float64))
        wi = int(inst.weights[i - 1])
        if wi <= C:
            c = caps[wi:]
            src.append((i - 1) * (C + 1) + c - wi)
            dst.append(i * (C + 1) + c)
            wts.append(torch.full((len(c),), float(inst.values[i - 1]), dtype=torch.float64))
    ei = torch.stack([torch.cat(src), torch.cat(dst)]) if src else torch.zeros(2, 0, dtype=torch.long)
    w = torch.cat(wts) if wts else torch.zeros(0, dtype=torch.float64)
    return WeightedGraph(ei, w, (n + 1) * (C + 1), caps.clone())


def wl_indistinguishable_pair() -> tuple[WeightedGraph, WeightedGraph]:
    """(C6, two disjoint C3), undirected, unit weights: every node has degree 2, so 1-WL colours never split."""
    c6 = [(i, (i + 1) % 6) for i in range(6)]
    two_c3 = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)]
    return (_graph(c6, [1.0] * 6, 6).undirected(), _graph(two_c3, [1.0] * 6, 6).undirected())


def grid_weighted(
    rows: int, cols: int, generator: torch.Generator, w_low: float = 1.0, w_high: float = 10.0
) -> WeightedGraph:
    """A rows x cols grid, both directions of every edge with one weight U[w_low, w_high], a random source."""
    if rows < 1 or cols < 1 or rows * cols < 2:
        raise ValueError(f"grid needs at least 2 nodes, got {rows} x {cols}")
    idx = torch.arange(rows * cols).reshape(rows, cols)
    u = torch.cat([idx[:, :-1].flatten(), idx[:-1, :].flatten()])
    v = torch.cat([idx[:, 1:].flatten(), idx[1:, :].flatten()])
    w = w_low + (w_high - w_low) * torch.rand(len(u), generator=generator, dtype=torch.float64)
    source = int(torch.randint(0, rows * cols, (1,), generator=generator))
    return WeightedGraph(torch.stack([u, v]), w, rows * cols, source).undirected()


def random_tree(n: int, generator: torch.Generator, w_low: float = 1.0, w_high: float = 10.0) -> WeightedGraph:
    """A uniform random recursive tree (node i attaches to a uniform earlier node), both directions, weights U[w_low,
    w_high]."""
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    parent = (torch.rand(n - 1, generator=generator) * torch.arange(1, n)).long()
    w = w_low + (w_high - w_low) * torch.rand(n - 1, generator=generator, dtype=torch.float64)
    source = int(torch.randint(0, n, (1,), generator=generator))
    return WeightedGraph(torch.stack([parent, torch.arange(1, n)]), w, n, source).undirected()


def minimax_distances(graph: WeightedGraph, sources) -> Tensor:
    """Bottleneck distances ``min over paths of the largest edge weight`` (Bellman–Ford in the (min, max) semiring)."""
    dist = torch.full((graph.num_nodes,), float("inf"), dtype=torch.float64)
    dist[torch.as_tensor(sources)] = 0.0
    src, dst = graph.edge_index
    for _ in range(graph.num_nodes):
        new = dist.scatter_reduce(0, dst, torch.maximum(dist[src], graph.weight), reduce="amin", include_self=True)
        if torch.equal(new, dist):
            break
        dist = new
    return dist


def symmetrize(graph: WeightedGraph) -> WeightedGraph:
    """Undirected version: one weight per unordered pair (the smallest of the directed ones), both directions."""
    u, v = graph.edge_index
    a, b = torch.minimum(u, v), torch.maximum(u, v)
    keep = a != b
    key = a[keep] * graph.num_nodes + b[keep]
    uniq, inverse = torch.unique(key, return_inverse=True)
    w = torch.full((len(uniq),), float("inf"), dtype=torch.float64).scatter_reduce(
        0, inverse, graph.weight[keep], reduce="amin"
    )
    pairs = torch.stack([uniq // graph.num_nodes, uniq % graph.num_nodes])
    return WeightedGraph(pairs, w, graph.num_nodes, graph.source).undirected()


def random_test_graph(family: str, n: int, generator: torch.Generator, c: float = 4.0) -> WeightedGraph:
    """A test graph of about ``n`` nodes: "er" (:func:`erdos_renyi_weighted`, mean out-degree ``c``), "grid"
    (round(√n) x round(√n), :func:`grid_weighted`) or "tree" (:func:`random_tree`); weights U[1, 10]."""
    if family == "er":
        return erdos_renyi_weighted(n, generator, c=c)
    if family == "grid":
        side = max(2, int(round(math.sqrt(n))))
        return grid_weighted(side, side, generator)
    if family == "tree":
        return random_tree(n, generator)
    raise ValueError(f"family must be 'er', 'grid' or 'tree', got {family!r}")


def initial_states(n: int, sources, members: int, big: float, sign: float = 1.0) -> Tensor:
    """Node states ``(n, members)`` float64 of an algorithm-aligned MPNN before round 1: 0 at ``sources``,
    ``sign · big`` elsewhere (the sentinel: +big for min-aggregation distances, −big for max-plus DPs)."""
    h = torch.full((n, members), sign * big, dtype=torch.float64)
    h[torch.as_tensor(sources)] = 0.0
    return h
