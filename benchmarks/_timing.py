"""Shared timing helper of the benchmark scripts (run as ``python benchmarks/NAME.py``, so this imports as
``_timing``)."""

from __future__ import annotations

import time
from typing import Callable


def best_time(fn: Callable[[], object], repeats: int) -> float:
    """Best wall time of ``repeats`` calls of ``fn`` after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
