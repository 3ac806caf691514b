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


def pytest_collection_modifyitems(config, items):
    """Every test that runs a study's quick preset (through ``quick_run``) is ``slow``: the fast tier,
    ``pytest -m "not slow"``, is every unit test without them."""
    for item in items:
        if "quick_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store")


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory: pytest.TempPathFactory):
    """``quick_run(slug)``: one quick run per study per session, shared by the contract and claim tests."""
    from theorylab.core.runner import execute

    st = Store(tmp_path_factory.mktemp("quick") / "store")
    done: dict = {}

    def get(slug: str):
        if slug not in done:
            done[slug] = execute(slug, "quick", 0, store=st, device="cpu")
        return done[slug]

    return get


@pytest.fixture(scope="session")
def rmt_quick(quick_run):
    return quick_run("rmt-diffusion")


@pytest.fixture(scope="session")
def attention_rank_quick(quick_run):
    return quick_run("attention-rank")


@pytest.fixture(scope="session")
def mie_quick(quick_run):
    return quick_run("multi-index-estimators")


@pytest.fixture(scope="session")
def leap_quick(quick_run):
    return quick_run("generative-leap")


@pytest.fixture(scope="session")
def mfw_quick(quick_run):
    return quick_run("mean-field-width")


@pytest.fixture(scope="session")
def poc_quick(quick_run):
    return quick_run("propagation-of-chaos")


@pytest.fixture(scope="session")
def ffa_quick(quick_run):
    return quick_run("ff-vs-attention")


@pytest.fixture(scope="session")
def scsi_quick(quick_run):
    return quick_run("self-consistent-interpolants")


@pytest.fixture(scope="session")
def patches_quick(quick_run):
    return quick_run("implicit-patches")


@pytest.fixture(scope="session")
def adm_quick(quick_run):
    return quick_run("attention-diffusion-map")


@pytest.fixture(scope="session")
def mpnn_quick(quick_run):
    return quick_run("mpnn-algorithms")


@pytest.fixture(scope="session")
def sensitivity_quick(quick_run):
    return quick_run("attention-sensitivity")


@pytest.fixture(scope="session")
def bilinear_quick(quick_run):
    return quick_run("bilinear-attention-operator")


@pytest.fixture(scope="session")
def qk_quick(quick_run):
    return quick_run("query-key-asymmetry")


@pytest.fixture(scope="session")
def thermalizer_quick(quick_run):
    return quick_run("thermalizer")
