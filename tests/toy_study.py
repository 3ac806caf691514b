"""A tiny study registered only in the tests: exercises the contract, the store and sweeps.

The sample mean of n standard normals must lie within 4 standard errors of 0: an honest claim
(Monte Carlo against an exact value) that is cheap to run many times.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pandas as pd
import torch
from pydantic import Field

from theorylab.core import Claims, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.declared import Departure, KnownFailure
from theorylab.core.errors import Diverged, MissingResource


class ToyConfig(StudyConfig):
    n: int = Field(1000, ge=10, le=10_000_000, description="normal draws per step")
    steps: int = Field(3, ge=1, le=10_000, description="number of steps")
    step_sleep: float = Field(0.0, ge=0.0, le=10.0, description="seconds to sleep per step (kill tests)")
    nan_at: int = Field(-1, ge=-1, le=10_000, description="step at which the loss becomes NaN (-1: never)")
    fail: bool = Field(False, description="raise an ordinary exception mid-run")
    interrupt: bool = Field(False, description="raise KeyboardInterrupt mid-run, as Ctrl-C does")
    scale: float = Field(1.0, gt=0, le=100.0, description="standard deviation of the draws")
    bias: float = Field(0.0, ge=-10.0, le=10.0, description="shift of the draws' mean (non-zero: the claim fails)")
    judge_bug: bool = Field(False, description="the judge reads a misspelt column (it must count as an error)")
    big_chunk: int = Field(1000, ge=1, le=10**7, description="draws per chunk, read only when n >= 100000 (paper)")


claims = Claims("toy", "exact: E = 0")


@claims.add("mean-zero", "sample means are within 4 SE of 0")
def judge_mean(res, v) -> Verdict:
    t = res.table("steps")
    if res.config["judge_bug"]:
        t = t.rename(columns={"mean": "maen"})
    worst = float((t["mean"].abs() / (t["scale"] / np.sqrt(t["n"]))).max())
    return v.judged(worst <= 4.0, worst, 0.0, 4.0, f"max |mean|/SE = {worst:.2f}")


@study(
    "toy",
    title="Toy study for the platform tests",
    paper="(tests only)",
    config=ToyConfig,
    presets={"quick": Preset.of("quick"), "paper": Preset.of("paper", n=(100_000, "more draws"))},
    claims=claims,
)
def run(cfg: ToyConfig, ctx: RunContext) -> None:
    rng = ctx.rng("draws")
    rows = []
    for step in ctx.progress(range(cfg.steps), "toy steps"):
        if cfg.fail and step == 1:
            raise RuntimeError("toy failure")
        if cfg.interrupt and step == 1:
            raise KeyboardInterrupt
        if cfg.n >= 100_000:
            x = np.concatenate(
                [rng.normal(cfg.bias, cfg.scale, min(cfg.big_chunk, cfg.n - i)) for i in range(0, cfg.n, cfg.big_chunk)]
            )
        else:
            x = rng.normal(cfg.bias, cfg.scale, cfg.n)
        loss = float(x.mean()) if step != cfg.nan_at else float("nan")
        ctx.check_finite("toy loss", loss, step)
        rows.append({"step": step, "n": cfg.n, "scale": cfg.scale, "mean": loss, "var": float(x.var())})
        ctx.log(f"step {step}: mean {loss:.4f}")
        if cfg.step_sleep:
            time.sleep(cfg.step_sleep)
    ctx.table("steps", pd.DataFrame(rows))
    ctx.scalar("total_draws", cfg.n * cfg.steps)
    ctx.scalar("pid", os.getpid())  # where it ran (a parallel check's worker)
    ctx.scalar("torch_threads", torch.get_num_threads())


class ToyBrokenConfig(StudyConfig):
    missing: bool = Field(False, description="raise MissingResource instead of a plain error")
    unpicklable: bool = Field(False, description="raise an error that cannot be rebuilt from its pickle")
    die: bool = Field(False, description="kill its own process (as the out-of-memory killer would)")


class TwoPartError(Exception):
    """An error whose __init__ does not take its own args back (pickle cannot rebuild it)."""

    def __init__(self, first: str, second: str):
        super().__init__(f"{first} and {second}")


class ToyMissingConfig(ToyBrokenConfig):
    missing: bool = Field(True, description="raise MissingResource (the default here) instead of a plain error")


def run_broken(cfg: ToyBrokenConfig, ctx: RunContext) -> None:
    if cfg.die:
        os.kill(os.getpid(), signal.SIGKILL)
    if cfg.unpicklable:
        raise TwoPartError("half", "half")
    if cfg.missing:
        raise MissingResource("corpus 'toy'", "install it with `pip install toy-corpus`")
    raise RuntimeError("toy-broken always raises")


# Two studies that never finish (tests that check goes on past them): one raises, one lacks a resource.
for _slug, _config, _title in (
    ("toy-broken", ToyBrokenConfig, "A study that always raises"),
    ("toy-missing", ToyMissingConfig, "A study whose resource is missing"),
):
    _never = Claims(_slug, "none")
    _never.add("never", "never judged")(lambda res, v: v.undecided("never judged"))
    study(
        _slug,
        title=_title,
        paper="(tests only)",
        config=_config,
        presets={"quick": Preset.of("quick"), "paper": Preset.of("paper")},
        claims=_never,
    )(run_broken)


class ToyGridConfig(StudyConfig):
    scales: tuple[float, ...] = Field((0.5, 1.0, 2.0, 4.0), description="the grid: one job per scale and seed")
    seeds: int = Field(2, ge=1, le=16, description="jobs per scale")
    n: int = Field(4000, ge=100, le=10**7, description="normal draws per job")
    fail_scale: float = Field(0.0, ge=0.0, le=100.0, description="the job at this scale raises (0: none)")
    diverge_scale: float = Field(0.0, ge=0.0, le=100.0, description="the job at this scale diverges (0: none)")


def toy_grid_job(item: tuple, progress) -> tuple[dict, int]:
    """One grid job (module level, so that Ray can run it): the variance of ``n`` draws at ``scale``."""
    scale, seed, generator, n, fail, diverge = item
    if fail:
        raise RuntimeError(f"toy-grid job at scale {scale} raises")
    if diverge:
        raise Diverged(f"toy-grid variance at scale {scale}", seed)
    x = torch.randn(n, generator=generator, dtype=torch.float64) * scale
    return {"scale": scale, "seed": seed, "var": float(x.var())}, os.getpid()


grid_claims = Claims("toy-grid", "exact: Var(s Z) = s^2")


@grid_claims.add("variance-slope", "log Var against log scale over the merged grid has slope 2")
def judge_slope(res, v) -> Verdict:
    t = res.table("jobs")
    slope = float(np.polyfit(np.log(t["scale"]), np.log(t["var"]), 1)[0])
    return v.judged(abs(slope - 2) <= 0.1, slope, 2.0, 0.1, f"slope {slope:.4f} over {len(t)} jobs")


@study(
    "toy-grid",
    title="A grid of independent jobs (tests of RunContext.map)",
    paper="(tests only)",
    config=ToyGridConfig,
    presets={"quick": Preset.of("quick"), "paper": Preset.of("paper")},
    claims=grid_claims,
)
def run_grid(cfg: ToyGridConfig, ctx: RunContext) -> None:
    items = [
        (s, k, ctx.generator(f"job/{s}/{k}"), cfg.n, s == cfg.fail_scale, s == cfg.diverge_scale)
        for s in cfg.scales
        for k in range(cfg.seeds)
    ]
    out = ctx.map(toy_grid_job, items, "toy jobs")
    ctx.table("jobs", pd.DataFrame([row for row, _ in out]))
    ctx.scalar("processes", len({pid for _, pid in out}))
    ctx.scalar("jobs_in_run_process", sum(pid == os.getpid() for _, pid in out))


class ToyDeclaredConfig(StudyConfig):
    n: int = Field(1000, ge=10, le=100_000, description="normal draws (the card's 1000; quick uses 200)")
    strict_fails: bool = Field(True, description="the claim declared to fail on every seed fails (False: it passes)")
    nan_row: bool = Field(False, description="one row of the judged column is NaN")


declared_claims = Claims("toy-declared", "exact: E = 0")


@declared_claims.add(
    "mean-zero",
    "the sample mean of the card's 1000 draws is within 4 SE of 0",
    departures=[Departure.field_value("n", 1000, "fewer draws at quick")],
)
def judge_declared_mean(res, v) -> Verdict:
    t = res.table("draws")
    z = v.column(t, "z")
    return v.at_most(z.abs(), 4.0, name="|mean|/SE")


@declared_claims.add(
    "always-fails",
    "a claim our reproduction fails on every seed",
    known=KnownFailure.on_every_seed("the toy's judge is built to fail (strict_fails)"),
)
def judge_always(res, v) -> Verdict:
    return v.judged(not res.config["strict_fails"], 1.0, 0.0, None, "fails while strict_fails")


@declared_claims.add(
    "odd-seeds-fail",
    "a claim that fails on odd seeds",
    known=KnownFailure.on_some_seeds(5, 10, [1, 3, 5, 7, 9], "odd seeds fail by construction"),
)
def judge_odd(res, v) -> Verdict:
    return v.at_most(res.seed % 2, 0, name="seed parity")


@declared_claims.add("unexplained-on-seed-3", "a claim that fails on seed 3 with no declaration")
def judge_three(res, v) -> Verdict:
    return v.judged(res.seed != 3, res.seed, "!= 3")


@study(
    "toy-declared",
    title="Declared departures and known failures (tests only)",
    paper="(tests only)",
    config=ToyDeclaredConfig,
    claims=declared_claims,
    presets={"quick": Preset.of("quick", n=(200, "fewer draws")), "paper": Preset.of("paper")},
)
def run_declared(cfg: ToyDeclaredConfig, ctx: RunContext) -> None:
    x = ctx.rng("draws").normal(0.0, 1.0, (3, cfg.n))
    z = x.mean(1) * np.sqrt(cfg.n)
    if cfg.nan_row:
        z[1] = np.nan
    ctx.table("draws", pd.DataFrame({"part": ["a", "b", "c"], "z": z}))


class ToyTieredConfig(StudyConfig):
    n: int = Field(100, ge=10, le=10**6, description="normal draws")
    pause: float = Field(0.0, ge=0.0, le=10.0, description="seconds the run sleeps (to see runs overlap)")


tiered_claims = Claims("toy-tiered", "exact: E = 0, at three presets")


def _tiered_judge(preset: str):
    def judge(res, v) -> Verdict:
        if res.preset != preset:
            return v.undecided(f"needs the {preset} preset")
        z = float(res.scalars["mean"]) * np.sqrt(res.config["n"])
        return v.at_most(abs(z), 4.0, name="|mean|/SE")

    return judge


tiered_claims.add("quick-mean", "the mean of the quick draws is within 4 SE of 0")(_tiered_judge("quick"))
tiered_claims.add("cpu-mean", "the mean of the cpu draws is within 4 SE of 0", decided_by="cpu")(_tiered_judge("cpu"))
tiered_claims.add("wide-mean", "the mean of the wide draws is within 4 SE of 0", decided_by="cpu-wide")(
    _tiered_judge("cpu-wide")
)


@study(
    "toy-tiered",
    title="A study with two CPU presets (check --preset cpu; tests only)",
    paper="(tests only)",
    config=ToyTieredConfig,
    claims=tiered_claims,
    presets={
        "quick": Preset.of("quick"),
        "cpu": Preset.of("cpu", n=(1000, "more draws"), pause=(2.0, "long enough to see runs overlap")),
        "cpu-wide": Preset.of("cpu-wide", n=(2000, "more draws still"), pause=(2.0, "as cpu")),
        "paper": Preset.of("paper"),
    },
)
def run_tiered(cfg: ToyTieredConfig, ctx: RunContext) -> None:
    started = time.time()
    ctx.scalar("mean", float(ctx.rng("draws").normal(0.0, 1.0, cfg.n).mean()))
    time.sleep(cfg.pause)
    ctx.scalar("started", started)
    ctx.scalar("ended", time.time())
