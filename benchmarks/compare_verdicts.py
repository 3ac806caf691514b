"""Are the verdicts the same? Compares quick-preset verdicts before and after a refactor.

Two modes:

- ``python benchmarks/compare_verdicts.py BEFORE_STORE AFTER_STORE``: runs matched by (study,
  preset, seed), the newest finished one on each side; compares every verdict's id, outcome and
  measured value (numbers to a relative 1e-9).
- ``python benchmarks/compare_verdicts.py --rejudge STORE``: re-judges each stored run with the
  code as it is now (in memory; the store is not written) and compares with the verdicts stored
  when it ran. Enough when only judges changed; a change to a run function needs fresh runs and
  the first mode.

Run both sides with the same torch thread count (``theorylab check`` gives each of its side-by-side runs the same
share of the cores): float reductions sum in a thread-dependent order, which moves measured values at ~1e-4
relative through training. ``--studies`` and ``--seeds`` narrow the comparison. Prints one line per difference and a
summary; exits 1 when anything differs, so it can gate a refactor.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from theorylab.core.seeds import parse_seeds as _seeds  # the same "0-9" / "0,3,5-7" syntax as check --seeds


def _newest(store, studies: set[str] | None, seeds: set[int] | None) -> dict[tuple[str, str, int], str]:
    """(study, preset, seed) -> run id of the newest finished run."""
    found: dict[tuple[str, str, int], tuple[float, str]] = {}
    for row in store.rows():
        key = (row["study"], row["preset"], row["seed"])
        if row["status"] != "done" or not store.has(row["run_id"]):
            continue
        if (studies and key[0] not in studies) or (seeds is not None and key[2] not in seeds):
            continue
        if key not in found or (row["finished"] or 0) > found[key][0]:
            found[key] = (row["finished"] or 0, row["run_id"])
    return {k: v[1] for k, v in found.items()}


def _same_measure(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def differences(before: list, after: list) -> list[str]:
    """Human-readable differences between two verdict lists (``Verdict`` objects)."""
    out = []
    ids_b, ids_a = [v.id for v in before], [v.id for v in after]
    if ids_b != ids_a:
        out.append(f"claims differ: {ids_b} -> {ids_a}")
    after_by_id = {v.id: v for v in after}
    for vb in before:
        va = after_by_id.get(vb.id)
        if va is None:
            continue
        if vb.outcome != va.outcome:
            out.append(f"{vb.id}: {vb.outcome} -> {va.outcome} ({va.detail[:160]})")
        elif not _same_measure(vb.measured, va.measured):
            out.append(f"{vb.id}: measured {vb.measured!r} -> {va.measured!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stores", nargs="+", help="BEFORE AFTER, or one store with --rejudge")
    parser.add_argument("--rejudge", action="store_true", help="re-judge one store's runs with the current code")
    parser.add_argument("--studies", nargs="*", default=None, help="study slugs (default: all)")
    parser.add_argument("--seeds", default=None, help="seeds, e.g. 0-1 (default: all)")
    args = parser.parse_args(argv)

    from theorylab.core.runner import judge
    from theorylab.core.store import Store
    from theorylab.core.study import all_studies

    studies = set(args.studies) if args.studies else None
    seeds = set(_seeds(args.seeds)) if args.seeds else None
    registered = all_studies()
    if args.rejudge:
        if len(args.stores) != 1:
            parser.error("--rejudge takes one store")
        store = Store(args.stores[0])
        pairs = []
        for key, run_id in sorted(_newest(store, studies, seeds).items()):
            if key[0] in registered:
                stored = store.load(run_id)
                before = list(stored.verdicts)
                pairs.append((key, before, judge(registered[key[0]], stored).verdicts))
    else:
        if len(args.stores) != 2:
            parser.error("give BEFORE and AFTER stores")
        sb, sa = Store(args.stores[0]), Store(args.stores[1])
        nb, na = _newest(sb, studies, seeds), _newest(sa, studies, seeds)
        for key in sorted(set(nb) ^ set(na)):
            print(f"{'/'.join(map(str, key))}: only in {'before' if key in nb else 'after'}")
        pairs = [(key, sb.load(nb[key]).verdicts, sa.load(na[key]).verdicts) for key in sorted(set(nb) & set(na))]
    n_diff = 0
    for (slug, preset, seed), before, after in pairs:
        for line in differences(before, after):
            n_diff += 1
            print(f"{slug} {preset} seed {seed}: {line}")
    n_verdicts = sum(len(b) for _, b, _ in pairs)
    print(f"{len(pairs)} runs, {n_verdicts} verdicts compared: {n_diff} differences")
    return 1 if n_diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
