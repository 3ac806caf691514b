"""Probes of algorithm-aligned MPNNs: with the exact message function every error is 0, and a wrong one shows."""

from __future__ import annotations

import warnings

import pytest
import torch

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import torch_geometric  # noqa: F401

from theorylab.data.graphs import (
    batch,
    erdos_renyi_weighted,
    initial_states,
    knapsack_graph,
    knapsack_instance,
    minimax_distances,
    symmetrize,
    wl_indistinguishable_pair,
)
from theorylab.nn.mpnn import AlignedMPNN, PairMPNN
from theorylab.probes.algorithm_errors import (
    knapsack_optima,
    mean_relative_errors,
    message_function_errors,
    mst_classification,
    node_embedding_gaps,
    pair_embedding_gaps,
    shortest_path_errors,
)
from theorylab.theory.algorithms import knapsack_dp_targets


def _exact(model: AlignedMPNN, kind: str = "sum", member: int | None = None) -> AlignedMPNN:
    """f(x, w) = x + w ("sum") or max(x, w) = relu(x − w) + relu(w) ("max", w >= 0), by hand (hidden >= 2)."""
    with torch.no_grad():
        w0, w1, w2 = model.f.weights
        rows = slice(None) if member is None else slice(member, member + 1)
        for p in model.f.parameters():
            p[rows] = 0.0
        if kind == "sum":
            w0[rows, 0, 0], w0[rows, 1, 0] = 1.0, 1.0
        else:
            w0[rows, 0, 0], w0[rows, 1, 0], w0[rows, 1, 1] = 1.0, -1.0, 1.0
            w1[rows, 1, 1] = 1.0
            w2[rows, 1, 0] = 1.0
        w1[rows, 0, 0] = 1.0
        w2[rows, 0, 0] = 1.0
    return model


def test_shortest_path_errors_are_zero_for_bellman_ford_and_not_for_a_perturbed_f():
    graph, _ = batch([erdos_renyi_weighted(60, torch.Generator().manual_seed(i)) for i in range(3)])
    net = _exact(AlignedMPNN("min", seeds=[0, 1]))
    with torch.no_grad():
        net.f.biases[2][1] += 0.01  # member 1: f = x + w + 0.01
    other = AlignedMPNN("sum", seeds=[2])
    rows, rounds, t_net, t_exact = shortest_path_errors([net, other], graph, big=1000.0, max_rounds=61)
    assert len(rows) == 3 and 1 < rounds <= 61 and t_net >= 0 and t_exact >= 0
    assert rows[0]["mean_rel_error"] == 0 and rows[0]["within_1e3"] == 1.0
    assert (
        0 < rows[1]["mean_rel_error"] <= 0.01 and rows[1]["max_rel_error"] <= 0.01 + 1e-12
    )  # k hops add 0.01 k <= 0.01 d
    assert rows[2]["mean_rel_error"] > 0.1  # an untrained sum network


def test_message_function_errors_against_each_target():
    net = _exact(_exact(AlignedMPNN("min", seeds=[0, 1, 2])), "max", member=1)
    rows, (X, W, values) = message_function_errors(net.f, ["x + w", "max(x, w)", "max(x, w)"], x_max=200.0)
    assert X.shape == W.shape == (201, 19) and values.shape == (201, 19, 3)
    assert rows[0]["max_rel_error"] < 1e-12 and rows[1]["max_rel_error"] < 1e-12
    expected = float(((X + W - torch.maximum(X, W)) / torch.maximum(X, W)).max())  # x + w scored against max(x, w)
    assert rows[2]["max_rel_error"] == pytest.approx(expected) and rows[2]["max_rel_error_train_range"] <= expected
    assert rows[0]["l1"] == pytest.approx(4.0) and rows[1]["l1"] == pytest.approx(7.0)


def test_mst_classification_with_exact_bottlenecks_is_perfect():
    graph = symmetrize(erdos_renyi_weighted(40, torch.Generator().manual_seed(3)))
    net = _exact(AlignedMPNN("min", seeds=[0, 1]), "max")
    _exact(net, "sum", member=1)  # shortest paths instead of bottlenecks: misses tree edges
    rows = mst_classification(net, graph, big=1000.0, slack=1e-9)  # the default 1e-3 slack admits near-ties
    assert (
        rows[0]["f1"] == 1.0 and rows[0]["weight_rel_error"] < 1e-12 and rows[0]["predicted"] == rows[0]["tree_edges"]
    )
    assert rows[1]["f1"] < 1.0


def test_knapsack_optima_and_held_out_errors_of_the_exact_dp():
    g = torch.Generator().manual_seed(4)
    insts = [knapsack_instance(k, 2 * k, g) for k in (3, 6, 9)]
    net = _exact(AlignedMPNN("max", seeds=[0, 1]))
    with torch.no_grad():
        net.f.biases[2][1] += 0.5
    optima, preds, rounds = knapsack_optima(net, insts, big=1000.0, max_rounds=11)
    assert [p[0] for p in preds] == pytest.approx(optima, abs=1e-12) and all(p[1] > o for p, o in zip(preds, optima))
    graph, _ = batch([knapsack_graph(x) for x in insts])
    rel = mean_relative_errors(net, graph, knapsack_dp_targets(insts), big=1000.0, sign=-1.0, max_rounds=11)
    assert float(rel[0]) < 1e-12 < float(rel[1])


def test_mean_relative_errors_on_bottleneck_targets():
    graph, _ = batch([erdos_renyi_weighted(30, torch.Generator().manual_seed(5))])
    net = _exact(AlignedMPNN("min", seeds=[0]), "max")
    rel = mean_relative_errors(net, graph, minimax_distances(graph, graph.source), big=1000.0, sign=1.0, max_rounds=31)
    assert float(rel[0]) < 1e-12
    h0 = initial_states(graph.num_nodes, graph.source, 1, 1000.0)
    assert h0[graph.source].eq(0).all() and h0.max() == 1000.0


def test_wl_pair_gaps_node_versus_pair_networks():
    pair = wl_indistinguishable_pair()
    gap, readout = node_embedding_gaps(
        AlignedMPNN("sum", seeds=[0, 1]), pair, torch.ones(6, dtype=torch.float64), rounds=4
    )
    assert gap.max() < 1e-9 and readout.max() < 1e-9
    leak, _ = node_embedding_gaps(
        AlignedMPNN("sum", seeds=[0, 1]), pair, torch.arange(6, dtype=torch.float64), rounds=4
    )
    assert leak.min() > 1e-3
    pgap, _ = pair_embedding_gaps(PairMPNN("sum", seeds=[0, 1], hidden=16), pair, rounds=3, big=2.0)
    assert pgap.min() > 1e-3
