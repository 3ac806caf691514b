"""Thermalized rollout cost as a ratio to the plain emulator rollout (thermalizer quick preset, KS22).

    python benchmarks/thermalizer_overhead.py [--json benchmarks/results/thermalizer_overhead.json]

Runs the study's quick preset once (KS22, 16 trajectories x 1000 steps, the MLP thermalizer) and
reports the wall time of the plain and thermalized rollouts (same emulator, noise and initial states),
their ratio, and the denoiser calls per emulator step behind it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

from theorylab.core.runner import execute
from theorylab.core.store import Store


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="benchmarks/results/thermalizer_overhead.json")
    args = parser.parse_args()
    result = execute("thermalizer", "quick", 0, store=Store(Path(tempfile.mkdtemp()) / "store"), device="cpu")
    plain, therm = result.scalars["plain_rollout_s"], result.scalars["thermalized_rollout_s"]
    calls = float(result.table("rollouts")["calls_per_step"].mean())
    summary = dict(
        plain_rollout_s=round(plain, 2),
        thermalized_rollout_s=round(therm, 2),
        ratio=round(therm / plain, 1),
        denoiser_calls_per_step=round(calls, 2),
        cpu_count=os.cpu_count(),
        python=platform.python_version(),
    )
    print(
        f"KS22, 16 x 1000 steps: plain {plain:.2f} s, thermalized {therm:.2f} s ({therm / plain:.1f}x; {calls:.1f} "
        f"denoiser calls per step)"
    )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
