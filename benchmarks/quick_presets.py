"""Wall time of every built-in study's quick preset (claims evaluated), from a fresh store, and of the whole main job.

    python benchmarks/quick_presets.py [--workers auto|N] [--json benchmarks/results/quick_presets.json] [SLUG ...]
    python benchmarks/quick_presets.py --busy [--json benchmarks/results/quick_presets_busy.json] [SLUG ...]

The studies run as ``theorylab check`` runs them (``--workers auto``: side by side, one process per core, the cores
shared out as threads; ``--workers 1``: one at a time). Printed: each study's run time as it finishes, and the
whole job's elapsed time, with the sum of the run times beside it (their ratio is what running side by side
bought). The budget is 60 s per study on 2 CPU cores (the performance issue: <= 10 min for the whole job); the
script exits 1 if a study exceeds it, raises, or a claim fails.

``--busy``: pace on a shared machine. Each study runs twice, one at a time, as ``theorylab run`` runs it (every core
unless the study declares ``cpu_threads``): first on the idle machine, then with one core kept busy by another
process (a spin loop); printed: both times and their ratio. The performance issue's bar is 2x: a run whose threads
wait at every op for the busy core goes far over it (bilinear-attention-operator: 5.5x before the runner ran on the
free cores only, :func:`theorylab.core.cpu.run_threads`). Exits 1 if a ratio exceeds 2 or a study raises.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
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
BUSY_BAR = 2.0  # the performance issue: no study more than 2x its idle time with one core kept busy


def _spin() -> None:
    while True:
        pass


def _threads(result) -> int | None:
    """The torch threads a stored run ran on (its meta.json)."""
    return json.loads((result.path / "meta.json").read_text()).get("threads")


def busy_pace(slugs: list[str], json_path: str) -> int:
    """Each study idle, then beside a process that keeps one core busy: wall times and their ratio."""
    from theorylab.core.cpu import cpu_label

    rows = []
    print(f"{len(slugs)} studies, one at a time, idle then with one of {os.cpu_count()} cores kept busy", flush=True)
    for slug in slugs:
        times = {}
        for mode in ("idle", "busy"):
            spinner = None
            if mode == "busy":
                spinner = multiprocessing.get_context("spawn").Process(target=_spin, daemon=True)
                spinner.start()
                time.sleep(1.0)  # spinning before the run samples the load
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    (outcome,) = check_many([slug], "quick", 0, store=Store(tmp), device="cpu", workers=1)
                    threads = None if isinstance(outcome, BaseException) else _threads(outcome)
            finally:
                if spinner is not None:
                    spinner.terminate()
                    spinner.join()
            if isinstance(outcome, BaseException):
                times[mode] = None
                print(f"{slug:28s} {mode} error: {type(outcome).__name__}: {outcome}", flush=True)
                break
            times[mode] = (round(outcome.wall_s, 2), threads)
        if times.get("idle") is None or times.get("busy") is None:
            rows.append({"study": slug, "error": True})
            continue
        (idle, idle_threads), (busy, busy_threads) = times["idle"], times["busy"]
        ratio = busy / idle
        rows.append(
            {
                "study": slug,
                "idle_s": idle,
                "busy_s": busy,
                "ratio": round(ratio, 2),
                "threads_idle": idle_threads,
                "threads_busy": busy_threads,
                "within_bar": ratio <= BUSY_BAR,
            }
        )
        print(
            f"{slug:28s} idle {idle:6.1f} s ({idle_threads} threads)  busy {busy:6.1f} s ({busy_threads} threads)  "
            f"{ratio:4.2f}x{'' if ratio <= BUSY_BAR else '  OVER ' + str(BUSY_BAR) + 'x'}",
            flush=True,
        )
    over = [r["study"] for r in rows if not r.get("within_bar")]
    done = [r for r in rows if "ratio" in r]
    worst = max(done, key=lambda r: r["ratio"]) if done else None
    print(
        f"{len(done)} studies measured; worst {worst['study']} {worst['ratio']:.2f}x; over {BUSY_BAR:.0f}x or "
        f"errors: {', '.join(over) or 'none'}"
        if worst
        else "no study measured"
    )
    summary = {"cpu": cpu_label(), "cpu_count": os.cpu_count(), "bar": BUSY_BAR, "over": over, "studies": rows}
    Path(json_path).parent.mkdir(parents=True, exist_ok=True)
    Path(json_path).write_text(json.dumps(summary, indent=2))
    return 0 if not over and rows else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None, help="where the figures go (default benchmarks/results/...)")
    parser.add_argument("--busy", action="store_true", help="each study idle, then with one core kept busy")
    parser.add_argument(
        "--every-core",
        action="store_true",
        help="with --busy: run on every core even beside the busy one (the runner before run_threads), to measure "
        "what running on the free cores saves",
    )
    parser.add_argument("--workers", default="auto", help="'auto' (one per core) or a number, as theorylab check")
    parser.add_argument("studies", nargs="*")
    args = parser.parse_args()
    workers = args.workers if args.workers == "auto" else int(args.workers)
    slugs = args.studies or [s for s, st in all_studies().items() if st.module.startswith("theorylab.studies")]
    if args.busy:
        if args.every_core:
            os.environ["THEORYLAB_CORES"] = "all"  # the runner's documented switch (theorylab.core.cpu)
        return busy_pace(slugs, args.json or "benchmarks/results/quick_presets_busy.json")
    args.json = args.json or "benchmarks/results/quick_presets.json"
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
