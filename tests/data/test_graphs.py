from __future__ import annotations

import warnings

import pytest
import torch

from theorylab.data.graphs import (
    batch,
    bf_tiny_training_set,
    erdos_renyi_weighted,
    knapsack_graph,
    knapsack_instance,
    minimax_distances,
    minimax_tiny_training_set,
    minimax_validation_set,
)
from theorylab.theory.algorithms import bellman_ford


def test_tiny_training_set_covers_the_motifs():
    gs = bf_tiny_training_set()
    assert 3 <= len(gs) <= 10 and all(g.num_nodes <= 3 for g in gs)
    competing = [g for g in gs if g.edge_index.shape[1] == 3]
    direct_wins = [bool(g.weight[0] < g.weight[1] + g.weight[2]) for g in competing]
    assert any(direct_wins) and not all(direct_wins)  # both outcomes of the two in-edges
    assert all(torch.isfinite(bellman_ford(g.edge_index, g.weight, g.num_nodes, g.source)).all() for g in gs)


def test_minimax_set_covers_both_sides_of_the_kink():
    gs = minimax_tiny_training_set((1, 4, 10))
    assert len(gs) == 3 + 9 and all(g.num_nodes <= 3 for g in gs)
    graph, ptr = batch(gs)
    d = minimax_distances(graph, graph.source)
    paths = [
        (float(g.weight[0]), float(g.weight[1]), float(d[ptr[i] + 2])) for i, g in enumerate(gs) if g.num_nodes == 3
    ]
    assert all(t == max(a, b) for a, b, t in paths)
    assert any(a < b for a, b, _ in paths) and any(a > b for a, b, _ in paths)


def test_erdos_renyi_is_simple_weighted_and_reachable():
    g = erdos_renyi_weighted(500, torch.Generator().manual_seed(0))
    u, v = g.edge_index
    assert (u != v).all() and len(torch.unique(u * g.num_nodes + v)) == len(u)
    assert g.weight.min() >= 1 and g.weight.max() <= 10
    assert g.num_nodes > 400  # c = 4: a giant out-component
    assert 3 < g.edge_index.shape[1] / g.num_nodes < 5
    with pytest.raises(ValueError):
        erdos_renyi_weighted(1, torch.Generator())


def test_knapsack_graph_shape():
    inst = knapsack_instance(3, 5, torch.Generator().manual_seed(0))
    g = knapsack_graph(inst)
    assert g.num_nodes == 4 * 6 and len(g.source) == 6
    assert (g.edge_index[1] // 6 == g.edge_index[0] // 6 + 1).all()  # edges go one item layer forward


def test_to_pyg():
    with warnings.catch_warnings():  # in the `test` extra: a missing install fails, never a silent skip
        warnings.simplefilter("ignore", DeprecationWarning)  # PyG's import: torch.jit noise we do not control
        import torch_geometric  # noqa: F401

    data = bf_tiny_training_set()[0].to_pyg()
    assert data.num_nodes == 2 and data.edge_attr.shape == (1, 1)


def test_minimax_validation_set_is_held_out_and_exact():
    graphs = minimax_validation_set(torch.Generator().manual_seed(0), 40)
    assert len(graphs) == 40 and {g.num_nodes for g in graphs} == {2, 3}
    train = {tuple(g.weight.tolist()) for g in minimax_tiny_training_set()}
    assert not any(tuple(g.weight.tolist()) in train for g in graphs)  # weights off the integer training grid
    assert all(((g.weight >= 1) & (g.weight <= 10)).all() for g in graphs)
    union, ptr = batch(graphs)
    d = minimax_distances(union, union.source)
    for i, g in enumerate(graphs):  # bottleneck of a path = its largest weight
        assert float(d[ptr[i + 1] - 1]) == float(g.weight.max())
    again = minimax_validation_set(torch.Generator().manual_seed(0), 40)
    assert all(torch.equal(a.weight, b.weight) for a, b in zip(graphs, again))
    with pytest.raises(ValueError):
        minimax_validation_set(torch.Generator(), 0)


def test_knapsack_instances_stay_in_their_ranges_and_follow_the_stream():
    from theorylab.data.graphs import knapsack_instances

    insts = knapsack_instances(200, 4, 8, torch.Generator().manual_seed(0))
    items = [len(x.weights) for x in insts]
    caps = [x.capacity for x in insts]
    assert min(items) == 1 and max(items) == 4 and min(caps) == 1 and max(caps) == 8
    g = torch.Generator().manual_seed(1)
    first = knapsack_instances(3, 4, 8, torch.Generator().manual_seed(1))[0]
    k, c = int(torch.randint(1, 5, (1,), generator=g)), int(torch.randint(1, 9, (1,), generator=g))
    ref = knapsack_instance(k, c, g)  # item count, capacity, then the instance
    assert first.capacity == ref.capacity
    assert (first.weights == ref.weights).all() and (first.values == ref.values).all()


def test_random_test_graph_families_and_initial_states():
    from theorylab.data.graphs import initial_states, random_test_graph

    g = torch.Generator().manual_seed(2)
    er, grid, tree = (random_test_graph(f, 100, g) for f in ("er", "grid", "tree"))
    assert er.num_nodes <= 100 and grid.num_nodes == 100 and tree.num_nodes == 100
    assert grid.edge_index.shape[1] == 2 * 2 * 10 * 9 and tree.edge_index.shape[1] == 2 * 99
    with pytest.raises(ValueError, match="family"):
        random_test_graph("star", 10, g)
    h = initial_states(5, torch.tensor([0, 3]), 2, 7.0, -1.0)
    assert h.shape == (5, 2) and h.dtype == torch.float64
    assert h[[0, 3]].eq(0).all() and h[[1, 2, 4]].eq(-7.0).all()
