"""Wall time of every built-in study's quick preset (claims evaluated), from a fresh store.

    python benchmarks/quick_presets.py [--json benchmarks/results/quick_presets.json]

The budget is 60 s per study on 2 CPU cores; the script exits 1 if a study exceeds it or a claim fails.
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

from theorylab.core.runner import execute
from theorylab.core.store import Store
from theorylab.core.study import all_studies

BUDGET_S = 60.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="benchmarks/results/quick_presets.json")
    parser.add_argument("studies", nargs="*")
    args = parser.parse_args()
    slugs = args.studies or [s for s, st in all_studies().items() if st.module.startswith("theorylab.studies")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp)
        for slug in slugs:
            started = time.perf_counter()
            res = execute(slug, "quick", 0, store=store, device="cpu")
            total = time.perf_counter() - started
            counts = res.counts()
            rows.append({"study": slug, "run_s": round(res.wall_s, 2), "total_s": round(total, 2), **counts,
                         "within_budget": total <= BUDGET_S})
            print(f"{slug:28s} run {res.wall_s:6.1f} s  total {total:6.1f} s  (budget {BUDGET_S:.0f} s)  "
                  f"{counts['passed']} passed, {counts['failed']} failed, {counts['undecided']} undecided")
    total = sum(r["total_s"] for r in rows)
    over = [r["study"] for r in rows if not r["within_budget"]]
    print(f"total {total:.0f} s ({total / 60:.1f} min) over {len(rows)} studies; over the {BUDGET_S:.0f} s budget: "
          f"{', '.join(over) or 'none'}")
    summary = {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "python": platform.python_version(
        ), "total_s": round(total, 1), "over_budget": over, "studies": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    ok = all(r["within_budget"] and r["failed"] == 0 for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
