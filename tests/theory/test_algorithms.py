"""Reference algorithms against SciPy, networkx and brute force."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

from theorylab.data.graphs import (
    batch,
    erdos_renyi_weighted,
    knapsack_graph,
    knapsack_instance,
    wl_indistinguishable_pair,
)
from theorylab.theory.algorithms import bellman_ford, knapsack_brute_force, knapsack_dp, msf_weight, wl_colors


@pytest.mark.parametrize("n", [16, 64, 256])
def test_bellman_ford_matches_scipy_and_networkx(n):
    g = erdos_renyi_weighted(n, torch.Generator().manual_seed(n))
    d = bellman_ford(g.edge_index, g.weight, g.num_nodes, g.source)
    u, v = g.edge_index.numpy()
    ref = shortest_path(
        coo_matrix((g.weight.numpy(), (u, v)), shape=(g.num_nodes,) * 2).tocsr(), directed=True, indices=g.source
    )
    assert np.allclose(d.numpy(), ref, atol=1e-9, rtol=0)
    G = nx.DiGraph()
    G.add_weighted_edges_from(zip(u.tolist(), v.tolist(), g.weight.tolist()))
    lengths = nx.single_source_bellman_ford_path_length(G, g.source)
    assert max(abs(d[k].item() - val) for k, val in lengths.items()) < 1e-9
    assert torch.isfinite(d).all()  # every kept node is reachable


def test_k_step_bellman_ford_counts_edges():
    ei = torch.tensor([[0, 1, 2, 0], [1, 2, 3, 3]])
    w = torch.tensor([1.0, 1.0, 1.0, 10.0], dtype=torch.float64)
    assert bellman_ford(ei, w, 4, 0, steps=1).tolist() == [0, 1, float("inf"), 10]
    assert bellman_ford(ei, w, 4, 0, steps=3).tolist() == [0, 1, 2, 3]


def test_batched_bellman_ford_equals_per_graph():
    gs = [erdos_renyi_weighted(n, torch.Generator().manual_seed(n)) for n in (8, 20, 33)]
    big, ptr = batch(gs)
    d = bellman_ford(big.edge_index, big.weight, big.num_nodes, big.source)
    for i, g in enumerate(gs):
        assert torch.allclose(d[ptr[i] : ptr[i + 1]], bellman_ford(g.edge_index, g.weight, g.num_nodes, g.source))


@pytest.mark.parametrize("seed", range(6))
def test_knapsack_dp_matches_brute_force_and_the_dag(seed):
    gen = torch.Generator().manual_seed(seed)
    inst = knapsack_instance(
        int(torch.randint(1, 13, (1,), generator=gen)), int(torch.randint(1, 40, (1,), generator=gen)), gen
    )
    T = knapsack_dp(inst.weights, inst.values, inst.capacity)
    assert T[-1, -1] == pytest.approx(knapsack_brute_force(inst.weights, inst.values, inst.capacity), abs=1e-9)
    g = knapsack_graph(inst)
    longest = -bellman_ford(g.edge_index, -g.weight, g.num_nodes, g.source)  # max-plus on a DAG
    assert np.allclose(longest.numpy().reshape(T.shape), T, atol=1e-9)


def test_msf_weight_matches_networkx():
    for seed in range(5):
        g = erdos_renyi_weighted(40, torch.Generator().manual_seed(seed), c=1.5)
        G = nx.Graph()
        G.add_nodes_from(range(g.num_nodes))
        for (a, b), w in zip(g.edge_index.t().tolist(), g.weight.tolist()):
            if not G.has_edge(a, b) or G[a][b]["weight"] > w:
                G.add_edge(a, b, weight=w)
        ref = sum(d["weight"] for _, _, d in nx.minimum_spanning_edges(G, data=True))
        assert msf_weight(g.edge_index, g.weight, g.num_nodes) == pytest.approx(ref)


def test_wl_cannot_split_c6_from_two_triangles_but_msf_does():
    c6, tri = wl_indistinguishable_pair()
    for a, b in zip(wl_colors(c6.edge_index, 6, 6), wl_colors(tri.edge_index, 6, 6)):
        assert sorted(a) == sorted(b)
    assert msf_weight(c6.edge_index, c6.weight, 6) == 5 and msf_weight(tri.edge_index, tri.weight, 6) == 4
    path = torch.tensor([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]])
    # WL does split a path from a cycle
    assert sorted(wl_colors(path, 6, 1)[1]) != sorted(wl_colors(c6.edge_index, 6, 1)[1])


def test_knapsack_dp_targets_are_the_max_plus_distances_of_the_dags():
    from theorylab.data.graphs import knapsack_instances
    from theorylab.theory.algorithms import knapsack_dp_targets

    insts = knapsack_instances(6, 5, 12, torch.Generator().manual_seed(0))
    graph, _ = batch([knapsack_graph(x) for x in insts])
    # longest paths on a DAG = minus the shortest paths with negated weights
    longest = -bellman_ford(graph.edge_index, -graph.weight, graph.num_nodes, graph.source)
    assert torch.allclose(knapsack_dp_targets(insts), longest, atol=1e-12)


def test_oracle_cross_checks_are_zero_and_see_a_parallel_edge():
    from theorylab.data.graphs import WeightedGraph
    from theorylab.theory.algorithms import bellman_ford_scipy_error, knapsack_brute_force_error

    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        assert bellman_ford_scipy_error(erdos_renyi_weighted(80, g)) <= 1e-9
        assert knapsack_brute_force_error(knapsack_instance(8, 20, g)) <= 1e-9
    parallel = WeightedGraph(torch.tensor([[0, 0], [1, 1]]), torch.tensor([2.0, 3.0], dtype=torch.float64), 2, 0)
    assert bellman_ford_scipy_error(parallel) == 3.0  # scipy's sparse matrix sums the parallel edges (2 + 3 vs 2)


def test_minimum_spanning_edges_match_kruskal_and_scipy():
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import minimum_spanning_tree

    from theorylab.data.graphs import symmetrize
    from theorylab.theory.algorithms import minimum_spanning_edges

    graph = symmetrize(erdos_renyi_weighted(60, torch.Generator().manual_seed(7)))
    edges = minimum_spanning_edges(graph)
    u, v = graph.edge_index
    half = u < v
    w = {(a, b): x for a, b, x in zip(u[half].tolist(), v[half].tolist(), graph.weight[half].tolist())}
    assert all(a < b for a, b in edges)
    kruskal = msf_weight(graph.edge_index, graph.weight, graph.num_nodes)
    assert sum(w[e] for e in edges) == pytest.approx(kruskal, rel=1e-12)
    mat = coo_matrix((graph.weight[half].numpy(), (u[half].numpy(), v[half].numpy())), shape=(graph.num_nodes,) * 2)
    tree = minimum_spanning_tree(mat).tocoo()
    assert edges == {tuple(sorted((int(a), int(b)))) for a, b in zip(tree.row, tree.col)}
