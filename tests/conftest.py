from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))  # makes `toy_study` importable here and in spawned workers
os.environ.setdefault("PYTHONPATH", str(TESTS))

import toy_study  # noqa: E402,F401  (registers the "toy" study)

from theorylab.core.store import Store  # noqa: E402


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store")


@pytest.fixture(scope="session")
def rmt_quick(tmp_path_factory: pytest.TempPathFactory):
    """One quick run of rmt-diffusion shared by the contract and claim tests."""
    from theorylab.core.runner import execute

    st = Store(tmp_path_factory.mktemp("rmt") / "store")
    return execute("rmt-diffusion", "quick", 0, store=st, device="cpu")
