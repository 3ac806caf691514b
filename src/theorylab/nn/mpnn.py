"""Message-passing networks aligned with dynamic programs, several models trained as one.

Nerem, Chen, Dasgupta, Wang, arXiv 2503.19173; Wittig et al., "Which Algorithms Can Graph Neural
Networks Learn?", arXiv 2602.13106 (2026). The algorithm-aligned recurrent MPNN is

    h_v^{k+1} = AGG( h_v^k , AGG_{u -> v} f_θ(h_u^k, w_uv) ),

with one ReLU MLP f_θ: 2 -> hidden -> hidden -> 1 shared across rounds. With AGG = min and
f_θ(x, w) = x + w it *is* Bellman–Ford; with max, the knapsack DP on its layered DAG; with min and
f_θ(x, w) = max(x, w), the minimax (bottleneck) distances that decide minimum-spanning-tree edges.

- :class:`StackedMLP`: S independent MLPs evaluated together (weights ``(S, in, out)``), so seeds
  and regularisation strengths train in one pass.
- :class:`AlignedMPNN`: the network above as a PyTorch Geometric ``MessagePassing`` (aggregation
  ``min``, ``max``, ``sum`` or ``mean``; ``sum``/``mean`` are the plain baselines); node states are
  ``(N, S)``, one column per member. The node's own state joins the aggregation as one more value,
  so nodes without in-edges keep their state.
- :class:`PairMPNN`: the more expressive MPNN-like variant (2-WL / Floyd–Warshall style): states on
  node *pairs*, ``H_uv <- AGG(H_uv, AGG_w f_θ(H_uw, H_wv))``. It computes all-pairs path quantities
  (e.g. connectivity, bottleneck distances) that no node-level MPNN can, and separates graphs 1-WL
  cannot (the 6-cycle from two triangles).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from theorylab.core.errors import MissingExtra

AGGREGATIONS = ("min", "max", "sum", "mean")


class StackedMLP(nn.Module):
    """``S`` ReLU MLPs with the same sizes and independent weights (``nn.Linear``'s default init, seeded per member)."""

    def __init__(self, sizes: tuple[int, ...], seeds: list[int]):
        super().__init__()
        self.sizes = tuple(sizes)
        weights, biases = [], []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = 1 / math.sqrt(fan_in)
            w = torch.stack(
                [
                    (
                        torch.rand(
                            fan_in,
                            fan_out,
                            generator=torch.Generator().manual_seed(s * 7919 + fan_out),
                            dtype=torch.float64,
                        )
                        * 2
                        - 1
                    )
                    * bound
                    for s in seeds
                ]
            )
            b = torch.stack(
                [
                    (
                        torch.rand(
                            fan_out, generator=torch.Generator().manual_seed(s * 104729 + fan_in), dtype=torch.float64
                        )
                        * 2
                        - 1
                    )
                    * bound
                    for s in seeds
                ]
            )
            weights.append(nn.Parameter(w))
            biases.append(nn.Parameter(b))
        self.weights, self.biases = nn.ParameterList(weights), nn.ParameterList(biases)

    @property
    def members(self) -> int:
        return self.weights[0].shape[0]

    def forward(self, z: Tensor) -> Tensor:
        """``z``: ``(..., S, in)`` -> ``(..., S, out)``."""
        lead = z.shape[:-2]
        s, d = z.shape[-2:]
        z = z.reshape(-1, s, d).transpose(0, 1)  # (S, M, in): one batched matmul per layer
        if not torch.is_grad_enabled() and z.shape[1] > self.chunk:
            # inference on big graphs: hidden activations of a few thousand rows stay in cache; the whole
            # (S, M, hidden) block would be hundreds of MB per layer, memory-bound and page-faulting
            out = torch.cat([self._layers(part) for part in z.split(self.chunk, dim=1)], dim=1)
        else:
            out = self._layers(z)
        return out.transpose(0, 1).reshape(*lead, s, -1)

    chunk = 4096

    def _layers(self, z: Tensor) -> Tensor:
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            z = torch.baddbmm(b[:, None, :], z, w)
            if i < last:
                z = torch.relu_(z) if not torch.is_grad_enabled() else torch.relu(z)
        return z

    def l1(self) -> Tensor:
        """‖θ‖₁ per member, shape ``(S,)``."""
        return sum(p.abs().flatten(1).sum(1) for p in self.parameters())

    def penalty(self, kind: str = "l1", delta: float = 1e-3) -> Tensor:
        """The sparsity regulariser per member: ``"l1"`` (Nerem et al.) or ``"smooth-l1"``,
        Σ (√(θ² + δ²) − δ), a differentiable surrogate (our stand-in for the differentiable
        regulariser of Wittig et al., whose exact form we could not read); it tends to ‖θ‖₁ as δ -> 0."""
        if kind == "l1":
            return self.l1()
        if kind == "smooth-l1":
            return sum(((p.square() + delta**2).sqrt() - delta).flatten(1).sum(1) for p in self.parameters())
        raise ValueError(f"regulariser must be 'l1' or 'smooth-l1', got {kind!r}")


def _message_passing_base():
    try:
        from torch_geometric.nn import MessagePassing
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise MissingExtra("PyTorch Geometric (message passing)", "graphs") from err
    return MessagePassing


class AlignedMPNN(_message_passing_base()):  # type: ignore[misc]
    """Recurrent ``h_v <- AGG(h_v, AGG_u f_θ(h_u, w_uv))`` for ``S`` members at once (node states ``(N, S)``).

    ``aggr``: one aggregation for every member, or one per member (a list), so models that differ
    only in their aggregation train in one pass; with one aggregation PyG's own aggregation module
    does the reduction.
    """

    def __init__(self, aggr: str | list[str] = "min", seeds: list[int] | None = None, hidden: int = 64):
        seeds = seeds or [0]
        kinds = [aggr] * len(seeds) if isinstance(aggr, str) else list(aggr)
        bad = [a for a in kinds if a not in AGGREGATIONS]
        if bad or len(kinds) != len(seeds):
            raise ValueError(
                f"aggregation must be one of {AGGREGATIONS} per member ({len(seeds)} members), got {aggr!r}"
            )
        uniform = len(set(kinds)) == 1
        super().__init__(aggr=kinds[0] if uniform else "sum", node_dim=0)
        self.kinds = kinds
        self.uniform = uniform
        self.f = StackedMLP((2, hidden, hidden, 1), seeds)
        for kind in AGGREGATIONS:
            self.register_buffer(f"_is_{kind}", torch.tensor([k == kind for k in kinds]), persistent=False)

    @property
    def members(self) -> int:
        return self.f.members

    @property
    def aggregation(self) -> str:
        return self.kinds[0] if self.uniform else "mixed"

    def subset(self, members: list[int]) -> "AlignedMPNN":
        """A network of the chosen members (their weights shared, not copied)."""
        out = AlignedMPNN([self.kinds[i] for i in members], seeds=list(range(len(members))), hidden=self.f.sizes[1])
        idx = torch.as_tensor(members)
        for dst, src in zip(out.f.parameters(), self.f.parameters()):
            dst.data = src.data[idx]
        return out

    def message(self, x_j: Tensor, w: Tensor) -> Tensor:
        return self.f(torch.stack([x_j, w[:, None].expand_as(x_j)], dim=-1)).squeeze(-1)

    def aggregate(self, inputs: Tensor, index: Tensor, ptr=None, dim_size: int | None = None) -> Tensor:
        if self.uniform:
            return super().aggregate(inputs, index, ptr=ptr, dim_size=dim_size)
        out = inputs.new_zeros(dim_size, inputs.shape[1])
        idx = index[:, None].expand_as(inputs)
        for kind, reduce in (("min", "amin"), ("max", "amax"), ("sum", "sum"), ("mean", "mean")):
            cols = getattr(self, f"_is_{kind}")
            if bool(cols.any()):
                part = inputs.new_zeros(dim_size, inputs.shape[1]).scatter_reduce(
                    0, idx, inputs, reduce=reduce, include_self=False
                )
                out = torch.where(cols, part, out)
        return out

    def graph_constants(self, edge_index: Tensor, n: int, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """``(has an in-edge, in-degree)`` per node, as ``(N, 1)`` columns (computed once per graph)."""
        has_in = torch.zeros(n, dtype=torch.bool, device=edge_index.device).index_fill_(0, edge_index[1], True)[:, None]
        deg = torch.zeros(n, dtype=dtype, device=edge_index.device).index_add_(
            0, edge_index[1], torch.ones(edge_index.shape[1], dtype=dtype, device=edge_index.device)
        )[:, None]
        return has_in, deg

    def step(
        self, h: Tensor, edge_index: Tensor, weight: Tensor, constants: tuple[Tensor, Tensor] | None = None
    ) -> Tensor:
        """One round; ``h``: ``(N, S)``. The node's own state joins the aggregation as one more value."""
        n = h.shape[0]
        m = self.propagate(edge_index, x=h, w=weight.to(h.dtype), size=(n, n))
        has_in, deg = constants if constants is not None else self.graph_constants(edge_index, n, h.dtype)
        combined = {}
        if "min" in self.kinds:
            combined["min"] = torch.where(has_in, torch.minimum(h, m), h)  # PyG fills an empty min/max with 0
        if "max" in self.kinds:
            combined["max"] = torch.where(has_in, torch.maximum(h, m), h)
        if "sum" in self.kinds:
            combined["sum"] = h + m
        if "mean" in self.kinds:
            combined["mean"] = (h + m * deg) / (1 + deg)  # mean over the in-messages and the node itself
        if self.uniform:
            return combined[self.kinds[0]]
        out = None
        for kind, value in combined.items():
            out = value if out is None else torch.where(getattr(self, f"_is_{kind}"), value, out)
        return out

    def forward(
        self,
        h: Tensor,
        edge_index: Tensor,
        weight: Tensor,
        rounds: int | None = None,
        tol: float = 1e-9,
        max_rounds: int | None = None,
        frontier: bool = True,
    ) -> tuple[Tensor, int]:
        """``rounds`` fixed rounds, or (``rounds=None``) until no state moves by more than ``tol``·(1+|h|)
        (at most ``max_rounds``, default N). Returns ``(h, rounds run)``. Without gradients, min/max
        networks evaluate only the edges whose source moved (``frontier``; exactly the same states)."""
        if frontier and all(k in ("min", "max") for k in self.kinds) and not torch.is_grad_enabled():
            return self._frontier(h, edge_index, weight, rounds, tol, max_rounds)
        constants = self.graph_constants(edge_index, h.shape[0], h.dtype)
        if rounds is not None:
            for _ in range(rounds):
                h = self.step(h, edge_index, weight, constants)
            return h, rounds
        cap = h.shape[0] if max_rounds is None else max_rounds
        for k in range(1, cap + 1):
            new = self.step(h, edge_index, weight, constants)
            done = bool(((new - h).abs() <= tol * (1 + h.abs())).all())
            h = new
            if done:
                return h, k
        return h, cap

    def _frontier(self, h, edge_index, weight, rounds, tol, max_rounds):
        """Same result as the synchronous rounds for min/max: only edges whose source moved send.

        With the node's own state in the aggregation, h_v^k already accounts for f(h_u^{k-1}, w_uv);
        if h_u did not change, neither did that message, so leaving it out changes nothing. On the
        knapsack DAG only one item layer moves per round (about n times less work).
        """
        n = h.shape[0]
        cap = rounds if rounds is not None else (n if max_rounds is None else max_rounds)
        active = torch.ones(edge_index.shape[1], dtype=torch.bool, device=h.device)
        for k in range(1, cap + 1):
            ei, w = edge_index[:, active], weight[active]
            new = self.step(h, ei, w) if ei.shape[1] else h
            moved = ((new - h).abs() > 0).any(1)
            settled = bool(((new - h).abs() <= tol * (1 + h.abs())).all())
            h = new
            if rounds is None and settled:
                return h, k
            active = moved[edge_index[0]]
        return h, cap


class PairMPNN(nn.Module):
    """``H_uv <- AGG(H_uv, AGG_w f_θ(H_uw, H_wv))`` on dense pair states ``(N, N, S)`` (min or max aggregation)."""

    def __init__(self, aggr: str = "min", seeds: list[int] | None = None, hidden: int = 64):
        super().__init__()
        if aggr not in ("min", "max", "sum"):
            raise ValueError(f"pair aggregation must be min, max or sum, got {aggr!r}")
        self.aggregation = aggr
        self.f = StackedMLP((2, hidden, 1), seeds or [0])

    def step(self, H: Tensor) -> Tensor:
        n, _, s = H.shape
        # (u, w, v, S, 2)
        pairs = torch.stack([H[:, :, None, :].expand(n, n, n, s), H[None, :, :, :].expand(n, n, n, s)], dim=-1)
        m = self.f(pairs).squeeze(-1)  # f(H_uw, H_wv)
        if self.aggregation == "min":
            return torch.minimum(H, m.amin(dim=1))
        if self.aggregation == "max":
            return torch.maximum(H, m.amax(dim=1))
        return H + m.sum(dim=1)

    def forward(self, H: Tensor, rounds: int) -> Tensor:
        for _ in range(rounds):
            H = self.step(H)
        return H


def pair_init(edge_index: Tensor, weight: Tensor, num_nodes: int, members: int, big: float) -> Tensor:
    """Pair states: 0 on the diagonal, the edge weight on edges, ``big`` elsewhere."""
    H = torch.full((num_nodes, num_nodes), big, dtype=torch.float64)
    H[edge_index[0], edge_index[1]] = weight.to(torch.float64)
    H.fill_diagonal_(0.0)
    return H[..., None].expand(-1, -1, members).clone()
