"""The order-3 spectral U-statistic of the generative-leap paper at n = 20,000, d = 64.

    python benchmarks/ustat_kernel.py [--n 20000] [--d 64] [--block 2048] [--json benchmarks/results/ustat_kernel.json]

Reports wall time and peak memory (tracemalloc does not see torch's allocations, so the peak
resident set size is read from the OS), and the ratio to the explicit pair loop extrapolated
from a small n (the loop is O(n^2 d^2) in Python; the blocked closed form is O(n^2 d) in BLAS).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

import numpy as np
import torch

from theorylab.data.index_models import IndexModel
from theorylab.probes.subspace import overlap
from theorylab.theory.generative import k3_kernel, top_subspace, u_and_v_k3_matrices


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--block", type=int, default=2048)
    parser.add_argument("--json", default="benchmarks/results/ustat_kernel.json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    model = IndexModel.make(args.d, "parity3", rng)
    X, y, _ = model.sample(args.n, rng)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    u, v = u_and_v_k3_matrices(X, y - y.mean(), block=args.block)
    wall = time.perf_counter() - started
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ov_u, ov_v = overlap(top_subspace(u, 3), model.W), overlap(top_subspace(v, 3), model.W)

    small = 60
    t0 = time.perf_counter()
    for i in range(small):
        for j in range(small):
            if i != j:
                k3_kernel(X[i], X[j])
    loop_per_pair = (time.perf_counter() - t0) / (small * (small - 1))
    loop_estimate = loop_per_pair * args.n * (args.n - 1)
    summary = {
        "n": args.n,
        "d": args.d,
        "block": args.block,
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(rss_after, 1),
        "rss_growth_mb": round(rss_after - rss_before, 1),
        "overlap_u": round(ov_u, 4),
        "overlap_v": round(ov_v, 4),
        "pair_loop_estimate_s": round(loop_estimate, 1),
        "speedup_vs_pair_loop": round(loop_estimate / wall, 1),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }
    print(
        f"U and V statistics at n = {args.n}, d = {args.d}: {wall:.2f} s, peak RSS {rss_after:.0f} MB "
        f"(+{rss_after - rss_before:.0f} MB); overlaps U {ov_u:.3f}, V {ov_v:.3f}; "
        f"an explicit pair loop would take ~{loop_estimate:.0f} s ({loop_estimate / wall:.0f}x)"
    )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
