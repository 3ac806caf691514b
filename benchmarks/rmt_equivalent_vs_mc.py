"""How much faster the deterministic equivalent reaches a given accuracy than Monte Carlo.

Target: the diagonal of E[Sigma_hat (Sigma_hat + sigma^2)^-1] for the power-law Gaussian
(d = 200, lambda_k = 1/k, n = 400, sigma^2 = 1e-2), to a max-abs error eps over all modes.
The reference is an independent Monte Carlo with many draws. The deterministic equivalent's
time is that of solving kappa and evaluating the formula; Monte Carlo's is the time per draw
(exact Wishart draw + eigendecomposition) times the number of draws it needed to get within eps
of the reference. Also reports the Bartlett (Wishart) sampler against explicit data-set draws.

    python benchmarks/rmt_equivalent_vs_mc.py [--eps 0.005] [--json benchmarks/results/rmt_equivalent_vs_mc.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from theorylab.data.gaussian import wishart_sample_covariance
from theorylab.theory import rmt

D, N, S2 = 200, 400, 1e-2


def mc_diagonals(draws: int, rng: np.random.Generator, chunk: int = 250) -> np.ndarray:
    lam = 1.0 / np.arange(1, D + 1)
    out = []
    for start in range(0, draws, chunk):
        cov = wishart_sample_covariance(lam, N, min(chunk, draws - start), rng)
        w, q = torch.linalg.eigh(cov)
        w = w.clamp_min(0)
        out.append(torch.einsum("bij,bj->bi", q * q, w / (w + S2)).numpy())
    return np.concatenate(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--eps", type=float, nargs="+", default=[0.005, 0.002])
    parser.add_argument("--reference-draws", type=int, default=4000)
    parser.add_argument("--json", default="benchmarks/results/rmt_equivalent_vs_mc.json")
    args = parser.parse_args()
    lam = 1.0 / np.arange(1, D + 1)

    reference = mc_diagonals(args.reference_draws, np.random.default_rng(1)).mean(0)

    reps = 50
    started = time.perf_counter()
    for _ in range(reps):
        theory = rmt.denoiser_mean_equiv(S2, lam, N)
    t_theory = (time.perf_counter() - started) / reps
    err_theory = float(np.abs(theory - reference).max())

    # Monte Carlo: grow the number of draws until it is within eps of the reference.
    started = time.perf_counter()
    sims = mc_diagonals(2000, np.random.default_rng(2))
    t_draw = (time.perf_counter() - started) / len(sims)
    results = []
    for eps in args.eps:
        needed = next(
            (
                b
                for b in (10, 20, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000)
                if np.abs(sims[:b].mean(0) - reference).max() <= eps
            ),
            None,
        )
        t_mc = needed * t_draw if needed else None
        reached = err_theory <= eps
        results.append(
            {
                "eps": eps,
                "mc_draws_needed": needed,
                "mc_s": t_mc,
                "speedup": (t_mc / t_theory) if (t_mc and reached) else None,
                "equivalent_reaches": reached,
            }
        )

    # Bartlett sampler vs explicit samples, per data-set draw at n = 800.
    rng = np.random.default_rng(3)
    started = time.perf_counter()
    wishart_sample_covariance(lam, 800, 200, rng)
    t_bartlett = (time.perf_counter() - started) / 200
    started = time.perf_counter()
    x = torch.from_numpy(rng.standard_normal((200, 800, D))) * torch.from_numpy(np.sqrt(lam))
    _ = x.transpose(1, 2) @ x / 800
    t_explicit = (time.perf_counter() - started) / 200

    summary = {
        "d": D,
        "n": N,
        "sigma2": S2,
        "reference_draws": args.reference_draws,
        "equivalent_error": err_theory,
        "equivalent_s": t_theory,
        "mc_s_per_draw": t_draw,
        "targets": results,
        "bartlett_s_per_draw": t_bartlett,
        "explicit_s_per_draw": t_explicit,
        "bartlett_speedup": t_explicit / t_bartlett,
    }
    print(
        f"deterministic equivalent: error {err_theory:.4f} vs reference, {t_theory * 1e3:.2f} ms; Monte Carlo "
        f"{t_draw * 1e3:.2f} ms/draw"
    )
    for r in results:
        if r["speedup"]:
            print(
                f"  eps={r['eps']}: Monte Carlo needs {r['mc_draws_needed']} draws = {r['mc_s']:.2f} s -> equivalent "
                f"{r['speedup']:.0f}x faster"
            )
        elif not r["equivalent_reaches"]:
            print(f"  eps={r['eps']}: the equivalent's finite-d bias ({err_theory:.4f}) is above eps")
        else:
            print(f"  eps={r['eps']}: Monte Carlo did not reach it within 2000 draws")
    print(f"Bartlett Wishart draw vs explicit samples at n=800: {summary['bartlett_speedup']:.1f}x faster per draw")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
