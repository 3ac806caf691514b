"""What decides each claim: decided_by, GPU presets, the inventory and `theorylab claims`."""

from __future__ import annotations

import json

import pytest
from pydantic import Field
from typer.testing import CliRunner

from theorylab.cli import app, check_plan
from theorylab.core import Claims, Preset, RunContext, StudyConfig, study
from theorylab.core.inventory import ClaimEntry, inventory, summary
from theorylab.core.runner import execute
from theorylab.core.store import Store
from theorylab.core.study import REGISTRY, all_studies


class TierConfig(StudyConfig):
    n: int = Field(10, ge=1, le=10**6, description="size")


claims = Claims("toy-tiers", "exact")


@claims.add("small", "decided at any size")
def _small(res, v):
    return v.at_most(res.scalar("n") * 0.0, 1.0, name="zero")


def _needs(n: int):
    """A judge decided once the config's n reaches ``n`` (below: not decided)."""

    def judge(res, v):
        if res.config["n"] < n:
            return v.undecided(f"n = {res.config['n']} < {n}")
        return v.at_least(res.scalar("n"), n, name="n")

    return judge


claims.add("mid", "decided once n >= 100", decided_by="cpu")(_needs(100))
claims.add("big", "decided once n >= 10000", decided_by="paper")(_needs(10_000))


@pytest.fixture(scope="module")
def tiers():
    @study(
        "toy-tiers",
        title="tiers",
        paper="(tests)",
        config=TierConfig,
        claims=claims,
        presets={
            "quick": Preset.of("quick"),
            "cpu": Preset.of("cpu", n=(100, "decides mid")),
            "paper": Preset.of("paper", gpu_minutes=12, n=(10_000, "decides big")),
        },
    )
    def run(cfg: TierConfig, ctx: RunContext) -> None:
        ctx.scalar("n", cfg.n)

    yield run
    REGISTRY._studies.pop("toy-tiers", None)


def test_undecided_verdicts_say_what_decides_them(tiers, tmp_path):
    store = Store(tmp_path)
    quick = execute("toy-tiers", "quick", 0, store=store)
    small, mid, big = quick.verdicts
    assert small.passed is True
    assert mid.passed is None and mid.detail == "not decided: decided by the cpu preset on a CPU; n = 10 < 100"
    assert big.detail == "not decided: GPU (paper preset, est. 12 min on one H100); n = 10 < 10000"
    cpu = execute("toy-tiers", "cpu", 0, store=store)
    assert [v.passed for v in cpu.verdicts] == [True, True, None]
    assert cpu.verdicts[2].detail.startswith("not decided: GPU (paper preset, est. 12 min on one H100)")


def test_inventory_lists_deciding_preset_time_and_latest_verdicts(tiers, tmp_path):
    store = Store(tmp_path)
    execute("toy-tiers", "quick", 0, store=store)
    execute("toy-tiers", "cpu", 0, store=store)
    entries = {e.id.split("/")[1]: e for e in inventory([tiers], store)}
    assert [entries[k].decided_by for k in ("small", "mid", "big")] == ["quick", "cpu", "paper"]
    assert entries["big"].device == "GPU" and entries["big"].time_words() == "GPU, est. 12 min on one H100"
    assert entries["mid"].time_source == "store" and entries["mid"].time_s is not None
    assert entries["mid"].verdicts["quick"]["outcome"] == "undecided"
    assert entries["mid"].verdicts["cpu"]["outcome"] == "passed" and entries["mid"].decided
    assert not entries["big"].decided  # no run of a preset that decides it
    assert summary(entries.values()) == {"claims": 3, "quick": 1, "cpu": 1, "gpu": 1, "decided_in_store": 2}
    execute("toy-tiers", "quick", 5, store=store)
    newest = {e.id.split("/")[1]: e for e in inventory([tiers], store)}
    assert newest["small"].verdicts["quick"]["seed"] == 5
    seed0 = {e.id.split("/")[1]: e for e in inventory([tiers], store, seed=0)}
    assert seed0["small"].verdicts["quick"]["seed"] == 0 and seed0["mid"].verdicts["cpu"]["seed"] == 0
    assert inventory([tiers], store, seed=9)[0].verdicts == {}
    # A run with --set overrides is stored under the preset's name but is not the preset's verdict.
    execute("toy-tiers", "cpu", 0, overrides={"n": 50}, store=store)
    again = {e.id.split("/")[1]: e for e in inventory([tiers], store, seed=0)}
    assert again["mid"].verdicts["cpu"]["outcome"] == "passed"  # still the n = 100 run, not the newer n = 50 one


def test_claims_command_table_and_json(tiers, tmp_path):
    runner = CliRunner()
    runner.invoke(app, ["run", "toy-tiers", "-p", "cpu", "--store", str(tmp_path)])
    res = runner.invoke(app, ["claims", "toy-tiers", "--json", "--store", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["summary"]["gpu"] == 1 and [c["decided_by"] for c in data["claims"]] == ["quick", "cpu", "paper"]
    assert data["claims"][1]["verdicts"]["cpu"]["label"] == "passed"
    table = runner.invoke(app, ["claims", "toy-tiers", "--store", str(tmp_path)])
    assert table.exit_code == 0 and "3 claims: 1 decided at quick, 1 by a CPU preset, 1 only on a GPU" in table.stdout
    bad = runner.invoke(app, ["claims", "no-such-study", "--store", str(tmp_path)])
    assert bad.exit_code == 2 and "unknown study" in bad.stderr


def test_a_claim_must_name_a_declared_preset():
    bad = Claims("toy-bad-tier")
    bad.add("x", "needs a preset that is not there", decided_by="cpu")(lambda res, v: v.passed(1, 1))
    with pytest.raises(ValueError, match="decided by preset 'cpu', which it does not declare"):
        study(
            "toy-bad-tier",
            title="t",
            paper="p",
            config=TierConfig,
            claims=bad,
            presets={"quick": Preset.of("quick"), "paper": Preset.of("paper")},
        )(lambda cfg, ctx: None)
    with pytest.raises(ValueError, match="gpu_minutes must be > 0"):
        Preset.of("paper", gpu_minutes=0)


def test_cpu_tier_runs_every_cpu_preset_that_decides_a_claim():
    """``check --preset cpu`` runs cpu where a study has it plus each other CPU preset that decides a claim (so
    attention-rank's cpu-depth and mpnn-algorithms' mst-cpu are run); other presets run where declared."""
    studies = all_studies()
    plan = check_plan(list(studies), "cpu")
    for slug, s in studies.items():
        deciding = {c.decided_by for c in s.claims if c.decided_by != "quick" and not s.presets[c.decided_by].on_gpu}
        wanted = ({"cpu"} if "cpu" in s.presets else set()) | deciding
        assert set(plan.get(slug, [])) == wanted, slug
        if slug in plan and "cpu" in s.presets:
            assert plan[slug][0] == "cpu"
    assert "cpu-depth" in plan["attention-rank"] and plan["mpnn-algorithms"] == ["mst-cpu"]
    assert check_plan(list(studies), "quick") == {slug: ["quick"] for slug in studies}
    assert "attention-rank" in check_plan(list(studies), "slice") and "thermalizer" not in check_plan(
        list(studies), "slice"
    )


def test_every_builtin_gpu_claim_names_its_estimate():
    """A GPU-only claim's deciding preset declares its time on one H100; a CPU tier preset has no estimate."""
    for slug, s in all_studies().items():
        for c in s.claims:
            preset = s.presets[c.decided_by]
            assert c.decided_on == preset.device_words(), c.id
            if c.decided_by in ("quick", "cpu"):
                assert not preset.on_gpu, f"{slug}: the {c.decided_by} preset is a CPU preset"


def test_time_words():
    e = ClaimEntry("s/c", "s", "", "cpu", "CPU", None, 312.4, "recorded (AMD EPYC, 2026-12-06)")
    assert e.time_words() == "312 s (recorded)"
    assert ClaimEntry("s/c", "s", "", "cpu", "CPU", None, None, "").time_words() == "not measured"


named = Claims("toy-named-tier", "exact")


named.add("mid", "decided once n >= 100", decided_by="cpu")(_needs(100))
named.add("big", "decided once n >= 1000, by a second CPU preset", decided_by="cpu-big")(_needs(1000))


def test_check_cpu_tier_runs_named_cpu_presets_and_shows_each_claim_once(tmp_path):
    @study(
        "toy-named-tier",
        title="named tier",
        paper="(tests)",
        config=TierConfig,
        claims=named,
        presets={
            "quick": Preset.of("quick"),
            "cpu": Preset.of("cpu", n=(100, "decides mid")),
            "cpu-big": Preset.of("cpu-big", n=(1000, "decides big")),
            "paper": Preset.of("paper"),
        },
    )
    def run(cfg: TierConfig, ctx: RunContext) -> None:
        ctx.scalar("n", cfg.n)

    try:
        res = CliRunner().invoke(
            app, ["check", "toy-named-tier", "-p", "cpu", "-w", "1", "--json", "--store", str(tmp_path)]
        )
        assert res.exit_code == 0, res.output
        runs = json.loads(res.stdout)
        assert [r["preset"] for r in runs] == ["cpu", "cpu-big"]
        assert [[v["id"].split("/")[1] for v in r["verdicts"]] for r in runs] == [["mid"], ["big"]]
        assert all(v["outcome"] == "passed" for r in runs for v in r["verdicts"])
        table = CliRunner().invoke(app, ["check", "toy-named-tier", "-p", "cpu", "-w", "1", "--store", str(tmp_path)])
        assert table.exit_code == 0 and "toy-named-tier (cpu-big)" in table.stdout.replace("\n", "")
    finally:
        REGISTRY._studies.pop("toy-named-tier", None)
