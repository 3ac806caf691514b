"""CRQ generators: tree shapes against networkx and closed forms, serialisations against their definitions."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from theorylab.data.crq import (
    CLOSE,
    FAMILIES,
    LEAF,
    OPEN,
    TOK_AND,
    TOK_FALSE,
    TOK_OR,
    TOK_TRUE,
    boolean_labels,
    cot_trace,
    euler_tour,
    node_token_vocab,
    node_tokens,
    postfix_tokens,
    postorder,
    sample_forest,
    sphere_labels,
)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("n", [2, 8, 32])
def test_forest_shapes(family, n):
    f = sample_forest(family, n, 50, np.random.default_rng(n))
    for b in range(f.batch):
        kids = f.children(b)
        g = nx.DiGraph([(int(f.parent[b, v]), v) for v in range(1, int(f.n_nodes[b]))])
        assert nx.is_arborescence(g) and nx.is_tree(g.to_undirected())
        leaves = [v for v in range(int(f.n_nodes[b])) if not kids[v]]
        assert len(leaves) == n
        for v, ks in enumerate(kids):
            # leaf counts and depths match networkx descendants / shortest paths
            below = [u for u in nx.descendants(g, v) | {v} if not kids[u]]
            assert f.leaves[b, v] == len(below)
            assert f.depth[b, v] == nx.shortest_path_length(g, 0, v)
            if ks:
                assert all(c > v for c in ks)
                assert (2 <= len(ks) <= 4) if family == "random_kary" else len(ks) == 2
                if family == "caterpillar":
                    assert min(f.leaves[b, c] for c in ks) == 1
        if family != "random_kary":
            assert f.n_nodes[b] == 2 * n - 1
        if family == "complete_binary":
            assert {int(f.depth[b, v]) for v in leaves} == {int(np.log2(n))}
        assert (f.leaves[b, int(f.n_nodes[b]) :] == 0).all()


def test_random_binary_root_split_is_uniform():
    # card: uniform random split sizes; 4000 trees with n = 5: the root's first child holds k = 1..4 leaves, 1/4 each
    f = sample_forest("random_binary", 5, 4000, np.random.default_rng(0))
    freq = np.bincount(f.leaves[:, 1], minlength=5)[1:] / 4000
    assert np.abs(freq - 0.25).max() < 0.03, freq  # 4.4 standard errors


def test_random_kary_arity_spread():
    f = sample_forest("random_kary", 64, 300, np.random.default_rng(1))
    ar = np.bincount(f.parent[f.parent >= 0] + 1000 * np.nonzero(f.parent >= 0)[0])
    assert {2, 3, 4} <= set(ar[ar > 0])


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("order", ["heavy_first", "light_first", "random", "given"])
def test_euler_tour_and_postorder(family, order):
    rng = np.random.default_rng(2)
    f = sample_forest(family, 16, 30, rng)
    nodes, types = euler_tour(f, order, rng)
    post = postorder(f, order, np.random.default_rng(3) if order == "random" else None)
    for b in range(f.batch):
        kids = f.children(b)
        nn_ = int(f.n_nodes[b])
        seen_open, seen_close, stack = set(), set(), []
        for v, t in zip(nodes[b], types[b]):
            if t == OPEN:
                stack.append(v)
                seen_open.add(v)
            elif t == LEAF:
                assert not kids[v] and (not stack or v in kids[stack[-1]])
            elif t == CLOSE:
                assert stack.pop() == v
                seen_close.add(v)
        assert not stack and seen_open == seen_close == {v for v in range(nn_) if kids[v]}
        p = [int(v) for v in post[b] if v >= 0]
        assert sorted(p) == list(range(nn_))
        pos = {v: i for i, v in enumerate(p)}
        assert all(pos[c] < pos[v] for v in range(nn_) for c in kids[v])
        if order in ("heavy_first", "light_first"):
            for v in range(nn_):
                sizes = [f.leaves[b, c] for c in sorted(kids[v], key=pos.get)]
                assert sizes == sorted(sizes, reverse=order == "heavy_first")


def test_caterpillar_postfix_orders():
    f = sample_forest("caterpillar", 4, 1, np.random.default_rng(0))
    labels = boolean_labels(f, np.random.default_rng(1))
    heavy = postfix_tokens(f, labels, "heavy_first")[0]
    light = postfix_tokens(f, labels, "light_first")[0]
    is_op = lambda t: t in (TOK_AND, TOK_OR)  # noqa: E731
    # heavy-first: leaf leaf op leaf op leaf op; light-first: all four leaves, then the three gates
    assert [is_op(t) for t in heavy] == [False, False, True, False, True, False, True]
    assert [is_op(t) for t in light] == [False] * 4 + [True] * 3
    assert sorted(heavy) == sorted(light)


def test_node_tokens_and_trace():
    rng = np.random.default_rng(4)
    f = sample_forest("complete_binary", 8, 5, rng)
    labels = boolean_labels(f, rng)
    seq = node_tokens(f, labels)
    N = f.width
    voc = node_token_vocab(N)
    post = postorder(f, "given")
    assert seq.shape == (5, 3 * N + 1) and (seq[:, -1] == voc["query"]).all()
    for b in range(5):
        rank = {int(v): i for i, v in enumerate(post[b])}
        for i, v in enumerate(post[b]):
            typ, own, par = seq[b, 3 * i : 3 * i + 3]
            assert own == voc["index0"] + i
            p = f.parent[b, v]
            assert par == (voc["root"] if p < 0 else voc["index0"] + rank[int(p)])
            assert (typ in (TOK_AND, TOK_OR)) == bool(f.is_internal[b, v])
    answers = rng.random(f.parent.shape) < 0.5
    tr = cot_trace(f, answers)
    assert tr.shape == (5, 7)
    assert ((tr[:, -1] == TOK_TRUE) == answers[:, 0]).all()  # the root is last in post-order
    assert set(np.unique(tr)) <= {TOK_TRUE, TOK_FALSE}


def test_sphere_labels_are_unit():
    f = sample_forest("random_kary", 10, 20, np.random.default_rng(0))
    z = sphere_labels(f, 8, np.random.default_rng(1))
    norms = np.linalg.norm(z, axis=-1)
    assert np.allclose(norms[f.valid], 1.0) and (norms[~f.valid] == 0).all()


def test_bad_input_fails():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="family"):
        sample_forest("binary", 4, 1, rng)
    with pytest.raises(ValueError, match="n"):
        sample_forest("caterpillar", 1, 1, rng)
    with pytest.raises(ValueError, match="2\\^D"):
        sample_forest("complete_binary", 6, 1, rng)
    with pytest.raises(ValueError, match="order"):
        euler_tour(sample_forest("caterpillar", 4, 1, rng), "deepest_first")
