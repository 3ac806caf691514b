"""The cache-friendly FF path (``nn.chunked_ff``) against the plain block, at the attention-rank paper's Fig. 1 point:
ratios measured in one process.

    python benchmarks/chunked_ff.py [--threads 1] [--repeats 5] [--json benchmarks/results/chunked_ff.json]

Timed (best of ``--repeats`` after a warm-up, the runner's heap policy): the FF block alone (64 -> 2048 -> 64 ReLU on
4096 tokens, forward and backward) plain and in chunks of 128 / 256 / 512 tokens; and a whole ``ToyTransformer``
training step (AdamW) with ``ff_chunk`` 0 (plain) and 256. Printed: each time and ``plain / chunked``, with the CPU
named (the gain depends on its caches; bf16 is not used: see ``theorylab.core.precision``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from _timing import BATCH, FF, N_POINTS, D, adamw_step, best_time, fig1_models_and_batch
from theorylab.core.cpu import cpu_label, set_heap_allocation
from theorylab.nn.chunked_ff import chunked_ff


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    set_heap_allocation(True)
    gen = torch.Generator().manual_seed(0)
    up, down = torch.nn.Linear(D, FF), torch.nn.Linear(FF, D)
    x = torch.randn(BATCH * N_POINTS, D, generator=gen).requires_grad_()
    g = torch.randn(BATCH * N_POINTS, D, generator=gen)

    def plain() -> None:
        torch.autograd.backward(down(torch.relu(up(x))), g)

    def chunked(c: int):
        return lambda: torch.autograd.backward(chunked_ff(x, up.weight, up.bias, down.weight, down.bias, "relu", c), g)

    times = {"ff_plain": best_time(plain, args.repeats)}
    for c in (128, 256, 512):
        times[f"ff_chunk_{c}"] = best_time(chunked(c), args.repeats)
    for chunk in (0, 256):
        toy, _, xb, yb = fig1_models_and_batch(torch.Generator().manual_seed(0))
        for block in toy.blocks:
            if block.mlp is not None:
                block.mlp.ff_chunk = chunk
        times[f"step_ff_chunk_{chunk}"] = best_time(adamw_step(toy, xb, yb), args.repeats)
    ratios = {k: times["ff_plain"] / v for k, v in times.items() if k.startswith("ff_chunk")}
    ratios["step"] = times["step_ff_chunk_0"] / times["step_ff_chunk_256"]
    out = {
        "cpu": cpu_label(),
        "threads": args.threads,
        "ms": {k: round(v * 1e3, 2) for k, v in times.items()},
        "plain_over_chunked": {k: round(v, 2) for k, v in ratios.items()},
    }
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
