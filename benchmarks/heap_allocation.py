"""The runner's CPU allocation policy (``theorylab.core.cpu``), as ratios measured in one process.

    python benchmarks/heap_allocation.py [--steps 10] [--rounds 3] [--json benchmarks/results/heap_allocation.json]

The attention-rank paper's Fig. 1 point (d = 64, N = 16 points, H = 4 heads of rank 16, one post-norm encoder layer,
FF 2048 ReLU, batch 256, AdamW 1e-2), one training step of our ``ToyTransformer`` and of
``torch.nn.TransformerEncoderLayer`` (the authors' model is built from it), under glibc's default allocator
settings ("system") and under the heap policy the runner applies ("heap"). The two policies alternate for
``--rounds`` rounds and each keeps its best time, so a drifting machine load disturbs both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Callable

import torch

from _timing import BATCH, FF, HEADS, N_POINTS, RANK, D, adamw_step, fig1_models_and_batch
from theorylab.core.cpu import set_heap_allocation


def timed(fn: Callable[[], None], steps: int) -> float:
    fn()  # warm-up under the current policy
    started = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - started) / steps


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default="benchmarks/results/heap_allocation.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    toy, reference, x, y = fig1_models_and_batch(torch.Generator().manual_seed(0))
    models = {"toy_transformer": adamw_step(toy, x, y), "torch_encoder_layer": adamw_step(reference, x, y)}
    best = {(name, policy): float("inf") for name in models for policy in ("system", "heap")}
    for _ in range(args.rounds):
        for policy in ("system", "heap"):
            if not set_heap_allocation(policy == "heap") and policy == "heap":
                print("not glibc: the heap policy is a no-op here")
            for name, fn in models.items():
                best[name, policy] = min(best[name, policy], timed(fn, args.steps))
    set_heap_allocation(False)
    rows = {}
    for name in models:
        system, heap = best[name, "system"], best[name, "heap"]
        rows[name] = {
            "system_ms": round(1e3 * system, 1),
            "heap_ms": round(1e3 * heap, 1),
            "speedup": round(system / heap, 2),
        }
        print(
            f"{name}: {1e3 * system:.1f} ms/step (system malloc) vs {1e3 * heap:.1f} ms/step (heap policy) -> "
            f"{system / heap:.2f}x"
        )
    ratio = best["toy_transformer", "heap"] / best["torch_encoder_layer", "heap"]
    print(f"toy transformer over torch.nn.TransformerEncoderLayer, both under the heap policy: {ratio:.2f}x time")
    summary = {
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "point": dict(d=D, n_points=N_POINTS, heads=HEADS, rank=RANK, ff=FF, batch=BATCH),
        "steps": rows,
        "toy_over_torch_time_heap": round(ratio, 3),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
