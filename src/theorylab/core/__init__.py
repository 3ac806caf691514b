"""The study contract and the machinery around it; knows nothing about any paper.

Names load on first use (``from theorylab.core import Claims``), so the light modules that
``nn``/``train``/``data`` need (``core.errors``, ``core.rng``) do not pull in pandas or the store.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "Claim": "theorylab.core.study",
    "Claims": "theorylab.core.claims",
    "ConfigError": "theorylab.core.errors",
    "Diverged": "theorylab.core.errors",
    "Check": "theorylab.core.claims",
    "Judgement": "theorylab.core.claims",
    "Preset": "theorylab.core.config",
    "Result": "theorylab.core.result",
    "RunContext": "theorylab.core.context",
    "Store": "theorylab.core.store",
    "Study": "theorylab.core.study",
    "StudyConfig": "theorylab.core.config",
    "Verdict": "theorylab.core.study",
    "all_studies": "theorylab.core.study",
    "get_study": "theorylab.core.study",
}

# The decorator shares its name with the module `theorylab.core.study`: importing that module binds
# the module here, so bind the function eagerly (core.study needs only pydantic, not pandas).
from theorylab.core.study import study  # noqa: E402,F401 - in __all__ below

__all__ = sorted([*_WHERE, "study"])


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'theorylab.core' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
