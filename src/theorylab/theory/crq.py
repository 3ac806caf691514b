"""Exact references for Compositional Reasoning Questions (CRQs).

Yehudai, Amsel & Bruna, arXiv 2503.01544, Sec. 2: ans(leaf v) = z_v and, for an internal node v,
ans(v) = ans(c*), c* = argmax_{c child of v} <z_v, ans(c)>. Three evaluators, written independently:

- :func:`recursive_answer` follows the definition by recursion on one tree (the reference in tests);
- :func:`recursive_answers` applies the same definition bottom-up, one tree level at a time, for a whole batch;
- :func:`fold_evaluate` streams the Euler tour (open / leaf / close events) and keeps, for each open ancestor, only
  its best child answer so far; it records the largest number of such pending partial answers (the memory a
  left-to-right reader needs: the RNN construction of the paper, Sec. 4, reads the tree in a suitable order).

Pending partials (ours, reconstructed): with children c_1, ..., c_k visited in order, P(leaf) = 0 and
P(v) = max(P(c_1), 1 + max_{i >= 2} P(c_i)). In heavy-first order every non-first child holds at most half of its
parent's leaves, so along any root-leaf path at most floor(log2 n) ancestors hold a partial:
P <= floor(log2 n), with equality on complete binary trees (:func:`heavy_first_bound`; Sethi & Ullman 1970).
Light-first on a caterpillar holds one partial per spine node: P = n - 1.

:func:`boolean_values` evaluates a Boolean formula directly (AND = all, OR = any), independently of the CRQ
encoding, so the two can be compared (paper: Boolean formula evaluation is a CRQ with m = 1).
"""

from __future__ import annotations

import numpy as np

from theorylab.data.crq import CLOSE, LEAF, OPEN, BooleanLabels, Forest


def heavy_first_bound(n: int | np.ndarray) -> np.ndarray | int:
    """floor(log2 n): the most pending partial answers of the heavy-first streaming fold on a tree with n leaves."""
    if np.isscalar(n):
        if n < 1:
            raise ValueError(f"n must be >= 1; got {n}")
        return int(n).bit_length() - 1
    n = np.asarray(n, dtype=np.int64)
    if (n < 1).any():
        raise ValueError("n must be >= 1")
    return np.floor(np.log2(n) + 1e-12).astype(np.int64)


def recursive_answer(children: list[list[int]], z: np.ndarray, v: int = 0) -> np.ndarray:
    """ans(v) of one tree by recursion (children in any fixed order; ties go to the first child)."""
    if not children[v]:
        return z[v]
    answers = [recursive_answer(children, z, c) for c in children[v]]
    return answers[int(np.argmax([float(z[v] @ a) for a in answers]))]


def recursive_answers(forest: Forest, z: np.ndarray) -> np.ndarray:
    """(B, N, m) answers of every node of every tree, by the recursive definition applied bottom-up level by level
    (all children of a node share its depth + 1). Ties go to the first child in creation order."""
    B, N = forest.parent.shape
    m = z.shape[-1]
    ans = z.reshape(B * N, m).copy()
    zf = z.reshape(B * N, m)
    par = (np.arange(B)[:, None] * N + forest.parent).ravel()
    for lvl in reversed(forest.levels()[1:]):
        p = par[lvl]
        score = np.einsum("im,im->i", zf[p], ans[lvl])  # <z_parent, ans(child)>
        srt = np.lexsort((lvl, -score, p))  # by parent, best score first, then creation order
        first = np.r_[True, p[srt][1:] != p[srt][:-1]]
        best = srt[first]
        ans[p[best]] = ans[lvl[best]]
    return ans.reshape(B, N, m)


def fold_evaluate(nodes: np.ndarray, types: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stream the Euler tour ``(nodes, types)`` (from :func:`theorylab.data.crq.euler_tour`) of B trees at once.

    Returns the (B, m) root answers and the (B,) largest number of pending partial answers held at any time. On
    OPEN a node is pushed with no partial; an answer (a LEAF's z, or a closed node's best) is folded into the top
    node's partial: kept when it is the first, or when <z_top, a> beats <z_top, best> strictly."""
    B, T = nodes.shape
    m = z.shape[-1]
    rows = np.arange(B)
    cap = T // 2 + 2
    stack_node = np.zeros((B, cap), dtype=np.int64)
    stack_has = np.zeros((B, cap), dtype=bool)
    stack_best = np.zeros((B, cap, m), dtype=z.dtype)
    sp = np.zeros(B, dtype=np.int64)  # open nodes on the stack
    held = np.zeros(B, dtype=np.int64)  # open nodes holding a partial answer
    most = np.zeros(B, dtype=np.int64)
    root = np.zeros((B, m), dtype=z.dtype)
    for t in range(T):
        typ, node = types[:, t], nodes[:, t]
        o = np.flatnonzero(typ == OPEN)
        stack_node[o, sp[o]] = node[o]
        stack_has[o, sp[o]] = False
        sp[o] += 1
        leaf = typ == LEAF
        close = np.flatnonzero(typ == CLOSE)
        a = np.where(leaf[:, None], z[rows, node], 0.0)
        a[close] = stack_best[close, sp[close] - 1]
        held[close] -= stack_has[close, sp[close] - 1]
        sp[close] -= 1
        deliver = leaf | (typ == CLOSE)
        done = deliver & (sp == 0)
        root[done] = a[done]
        d = np.flatnonzero(deliver & (sp > 0))
        top = sp[d] - 1
        q = z[d, stack_node[d, top]]
        has = stack_has[d, top]
        better = np.einsum("im,im->i", q, a[d]) > np.einsum("im,im->i", q, stack_best[d, top])
        take = ~has | better
        stack_best[d[take], top[take]] = a[d[take]]
        held[d[~has]] += 1
        stack_has[d, top] = True
        np.maximum(most, held, out=most)
    return root, most


def boolean_values(forest: Forest, labels: BooleanLabels) -> np.ndarray:
    """(B, N) bool truth value of every node: AND of the children, OR of the children, literal at a leaf."""
    B, N = forest.parent.shape
    val = labels.leaf_value.ravel().astype(np.int8).copy()
    op_or = labels.op_or.ravel()
    internal = forest.is_internal.ravel()
    par = (np.arange(B)[:, None] * N + forest.parent).ravel()
    any_true = np.zeros(B * N, dtype=np.int8)
    all_true = np.ones(B * N, dtype=np.int8)
    for lvl in reversed(forest.levels()[1:]):
        p = par[lvl]
        np.maximum.at(any_true, p, val[lvl])
        np.minimum.at(all_true, p, val[lvl])
        ps = np.unique(p)
        val[ps] = np.where(op_or[ps], any_true[ps], all_true[ps])
    val = np.where(internal, val, labels.leaf_value.ravel())
    return val.reshape(B, N).astype(bool)


def pending_by_recursion(children: list[list[int]], order_key: np.ndarray, v: int = 0) -> int:
    """P(v) = max(P(c_1), 1 + max_{i>=2} P(c_i)) for one tree, children sorted by ``order_key`` (stable): the
    closed recursion the streaming meter must reproduce."""
    kids = sorted(children[v], key=lambda c: (order_key[c], c))
    if not kids:
        return 0
    rest = [1 + pending_by_recursion(children, order_key, c) for c in kids[1:]]
    return max([pending_by_recursion(children, order_key, kids[0]), *rest])
