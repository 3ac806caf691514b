"""A permutation-equivariant graph transformer: ToyTransformer (no positions) plus a node head or a pooled head.

Bechler-Speicher et al., *Lost in Tokenization*, arXiv 2605.22471 (2026): one token per node, a transformer encoder
with no positional encoding (so the model is a function of the token multiset: relabelling the graph permutes node
outputs and leaves pooled outputs unchanged), then a node-level linear head or masked mean pooling and an MLP head.
Shapes: ``B`` graphs, ``T`` tokens (n_max), ``D`` token size, ``d`` = ``d_model``, ``C`` classes.
"""

from __future__ import annotations

from typing import Literal

from torch import Tensor, nn

from theorylab.core.rng import seeded
from theorylab.nn.toy_transformer import ToyTransformer


class GraphTransformer(nn.Module):
    """``ToyTransformer(d_input=D, positional='none', pre-LN, final LN)`` and a ``level`` head.

    ``level="graph"``: mean over the real tokens (``mask``) then ``Linear-GELU-Linear`` -> (B, C);
    ``level="node"``: ``Linear`` per token -> (B, T, C).
    """

    def __init__(
        self,
        d_input: int,
        n_classes: int,
        level: Literal["graph", "node"],
        *,
        n_layers: int = 1,
        d_model: int = 64,
        n_heads: int = 4,
        mlp_mult: int = 4,
        seed: int = 0,
    ):
        super().__init__()
        if level not in ("graph", "node"):
            raise ValueError(f"level must be 'graph' or 'node'; got '{level}'")
        self.level = level
        self.body = ToyTransformer(
            d_input=d_input,
            d_model=d_model,
            n_layers=n_layers,
            n_heads=n_heads,
            mlp_width=mlp_mult * d_model,
            positional="none",
            norm="layer",
            norm_position="pre",
            final_norm=True,
            seed=seed,
        )
        with seeded(seed + 1):
            if level == "graph":
                self.head: nn.Module = nn.Sequential(
                    nn.Linear(d_model, d_model), nn.GELU(), nn.Linear(d_model, n_classes)
                )
            else:
                self.head = nn.Linear(d_model, n_classes)

    def forward(self, tokens: Tensor, mask: Tensor | None = None) -> Tensor:
        h = self.body(tokens)  # (B, T, d)
        if self.level == "node":
            return self.head(h)  # (B, T, C)
        if mask is None:
            pooled = h.mean(-2)
        else:
            w = mask.to(h.dtype)[..., None]  # (B, T, 1)
            pooled = (h * w).sum(-2) / w.sum(-2).clamp_min(1)
        return self.head(pooled)  # (B, C)
