"""Shared helpers of the benchmark scripts (run as ``python benchmarks/NAME.py``, so this imports as ``_timing``):
best-of timing, and the attention-rank paper's Fig. 1 training step that two of them time."""

from __future__ import annotations

import time
from typing import Callable

import torch

# The Fig. 1 point of Amsel, Yehudai, Bruna (arXiv 2407.16153): d = 64, N = 16 points, H = 4 heads of rank 16, one
# post-norm encoder layer, FF 2048 ReLU, batch 256
D, N_POINTS, HEADS, RANK, FF, BATCH = 64, 16, 4, 16, 2048, 256


def fig1_models_and_batch(gen: torch.Generator) -> tuple[torch.nn.Module, torch.nn.Module, torch.Tensor, torch.Tensor]:
    """``(ToyTransformer, torch.nn.TransformerEncoderLayer, x, y)`` at the Fig. 1 point (same sizes, seed 0)."""
    from theorylab.nn.toy_transformer import ToyTransformer

    x, y = torch.randn(BATCH, N_POINTS, D, generator=gen), torch.randn(BATCH, N_POINTS, D, generator=gen)
    toy = ToyTransformer(
        d_model=D,
        n_layers=1,
        n_heads=HEADS,
        head_rank=RANK,
        value_dim=RANK,
        mlp_width=FF,
        activation="relu",
        norm="layer",
        norm_position="post",
        bias=True,
        seed=0,
    )
    torch.manual_seed(0)
    reference = torch.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True)
    return toy, reference, x, y


def adamw_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> Callable[[], None]:
    """One training step of ``model`` on ``(x, y)`` (squared error, AdamW 1e-2), as a closure."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def step() -> None:
        loss = (model(x) - y).pow(2).sum(-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def best_time(fn: Callable[[], object], repeats: int) -> float:
    """Best wall time of ``repeats`` calls of ``fn`` after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
