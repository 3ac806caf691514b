"""Mean-field harness speed: all widths and seeds as one padded computation vs a loop, and raw throughput.

    python benchmarks/mean_field_batching.py [--json benchmarks/results/mean_field_batching.json]

1. The mean-field-width quick sweep (d = 16, m in {32, 64, 128}, 3 seeds, 200 steps): networks
   stepped as one padded batch vs one network at a time, same steps (the reference excluded).
2. Particle-steps per second of projected GD at m = 4096, d = 32 (one network, float64).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

import torch

from _timing import best_time
from theorylab.nn.activations import HermiteActivation
from theorylab.theory.mean_field import projected_step, uniform_sphere
from theorylab.train.mean_field import NetworkBatch


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="benchmarks/results/mean_field_batching.json")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    act = HermiteActivation.he(4)
    d, steps = 16, 200
    w_star = torch.eye(d, dtype=torch.float64)[0]
    nets = NetworkBatch.uniform((32, 64, 128), 3, d, torch.Generator().manual_seed(0))

    def batched() -> None:
        w = nets.w
        for _ in range(steps):
            w = projected_step(act, w, nets.c, w_star, 0.1)

    def looped() -> None:
        for one in nets.split():
            w = one.w
            for _ in range(steps):
                w = projected_step(act, w, one.c, w_star, 0.1)

    t_batched, t_loop = best_time(batched, args.repeats), best_time(looped, args.repeats)
    m, dd, n_steps = 4096, 32, 20
    w = uniform_sphere((m,), dd, torch.Generator().manual_seed(1))
    c = torch.full((m,), 1.0 / m, dtype=torch.float64)
    star = torch.eye(dd, dtype=torch.float64)[0]

    def big() -> None:
        x = w
        for _ in range(n_steps):
            x = projected_step(act, x, c, star, 0.1)

    t_big = best_time(big, args.repeats)
    summary = {
        "sweep": {
            "d": d,
            "widths": [32, 64, 128],
            "seeds": 3,
            "steps": steps,
            "batched_s": round(t_batched, 3),
            "loop_s": round(t_loop, 3),
            "speedup": round(t_loop / t_batched, 2),
        },
        "throughput": {
            "m": m,
            "d": dd,
            "steps": n_steps,
            "seconds": round(t_big, 3),
            "particle_steps_per_s": round(m * n_steps / t_big),
        },
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }
    print(
        f"width sweep (9 networks, {steps} steps): padded batch {t_batched:.2f} s vs loop {t_loop:.2f} s -> "
        f"{t_loop / t_batched:.1f}x"
    )
    print(f"projected GD at m = {m}, d = {dd}: {m * n_steps / t_big:,.0f} particle-steps/s")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
