"""CRQ evaluators against brute force (Python eval of the formula over every assignment), each other, and the
closed recursion of the pending-partials meter."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from theorylab.data.crq import (
    FAMILIES,
    BooleanLabels,
    boolean_crq_labels,
    boolean_labels,
    euler_tour,
    formula_string,
    sample_forest,
    sibling_rank_keys,
    sphere_labels,
)
from theorylab.theory.crq import (
    boolean_values,
    fold_evaluate,
    heavy_first_bound,
    pending_by_recursion,
    recursive_answer,
    recursive_answers,
)

ORDERS = ("heavy_first", "light_first", "random", "given")


@pytest.mark.parametrize("family", FAMILIES)
def test_boolean_and_crq_match_python_eval_on_every_assignment(family):
    rng = np.random.default_rng(0)
    n = 4 if family == "complete_binary" else 5
    f = sample_forest(family, n, 6, rng)
    labels = boolean_labels(f, rng)
    for b in range(f.batch):
        expr = formula_string(f, labels, b)
        leaves = np.flatnonzero(f.is_leaf[b])
        for bits in itertools.product([False, True], repeat=len(leaves)):
            assign = np.zeros_like(labels.assignment)
            assign[b, leaves] = bits
            lab = BooleanLabels(labels.op_or, labels.negated, assign)
            truth = eval(expr, {}, {f"x{v}": bool(x) for v, x in zip(leaves, bits)})  # brute-force reference
            assert boolean_values(f, lab)[b, 0] == truth
            crq = recursive_answers(f, boolean_crq_labels(f, lab))[b, 0, 0]
            assert (crq > 0) == truth and abs(crq) == 1.0
            nodes, types = euler_tour(f, "heavy_first")
            root, _ = fold_evaluate(nodes, types, boolean_crq_labels(f, lab))
            assert (root[b, 0] > 0) == truth


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_recursion_and_fold_equal_plain_recursion(family):
    rng = np.random.default_rng(1)
    n = 16
    f = sample_forest(family, n, 40, rng)
    z = sphere_labels(f, 8, rng)
    ans = recursive_answers(f, z)
    for b in range(f.batch):
        assert np.array_equal(recursive_answer(f.children(b), z[b]), ans[b, 0])
    for order in ORDERS:
        nodes, types = euler_tour(f, order, rng)
        root, _ = fold_evaluate(nodes, types, z)
        assert np.array_equal(root, ans[:, 0])


def test_fold_detects_a_wrong_label():
    # a negative control: flipping the root's query changes the fold's answer on most trees
    rng = np.random.default_rng(2)
    f = sample_forest("random_binary", 16, 200, rng)
    z = sphere_labels(f, 8, rng)
    nodes, types = euler_tour(f, "heavy_first")
    root, _ = fold_evaluate(nodes, types, z)
    z2 = z.copy()
    z2[:, 0] *= -1
    root2, _ = fold_evaluate(nodes, types, z2)
    assert (root != root2).any(axis=1).mean() > 0.9


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("order", ORDERS)
def test_pending_meter_equals_closed_recursion(family, order):
    rng = np.random.default_rng(3)
    f = sample_forest(family, 32, 30, rng)
    keys = sibling_rank_keys(f, order, np.random.default_rng(5))
    # the stream is built with the same random keys: reproduce them with the same seed
    nodes, types = euler_tour(f, order, np.random.default_rng(5))
    _, most = fold_evaluate(nodes, types, sphere_labels(f, 1, rng))
    for b in range(f.batch):
        assert most[b] == pending_by_recursion(f.children(b), keys[b])


def test_heavy_first_bound_is_tight_on_complete_binary():
    for D in range(1, 11):
        f = sample_forest("complete_binary", 1 << D, 2, np.random.default_rng(D))
        nodes, types = euler_tour(f, "heavy_first")
        _, most = fold_evaluate(nodes, types, sphere_labels(f, 1, np.random.default_rng(0)))
        assert (most == D).all() and heavy_first_bound(1 << D) == D


@pytest.mark.parametrize("family", FAMILIES)
def test_heavy_first_bound_holds(family):
    for n in (2, 3, 7, 64, 100, 257) if family != "complete_binary" else (2, 64, 256):
        f = sample_forest(family, n, 40, np.random.default_rng(n))
        nodes, types = euler_tour(f, "heavy_first")
        _, most = fold_evaluate(nodes, types, sphere_labels(f, 1, np.random.default_rng(0)))
        assert most.max() <= int(np.floor(np.log2(n)))


def test_caterpillar_light_first_is_n_minus_1_and_heavy_first_is_1():
    for n in (2, 3, 17, 128):
        f = sample_forest("caterpillar", n, 5, np.random.default_rng(n))
        z = sphere_labels(f, 1, np.random.default_rng(0))
        _, light = fold_evaluate(*euler_tour(f, "light_first"), z)
        _, heavy = fold_evaluate(*euler_tour(f, "heavy_first"), z)
        assert (light == n - 1).all() and (heavy == 1).all()


def test_heavy_first_bound_values():
    assert [heavy_first_bound(n) for n in (1, 2, 3, 4, 1023, 1024)] == [0, 1, 1, 2, 9, 10]
    assert heavy_first_bound(np.array([5, 8, 9])).tolist() == [2, 3, 3]
    with pytest.raises(ValueError):
        heavy_first_bound(0)
