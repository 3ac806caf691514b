"""Do the quick-preset claims hold on seeds a user picks? Every claim's pass rate over seeds, from `check --seeds`.

    python benchmarks/seed_robustness.py                       # every study, seeds 0-9 (theorylab check --seeds 0-9)
    python benchmarks/seed_robustness.py mpnn-algorithms --seeds 0-19
    python benchmarks/seed_robustness.py --write-docs          # also rewrite docs/seed-robustness.md's table
    python benchmarks/seed_robustness.py --from-json FILE --write-docs   # the table of a saved --json output

It runs ``theorylab check --preset quick --seeds SEEDS --json`` (the command a user runs) in a persistent store
(``--store``, default ``benchmarks/results/seed_store``), so an interrupted sweep resumes where it stopped, saves
the command's JSON (``benchmarks/results/seed_robustness.json``) and prints, per claim: passed of the seeds that
decided it, the 95 % Wilson interval, one mark per seed, and its declarations (departures, known failures). The
exit code is the command's: 1 on any unexplained failure.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE_START, TABLE_END = "<!-- seed-table:start -->", "<!-- seed-table:end -->"
DOCS_PAGE = ROOT / "docs" / "seed-robustness.md"
MARKS = {
    "passed": "✓",
    "departed": "✓",
    "failed": "✗",
    "known": "x",
    "unexpected": "!",
    "undecided": "·",
    "error": "E",
    "not evaluated": "-",
    "no run": " ",
}


def _interval(claim: dict) -> str:
    lo_hi = claim.get("wilson95")
    return f"[{lo_hi[0]:.2f}, {lo_hi[1]:.2f}]" if lo_hi else ""


def _declared(claim: dict) -> str:
    parts = []
    if claim["known"]:
        parts.append("known failure on " + claim["known"].removeprefix("known failure on ").split(":", 1)[0])
    if claim["departures"]:
        parts.append(f"{len(claim['departures'])} departure{'s' if len(claim['departures']) > 1 else ''}")
    return "; ".join(parts)


def summary(data: dict) -> dict:
    """Headline numbers of a ``check --seeds --json`` output."""
    claims = data["claims"]
    outcomes = [o for c in claims for o in c["seeds"].values()]
    return {
        "claims": len(claims),
        "seeds": len(data["seeds"]),
        "every_seed": sum(
            1 for c in claims if c["decided"] and c["passed"] == c["decided"] and not c["counts"]["departed"]
        ),
        "every_seed_with_departures": sum(
            1 for c in claims if c["decided"] and c["passed"] == c["decided"] and c["counts"]["departed"]
        ),
        "known": sum(1 for c in claims if c["counts"]["known"]),
        "unexplained": sum(1 for c in claims if c["unexplained_seeds"]),
        "not_decided": sum(1 for c in claims if not c["decided"]),
        "verdicts": {
            k: outcomes.count(k)
            for k in (
                "passed",
                "departed",
                "known",
                "failed",
                "unexpected",
                "undecided",
                "error",
                "not evaluated",
                "no run",
            )
        },
    }


def markdown(data: dict) -> str:
    seeds = data["seeds"]
    s = summary(data)
    contiguous = seeds == list(range(seeds[0], seeds[-1] + 1))
    span = f"{seeds[0]}–{seeds[-1]}" if contiguous else ", ".join(map(str, seeds))
    spec = f"{seeds[0]}-{seeds[-1]}" if contiguous else ",".join(map(str, seeds))  # as typed on the command line
    v = s["verdicts"]
    lines = [
        f"Quick presets at seeds {span} ({len(seeds)} seeds), from `theorylab check --preset quick --seeds {spec}` "
        f"(`python benchmarks/seed_robustness.py --seeds {spec} --write-docs`). {s['claims']} claims: "
        f"{s['every_seed']} passed as stated on every seed that decided them, "
        f"{s['every_seed_with_departures']} passed on every such seed with departures, "
        f"{s['known']} with declared known failures, {s['unexplained']} with unexplained failures, "
        f"{s['not_decided']} not decided at quick on any seed. Verdicts over all runs: {v['passed']} passed as "
        f"stated, {v['departed']} passed with departures, {v['known']} known failures, {v['failed']} failed, "
        f"{v['unexpected']} passed unexpectedly, {v['undecided']} not decided, {v['error']} judge errors.",
        "",
        "Marks, one per seed: ✓ passed, ✗ failed (unexplained), x known failure, ! passed unexpectedly, · not "
        "decided, E judge error, - run did not finish. The interval is the 95 % Wilson score interval of the pass "
        "rate over the seeds that decided the claim.",
        "",
        "| claim | passed / decided | 95 % interval | seeds | declared |",
        "|---|---|---|---|---|",
    ]
    for c in data["claims"]:
        marks = "".join(MARKS[c["seeds"].get(str(seed), "no run")] for seed in seeds)
        lines.append(f"| `{c['claim']}` | {c['rate']} | {_interval(c)} | `{marks}` | {_declared(c)} |")
    walls: dict[str, list[float]] = {}
    for run in data["runs"]:
        if run.get("wall_s") is not None and run.get("status") != "error":
            walls.setdefault(run["study"], []).append(run["wall_s"])
    if walls:
        lines += [
            "",
            "Quick-preset wall time over the seeds (s, min–max; runs reused from the store count their "
            "first time): " + "; ".join(f"{slug} {min(w):.0f}–{max(w):.0f}" for slug, w in sorted(walls.items())),
        ]
    return "\n".join(lines)


def write_docs(text: str) -> None:
    body = DOCS_PAGE.read_text()
    if TABLE_START not in body:
        raise SystemExit(f"{DOCS_PAGE} has no {TABLE_START} marker")
    body = re.sub(
        re.escape(TABLE_START) + ".*?" + re.escape(TABLE_END),
        lambda _: TABLE_START + "\n" + text + "\n" + TABLE_END,
        body,
        flags=re.S,
    )
    DOCS_PAGE.write_text(body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("studies", nargs="*", help="study slugs (default: every study)")
    parser.add_argument("--seeds", default="0-9", help="seeds, e.g. 0-9 or 0,3,5-7")
    parser.add_argument("--workers", default="auto", help="runs side by side ('auto': one per core)")
    parser.add_argument("--store", default=str(ROOT / "benchmarks" / "results" / "seed_store"))
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "seed_robustness.json"))
    parser.add_argument("--from-json", default=None, help="run nothing: the table of a saved `check --seeds --json`")
    parser.add_argument("--write-docs", action="store_true", help="write the table into docs/seed-robustness.md")
    args = parser.parse_args()

    code = 0
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
    else:
        cmd = [
            sys.executable,
            "-m",
            "theorylab.cli",
            "check",
            *args.studies,
            "--preset",
            "quick",
            "--seeds",
            args.seeds,
            "--workers",
            str(args.workers),
            "--store",
            args.store,
            "--json",
        ]
        print("$ " + " ".join(cmd[2:]), file=sys.stderr, flush=True)
        started = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # progress and ETA go to stderr as they come
        code = proc.returncode
        if not proc.stdout.strip():
            raise SystemExit(f"check --seeds printed no JSON (exit {code})")
        data = json.loads(proc.stdout)
        data["elapsed_s"] = round(time.perf_counter() - started, 1)
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(data, indent=2))
    text = markdown(data)
    print(text)
    if args.write_docs:
        write_docs(text)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
