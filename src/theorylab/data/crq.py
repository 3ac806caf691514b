"""Compositional Reasoning Questions (CRQs): random trees, their labels and their serialisations.

Yehudai, Amsel & Bruna, *Compositional Reasoning with Transformers, RNNs, and Chain of Thought*, arXiv 2503.01544
(NeurIPS 2025), Sec. 2 (definition of a CRQ): a rooted tree whose nodes carry vectors z_v; a leaf answers z_v, an
internal node answers the child answer with the largest inner product with z_v. Boolean formulas are the special
case m = 1, True = +1, False = -1, AND = -1, OR = +1 (negations pushed to the leaves).

A batch of trees is a :class:`Forest` of padded arrays, so generation and serialisation are vectorised over the
batch (Python loops run over tree levels, never over trees or nodes):

- nodes are numbered in creation order: a parent's index is smaller than its children's, siblings are consecutive
  (left to right), node 0 is the root, padding sits at the end of each row (``parent = -1``, ``leaves = 0``);
- the four families: ``random_binary`` (split sizes uniform), ``caterpillar`` (one leaf child and one subtree
  child per internal node, the leaf side random), ``complete_binary`` (n = 2^D), ``random_kary`` (arity uniform in
  {2, 3, 4}, capped by the leaves left, split uniform over compositions);
- serialisations in a child order (``heavy_first`` = larger subtree in leaves first, ``light_first``, ``random``,
  ``given`` = creation order): the Euler-tour event stream (open / leaf / close) read by the streaming evaluator,
  the postfix token stream (GRU), node tokens (type, own index, parent index) in post-order (transformer) and CoT
  traces (the internal nodes' answers in post-order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Family = Literal["random_binary", "caterpillar", "complete_binary", "random_kary"]
Order = Literal["heavy_first", "light_first", "random", "given"]
FAMILIES: tuple[str, ...] = ("random_binary", "caterpillar", "complete_binary", "random_kary")
ORDERS: tuple[str, ...] = ("heavy_first", "light_first", "random", "given")

# event types of the Euler-tour stream
PAD, OPEN, LEAF, CLOSE = 0, 1, 2, 3
# postfix vocabulary for Boolean formulas (GRU and transformer type tokens)
TOK_PAD, TOK_FALSE, TOK_TRUE, TOK_AND, TOK_OR = 0, 1, 2, 3, 4
POSTFIX_VOCAB = 5
MAX_ARITY = 4


@dataclass(frozen=True)
class Forest:
    """``B`` rooted trees with ``n`` leaves each, as padded ``(B, N)`` arrays (see the module docstring)."""

    family: str
    n: int
    parent: np.ndarray  # (B, N) int64: parent index, -1 for the root and for padding
    leaves: np.ndarray  # (B, N) int64: leaves under the node (1 for a leaf, 0 for padding)
    depth: np.ndarray  # (B, N) int64: distance to the root (-1 for padding)
    n_nodes: np.ndarray  # (B,) int64

    @property
    def batch(self) -> int:
        return self.parent.shape[0]

    @property
    def width(self) -> int:
        return self.parent.shape[1]

    @property
    def valid(self) -> np.ndarray:
        """(B, N) bool: real nodes (not padding)."""
        return self.leaves > 0

    @property
    def is_leaf(self) -> np.ndarray:
        return self.leaves == 1

    @property
    def is_internal(self) -> np.ndarray:
        return self.leaves > 1

    def levels(self) -> list[np.ndarray]:
        """Flat indices (b * N + v) of the real nodes at each depth 0, 1, ..., max depth."""
        flat = self.depth.ravel()
        idx = np.flatnonzero(flat >= 0)
        idx = idx[np.argsort(flat[idx], kind="stable")]
        bounds = np.searchsorted(flat[idx], np.arange(int(flat.max()) + 2))
        return [idx[bounds[d] : bounds[d + 1]] for d in range(len(bounds) - 1)]

    def children(self, b: int) -> list[list[int]]:
        """Children lists of tree ``b`` in creation order (for references and tests; not vectorised)."""
        kids: list[list[int]] = [[] for _ in range(int(self.n_nodes[b]))]
        for v in range(1, int(self.n_nodes[b])):
            kids[int(self.parent[b, v])].append(v)
        return kids

    def take(self, rows: np.ndarray) -> "Forest":
        """The sub-forest of the given rows."""
        return Forest(self.family, self.n, self.parent[rows], self.leaves[rows], self.depth[rows], self.n_nodes[rows])


def _check(n: int, count: int, family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"unknown tree family '{family}'; allowed: {', '.join(FAMILIES)}")
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n (leaves) must be an integer >= 2; got {n}")
    if family == "complete_binary" and n & (n - 1):
        raise ValueError(f"complete_binary needs n = 2^D; got n = {n}")
    if count < 1:
        raise ValueError(f"count (trees) must be >= 1; got {count}")


def _group_exclusive_cumsum(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sum of ``values`` within runs of equal, consecutive ``groups``."""
    cs = np.cumsum(values)
    excl = cs - values
    start = np.r_[True, groups[1:] != groups[:-1]]
    base = np.maximum.accumulate(np.where(start, np.arange(len(groups)), 0))
    return excl - excl[base]


def _splits(family: str, c: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(F, MAX_ARITY) child leaf counts of F internal nodes with c >= 2 leaves each (0 = no child)."""
    F = len(c)
    out = np.zeros((F, MAX_ARITY), dtype=np.int64)
    if family == "complete_binary":
        out[:, 0] = out[:, 1] = c // 2
    elif family == "caterpillar":
        left = rng.random(F) < 0.5  # which side the leaf child sits on (the order is chosen at serialisation)
        out[:, 0] = np.where(left, 1, c - 1)
        out[:, 1] = np.where(left, c - 1, 1)
    elif family == "random_binary":
        k = (rng.random(F) * (c - 1)).astype(np.int64) + 1  # uniform on 1..c-1
        out[:, 0], out[:, 1] = k, c - k
    else:  # random_kary: arity uniform on {2, 3, 4} capped by c; a uniform composition of c into that many parts
        a = np.minimum(rng.integers(2, MAX_ARITY + 1, size=F), c)
        cuts = np.zeros((F, MAX_ARITY - 1), dtype=np.int64)
        todo = np.arange(F)
        while len(todo):  # distinct cut points in 1..c-1 by rejection (few rounds: a <= 4)
            u = (rng.random((len(todo), MAX_ARITY - 1)) * (c[todo, None] - 1)).astype(np.int64) + 1
            u = np.where(np.arange(MAX_ARITY - 1)[None] < a[todo, None] - 1, u, c[todo, None])
            u.sort(axis=1)
            used = np.arange(MAX_ARITY - 1)[None] < a[todo, None] - 1
            dup = ((np.diff(u, axis=1) == 0) & used[:, 1:]).any(axis=1)
            cuts[todo[~dup]] = u[~dup]
            todo = todo[dup]
        edges = np.concatenate([np.zeros((F, 1), dtype=np.int64), cuts, c[:, None]], axis=1)
        parts = np.diff(edges, axis=1)  # (F, MAX_ARITY); unused slots are 0
        out[:] = parts
    return out


def sample_forest(family: str, n: int, count: int, rng: np.random.Generator) -> Forest:
    """``count`` random trees of ``family`` with ``n`` leaves each, grown level by level for the whole batch."""
    _check(n, count, family)
    N = 2 * n - 1  # every internal node has >= 2 children, so at most 2n - 1 nodes
    parent = np.full((count, N), -1, dtype=np.int64)
    leaves = np.zeros((count, N), dtype=np.int64)
    depth = np.full((count, N), -1, dtype=np.int64)
    leaves[:, 0], depth[:, 0] = n, 0
    size = np.ones(count, dtype=np.int64)
    fb, fv = np.arange(count), np.zeros(count, dtype=np.int64)  # frontier: internal nodes to split, sorted (b, v)
    while len(fb):
        parts = _splits(family, leaves[fb, fv], rng)  # (F, MAX_ARITY)
        arity = (parts > 0).sum(axis=1)
        start = size[fb] + _group_exclusive_cumsum(fb, arity)  # first child id of each frontier node
        np.add.at(size, fb, arity)
        F = len(fb)
        j = np.broadcast_to(np.arange(MAX_ARITY), (F, MAX_ARITY))
        has = j < arity[:, None]
        cb = np.broadcast_to(fb[:, None], (F, MAX_ARITY))[has]
        cv = (start[:, None] + j)[has]
        cp = np.broadcast_to(fv[:, None], (F, MAX_ARITY))[has]
        cl = parts[has]
        parent[cb, cv] = cp
        leaves[cb, cv] = cl
        depth[cb, cv] = depth[cb, cp] + 1
        keep = cl > 1
        fb, fv = cb[keep], cv[keep]
    return Forest(family, int(n), parent, leaves, depth, size)


# --- labels -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BooleanLabels:
    """A Boolean formula on a forest: AND/OR gates at internal nodes, literals x_i or not x_i at the leaves.

    Leaf i (in creation order) reads its own variable; ``assignment`` gives the variables' values, so
    ``value = assignment xor negated`` at each leaf."""

    op_or: np.ndarray  # (B, N) bool: True for OR, False for AND (internal nodes only)
    negated: np.ndarray  # (B, N) bool: the leaf's literal is negated
    assignment: np.ndarray  # (B, N) bool: the value of the leaf's variable (leaves only)

    @property
    def leaf_value(self) -> np.ndarray:
        return self.assignment ^ self.negated


def boolean_labels(forest: Forest, rng: np.random.Generator) -> BooleanLabels:
    """Random gates (AND/OR with probability 1/2) and literals (sign and assignment with probability 1/2)."""
    shape = forest.parent.shape
    internal, leaf = forest.is_internal, forest.is_leaf
    return BooleanLabels(
        op_or=(rng.random(shape) < 0.5) & internal,
        negated=(rng.random(shape) < 0.5) & leaf,
        assignment=(rng.random(shape) < 0.5) & leaf,
    )


def boolean_crq_labels(forest: Forest, labels: BooleanLabels) -> np.ndarray:
    """(B, N, 1) CRQ labels of a Boolean formula (paper, Boolean encoding, m = 1): a leaf is +1 (True) or -1
    (False); an OR gate is +1 (it picks a True child if any), an AND gate -1 (it picks a False child if any)."""
    z = np.where(forest.is_internal, np.where(labels.op_or, 1.0, -1.0), np.where(labels.leaf_value, 1.0, -1.0))
    return np.where(forest.valid, z, 0.0)[..., None]


def sphere_labels(forest: Forest, m: int, rng: np.random.Generator) -> np.ndarray:
    """(B, N, m) real CRQ labels, each z_v uniform on the unit sphere S^{m-1} (padding 0)."""
    if m < 1:
        raise ValueError(f"m (label dimension) must be >= 1; got {m}")
    z = rng.standard_normal((*forest.parent.shape, m))
    z /= np.linalg.norm(z, axis=-1, keepdims=True)
    return np.where(forest.valid[..., None], z, 0.0)


# --- serialisations -----------------------------------------------------------------------------------------------
def sibling_rank_keys(forest: Forest, order: str, rng: np.random.Generator | None = None) -> np.ndarray:
    """(B, N) sort keys among siblings: smaller comes first. Ties keep creation order."""
    if order not in ORDERS:
        raise ValueError(f"unknown child order '{order}'; allowed: {', '.join(ORDERS)}")
    if order == "heavy_first":
        return -forest.leaves.astype(np.float64)
    if order == "light_first":
        return forest.leaves.astype(np.float64)
    if order == "random":
        if rng is None:
            raise ValueError("order 'random' needs a generator")
        return rng.random(forest.parent.shape)
    return np.zeros(forest.parent.shape)


def euler_tour(forest: Forest, order: str, rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The event stream of each tree in the given child order: (B, T) node ids and (B, T) event types.

    An internal node emits OPEN, its children's streams, then CLOSE; a leaf emits LEAF; rows are padded with PAD.
    Dropping the OPEN events leaves the postfix (post-order) stream."""
    B, N = forest.parent.shape
    valid, internal = forest.valid, forest.is_internal
    levels = forest.levels()
    tour = np.where(internal, 2, 1) * valid  # (B, N) events of the node's subtree; summed bottom-up below
    tour = tour.astype(np.int64).ravel()
    par = (np.arange(B)[:, None] * N + forest.parent).ravel()  # flat parent index (invalid where parent = -1)
    for lvl in reversed(levels[1:]):
        np.add.at(tour, par[lvl], tour[lvl])
    keys = sibling_rank_keys(forest, order, rng).ravel()
    child = np.concatenate(levels[1:]) if len(levels) > 1 else np.zeros(0, dtype=np.int64)
    srt = child[np.lexsort((child, keys[child], par[child]))]  # grouped by parent, in the chosen order
    offset = np.zeros(B * N, dtype=np.int64)
    offset[srt] = _group_exclusive_cumsum(par[srt], tour[srt])
    pos = np.zeros(B * N, dtype=np.int64)  # position of the node's first event (OPEN or LEAF)
    for lvl in levels[1:]:
        pos[lvl] = pos[par[lvl]] + 1 + offset[lvl]
    T = int(tour.reshape(B, N)[:, 0].max())
    nodes = np.zeros((B, T), dtype=np.int64)
    types = np.full((B, T), PAD, dtype=np.int8)
    flat = np.flatnonzero(valid.ravel())
    b, v = np.divmod(flat, N)
    nodes[b, pos[flat]] = v
    types[b, pos[flat]] = np.where(internal.ravel()[flat], OPEN, LEAF)
    inn = flat[internal.ravel()[flat]]
    bi, vi = np.divmod(inn, N)
    close = pos[inn] + tour[inn] - 1
    nodes[bi, close] = vi
    types[bi, close] = CLOSE
    return nodes, types


def postorder(forest: Forest, order: str, rng: np.random.Generator | None = None) -> np.ndarray:
    """(B, N) node ids in post-order under the child order (padded with -1): the postfix stream."""
    nodes, types = euler_tour(forest, order, rng)
    keep = (types == LEAF) | (types == CLOSE)
    idx = np.argsort(~keep, axis=1, kind="stable")[:, : forest.width]  # kept events first, in stream order
    out = np.take_along_axis(nodes, idx, axis=1)
    return np.where(np.take_along_axis(keep, idx, axis=1), out, -1)


def postfix_tokens(
    forest: Forest, labels: BooleanLabels, order: str, rng: np.random.Generator | None = None
) -> np.ndarray:
    """(B, N) postfix tokens of Boolean formulas (TOK_FALSE / TOK_TRUE leaves, TOK_AND / TOK_OR gates, TOK_PAD):
    the RNN's input. Each leaf shows its literal's value (the assignment is folded in)."""
    post = postorder(forest, order, rng)
    tok = np.where(
        forest.is_internal, np.where(labels.op_or, TOK_OR, TOK_AND), np.where(labels.leaf_value, TOK_TRUE, TOK_FALSE)
    )
    tok = np.where(forest.valid, tok, TOK_PAD)
    out = np.take_along_axis(tok, np.maximum(post, 0), axis=1)
    return np.where(post >= 0, out, TOK_PAD)


def node_token_vocab(width: int) -> dict[str, int]:
    """The transformer vocabulary: PAD, FALSE, TRUE, AND, OR, ROOT (the root's parent), QUERY, then ``width``
    index tokens (post-order positions 0..width-1)."""
    return dict(
        pad=TOK_PAD,
        false=TOK_FALSE,
        true=TOK_TRUE,
        op_and=TOK_AND,
        op_or=TOK_OR,
        root=5,
        query=6,
        index0=7,
        size=7 + width,
    )


def node_tokens(
    forest: Forest, labels: BooleanLabels, order: str = "given", rng: np.random.Generator | None = None
) -> np.ndarray:
    """(B, 3N + 1) transformer input: for each node in post-order the triple (type, own index, parent index),
    indices being post-order positions as tokens, the root's parent being ROOT; then one QUERY token at which the
    root answer (or the first CoT token) is read. Rows of one forest have equal length when the trees have equal
    node counts (binary families); shorter rows are left-padded so the QUERY token is always last."""
    if order == "random":
        raise ValueError("node_tokens supports deterministic orders only (heavy_first, light_first, given)")
    B, N = forest.parent.shape
    voc = node_token_vocab(N)
    post = postorder(forest, order, rng)  # (B, N)
    rank = np.full((B, N), -1, dtype=np.int64)  # post-order position of each node
    rows = np.broadcast_to(np.arange(B)[:, None], (B, N))
    ok = post >= 0
    rank[rows[ok], post[ok]] = np.broadcast_to(np.arange(N), (B, N))[ok]
    typ = postfix_tokens(forest, labels, order, rng)  # (B, N) in the same (deterministic) post-order
    pv = np.maximum(post, 0)
    par = np.take_along_axis(forest.parent, pv, axis=1)
    par_tok = np.where(par >= 0, voc["index0"] + np.take_along_axis(rank, np.maximum(par, 0), axis=1), voc["root"])
    own_tok = voc["index0"] + np.arange(N)[None].repeat(B, 0)
    trip = np.stack([typ, own_tok, par_tok], axis=-1)  # (B, N, 3)
    trip = np.where(ok[..., None], trip, TOK_PAD)
    count = ok.sum(axis=1)
    seq = np.full((B, 3 * N + 1), TOK_PAD, dtype=np.int64)
    seq[:, -1] = voc["query"]
    # left-pad: node k of row b goes to 3 (N - count_b + k)
    shift = (N - count)[:, None]
    dst = 3 * (shift + np.arange(N)[None])  # (B, N)
    for j in range(3):
        seq[rows[ok], (dst + j)[ok]] = trip[..., j][ok]
    return seq


def cot_trace(
    forest: Forest, answers: np.ndarray, order: str = "given", rng: np.random.Generator | None = None
) -> np.ndarray:
    """(B, I) CoT targets: the Boolean answers (TOK_FALSE / TOK_TRUE) of the internal nodes in post-order, the
    root's last, left-padded with TOK_PAD when trees have fewer internal nodes. ``answers`` is (B, N) bool."""
    post = postorder(forest, order, rng)
    internal = np.take_along_axis(forest.is_internal, np.maximum(post, 0), axis=1) & (post >= 0)
    ans = np.take_along_axis(answers, np.maximum(post, 0), axis=1)
    tok = np.where(ans, TOK_TRUE, TOK_FALSE)
    I = int(internal.sum(axis=1).max())
    idx = np.argsort(internal, axis=1, kind="stable")[:, -I:]  # internal positions last, in post-order
    out = np.take_along_axis(tok, idx, axis=1)
    return np.where(np.take_along_axis(internal, idx, axis=1), out, TOK_PAD)


def formula_string(forest: Forest, labels: BooleanLabels, b: int) -> str:
    """Tree ``b`` as a Python Boolean expression over variables x0, x1, ... (leaf i in creation order reads x_i),
    for brute-force checks by ``eval``."""
    kids = forest.children(b)

    def rec(v: int) -> str:
        if not kids[v]:
            return f"(not x{v})" if labels.negated[b, v] else f"x{v}"
        op = " or " if labels.op_or[b, v] else " and "
        return "(" + op.join(rec(c) for c in kids[v]) + ")"

    return rec(0)
