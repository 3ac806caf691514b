"""rmt-diffusion's kappa solver against the paper authors' mpmath solver, side by side on one grid.

    git clone https://github.com/Animadversio/diffusion-consistency-rmt /path/to/rmt   # you fetch it; never vendored
    python benchmarks/anchors/rmt_kappa.py --official /path/to/rmt [--dps 30]

The renormalised noise level kappa(sigma^2) of Wang, Zavatone-Veth, Pehlevan (arXiv 2602.02908) is the root of
kappa = sigma^2 + (kappa/n) tr Sigma (Sigma + kappa)^-1. The authors solve it per sigma^2 with mpmath's findroot at
80 digits along a continuation path (``rmt_core/rmt_kappa_int_lib.py``: ``solve_kappa_vectorized_analyCont_mpmath``;
their weights 1/p and gamma = p/n give the same equation); ``theorylab.theory.rmt.solve_kappa`` bisects in
log kappa, vectorised over the grid, in float64. Both run here on the card's quick spectrum (d = 200,
lambda_k = 1/k) at n = 100, 200, 400, 800 (gamma = 2, 1, 0.5, 0.25) and 60 values of sigma^2 in [1e-8, 10]; printed:
seconds for each, the ratio, and the largest relative difference (the target is >= 100x at <= 1e-10).

Their file is loaded on its own (``importlib`` from the path), so their package's other modules and their
dependencies are not needed; mpmath is (``pip install mpmath``, which torch already brings).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path

import numpy as np

from theorylab.theory.rmt import solve_kappa


def _official(path: Path):
    file = path / "rmt_core" / "rmt_kappa_int_lib.py"
    if not file.is_file():
        raise SystemExit(
            f"--official {path}: no rmt_core/rmt_kappa_int_lib.py there; clone "
            "https://github.com/Animadversio/diffusion-consistency-rmt and pass its folder"
        )
    spec = importlib.util.spec_from_file_location("rmt_kappa_int_lib", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, required=True, help="a local checkout of diffusion-consistency-rmt")
    parser.add_argument("--d", type=int, default=200)
    parser.add_argument("--n", type=int, nargs="+", default=[100, 200, 400, 800])
    parser.add_argument("--grid", type=int, default=60, help="sigma^2 values in [1e-8, 10]")
    parser.add_argument("--dps", type=int, default=80, help="their mpmath precision (their default: 80 digits)")
    parser.add_argument("--repeats", type=int, default=20, help="repeats of ours (it is too fast to time once)")
    parser.add_argument("--json", default="benchmarks/results/anchor_rmt_kappa.json")
    args = parser.parse_args()
    lib = _official(args.official)
    lam = 1.0 / np.arange(1, args.d + 1)
    s2 = np.logspace(-8, 1, args.grid)
    rows, t_theirs, t_ours, worst = [], 0.0, 0.0, 0.0
    for n in args.n:
        started = time.perf_counter()
        theirs = lib.solve_kappa_vectorized_analyCont_mpmath(list(s2), list(lam), gamma=args.d / n, dps=args.dps)
        t1 = time.perf_counter() - started
        theirs = np.array([float(k.real) if hasattr(k, "imag") else float(k) for k in theirs])
        started = time.perf_counter()
        for _ in range(args.repeats):
            ours = solve_kappa(s2, lam, n)
        t2 = (time.perf_counter() - started) / args.repeats
        rel = float(np.max(np.abs(ours - theirs) / theirs))
        rows.append(
            dict(
                n=n,
                gamma=args.d / n,
                official_s=round(t1, 4),
                ours_s=round(t2, 6),
                speedup=round(t1 / t2, 1),
                max_rel_diff=rel,
            )
        )
        t_theirs, t_ours, worst = t_theirs + t1, t_ours + t2, max(worst, rel)
        print(
            f"n = {n:5d} (gamma {args.d / n:.2f}): official {t1:8.3f} s, ours {t2 * 1e3:8.3f} ms, "
            f"{t1 / t2:9.0f}x, max relative difference {rel:.1e}"
        )
    summary = dict(
        d=args.d,
        grid=args.grid,
        dps=args.dps,
        official_s=round(t_theirs, 3),
        ours_s=round(t_ours, 5),
        speedup=round(t_theirs / t_ours, 1),
        max_rel_diff=worst,
        rows=rows,
    )
    print(f"all: {summary['speedup']:.0f}x at max relative difference {worst:.1e} (target: >= 100x at <= 1e-10)")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
