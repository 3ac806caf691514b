"""Where a toy-transformer training step at the attention-rank paper's Fig. 1 point spends its time, and how much a
leaner step could gain on this machine: ratios measured in one process.

    python benchmarks/transformer_step.py [--threads 2] [--repeats 5] [--json benchmarks/results/transformer_step.json]

The Fig. 1 point (Amsel, Yehudai, Bruna, arXiv 2407.16153): d = 64, N = 16 points, H = 4 heads of rank 16, one
post-norm encoder layer, FF 2048 ReLU, batch 256, AdamW. Timed under the runner's heap policy
(``theorylab.core.cpu``), best of ``--repeats`` blocks of 5 steps after a warm-up:

1. ``step``: one ``ToyTransformer`` training step (forward, backward, AdamW);
2. ``ff_block``: the FF block alone (64 -> 2048 -> 64 on 4096 tokens, ReLU), forward and backward;
3. ``ff_matmuls``: the six matrix products that block cannot avoid (two forward; input and weight gradients of
   both layers), run bare on preallocated operands: the floor of any fp32 step on this CPU;
4. ``square_matmul``: a 2048³ product, this CPU's attainable fp32 rate;
5. ``torch_encoder_step``: ``torch.nn.TransformerEncoderLayer`` of the same size, the same step.

Printed: each time, the FF matmuls' share of the step, and ``step / ff_matmuls``: the largest speed-up that removing
every other cost (norms, attention, element-wise ops, the optimiser) could give in fp32. The performance issue's
target for a lean step is >= 3x at this point.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path
from typing import Callable

import torch

from _timing import BATCH, FF, N_POINTS, D, adamw_step, best_time, fig1_models_and_batch
from theorylab.core.cpu import set_heap_allocation


def ff_block(x: torch.Tensor, gen: torch.Generator) -> Callable[[], None]:
    up, down = torch.nn.Linear(D, FF), torch.nn.Linear(FF, D)
    inp = x.reshape(-1, D).clone().requires_grad_()
    grad = torch.randn(inp.shape, generator=gen)

    def go() -> None:
        down(up(inp).relu()).backward(grad)

    return go


def ff_matmuls(gen: torch.Generator) -> Callable[[], None]:
    tokens = BATCH * N_POINTS
    x, g = torch.randn(tokens, D, generator=gen), torch.randn(tokens, D, generator=gen)
    h = torch.randn(tokens, FF, generator=gen)
    w1, w2 = torch.randn(FF, D, generator=gen), torch.randn(D, FF, generator=gen)
    out_h, out_x = torch.empty(tokens, FF), torch.empty(tokens, D)
    out_w1, out_w2 = torch.empty(FF, D), torch.empty(D, FF)

    def go() -> None:
        torch.mm(x, w1.t(), out=out_h)  # forward, up
        torch.mm(h, w2.t(), out=out_x)  # forward, down
        torch.mm(g, w2, out=out_h)  # input gradient of down
        torch.mm(g.t(), h, out=out_w2)  # weight gradient of down
        torch.mm(h.t(), x, out=out_w1)  # weight gradient of up
        torch.mm(h, w1, out=out_x)  # input gradient of up

    return go


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default="benchmarks/results/transformer_step.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    set_heap_allocation(True)
    gen = torch.Generator().manual_seed(0)
    toy, reference, x, y = fig1_models_and_batch(gen)
    a, b = torch.randn(2048, 2048, generator=gen), torch.randn(2048, 2048, generator=gen)
    cases = {
        "step": adamw_step(toy, x, y),
        "ff_block": ff_block(x, gen),
        "ff_matmuls": ff_matmuls(gen),
        "square_matmul": lambda: a @ b,
        "torch_encoder_step": adamw_step(reference, x, y),
    }
    ms = {name: 1e3 * best_time(lambda fn=fn: [fn() for _ in range(5)], args.repeats) / 5 for name, fn in cases.items()}
    ff_flop = 6 * 2 * BATCH * N_POINTS * D * FF
    rate = {
        "ff_matmuls_gflops": ff_flop / ms["ff_matmuls"] / 1e6,
        "square_gflops": 2 * 2048**3 / ms["square_matmul"] / 1e6,
    }
    row = {name: round(v, 2) for name, v in ms.items()}
    row.update({k: round(v, 1) for k, v in rate.items()})
    row.update(
        ff_share_of_step=round(ms["ff_matmuls"] / ms["step"], 3),
        lean_step_bound=round(ms["step"] / ms["ff_matmuls"], 2),
        toy_over_torch=round(ms["step"] / ms["torch_encoder_step"], 3),
    )
    for name in cases:
        print(f"{name:20s} {ms[name]:8.2f} ms")
    print(
        f"FF matmuls: {rate['ff_matmuls_gflops']:.0f} GFLOP/s (a 2048^3 matmul: {rate['square_gflops']:.0f}); "
        f"{100 * row['ff_share_of_step']:.0f}% of the step"
    )
    print(
        f"largest fp32 speed-up a leaner step could give here: {row['lean_step_bound']:.2f}x (the issue's target: "
        f">= 3x); ToyTransformer / TransformerEncoderLayer step time {row['toy_over_torch']:.2f}"
    )
    summary = {
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        **row,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
