"""Graph tokenizations for transformers, the graphs they are tested on, and the tasks (dense tensors, batched).

Bechler-Speicher, Yehudai, Harari, Sanford, Globerson & Bruna, *Lost in Tokenization: Fundamental Trade-offs in
Graph Tokenization for Transformers*, arXiv 2605.22471 (2026). A graph on ``n <= n_max`` nodes becomes ``n_max``
tokens (rows past ``n`` are zero padding, see :func:`node_mask`); :func:`tokenize` builds the three families the
paper studies and their concatenation:

- ``adjacency``: ``token_i = [onehot(i), A[i, :]]`` (size ``2 n_max``): the node id makes ``A_ij`` a bilinear form
  between tokens ``i`` and ``j`` (TokenGT's orthonormal node ids);
- ``spectral``: ``L = D - A = U Λ Uᵀ`` (or ``I - D^{-1/2} A D^{-1/2}`` with ``laplacian="normalized"``),
  ``token_i = [U[i, :k], λ_1..λ_k]`` (size ``2 n_max``; lossless at ``k = n``). Sign policy: ``sign="random"``
  flips every eigenvector's sign independently per graph (training and test), ``"none"`` keeps ``eigh``'s. Basis:
  ``basis="eigh"`` keeps ``eigh``'s basis inside a repeated eigenvalue, ``"random_rotation"`` applies a Haar
  rotation inside each degenerate eigenspace (the ambiguity SignNet/BasisNet address);
- ``random_walk``: ``P = D^{-1} A`` (rows of isolated nodes 0), ``token_i = [(P^t)_ii, t = 1..K]`` (RWSE,
  ``K = 16``: GraphGPS, PyG ``AddRandomWalkPE``);
- ``concat``: the three, in that order.

Generators take an explicit ``torch.Generator``: Erdős–Rényi, disjoint unions of ``c`` random connected pieces,
random regular graphs, and the strongly regular pair srg(16, 6, 2, 2) (Shrikhande, 4x4 rook's graph). Tasks
(:func:`task_labels`): ``degree``, ``components``, ``edge_query``, ``in_K4``, ``lambda2_threshold``.
"""

from __future__ import annotations

import itertools
from typing import Literal

import torch
from torch import Tensor

Kind = Literal["adjacency", "spectral", "random_walk", "concat"]
KINDS: tuple[str, ...] = ("adjacency", "spectral", "random_walk", "concat")
TASKS: tuple[str, ...] = ("degree", "components", "edge_query", "in_K4", "lambda2_threshold")
NODE_TASKS = ("degree", "in_K4")
RW_STEPS = 16  # K of RWSE (GraphGPS default; DGL discussions suggest 16-20)
DEGENERACY_TOL = 1e-8  # eigenvalues of a 0/1 graph's Laplacian closer than this are one eigenspace (float64)


# --- tokenizations -----------------------------------------------------------------------------------------------
def token_size(kind: str, n_max: int, rw_steps: int = RW_STEPS) -> int:
    """Width of one token of ``kind`` for graphs padded to ``n_max`` nodes."""
    sizes = {"adjacency": 2 * n_max, "spectral": 2 * n_max, "random_walk": rw_steps}
    if kind == "concat":
        return sum(sizes.values())
    if kind not in sizes:
        raise ValueError(f"unknown tokenization '{kind}'; expected one of {KINDS}")
    return sizes[kind]


def eigenvector_columns(kind: str, n_max: int) -> slice | None:
    """Columns of a token that hold eigenvector entries ``U[i, :k]`` (where sign flips act), or None."""
    if kind == "spectral":
        return slice(0, n_max)
    if kind == "concat":
        return slice(2 * n_max, 3 * n_max)
    return None


def _check_adjacency(A: Tensor) -> Tensor:
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"adjacency must be (..., n, n); got shape {tuple(A.shape)}")
    A = A.to(torch.float64)
    if not torch.equal(A, A.transpose(-1, -2)):
        raise ValueError("adjacency must be symmetric (undirected graphs)")
    if bool((torch.diagonal(A, dim1=-2, dim2=-1) != 0).any()):
        raise ValueError("adjacency must have a zero diagonal (no self-loops)")
    return A


def laplacian(A: Tensor, kind: Literal["combinatorial", "normalized"] = "combinatorial") -> Tensor:
    """``D - A`` or ``I - D^{-1/2} A D^{-1/2}`` (isolated nodes: a zero row and column of ``D^{-1/2} A D^{-1/2}``)."""
    deg = A.sum(-1)
    if kind == "combinatorial":
        return torch.diag_embed(deg) - A
    inv = torch.where(deg > 0, deg.clamp_min(1e-300).rsqrt(), torch.zeros_like(deg))
    return torch.diag_embed((deg > 0).to(A.dtype)) - inv[..., :, None] * A * inv[..., None, :]


def walk_matrix(A: Tensor) -> Tensor:
    """``P = D^{-1} A``; rows of isolated nodes are 0 (the walk has nowhere to go)."""
    deg = A.sum(-1, keepdim=True)
    return torch.where(deg > 0, A / deg.clamp_min(1), torch.zeros_like(A))


def random_walk_tokens(A: Tensor, steps: int = RW_STEPS) -> Tensor:
    """``[(P^t)_ii, t = 1..steps]`` per node: (..., n, steps) (RWSE; PyG ``AddRandomWalkPE``)."""
    P = walk_matrix(A)
    out, Pt = [], P
    for _ in range(steps):
        out.append(torch.diagonal(Pt, dim1=-2, dim2=-1))
        Pt = Pt @ P
    return torch.stack(out, -1)


def rotate_degenerate(U: Tensor, lam: Tensor, generator: torch.Generator, tol: float = DEGENERACY_TOL) -> Tensor:
    """``U`` with a Haar-random rotation applied inside every eigenspace of dimension >= 2 (one graph, (n, n))."""
    U = U.clone()
    n = lam.shape[0]
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and lam[stop] - lam[start] <= tol:
            stop += 1
        m = stop - start
        if m >= 2:
            g = torch.randn(m, m, generator=generator, dtype=torch.float64)
            q, r = torch.linalg.qr(g)
            q = q * torch.sign(torch.diagonal(r))  # Haar measure on O(m)
            U[:, start:stop] = U[:, start:stop] @ q.to(U.dtype)
        start = stop
    return U


def spectral_decomposition(
    A: Tensor,
    basis: Literal["eigh", "random_rotation"] = "eigh",
    sign: Literal["random", "none"] = "none",
    generator: torch.Generator | None = None,
    laplacian_kind: Literal["combinatorial", "normalized"] = "combinatorial",
) -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending) and eigenvectors of the Laplacian of ``A`` (..., n, n), with the sign / basis policy."""
    if (sign == "random" or basis == "random_rotation") and generator is None:
        raise ValueError("sign='random' and basis='random_rotation' need a torch.Generator")
    lam, U = torch.linalg.eigh(laplacian(A, laplacian_kind))  # (..., n), (..., n, n)
    if basis == "random_rotation":
        flat_U, flat_l = U.reshape(-1, *U.shape[-2:]), lam.reshape(-1, lam.shape[-1])
        U = torch.stack([rotate_degenerate(u, lv, generator) for u, lv in zip(flat_U, flat_l)]).reshape(U.shape)
    elif basis != "eigh":
        raise ValueError(f"basis must be 'eigh' or 'random_rotation'; got '{basis}'")
    if sign == "random":
        s = torch.randint(0, 2, (*U.shape[:-2], 1, U.shape[-1]), generator=generator).to(U.dtype) * 2 - 1
        U = U * s
    elif sign != "none":
        raise ValueError(f"sign must be 'random' or 'none'; got '{sign}'")
    return lam, U


def spectral_tokens(lam: Tensor, U: Tensor, k: int | None = None) -> Tensor:
    """``token_i = [U[i, :k], λ_1..λ_k]``: (..., n, 2k)."""
    n = lam.shape[-1]
    k = n if k is None else k
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in [1, n = {n}]; got {k}")
    vals = lam[..., None, :k].expand(*U.shape[:-1], k)
    return torch.cat([U[..., :k], vals], -1)


def _pad(x: Tensor, rows: int, cols: int) -> Tensor:
    """Zero-pad the last two dims of ``x`` to (rows, cols)."""
    return torch.nn.functional.pad(x, (0, cols - x.shape[-1], 0, rows - x.shape[-2]))


def tokenize(
    A: Tensor,
    kind: str,
    n_max: int | None = None,
    *,
    k: int | None = None,
    rw_steps: int = RW_STEPS,
    sign: Literal["random", "none"] = "random",
    basis: Literal["eigh", "random_rotation"] = "eigh",
    laplacian_kind: Literal["combinatorial", "normalized"] = "combinatorial",
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
) -> Tensor:
    """Tokens of graphs ``A`` (..., n, n) under ``kind``, padded to ``n_max`` tokens: (..., n_max, token_size).

    ``k`` (spectral) keeps the first ``k`` eigenpairs (default ``n``: lossless); their block is padded to ``n_max``
    columns so every graph size shares one token width. ``sign`` / ``basis`` are the spectral policies of the module
    docstring (``generator`` is needed for the random ones).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown tokenization '{kind}'; expected one of {KINDS}")
    A = _check_adjacency(A)
    n = A.shape[-1]
    n_max = n if n_max is None else n_max
    if n_max < n:
        raise ValueError(f"n_max ({n_max}) must be >= the number of nodes ({n})")
    if rw_steps < 1:
        raise ValueError(f"rw_steps must be >= 1; got {rw_steps}")
    parts = []
    if kind in ("adjacency", "concat"):
        ids = torch.eye(n, n_max, dtype=A.dtype).expand(*A.shape[:-2], n, n_max)
        parts.append(torch.cat([ids, _pad(A, n, n_max)], -1))
    if kind in ("spectral", "concat"):
        lam, U = spectral_decomposition(A, basis, sign, generator, laplacian_kind)
        kk = n if k is None else k
        tok = spectral_tokens(lam, U, kk)  # (..., n, 2k)
        parts.append(torch.cat([_pad(tok[..., :kk], n, n_max), _pad(tok[..., kk:], n, n_max)], -1))
    if kind in ("random_walk", "concat"):
        parts.append(random_walk_tokens(A, rw_steps))
    x = torch.cat(parts, -1)  # (..., n, token_size)
    return _pad(x, n_max, x.shape[-1]).to(dtype)


def node_mask(n: int, n_max: int, batch: tuple[int, ...] = ()) -> Tensor:
    """True on the ``n`` real tokens, False on the padding: (*batch, n_max)."""
    return (torch.arange(n_max) < n).expand(*batch, n_max)


def adjacency_from_tokens(tokens: Tensor, n_max: int) -> Tensor:
    """Read ``A`` back from adjacency tokens: row ``i`` of A is the second half of the token whose id is ``i``."""
    ids, rows = tokens[..., :n_max], tokens[..., n_max : 2 * n_max]  # (..., T, n_max) each; padding rows are 0
    return ids.transpose(-1, -2) @ rows  # row j = the A-row of the token whose id is e_j (in any token order)


def random_sign_flip(tokens: Tensor, kind: str, n_max: int, generator: torch.Generator) -> Tensor:
    """Flip each eigenvector's sign independently per graph in a batch of tokens (training-time augmentation that
    draws a fresh sign for every sample; identity for kinds without eigenvectors)."""
    cols = eigenvector_columns(kind, n_max)
    if cols is None:
        return tokens
    s = torch.randint(0, 2, (*tokens.shape[:-2], 1, n_max), generator=generator).to(tokens.dtype) * 2 - 1
    out = tokens.clone()
    out[..., cols] = out[..., cols] * s.to(tokens.device)
    return out


# --- generators --------------------------------------------------------------------------------------------------
def _symmetric_bernoulli(n: int, p: Tensor, generator: torch.Generator) -> Tensor:
    """Upper-triangular Bernoulli(p) edges mirrored: (B, n, n) for p of shape (B,)."""
    u = torch.rand(p.shape[0], n, n, generator=generator, dtype=torch.float64)
    upper = torch.triu((u < p[:, None, None]).to(torch.float64), diagonal=1)
    return upper + upper.transpose(-1, -2)


def erdos_renyi(n: int, p: float | Tensor, generator: torch.Generator, count: int = 1) -> Tensor:
    """``count`` graphs G(n, p): (count, n, n) float64; ``p`` a float or a (count,) tensor (one p per graph)."""
    if n < 1 or count < 1:
        raise ValueError(f"n and count must be >= 1; got n = {n}, count = {count}")
    p = torch.full((count,), float(p), dtype=torch.float64) if not torch.is_tensor(p) else p.to(torch.float64)
    if bool(((p < 0) | (p > 1)).any()):
        raise ValueError("p must lie in [0, 1]")
    return _symmetric_bernoulli(n, p, generator)


def random_connected(n: int, generator: torch.Generator, p_extra: float = 0.2) -> Tensor:
    """A random connected graph: a random recursive spanning tree (node ``v`` joins a uniform earlier node, in a
    random order) plus every other edge with probability ``p_extra``. (n, n) float64."""
    A = torch.zeros(n, n, dtype=torch.float64)
    if n == 1:
        return A
    order = torch.randperm(n, generator=generator)
    parents = (torch.rand(n - 1, generator=generator, dtype=torch.float64) * torch.arange(1, n)).long()
    A[order[1:], order[parents]] = 1.0
    A = ((A + A.T) > 0).to(torch.float64)
    extra = erdos_renyi(n, p_extra, generator)[0]
    return ((A + extra) > 0).to(torch.float64)


def _partition(n: int, c: int, generator: torch.Generator) -> list[int]:
    """Uniform-ish composition of ``n`` into ``c`` parts of size >= 2 (cut points drawn without replacement)."""
    if n < 2 * c:
        raise ValueError(f"{c} pieces of size >= 2 need n >= {2 * c}; got n = {n}")
    free = n - 2 * c
    cuts = sorted(torch.randint(0, free + 1, (c - 1,), generator=generator).tolist())
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, free])]
    return [s + 2 for s in sizes]


def component_union(n: int, c: int, generator: torch.Generator, p_extra: float = 0.2) -> Tensor:
    """Disjoint union of ``c`` random connected pieces (sizes >= 2, summing to ``n``), node order shuffled."""
    A = torch.block_diag(*[random_connected(s, generator, p_extra) for s in _partition(n, c, generator)])
    perm = torch.randperm(n, generator=generator)
    return A[perm][:, perm]


def component_unions(
    n: int, count: int, generator: torch.Generator, max_components: int = 4, p_extra: float = 0.2
) -> tuple[Tensor, Tensor]:
    """``count`` unions with ``c`` uniform in ``1..max_components``: adjacency (count, n, n) and ``c`` (count,).

    The batched form of :func:`component_union` (same distribution): piece labels per node in canonical order, a
    random recursive tree inside each piece (position ``k > 0`` joins a uniform earlier position of its piece),
    extra edges with ``p_extra`` inside pieces, then one uniform relabelling per graph."""
    if n < 2 * max_components:
        raise ValueError(f"{max_components} pieces of size >= 2 need n >= {2 * max_components}; got n = {n}")
    cs = torch.randint(1, max_components + 1, (count,), generator=generator)
    sizes = [_partition(n, int(c), generator) for c in cs]
    label = torch.stack([torch.repeat_interleave(torch.arange(len(s)), torch.tensor(s)) for s in sizes])  # (B, n)
    start = torch.stack(
        [torch.tensor([0, *torch.tensor(s).cumsum(0).tolist()[:-1]] + [0] * (max_components - len(s))) for s in sizes]
    )  # (B, max_c): first position of each piece
    first = start.gather(1, label)  # (B, n)
    pos = torch.arange(n) - first  # position inside the piece
    u = torch.rand(count, n, generator=generator, dtype=torch.float64)
    parent = first + (u * pos).long()  # uniform earlier position of the same piece (pos = 0: itself, dropped)
    A = torch.zeros(count, n, n, dtype=torch.float64)
    A.scatter_(2, parent[:, :, None], (pos > 0).to(torch.float64)[:, :, None])
    same = label[:, :, None] == label[:, None, :]
    extra = _symmetric_bernoulli(n, torch.full((count,), float(p_extra), dtype=torch.float64), generator)
    A = (((A + A.transpose(1, 2)) > 0) | ((extra > 0) & same)).to(torch.float64)
    perm = torch.rand(count, n, generator=generator).argsort(1)  # one uniform relabelling per graph
    A = A.gather(1, perm[:, :, None].expand(-1, -1, n)).gather(2, perm[:, None, :].expand(-1, n, -1))
    return A, cs


def random_regular(n: int, degree: int, generator: torch.Generator) -> Tensor:
    """A uniform-ish random ``degree``-regular graph on ``n`` nodes (networkx's pairing algorithm, seeded from
    ``generator``). (n, n) float64."""
    import networkx as nx

    if n * degree % 2 or not 0 <= degree < n:
        raise ValueError(f"no {degree}-regular graph on {n} nodes")
    seed = int(torch.randint(0, 2**31 - 1, (), generator=generator))
    g = nx.random_regular_graph(degree, n, seed=seed)
    return torch.tensor(nx.to_numpy_array(g, nodelist=range(n)), dtype=torch.float64)


def shrikhande() -> Tensor:
    """The Shrikhande graph: Cayley graph of Z4 x Z4 with connection set {±(0,1), ±(1,0), ±(1,1)}; srg(16, 6, 2, 2).
    Vertex ``(a, b)`` is node ``4a + b``."""
    A = torch.zeros(16, 16, dtype=torch.float64)
    steps = [(0, 1), (0, 3), (1, 0), (3, 0), (1, 1), (3, 3)]
    for a, b in itertools.product(range(4), range(4)):
        for da, db in steps:
            A[4 * a + b, 4 * ((a + da) % 4) + (b + db) % 4] = 1.0
    return A


def rook_graph() -> Tensor:
    """The 4x4 rook's graph K4 □ K4 (same row or same column); srg(16, 6, 2, 2). Vertex ``(r, c)`` is ``4r + c``."""
    r, c = torch.arange(16) // 4, torch.arange(16) % 4
    same = (r[:, None] == r[None, :]) | (c[:, None] == c[None, :])
    return (same & ~torch.eye(16, dtype=torch.bool)).to(torch.float64)


def relabel(A: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """``A`` (..., n, n) with its nodes permuted by one uniform permutation per graph; returns (A', perms)."""
    flat = A.reshape(-1, *A.shape[-2:])
    perms = torch.stack([torch.randperm(A.shape[-1], generator=generator) for _ in range(flat.shape[0])])
    idx = perms[:, :, None]
    out = flat.gather(1, idx.expand_as(flat)).gather(2, perms[:, None, :].expand_as(flat))
    return out.reshape(A.shape), perms.reshape(*A.shape[:-2], A.shape[-1])


def relabelled_pairs(A: Tensor, B: Tensor, count: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """``count`` independently relabelled copies of ``A`` and of ``B``: (count, n, n) each."""
    Aa, _ = relabel(A.expand(count, *A.shape[-2:]).clone(), generator)
    Bb, _ = relabel(B.expand(count, *B.shape[-2:]).clone(), generator)
    return Aa, Bb


# --- tasks -------------------------------------------------------------------------------------------------------
def degrees(A: Tensor) -> Tensor:
    """Node degrees (..., n) as int64 (the ``degree`` task: n classes)."""
    return A.sum(-1).round().long()


def reachability(A: Tensor) -> Tensor:
    """Boolean (..., n, n): ``j`` reachable from ``i`` (repeated squaring of ``I + A``, log2 n products)."""
    n = A.shape[-1]
    R = (A + torch.eye(n, dtype=A.dtype)) > 0
    for _ in range(max(1, (n - 1).bit_length())):
        R = (R.to(torch.float64) @ R.to(torch.float64)) > 0
    return R


def component_counts(A: Tensor) -> Tensor:
    """Number of connected components (...,): Σ_i 1 / |component(i)|."""
    R = reachability(A)
    return (1.0 / R.sum(-1).to(torch.float64)).sum(-1).round().long()


def in_k4(A: Tensor) -> Tensor:
    """Node-level: does node ``i`` lie in a 4-clique? Equivalent to a triangle inside G[N(i)]:
    ``trace((A ∘ a_i a_iᵀ)^3) > 0``. (..., n) bool."""
    M = A[..., None, :, :] * A[..., :, :, None] * A[..., :, None, :]  # (..., i, j, k): G[N(i)]
    return torch.einsum("...ijk,...ikl,...ilj->...i", M, M, M) > 0.5


def lambda2(A: Tensor) -> Tensor:
    """Algebraic connectivity λ₂(L) (second-smallest Laplacian eigenvalue), (...,)."""
    return torch.linalg.eigvalsh(laplacian(A.to(torch.float64)))[..., 1]


def edge_query_pairs(A: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """One marked pair per graph, balanced: with probability 1/2 a uniform edge, else a uniform non-edge (when the
    graph has one of the asked kind; otherwise the other kind). Returns pairs (B, 2) and labels (B,) in {0, 1}."""
    B, n = A.shape[0], A.shape[-1]
    want_edge = torch.rand(B, generator=generator) < 0.5
    off = ~torch.eye(n, dtype=torch.bool)
    edge = (A > 0.5) & off
    nonedge = (A < 0.5) & off
    has_e, has_ne = edge.flatten(1).any(1), nonedge.flatten(1).any(1)
    use_edge = torch.where(want_edge, has_e, ~has_ne)
    pool = torch.where(use_edge[:, None, None], edge, nonedge).flatten(1).to(torch.float64)
    idx = torch.multinomial(pool, 1, generator=generator)[:, 0]
    pairs = torch.stack([idx // n, idx % n], 1)
    return pairs, use_edge.long()


def mark_pairs(tokens: Tensor, pairs: Tensor) -> Tensor:
    """Tokens with one more channel: 1 on the two marked nodes of each graph, 0 elsewhere (``edge_query``)."""
    mark = torch.zeros(*tokens.shape[:-1], 1, dtype=tokens.dtype)
    mark.scatter_(1, pairs[:, :, None], 1.0)
    return torch.cat([tokens, mark], -1)


def task_labels(
    task: str, A: Tensor, generator: torch.Generator | None = None, lambda2_threshold: float = 0.5
) -> tuple[Tensor, Tensor | None]:
    """Labels of ``task`` on graphs ``A`` (B, n, n): node-level (B, n) or graph-level (B,), and the marked pairs
    (edge_query) or None. ``components`` is 0-based (c - 1)."""
    if task == "degree":
        return degrees(A), None
    if task == "components":
        return component_counts(A) - 1, None
    if task == "in_K4":
        return in_k4(A).long(), None
    if task == "lambda2_threshold":
        return (lambda2(A) > lambda2_threshold).long(), None
    if task == "edge_query":
        if generator is None:
            raise ValueError("edge_query draws its marked pairs: pass a torch.Generator")
        pairs, y = edge_query_pairs(A, generator)
        return y, pairs
    raise ValueError(f"unknown task '{task}'; expected one of {TASKS}")


def n_classes(task: str, n_max: int, max_components: int = 4) -> int:
    """Number of classes of ``task``: degree n_max (0..n_max-1), components max_components, binary otherwise."""
    return {"degree": n_max, "components": max_components}.get(task, 2)


def task_graphs(
    task: str,
    n: int,
    count: int,
    generator: torch.Generator,
    p_low: float = 0.1,
    p_high: float = 0.6,
    max_components: int = 4,
    p_extra: float = 0.2,
) -> Tensor:
    """The graph bank of a task (ours): unions of 1..max_components connected pieces for ``components``;
    G(n, p) with p uniform in [p_low, p_high] per graph for the others (spreads degrees, K4s and λ₂)."""
    if task == "components":
        return component_unions(n, count, generator, max_components, p_extra)[0]
    if task not in TASKS:
        raise ValueError(f"unknown task '{task}'; expected one of {TASKS}")
    p = p_low + (p_high - p_low) * torch.rand(count, generator=generator, dtype=torch.float64)
    return erdos_renyi(n, p, generator, count)
