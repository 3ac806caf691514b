"""The claims inventory from a store: record preset wall times with the package, write docs/claims.md.

    python benchmarks/claims_inventory.py --store runs [--store more] --seed 0 [--record-times] [--write-docs]

``--record-times`` merges into ``src/theorylab/core/preset_times.json`` the store's newest finished run of every
study at ``quick`` and each preset ``check --preset cpu`` runs (wall seconds, with the CPU model and the date), so
``theorylab claims`` and the runner's longest-first ordering and ETA know a preset's time on a fresh clone.
``--write-docs`` writes docs/claims.md (every claim, the preset that decides it, its time, and its verdict at that
preset in the store's run of ``--seed``) and the README's claims summary (between its ``claims-summary`` marks):
nothing hand-copied.
Without either flag it prints the summary counts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
from pathlib import Path

from theorylab.core.inventory import inventory, preset_hashes, summary
from theorylab.core.store import Store
from theorylab.core.study import all_studies

ROOT = Path(__file__).resolve().parents[1]
TIMES = ROOT / "src" / "theorylab" / "core" / "preset_times.json"
DOCS = ROOT / "docs" / "claims.md"
README = ROOT / "README.md"
README_MARKS = ("<!-- claims-summary:start -->", "<!-- claims-summary:end -->")


def tier_sentence(counts: dict[str, int]) -> str:
    """The README's counts of what decides the claims (store-independent; a test compares them with the registry)."""
    return (
        f"{counts['claims']} claims: {counts['quick']} decided at quick, {counts['cpu']} by a larger preset that "
        f"runs on a CPU (`cpu`, <= 10 min on 2 cores, or a named one), {counts['gpu']} only on a GPU"
    )


def outcome_counts(entries, seed: int) -> dict[str, int]:
    """Each claim's verdict at its deciding preset in the store's run of ``seed``, counted by outcome."""
    out: dict[str, int] = {}
    for e in entries:
        v = e.verdicts.get(e.decided_by)
        key = v["outcome"] if v is not None and v["seed"] == seed else "not run"
        out[key] = out.get(key, 0) + 1
    return out


def readme_block(store: Store | list[Store], seed: int) -> str:
    from theorylab.core.study import OUTCOME_WORDS

    entries = inventory(all_studies(), store, seed=seed)
    counts = outcome_counts(entries, seed)
    words = ", ".join(f"{counts[k]} {OUTCOME_WORDS[k]}" for k in OUTCOME_WORDS if counts.get(k))
    if counts.get("not run"):
        words += f", {counts['not run']} not run"
    return (
        f"{README_MARKS[0]}\n{tier_sentence(summary(entries))}. Each judged at the preset that decides it (seed "
        f"{seed}): {words} ([every claim](docs/claims.md)).\n{README_MARKS[1]}"
    )


def cpu_model() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown CPU"
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    name = fields.get("Model name", "unknown CPU").strip()
    flags = fields.get("Flags", "")
    isa = "AMX" if "amx_tile" in flags else ("AVX-512" if "avx512f" in flags else "AVX2 only")
    return f"{name}, {isa}"


def record_times(store: Store, note: str = "") -> dict:
    """Wall seconds of the newest finished run of each study's CPU-tier presets: quick and those ``check --preset
    cpu`` runs (``cpu``, ``lm``, ``cpu-depth``, ``mst-cpu``, ...)."""
    times: dict[str, dict[str, float]] = {}
    for slug, study in all_studies().items():
        hashes = preset_hashes(study)  # a --set run, or one of an older preset, is not the preset's time
        presets = {"quick", *study.cpu_presets}
        for row in store.rows(slug):  # newest first
            if (
                row["status"] == "done"
                and row["preset"] in presets
                and row.get("wall_s")
                and hashes.get(row["preset"]) == row["config_hash"]
            ):
                times.setdefault(slug, {}).setdefault(row["preset"], round(float(row["wall_s"]), 1))
    return {
        "cpu": cpu_model(),
        "date": datetime.date.today().isoformat(),
        "note": note or "wall seconds of the newest finished run in the store the file was written from",
        "times": times,
    }


def _measured(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_measured(x) for x in value[:4]) + (", ..." if len(value) > 4 else "") + "]"
    return str(value)[:40]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_docs(store: Store | list[Store], seed: int) -> str:
    entries = inventory(all_studies(), store, seed=seed)
    counts = summary(entries)
    lines = [
        "# Claims and what decides them",
        "",
        "Generated by `python benchmarks/claims_inventory.py --store STORE [--store ...] --seed "
        f"{seed} --write-docs` from a store (do not edit by hand); `theorylab claims [SLUG] [--json]` prints the same "
        "from your own store. *Decided by* is the smallest preset whose run decides the claim: `quick` (<= 60 s on 2 "
        "CPU cores), `cpu` (the study's <= 10 min CPU preset) or a GPU preset with its estimated time on one H100.",
        "",
        f"{counts['claims']} claims: {counts['quick']} decided at quick, {counts['cpu']} by a CPU preset, "
        f"{counts['gpu']} only on a GPU; {counts['decided_in_store']} decided by a run in the store this page was "
        "written from.",
        "",
        f"| claim | decided by | time | verdict at that preset (seed {seed}) | measured | declared |",
        "|---|---|---|---|---|---|",
    ]
    for e in entries:
        v = e.verdicts.get(e.decided_by)
        if v is not None and v["seed"] != seed:
            v = None
        verdict = v["label"] if v else ("not run: needs a GPU" if e.device == "GPU" else "not run")
        measured = "" if v is None or v["measured"] is None else _measured(v["measured"])
        declared = f"{len(e.departures)} departure{'s' if len(e.departures) != 1 else ''}" if e.departures else ""
        if e.known:
            declared += ("; " if declared else "") + "known failure"
        lines.append(
            f"| `{e.id}` | {e.decided_by}{' (GPU)' if e.device == 'GPU' else ''} | {_cell(e.time_words())} | "
            f"{_cell(verdict)} | {_cell(measured)} | {declared} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--store",
        action="append",
        help="a store root (repeatable: the first store with a run of a "
        "preset gives it; --record-times reads the first)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record-times", action="store_true")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--note", default="", help="how the times were measured (cores, threads, load)")
    args = parser.parse_args()
    stores = [Store(root) for root in args.store] if args.store else [Store()]
    store = stores[0]
    if args.record_times:  # merged into the recorded times: a store with only cpu runs keeps the quick times
        new = record_times(store, note=args.note)
        old = json.loads(TIMES.read_text()) if TIMES.exists() else {}
        for slug, presets in old.get("times", {}).items():
            for preset, seconds in presets.items():
                new["times"].setdefault(slug, {}).setdefault(preset, seconds)
        TIMES.write_text(json.dumps(new, indent=1, sort_keys=True) + "\n")
        print(f"wrote {TIMES.relative_to(ROOT)}")
    if args.write_docs:
        DOCS.write_text(write_docs(stores, args.seed))
        text = README.read_text()
        start, end = text.index(README_MARKS[0]), text.index(README_MARKS[1]) + len(README_MARKS[1])
        README.write_text(text[:start] + readme_block(stores, args.seed) + text[end:])
        print(f"wrote {DOCS.relative_to(ROOT)} and the README's claims summary")
    if not (args.record_times or args.write_docs):
        print(json.dumps(summary(inventory(all_studies(), store)), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
