"""A run whose estimated peak memory exceeds the machine's stops before any work, saying what it needs."""

from __future__ import annotations

import pytest
from pydantic import Field

from theorylab.core import Claims, ConfigError, Preset, RunContext, StudyConfig, study
from theorylab.core.cpu import available_memory
from theorylab.core.runner import check_memory, execute
from theorylab.core.store import Store
from theorylab.core.study import REGISTRY


class MemConfig(StudyConfig):
    n: int = Field(10, ge=1, le=10**12, description="floats held at once")


claims = Claims("toy-memory", "exact")
claims.add("ran", "it ran")(lambda res, v: v.passed(1, 1))
ran: list[int] = []


@pytest.fixture(scope="module")
def mem_study():
    @study(
        "toy-memory",
        title="m",
        paper="(tests)",
        config=MemConfig,
        claims=claims,
        presets={"quick": Preset.of("quick"), "paper": Preset.of("paper", n=(10**12, "the paper's size"))},
        memory=lambda cfg: (8.0 * cfg.n, "--set n=1000000 needs 8 MB"),
    )
    def run(cfg: MemConfig, ctx: RunContext) -> None:
        ran.append(cfg.n)

    yield run
    REGISTRY._studies.pop("toy-memory", None)


def test_available_memory_is_plausible():
    have = available_memory()
    assert have is None or 2**20 < have < 2**50


def test_estimate_over_available_stops_before_work(mem_study, tmp_path):
    store = Store(tmp_path)
    with pytest.raises(
        ConfigError,
        match=r"the paper preset of toy-memory needs about 7450\.6 GiB at its peak; this "
        r"machine has 1\.0 GiB available: --set n=1000000 needs 8 MB",
    ):
        check_memory(mem_study, mem_study.make_config("paper"), "paper", available=2**30)
    before = list(ran)
    with pytest.raises(ConfigError, match="needs about"):
        execute("toy-memory", "paper", 0, store=store)
    assert ran == before and store.rows("toy-memory") == []  # nothing ran, nothing was stored
    assert check_memory(mem_study, mem_study.make_config("quick"), "quick", available=2**30) == 80.0
    assert execute("toy-memory", "quick", 0, store=store).status == "done"
    # On a GPU the host's memory is not the limit: the estimate is returned, no error.
    assert check_memory(mem_study, mem_study.make_config("paper"), "paper", "cuda", available=2**30) == 8.0 * 10**12
