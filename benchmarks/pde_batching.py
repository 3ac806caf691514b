"""PDE-kit batching: trajectory-steps per second when stepped as one batch or one trajectory at a time, on CPU with
one intra-op thread (as the kit's loops should run).

    python benchmarks/pde_batching.py [--json benchmarks/results/pde_batching.json]

The rows are:
- KS22 (L = 22, N = 64, dt = 0.25, ETDRK4) with 64 trajectories;
- QG2L "eddy" at 64² (ETDRK4 with 2×2 matrix weights, 2/3 rule and pyqg filter) with 16 trajectories;
- the QG2L eddy time per solver step for one trajectory, at 64² and at 256² (the card's truth grid).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

import torch

from _timing import best_time
from theorylab.data.pde import KS1D
from theorylab.data.qg import QG2L


def _rates(step, states: torch.Tensor, steps_batched: int, steps_single: int, repeats: int) -> tuple[float, float]:
    """(batched, one-by-one) trajectory-steps per second for ``step(x, n)`` over the batch ``states``."""
    B = states.shape[0]
    batched = B * steps_batched / best_time(lambda: step(states, steps_batched), repeats)
    single = B * steps_single / best_time(lambda: [step(states[i : i + 1], steps_single) for i in range(B)], repeats)
    return batched, single


def _time_per_step(model: QG2L, g: torch.Generator, steps: int, repeats: int) -> float:
    q = model.random_state(1, g, velocity=0.1)
    return best_time(lambda: model.step(q, steps), repeats) / steps


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="benchmarks/results/pde_batching.json")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    ks = KS1D.preset("ks22")
    u = ks.spun_up(64, g, time=50)
    ks_b, ks_1 = _rates(ks.step, u, 400, 20, args.repeats)
    qg = QG2L.preset("eddy", N=64)
    q = qg.random_state(16, g, velocity=0.1)
    qg_b, qg_1 = _rates(qg.step, q, 10, 5, args.repeats)
    per_step = {
        n: _time_per_step(QG2L.preset("eddy", N=n), g, steps, args.repeats) for n, steps in ((64, 20), (256, 3))
    }
    rows = [("KS22, 64 trajectories", ks_b, ks_1), ("QG2L eddy 64², 16 trajectories", qg_b, qg_1)]
    print(f"{'system':34s} {'batched traj-steps/s':>21s} {'one-by-one':>11s} {'ratio':>6s}")
    for name, b, s in rows:
        print(f"{name:34s} {b:21.0f} {s:11.0f} {b / s:6.1f}")
    print(f"{'system':34s} {'ms per step (B = 1)':>21s}")
    for n, t in per_step.items():
        print(f"{'QG2L eddy ' + str(n) + '²':34s} {1e3 * t:21.2f}")
    summary = {
        "ks22_batch64_trajectory_steps_per_s": round(ks_b),
        "ks22_one_by_one_trajectory_steps_per_s": round(ks_1),
        "ks22_ratio": round(ks_b / ks_1, 1),
        "qg64_batch16_trajectory_steps_per_s": round(qg_b),
        "qg64_one_by_one_trajectory_steps_per_s": round(qg_1),
        "qg64_ratio": round(qg_b / qg_1, 1),
        "qg64_ms_per_step_single": round(1e3 * per_step[64], 3),
        "qg256_ms_per_step_single": round(1e3 * per_step[256], 2),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
