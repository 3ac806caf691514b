"""Reproducible module initialisation without touching the caller's random stream.

This module imports only torch, so ``nn`` and ``train`` use it without pulling in the run
machinery. It holds the project's one call of the global ``torch.manual_seed``: inside
``fork_rng``, which restores the global state on exit (``tests/core/test_layers.py`` checks that
no other module seeds a global stream).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block (typically a module's initialisation) with torch's CPU RNG seeded to ``seed``,
    restoring the caller's RNG state on exit: reproducible init that neither reads nor moves the
    global stream."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
