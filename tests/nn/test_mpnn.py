"""Aligned MPNNs: with the exact message function they *are* the algorithms; aggregation semantics; 1-WL limits."""

from __future__ import annotations

import warnings

import pytest
import torch

# torch_geometric is in the `test` extra: a missing install fails here, never a silent skip
# (its import emits torch.jit deprecation noise we do not control, hence the filter).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import torch_geometric  # noqa: E402,F401

from theorylab.data.graphs import (  # noqa: E402
    WeightedGraph,
    batch,
    bf_tiny_training_set,
    erdos_renyi_weighted,
    knapsack_graph,
    knapsack_instance,
    minimax_distances,
    symmetrize,
    wl_indistinguishable_pair,
)
from theorylab.nn.losses import mse, multiplicative  # noqa: E402
from theorylab.nn.mpnn import AlignedMPNN, PairMPNN, pair_init  # noqa: E402
from theorylab.probes.grids import function_grid  # noqa: E402
from theorylab.theory.algorithms import bellman_ford, knapsack_dp  # noqa: E402
from theorylab.train.algorithms import train_members  # noqa: E402


def _exact_sum_mlp(model: AlignedMPNN) -> None:
    """f(x, w) = relu(relu(x + w)) = x + w for x + w >= 0: the aligned target by hand."""
    with torch.no_grad():
        for p in model.f.parameters():
            p.zero_()
        w0, w1, w2 = model.f.weights
        w0[:, 0, 0] = 1.0
        w0[:, 1, 0] = 1.0
        w1[:, 0, 0] = 1.0
        w2[:, 0, 0] = 1.0


def test_min_mpnn_with_x_plus_w_is_bellman_ford():
    graph, _ = batch([erdos_renyi_weighted(n, torch.Generator().manual_seed(n)) for n in (30, 100)])
    model = AlignedMPNN("min", seeds=[0, 1])
    _exact_sum_mlp(model)
    h0 = torch.full((graph.num_nodes, 2), 1000.0, dtype=torch.float64)
    h0[graph.source] = 0
    with torch.no_grad():
        h, rounds = model(h0, graph.edge_index, graph.weight)
    exact = bellman_ford(graph.edge_index, graph.weight, graph.num_nodes, graph.source)
    assert torch.allclose(h, exact[:, None].expand(-1, 2), atol=1e-12) and rounds < 100


def test_max_mpnn_with_x_plus_w_is_the_knapsack_dp():
    inst = knapsack_instance(7, 15, torch.Generator().manual_seed(0))
    g = knapsack_graph(inst)
    model = AlignedMPNN("max", seeds=[0])
    _exact_sum_mlp(model)
    with torch.no_grad():
        h, _ = model(torch.zeros(g.num_nodes, 1, dtype=torch.float64), g.edge_index, g.weight, max_rounds=9)
    assert torch.allclose(
        h[:, 0], torch.as_tensor(knapsack_dp(inst.weights, inst.values, inst.capacity).flatten()), atol=1e-12
    )


@pytest.mark.parametrize("aggr", ["min", "max"])
def test_frontier_evaluation_is_exactly_the_synchronous_one(aggr):
    graph, _ = batch([erdos_renyi_weighted(80, torch.Generator().manual_seed(i)) for i in range(3)])
    model = AlignedMPNN(aggr, seeds=[0, 1, 2])
    h0 = torch.full((graph.num_nodes, 3), 1000.0 if aggr == "min" else -1000.0, dtype=torch.float64)
    h0[graph.source] = 0
    with torch.no_grad():
        a, _ = model(h0, graph.edge_index, graph.weight, rounds=10, frontier=False)
        b, _ = model(h0, graph.edge_index, graph.weight, rounds=10)
    assert torch.equal(a, b)


def test_aggregation_semantics_and_mixed_members():
    # 0 -> 2 (w 1), 1 -> 2 (w 2); node 0 and 1 have no in-edges and keep their state
    ei = torch.tensor([[0, 1], [2, 2]])
    w = torch.tensor([1.0, 2.0], dtype=torch.float64)
    h = torch.tensor([[1.0], [3.0], [10.0]], dtype=torch.float64)
    kinds = ["min", "max", "sum", "mean"]
    model = AlignedMPNN(kinds, seeds=[0, 1, 2, 3])
    _exact_sum_mlp(model)
    with torch.no_grad():
        out = model.step(h.expand(-1, 4).clone(), ei, w)
    msgs = torch.tensor([2.0, 5.0], dtype=torch.float64)  # f(1, 1), f(3, 2)
    assert out[2].tolist() == [
        min(10.0, msgs.min().item()),
        max(10.0, msgs.max().item()),
        10.0 + msgs.sum().item(),
        (10.0 + msgs.sum().item()) / 3,
    ]
    assert torch.equal(out[:2], h[:2].expand(-1, 4))
    # a member of the mixed network behaves like the same member alone
    sub = model.subset([2])
    with torch.no_grad():
        assert torch.equal(sub.step(h, ei, w)[:, 0], out[:, 2])
    with pytest.raises(ValueError, match="aggregation"):
        AlignedMPNN("median")


def test_node_mpnn_cannot_separate_the_wl_pair_but_the_pair_mpnn_can():
    c6, tri = wl_indistinguishable_pair()
    for aggr in ("min", "max", "sum", "mean"):
        model = AlignedMPNN(aggr, seeds=[3, 4])
        with torch.no_grad():
            a, _ = model(torch.ones(6, 2, dtype=torch.float64), c6.edge_index, c6.weight, rounds=6, frontier=False)
            b, _ = model(torch.ones(6, 2, dtype=torch.float64), tri.edge_index, tri.weight, rounds=6, frontier=False)
        assert torch.allclose(a.sort(0).values, b.sort(0).values, atol=1e-12)
    pair = PairMPNN("sum", seeds=[3, 4], hidden=16)
    with torch.no_grad():
        a = pair(pair_init(c6.edge_index, c6.weight, 6, 2, 2.0), 3)
        b = pair(pair_init(tri.edge_index, tri.weight, 6, 2, 2.0), 3)
    assert ((a.reshape(36, 2).sort(0).values - b.reshape(36, 2).sort(0).values).abs().amax(0) > 1e-3).all()


def test_pair_mpnn_with_max_messages_gives_all_pairs_bottleneck_distances():
    graph = symmetrize(erdos_renyi_weighted(12, torch.Generator().manual_seed(1), c=2.5))
    n = graph.num_nodes
    pair = PairMPNN("min", seeds=[0], hidden=3)
    with torch.no_grad():  # f(a, b) = max(a, b) = relu(a - b) + relu(b) - relu(-b)
        w0, w1 = pair.f.weights
        for p in pair.f.parameters():
            p.zero_()
        w0[0, :, 0] = torch.tensor([1.0, -1.0], dtype=torch.float64)
        w0[0, :, 1] = torch.tensor([0.0, 1.0], dtype=torch.float64)
        w0[0, :, 2] = torch.tensor([0.0, -1.0], dtype=torch.float64)
        w1[0, :, 0] = torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64)
        H = pair(pair_init(graph.edge_index, graph.weight, n, 1, 1e6), n)
    D = torch.stack([minimax_distances(WeightedGraph(graph.edge_index, graph.weight, n, s), s) for s in range(n)])
    D = torch.where(torch.isinf(D), torch.full_like(D, 1e6), D)
    assert torch.allclose(H[..., 0], D, atol=1e-9)


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_training_lowers_the_loss_and_respects_masks():
    tiny, _ = batch(bf_tiny_training_set())
    target = bellman_ford(tiny.edge_index, tiny.weight, tiny.num_nodes, tiny.source)
    model = AlignedMPNN("min", seeds=[0, 1])
    h0 = torch.full((tiny.num_nodes, 2), 1000.0, dtype=torch.float64)
    h0[tiny.source] = 0
    mask = torch.ones(tiny.num_nodes, 2, dtype=torch.bool)
    mask[:, 1] = False  # member 1 sees no data: only its L1 term moves it
    log = train_members(
        model,
        tiny.edge_index,
        tiny.weight,
        h0,
        target[:, None].expand(-1, 2).clone(),
        eta=torch.tensor([0.0, 1e-2], dtype=torch.float64),
        losses=["mse", "multiplicative"],
        steps=60,
        lr=1e-2,
        rounds=3,
        mask=mask,
        log_every=10,
    )
    first, last = log[log.step == 0].set_index("member"), log[log.step == log.step.max()].set_index("member")
    assert last.loc[0, "loss"] < 0.5 * first.loc[0, "loss"]
    assert last.loc[1, "l1"] < first.loc[1, "l1"] and last.loc[1, "loss"] == 0
    with pytest.raises(ValueError, match="members"):
        train_members(
            model,
            tiny.edge_index,
            tiny.weight,
            h0,
            target[:, None],
            eta=torch.zeros(2),
            losses=["mse"] * 2,
            steps=1,
            lr=1e-3,
            rounds=1,
        )


def test_losses_and_grid_probe():
    pred = torch.tensor([[0.0, 1.0], [2.0, 2.0], [4.0, 3.0]], dtype=torch.float64)
    target = torch.tensor([0.0, 2.0, 2.0], dtype=torch.float64)
    assert multiplicative(pred, target).tolist() == pytest.approx([0.5, 0.25])  # the y = 0 node is left out
    assert mse(pred, target).tolist() == pytest.approx([4 / 3, (1 + 0 + 1) / 3])
    mesh, values = function_grid(lambda p: p.sum(-1), (torch.arange(3.0), torch.arange(2.0)))
    assert values.shape == (3, 2) and torch.equal(values, mesh[0] + mesh[1])


def test_smooth_l1_tends_to_l1_and_unknown_regulariser_fails_early():
    model = AlignedMPNN("min", seeds=[0, 1], hidden=8)
    l1 = model.f.l1()
    assert torch.equal(model.f.penalty("l1"), l1)
    coarse, fine = model.f.penalty("smooth-l1", 1e-1), model.f.penalty("smooth-l1", 1e-6)
    assert (coarse < l1).all() and torch.allclose(fine, l1, rtol=1e-4)
    tiny, _ = batch(bf_tiny_training_set())
    h0 = torch.zeros(tiny.num_nodes, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="regulariser"):
        train_members(
            model,
            tiny.edge_index,
            tiny.weight,
            h0,
            h0,
            eta=torch.zeros(2),
            losses=["mse"] * 2,
            steps=1,
            lr=1e-3,
            rounds=1,
            regulariser="l2",
        )


def test_chunked_inference_equals_one_block():
    mlp = AlignedMPNN("min", seeds=[3, 4], hidden=16).f
    z = torch.randn(3 * mlp.chunk + 17, 2, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        chunked = mlp(z)
    whole = mlp(z)  # with gradients: one block
    assert torch.allclose(chunked, whole.detach(), rtol=0, atol=1e-12)
