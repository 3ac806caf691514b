"""Wall time of every built-in study's quick preset (claims evaluated), from a fresh store, and of the whole main job.

    python benchmarks/quick_presets.py [--workers auto|N] [--json benchmarks/results/quick_presets.json] [SLUG ...]

The studies run as ``theorylab check`` runs them (``--workers auto``: side by side, one process per core, the cores
shared out as threads; ``--workers 1``: one at a time). Printed: each study's run time as it finishes, and the
whole job's elapsed time, with the sum of the run times beside it (their ratio is what running side by side
bought). The budget is 60 s per study on 2 CPU cores (the performance issue: <= 10 min for the whole job); the
script exits 1 if a study exceeds it, raises, or a claim fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import torch

from theorylab.core.runner import check_many, check_workers
from theorylab.core.store import Store
from theorylab.core.study import all_studies

BUDGET_S = 60.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="benchmarks/results/quick_presets.json")
    parser.add_argument("--workers", default="auto", help="'auto' (one per core) or a number, as theorylab check")
    parser.add_argument("studies", nargs="*")
    args = parser.parse_args()
    workers = args.workers if args.workers == "auto" else int(args.workers)
    slugs = args.studies or [s for s, st in all_studies().items() if st.module.startswith("theorylab.studies")]
    rows = []

    def done(slug: str, outcome, k: int) -> None:
        if isinstance(outcome, BaseException):
            rows.append(
                {
                    "study": slug,
                    "run_s": None,
                    "error": f"{type(outcome).__name__}: {outcome}",
                    "within_budget": False,
                    "failed": 0,
                }
            )
            print(f"{slug:28s} error: {type(outcome).__name__}: {outcome}")
            return
        counts = outcome.counts()
        rows.append(
            {"study": slug, "run_s": round(outcome.wall_s, 2), **counts, "within_budget": outcome.wall_s <= BUDGET_S}
        )
        print(
            f"{k:2d}/{len(slugs)} {slug:28s} run {outcome.wall_s:6.1f} s  (budget {BUDGET_S:.0f} s)  "
            f"{counts['passed']} passed, {counts['failed']} failed, {counts['undecided']} undecided",
            flush=True,
        )

    n_proc, threads = check_workers(workers, len(slugs), "cpu")
    print(f"{len(slugs)} studies, {n_proc} at a time, {threads} thread(s) each", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        check_many(slugs, "quick", 0, store=Store(tmp), device="cpu", workers=n_proc, on_done=done)
        elapsed = time.perf_counter() - started
    total = sum(r["run_s"] or 0.0 for r in rows)
    over = [r["study"] for r in rows if not r["within_budget"]]
    print(
        f"main job {elapsed:.0f} s ({elapsed / 60:.1f} min) for {len(rows)} studies; sum of run times {total:.0f} s "
        f"({total / max(elapsed, 1e-9):.2f}x); over the {BUDGET_S:.0f} s budget: {', '.join(over) or 'none'}"
    )
    summary = {
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "workers": n_proc,
        "threads_each": threads,
        "elapsed_s": round(elapsed, 1),
        "sum_run_s": round(total, 1),
        "over_budget": over,
        "studies": rows,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    ok = all(r["within_budget"] and r["failed"] == 0 for r in rows) and len(rows) == len(slugs)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
