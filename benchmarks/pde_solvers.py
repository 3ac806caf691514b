"""PDE-kit solver throughput on CPU (one intra-op thread, as the kit's loops should run).

    python benchmarks/pde_solvers.py [--json benchmarks/results/pde_solvers.json]

KS22 (L = 22, N = 64, dt = 0.25, ETDRK4): solver steps per second batched over 64 trajectories, against
the same 64 trajectories stepped one by one. Kolmogorov flow (ν = 1e-3, α = 0.1, n = 4) at 64²:
steps per second for one trajectory and for a batch of 8.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from theorylab.data.pde import KS1D, NS2D


def _rate(fn, steps: int) -> float:
    fn(max(1, steps // 10))  # warm-up
    start = time.perf_counter()
    fn(steps)
    return steps / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="benchmarks/results/pde_solvers.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    ks = KS1D.preset("ks22")
    u = ks.spun_up(64, g, time=50)
    batched = _rate(lambda n: ks.step(u, n), 2000)
    single = _rate(lambda n: [ks.step(u[i : i + 1], n) for i in range(64)], 50)  # 64 steps per "step" here
    ns = NS2D.preset("kolmo_re1k", N=64)
    w1 = ns.random_state(1, g)
    w8 = ns.random_state(8, g)
    ns1 = _rate(lambda n: ns.step(w1, n), 200)
    ns8 = _rate(lambda n: ns.step(w8, n), 50)
    summary = {
        "ks22_batch64_steps_per_s": round(batched),
        "ks22_trajectory_steps_per_s_batched": round(64 * batched),
        "ks22_trajectory_steps_per_s_one_by_one": round(64 * single),
        "ratio_batched_to_loop": round(batched / single, 1),
        "kolmo64_steps_per_s_single": round(ns1),
        "kolmo64_trajectory_steps_per_s_batch8": round(8 * ns8),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }
    print(
        f"KS22, 64 trajectories: {batched:.0f} batched steps/s = {64 * batched:.0f} trajectory-steps/s "
        f"(one by one: {64 * single:.0f}; {batched / single:.0f}x)"
    )
    print(
        f"Kolmogorov 64²: {ns1:.0f} steps/s for one trajectory ({1e3 / ns1:.2f} ms per step); batch of 8: "
        f"{8 * ns8:.0f} trajectory-steps/s"
    )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
