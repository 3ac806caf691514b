"""Do the quick-preset claims hold on seeds a user picks? Every study's quick preset at seeds 0-9.

    python benchmarks/seed_robustness.py                       # every built-in study, seeds 0-9
    python benchmarks/seed_robustness.py mpnn-algorithms --seeds 0-19 --workers 2
    python benchmarks/seed_robustness.py --executor ray        # a local Ray (or --address ray://head:10001)
    python benchmarks/seed_robustness.py --write-docs          # also rewrite docs/seed-robustness.md's table

Each (study, seed) is an ordinary run in a persistent store (``--store``, default
``benchmarks/results/seed_store``), so an interrupted sweep resumes where it stopped. Prints and
writes (``benchmarks/results/seed_robustness.json``) a pass-rate table per claim: passed / failed /
errors / not decided out of the seeds, with the failing seeds and the first failing detail. The
target is every decided claim at 10/10; each exception is explained in its claim's detail.

Every run uses one torch thread (``--threads``), whatever the worker count: float reductions sum in
a thread-dependent order, so measured values are comparable across stores only at one thread count
(``benchmarks/compare_verdicts.py`` relies on it).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE_START, TABLE_END = "<!-- seed-table:start -->", "<!-- seed-table:end -->"
DOCS_PAGE = ROOT / "docs" / "seed-robustness.md"


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _run(slug: str, seed: int, store_root: str, threads: int) -> dict:
    """One quick run (top level, so worker processes and Ray can import it)."""
    import torch

    torch.set_num_threads(threads)
    from theorylab.core.runner import check
    from theorylab.core.store import Store

    started = time.perf_counter()
    try:
        res = check(slug, "quick", seed, store=Store(store_root), device="cpu")
    except Exception as err:  # noqa: BLE001 - a study that raises is a row, not the end of the sweep
        return {"study": slug, "seed": seed, "status": "error", "message": f"{type(err).__name__}: {err}",
                "wall_s": time.perf_counter() - started, "verdicts": []}
    return {"study": slug, "seed": seed, "status": res.status, "message": res.message, "wall_s": res.wall_s,
            "verdicts": [{"id": v.id, "outcome": v.outcome, "detail": v.detail} for v in res.verdicts]}


def collect(stores: list[str], slugs: set[str], seeds: set[int]) -> list[dict]:
    """The finished quick runs of ``slugs`` at ``seeds`` in existing stores (the newest per study and
    seed), as rows like :func:`_run` returns; claims are re-judged with the current code."""
    from theorylab.core.runner import rejudge
    from theorylab.core.store import Store
    from theorylab.core.study import get_study

    newest: dict[tuple[str, int], tuple[float, Store, str]] = {}
    for root in stores:
        store = Store(root)
        for r in store.rows():
            key = (r["study"], r["seed"])
            if r["preset"] == "quick" and r["status"] in ("done", "diverged") and key[0] in slugs and key[
                1] in seeds and store.has(r["run_id"]):
                if key not in newest or (r["finished"] or 0) > newest[key][0]:
                    newest[key] = (r["finished"] or 0, store, r["run_id"])
    rows = []
    for (slug, seed), (_, store, run_id) in sorted(newest.items()):
        res = rejudge(get_study(slug), store, run_id)
        rows.append({"study": slug, "seed": seed, "status": res.status, "message": res.message, "wall_s": res.wall_s,
                     "verdicts": [{"id": v.id, "outcome": v.outcome, "detail": v.detail} for v in res.verdicts]})
    return rows


def pass_rates(rows: list[dict]) -> list[dict]:
    """One row per claim: counts per outcome over the seeds, failing seeds, first failing detail."""
    table: dict[str, dict] = {}
    for row in sorted(rows, key=lambda r: (r["study"], r["seed"])):
        if row["status"] != "done" and not row["verdicts"]:
            entry = table.setdefault(f"{row['study']} (run)", {"claim": f"{row['study']} (run)", "passed": 0,
                "failed": 0, "error": 0, "undecided": 0, "bad_seeds": [], "first_bad": ""})
            entry["error"] += 1
            entry["bad_seeds"].append(row["seed"])
            entry["first_bad"] = entry["first_bad"] or f"{row['status']}: {row['message']}"
            continue
        for v in row["verdicts"]:
            entry = table.setdefault(v["id"], {"claim": v["id"], "passed": 0, "failed": 0, "error": 0, "undecided": 0,
                                               "bad_seeds": [], "first_bad": ""})
            entry[v["outcome"]] += 1
            if v["outcome"] in ("failed", "error"):
                entry["bad_seeds"].append(row["seed"])
                entry["first_bad"] = entry["first_bad"] or v["detail"]
    return list(table.values())


def markdown(rates: list[dict], seeds: list[int], rows: list[dict]) -> str:
    walls = {}
    for r in rows:
        walls.setdefault(r["study"], []).append(r["wall_s"])
    lines = [f"Quick presets at seeds {seeds[0]}–{seeds[-1]} ({len(seeds)} seeds; `python "
             f"benchmarks/seed_robustness.py`). "
             "A claim that is not decided at quick counts in the last column.", "",
             "| claim | passed | failed | errors | not decided | failing seeds |", "|---|---|---|---|---|---|"]
    for r in rates:
        bad = ", ".join(str(s) for s in r["bad_seeds"]) or ""
        lines.append(f"| `{r['claim']}` | {r['passed']} | {r['failed']} | {r['error']} | {r['undecided']} | {bad} |")
    lines += ["", "Quick-preset wall time over the seeds (s, min–max): " + "; ".join(
        f"{slug} {min(w):.0f}–{max(w):.0f}" for slug, w in sorted(walls.items()))]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("studies", nargs="*", help="study slugs (default: every built-in study)")
    parser.add_argument("--seeds", default="0-9", help="seeds, e.g. 0-9 or 0,3,5-7")
    parser.add_argument("--workers", type=int, default=2, help="parallel runs (process executor)")
    parser.add_argument("--executor", choices=("process", "ray"), default="process")
    parser.add_argument("--address", default=None, help="Ray cluster address (default: a local Ray)")
    parser.add_argument("--store", default=str(ROOT / "benchmarks" / "results" / "seed_store"))
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "seed_robustness.json"))
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (1: comparable across stores)")
    parser.add_argument("--write-docs", action="store_true", help="write the table into docs/seed-robustness.md "
        "between its markers")
    parser.add_argument("--collect", nargs="+", metavar="STORE", help="run nothing: build the table from the quick "
        "runs already in these stores")
    args = parser.parse_args()

    from theorylab.core.study import all_studies

    slugs = args.studies or [s for s, st in all_studies().items() if st.module.startswith("theorylab.studies")]
    seeds = _seeds(args.seeds)
    jobs = [(slug, seed) for slug in slugs for seed in seeds]
    threads = args.threads
    rows: list[dict] = []
    started = time.perf_counter()

    def record(row: dict) -> None:
        rows.append(row)
        bad = [v["id"].split("/", 1)[-1] for v in row["verdicts"] if v["outcome"] in ("failed", "error")]
        state = row["status"] if row["status"] != "done" else ("ok" if not bad else "FAILED " + ", ".join(bad))
        print(f"[{len(rows)}/{len(jobs)} {time.perf_counter() - started:6.0f} s] {row['study']} seed {row['seed']}: "
              f"{state} ({row['wall_s']:.1f} s)", flush=True)

    if args.collect:
        rows = collect(args.collect, set(slugs), set(seeds))
    elif args.executor == "ray":
        import ray

        ray.init(address=args.address, include_dashboard=False, log_to_driver=False,
                 **({} if args.address else {"num_cpus": args.workers, "runtime_env": {"env_vars": {
                     "PYTHONPATH": os.pathsep.join(sys.path)}}}))
        remote = ray.remote(num_cpus=1, max_retries=0)(_run)
        pending = [remote.remote(slug, seed, args.store, threads) for slug, seed in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            record(ray.get(done[0]))
        ray.shutdown()
    else:
        with cf.ProcessPoolExecutor(max_workers=args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            for fut in cf.as_completed([pool.submit(_run, slug, seed, args.store, threads) for slug, seed in jobs]):
                record(fut.result())

    rates = pass_rates(rows)
    text = markdown(rates, seeds, rows)
    print(text)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"seeds": seeds, "workers": args.workers, "threads": threads, "rates": rates,
                                           "runs": rows}, indent=2, default=str))
    if args.write_docs:
        body = DOCS_PAGE.read_text()
        if TABLE_START not in body:
            raise SystemExit(f"{DOCS_PAGE} has no {TABLE_START} marker")
        body = re.sub(re.escape(TABLE_START) + ".*?" + re.escape(TABLE_END),
                      TABLE_START + "\n" + text + "\n" + TABLE_END, body, flags=re.S)
        DOCS_PAGE.write_text(body)
    return 0 if all(r["failed"] == 0 and r["error"] == 0 for r in rates) else 1


if __name__ == "__main__":
    raise SystemExit(main())
