"""The command line: ``theorylab list | run | check | sweep | report | show``."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from theorylab.core.config import ConfigError, parse_assignments
from theorylab.core.context import resolve_device
from theorylab.core.errors import MissingResource
from theorylab.core.result import Result
from theorylab.core.store import Store
from theorylab.core.study import Verdict, all_studies, counted, get_study

if TYPE_CHECKING:  # the runner (multiprocessing, the pool) is imported where a check runs
    from theorylab.core.runner import Job

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Deep-learning theory papers as executable, checked studies."
)
out = Console()
if not out.is_terminal:
    out = Console(width=140)  # pipes and logs: wide enough for the claims table
err = Console(stderr=True)

StoreOpt = typer.Option(
    None, "--store", help="Store root (default ./runs or $THEORYLAB_STORE).", envvar="THEORYLAB_STORE"
)
JsonOpt = typer.Option(False, "--json", help="Print one JSON document instead of tables.")
PresetOpt = typer.Option(
    "quick", "--preset", "-p", help="quick (2 CPU cores, <= 60 s) or paper (the paper's sizes; GPU)."
)
SeedOpt = typer.Option(0, "--seed", help="Run seed; every random stream derives from it.", min=0)
DeviceOpt = typer.Option("auto", "--device", help="auto | cpu | cuda")
SetOpt = typer.Option(None, "--set", "-s", help="Override a config field: key=value (repeatable).")
ForceOpt = typer.Option(False, "--force", help="Run again even if the store has this exact run.")
SeedsOpt = typer.Option(
    None,
    "--seeds",
    help="Several seeds, e.g. 0-9 or 0,3,7: runs (or reuses) each and reports "
    "every claim's pass rate over them (k/n seeds, 95% Wilson interval); overrides --seed.",
)
StrictOpt = typer.Option(False, "--strict", help="Count declared known failures as failures (exit 1).")
PrecisionOpt = typer.Option(
    None,
    "--precision",
    help="auto | fp32 | bf16: the arithmetic of the passes a study names "
    "(training steps, transport, rollouts) in studies that offer the choice "
    "(default: the preset's; auto picks bf16 on GPUs and CPUs with "
    "AMX/AVX512-BF16, fp32 elsewhere; the run records the choice).",
)


_DEBUG = {"on": False}


@app.callback()
def _options(
    debug: bool = typer.Option(False, "--debug", help="Show the full traceback of an unexpected error."),
) -> None:
    """Deep-learning theory papers as executable, checked studies."""
    _DEBUG["on"] = debug


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _missing(error: BaseException) -> MissingResource | None:
    """The MissingResource behind ``error`` (also when a process pool or Ray wrapped it)."""
    seen = 0
    while error is not None and seen < 5:
        if isinstance(error, MissingResource):
            return error
        error = getattr(error, "cause", None) or error.__cause__  # RayTaskError keeps it in .cause
        seen += 1
    return None


def _workers(value: str) -> int | str:
    """``--workers``: 'auto' or a positive integer (checked by the runner)."""
    text = value.strip().lower()
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"invalid value for 'workers': {value!r}; allowed: 'auto' or an integer >= 1") from None


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    name = getattr(error, "type_name", type(error).__name__)  # a RemoteError names the worker's error
    return f"{name}: {text}" if text else name


@contextlib.contextmanager
def _user_errors():
    """Config mistakes and missing resources: one line, exit 2. Anything else: one line and exit 1,
    the traceback only with ``--debug``."""
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        err.print(
            "interrupted (Ctrl-C): nothing half-written is kept (`theorylab list` shows the run as interrupted); the "
            "same command starts it again, reusing every run that finished",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    except ConfigError as e:
        _fail(str(e))
    except Exception as e:  # noqa: BLE001 - the face of the tool: never a traceback unless asked
        if _DEBUG["on"]:
            raise
        missing = _missing(e)
        if missing is not None:
            _fail(str(missing))
        _fail(f"{_one_line(e)} (run again with --debug for the traceback)", code=1)


def _warn_unread(res: Result, overrides: dict[str, Any]) -> None:
    from theorylab.core.runner import unread_overrides

    for key in unread_overrides(res, overrides):
        err.print(
            f"[yellow]warning:[/] --set {escape(key)}={escape(str(overrides[key]))} had no effect: "
            f"the {res.preset} preset of {res.study} never reads '{escape(key)}'",
            highlight=False,
            soft_wrap=True,
        )


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else escape(str(value))


_CELL = {
    "passed": "[green]passed[/]",
    "departed": "[green]passed[/][cyan]†[/]",
    "failed": "[bold red]FAILED[/]",
    "unexpected": "[bold red]PASSED UNEXPECTEDLY[/]",
    "undecided": "[yellow]not decided[/]",
    "error": "[bold red]ERROR[/]",
}


def _verdict_cell(v: Verdict) -> str:
    """The verdict word: † marks a pass with departures from the claim as stated."""
    if v.outcome == "known":
        return f"[magenta]{escape(v.label)}[/]"
    return _CELL[v.outcome]


def _claims_table(results: list[Result], title: str, preset: str = "") -> Table:
    table = Table(title=title, show_lines=False)
    for col in ("study", "claim", "verdict", "measured", "expected", "tol"):
        table.add_column(col, no_wrap=col != "claim", overflow="fold")
    for res in results:
        for v in res.verdicts:
            table.add_row(
                _label(res, preset or res.preset),
                v.id.split("/", 1)[-1] + (" †" if v.departures else ""),
                _verdict_cell(v),
                _fmt(v.measured),
                _fmt(v.expected),
                _fmt(v.tolerance),
            )
        if not res.verdicts:
            status = "[bold red]error[/]" if res.status == "error" else escape(res.status)
            table.add_row(_label(res, preset or res.preset), "-", status, "", "", "")
    return table


def _print_claims(results: list[Result], title: str, preset: str = "") -> None:
    out.print(_claims_table(results, title, preset))
    for res in results:
        if res.message:
            out.print(f"[red]{res.study}: {escape(res.message)}[/]", highlight=False, soft_wrap=True)
        for v in res.verdicts:
            out.print(f"  {_verdict_cell(v)} [bold]{v.id}[/]: {escape(v.detail)}", highlight=False)
            for d in v.departures:
                out.print(f"      [cyan]† departs:[/] {escape(d)}", highlight=False)
            if v.known:
                out.print(f"      [magenta]declared:[/] {escape(v.known)}", highlight=False)
    out.print("† passed with departures from the claim as stated (each listed under its claim)", highlight=False)


def _counts_line(counts: dict[str, int], compact: bool = False) -> str:
    """``"150 passed as stated, 39 passed with departures, 2 known failures, 0 failed, ..."`` (``compact``: the
    buckets that are not zero)."""
    return (
        ", ".join(
            counted(counts[k], k)
            for k in ("passed", "departed", "known", "failed", "unexpected", "undecided", "error")
            if counts[k] or not compact
        )
        or "no claims"
    )


def _run_summary(res: Result) -> None:
    reused = " (reused from the store; --force to rerun)" if res.reused else ""
    out.print(
        f"[bold]{res.study}[/] run [cyan]{res.run_id}[/] · preset {res.preset} · seed {res.seed} · {res.status} "
        f"· {res.wall_s:.1f} s{reused}"
    )
    _print_claims([res], "claims")
    if res.figures:
        out.print("figures: " + ", ".join(str(p) for p in res.figures))
    if res.path:
        out.print(f"tables:  {res.path / 'tables'}  ({', '.join(res.tables)})")


def _overrides(slug: str, items: Optional[List[str]], precision: Optional[str] = None) -> dict[str, Any]:
    overrides = parse_assignments(get_study(slug).config, items or [])
    return {**overrides, **_precision(slug, precision)}


def _precision(slug: str, precision: Optional[str]) -> dict[str, Any]:
    """``{"precision": ...}`` for a study with the choice; a note (and nothing) for one whose claims need full
    precision."""
    from theorylab.core.precision import CHOICES

    if precision is None:
        return {}
    if precision not in CHOICES:
        raise ConfigError(f"invalid value for '--precision': {precision!r}; allowed: {', '.join(CHOICES)}")
    if "precision" not in get_study(slug).config.model_fields:
        err.print(
            f"{slug}: no precision choice (its claims need full-precision arithmetic); --precision {precision} ignored",
            highlight=False,
        )
        return {}
    return {"precision": precision}


def _row_verdict(row: dict[str, Any], short: bool = False) -> str:
    """An index row's verdict counts in words (zero buckets other than passed, failed, not decided left out)."""
    counts = {
        k: row.get(f"n_{k}") or 0 for k in ("passed", "departed", "known", "failed", "unexpected", "undecided", "error")
    }
    shown = {k: n for k, n in counts.items() if n or k in ("passed", "failed", "undecided")}
    if not short:
        return ", ".join(counted(n, k) for k, n in shown.items())
    words = {
        "passed": "passed",
        "departed": "passed†",
        "known": "known",
        "failed": "failed",
        "unexpected": "passed unexpectedly",
        "undecided": "not decided",
        "error": "errors",
    }
    return ", ".join(f"{n} {words[k]}" for k, n in shown.items())


@app.command("list")
def list_cmd(
    markdown: bool = typer.Option(
        False, "--markdown", help="Print the README studies table (with the latest quick verdicts)."
    ),
    seed: Optional[int] = typer.Option(
        None, "--seed", help="The quick verdict of this seed's run (default: the newest quick run, any seed)."
    ),
    store: Optional[Path] = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Every study: slug, paper, number of claims, latest verdict."""
    from theorylab.core.inventory import preset_hashes

    st = Store(store)
    rows = []
    for slug, study in all_studies().items():
        history = st.rows(slug)  # newest first
        latest = next((r for r in history if r["status"] != "running"), None)
        quick_hash = preset_hashes(study).get("quick")  # a --set run stored as "quick" is not the quick verdict
        quick = next(
            (
                r
                for r in history
                if r["preset"] == "quick"
                and r["status"] == "done"
                and r["config_hash"] == quick_hash
                and (seed is None or r["seed"] == seed)
            ),
            None,
        )
        rows.append(
            {
                "slug": slug,
                "paper": study.paper,
                "family": study.family,
                "claims": len(study.claims),
                "latest": latest,
                "quick": quick,
                "not_built": dict(study.not_built),
            }
        )
    if as_json:
        print(json.dumps([{k: v for k, v in r.items()} for r in rows], default=str))
        return
    if markdown:
        at = "" if seed is None else f" (seed {seed})"
        print(f"| slug | paper | claims | quick verdict{at} | quick time{at} | card claims not built |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            q = r["quick"]
            verdict = _row_verdict(q) if q else "not run"
            wall = f"{q['wall_s']:.1f} s" if q else ""
            missing = "; ".join(f"`{cid}` ({why})" for cid, why in r["not_built"].items()) or "none"
            print(f"| `{r['slug']}` | {r['paper']} | {r['claims']} | {verdict} | {wall} | {missing} |")
        return
    table = Table(title="theorylab studies")
    for col in ("slug", "family", "paper", "claims", "latest verdict"):
        table.add_column(col)
    for r in rows:
        lt = r["latest"]
        verdict = f"{lt['status']}: {_row_verdict(lt, short=True)} ({lt['preset']})" if lt else "not run"
        claims = str(r["claims"]) + (f" (+{len(r['not_built'])} not built)" if r["not_built"] else "")
        table.add_row(r["slug"], escape(r["family"]), escape(r["paper"]), claims, verdict)
    out.print(table)


@app.command("claims")
def claims_cmd(
    slugs: Optional[List[str]] = typer.Argument(None, help="Studies to list (default: all)."),
    seed: Optional[int] = typer.Option(
        None, "--seed", help="Verdicts of this seed's runs (default: the newest run per preset, any seed)."
    ),
    store: Optional[Path] = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Every claim: the preset that decides it, that preset's measured time (or GPU and an estimate), the latest
    verdict per preset in the store, and its declared departures."""
    from theorylab.core.inventory import inventory, summary

    with _user_errors():
        studies = [get_study(slug) for slug in dict.fromkeys(slugs)] if slugs else list(all_studies().values())
    entries = inventory(studies, Store(store), seed=seed)
    counts = summary(entries)
    if as_json:
        print(json.dumps({"summary": counts, "claims": [e.to_json() for e in entries]}, default=str))
        return
    table = Table(title="theorylab claims: what decides each claim")
    for col in ("claim", "decided by", "time", "latest verdicts (preset: verdict)", "departures"):
        table.add_column(col, overflow="fold")
    for e in entries:
        latest = (
            "; ".join(
                f"{p} (seed {v['seed']}): {v['label']}"
                + (f", {_fmt(v['measured'])}" if v["measured"] is not None else "")
                for p, v in e.verdicts.items()
            )
            or "not run"
        )
        first = (e.departures[0][:70] + ("..." if len(e.departures[0]) > 70 else "")) if e.departures else ""
        deps = (f"{len(e.departures)}: {first}" if e.departures else "none") + ("; known failure" if e.known else "")
        table.add_row(
            e.id, e.decided_by + (" (GPU)" if e.device == "GPU" else ""), e.time_words(), escape(latest), escape(deps)
        )
    out.print(table)
    out.print(
        f"{counts['claims']} claims: {counts['quick']} decided at quick, {counts['cpu']} by a CPU preset, "
        f"{counts['gpu']} only on a GPU; {counts['decided_in_store']} decided by a run in this store",
        highlight=False,
    )


@app.command()
def run(
    slug: str = typer.Argument(..., help="Study slug (see `theorylab list`)."),
    preset: str = PresetOpt,
    set_: Optional[List[str]] = SetOpt,
    seed: int = SeedOpt,
    seeds: Optional[str] = SeedsOpt,
    device: str = DeviceOpt,
    force: bool = ForceOpt,
    precision: Optional[str] = PrecisionOpt,
    executor: str = typer.Option(
        "inline",
        "--executor",
        "-e",
        help="Where a study's independent grid jobs run: "
        "inline (here) or ray (one Ray task per job; same tables and verdicts).",
    ),
    address: Optional[str] = typer.Option(
        None, "--address", help="Ray cluster address for --executor ray (default: start a local Ray on every core)."
    ),
    strict: bool = StrictOpt,
    as_json: bool = JsonOpt,
    store: Optional[Path] = StoreOpt,
) -> None:
    """Run one study and judge its claims (with --seeds: at each seed, and every claim's rate over them)."""
    from theorylab.core.executors import make_executor
    from theorylab.core.runner import execute

    if seeds is not None:
        with _user_errors():
            overrides = _overrides(slug, set_, precision)
        _check_over_seeds({preset: [slug]}, seeds, device, force, {slug: overrides}, "1", strict, as_json, store)
        return
    with _user_errors():
        overrides = _overrides(slug, set_, precision)
        jobs = make_executor(executor, address, gpu=resolve_device(device).type == "cuda")
        res = execute(
            slug,
            preset,
            seed,
            overrides,
            store=Store(store),
            force=force,
            device=device,
            show_progress=True,
            executor=jobs,
        )
    if as_json:
        print(json.dumps(res.to_json()))
    else:
        _run_summary(res)
    _warn_unread(res, overrides)
    if not res.ok(strict):  # an unexplained failure, a judge that raised, an unexpected pass, or a diverged run
        raise typer.Exit(1)


@app.command()
def check(
    slugs: Optional[List[str]] = typer.Argument(None, help="Studies to check (default: all)."),
    preset: str = PresetOpt,
    seed: int = SeedOpt,
    seeds: Optional[str] = SeedsOpt,
    device: str = DeviceOpt,
    force: bool = ForceOpt,
    precision: Optional[str] = PrecisionOpt,
    workers: str = typer.Option(
        "auto",
        "--workers",
        "-w",
        help="Studies run side by side: 'auto' (one per core, "
        "at most 8; one on a GPU) or a number; 1 runs them one at a time with progress bars.",
    ),
    strict: bool = StrictOpt,
    as_json: bool = JsonOpt,
    store: Optional[Path] = StoreOpt,
) -> None:
    """Run (or reuse) each study and judge every claim; exit 1 if any claim fails. The main job.

    A claim that fails as declared (a known failure) does not fail the check unless --strict; one declared to fail
    on every seed that passes does. A study that raises is recorded as an error (one line) and the others go on;
    exit 1 when a claim failed or a study errored, 2 when the only problem is a missing optional resource. With
    --seeds, every study runs (or is reused) at each seed and each claim reports its pass rate over them. --preset
    cpu runs each study's CPU presets: cpu and every other CPU preset that decides one of its claims (cpu-depth,
    lm, ...), each claim shown from the run of its deciding preset."""

    names = list(dict.fromkeys(slugs or all_studies()))
    with _user_errors():
        for slug in names:
            get_study(slug)  # unknown slugs fail before any work
    plan = check_plan(names, preset)
    if not slugs:
        without = [slug for slug in names if slug not in plan]
        names = [slug for slug in names if slug in plan]
        if not names:
            _fail(f"no study declares a '{preset}' preset")
        if without:
            err.print(
                f"{len(without)} studies have no {preset} preset (their claims are decided at quick or by "
                f"another preset; `theorylab claims` lists which): {', '.join(without)}",
                highlight=False,
                soft_wrap=True,
            )
    with _user_errors():
        resolve_device(device)
        per_study = {slug: _precision(slug, precision) for slug in names}
    passes = list(dict.fromkeys(p for slug in names for p in plan.get(slug, [preset])))
    if len(passes) > 1:
        err.print(
            f"--preset {preset} runs each study's CPU presets: "
            + "; ".join(f"{p}: {', '.join(s for s in names if p in plan.get(s, ()))}" for p in passes),
            highlight=False,
            soft_wrap=True,
        )
    if seeds is not None:
        groups = {p: [s for s in names if p in plan.get(s, [preset])] for p in passes}
        with _user_errors():
            _check_over_seeds(groups, seeds, device, force, per_study, workers, strict, as_json, store)
        return
    started = time.perf_counter()
    results: list[Result] = []
    missing: list[str] = []
    from theorylab.core.runner import Job

    # every (study, preset) run in one queue, so that with several workers no core waits for a preset's last run
    jobs = [Job(s, p, seed) for p in passes for s in names if p in plan.get(s, [preset])]
    with _user_errors():
        ran = _check_group(jobs, device, force, per_study, workers, store, missing)
    for res in ran:
        # under a tier (cpu), a run shows the claims its preset decides; the cpu run the rest
        others = [q for q in plan.get(res.study, []) if q != res.preset]
        study = get_study(res.study) if res.status != "error" else None
        if study is not None and others:
            decides = {c.id: c.decided_by for c in study.claims}
            keep = [
                v
                for v in res.verdicts
                if decides.get(v.id) == res.preset or (res.preset == preset and decides.get(v.id) not in others)
            ]
            res = dataclasses.replace(res, verdicts=keep)
        results.append(res)
    if as_json:
        print(json.dumps(_check_json(results)))
    else:
        _print_claims(results, f"theorylab check --preset {preset}", preset)
        errored = [r.study for r in results if r.status == "error"]
        unit = "runs" if len(passes) > 1 else "studies"
        walls = ", ".join(
            f"{_label(r, preset)} {r.wall_s:.1f} s{' (reused)' if r.reused else ''}"
            for r in results
            if r.status != "error"
        )
        out.print(
            f"{len(results) - len(errored)} of {len(results)} {unit} judged · {_counts_line(_total(results))}, "
            f"{len(errored)} study errors{' (' + ', '.join(errored) + ')' if errored else ''} · {walls} · total "
            f"{time.perf_counter() - started:.1f} s",
            highlight=False,
        )
        _say_meaning()
    broken = [r for r in results if not r.ok(strict) and r.study not in missing]
    if broken:
        raise typer.Exit(1)
    if missing:
        raise typer.Exit(2)


def _check_group(
    jobs: list[Job],
    device: str,
    force: bool,
    per_study: dict[str, dict[str, Any]],
    workers: str,
    store: Optional[Path],
    missing: list[str],
) -> list[Result]:
    """``check`` of ``jobs`` (:class:`~theorylab.core.runner.Job`: study, preset, seed) in one queue, with progress
    and an ETA on stderr; a study that raises is an error result (its line said as it happens, a missing resource
    noted in ``missing``)."""
    from theorylab.core.runner import check_runs, check_workers, expected_seconds

    with _user_errors():
        st = Store(store)
        n_proc, threads = check_workers(_workers(workers), len(jobs), device)
    presets = list(dict.fromkeys(job.preset for job in jobs))
    what = f"{len(jobs)} studies ({presets[0]})" if len(presets) == 1 else f"{len(jobs)} runs ({', '.join(presets)})"
    error_lines: dict[Any, str] = {}  # a run that raised: its one line, said once as it happens
    if n_proc > 1:
        err.print(
            f"checking {what}, {n_proc} at a time, {threads} thread{'s' if threads > 1 else ''} each ...",
            highlight=False,
        )

    def name(job: Any) -> str:
        return job.slug if len(presets) == 1 else f"{job.slug} ({job.preset})"

    expected = {job: expected_seconds(st, job.slug, job.preset) for job in jobs}
    finished: set[Any] = set()

    def starting(job: Any, k: int) -> None:
        if n_proc == 1:
            err.print(f"checking {job.slug} ({job.preset}, {k}/{len(jobs)}) ...", highlight=False)
        else:
            err.print(f"  started {name(job)}", highlight=False)

    def done(job: Any, outcome: Result | BaseException, k: int) -> None:
        finished.add(job)
        if isinstance(outcome, BaseException):
            error_lines[job] = _error_line(outcome, job.slug, missing)
        elif n_proc > 1 or job.preset != "quick":  # one at a time at quick: the progress bars say it all
            err.print(
                f"  {k}/{len(jobs)} {name(job)}: {outcome.wall_s:.1f} s{' (reused)' if outcome.reused else ''}, "
                f"{_counts_line(outcome.counts(), compact=True)}{_eta(jobs, finished, expected, n_proc)}",
                highlight=False,
                soft_wrap=True,
            )

    outcomes = check_runs(
        jobs,
        store=st,
        force=force,
        device=device,
        overrides=per_study,
        workers=n_proc,
        show_progress=True,
        on_start=starting,
        on_done=done,
    )
    return [
        Result.error(job.slug, job.preset, job.seed, error_lines[job]) if isinstance(out, BaseException) else out
        for job, out in outcomes.items()
    ]


def check_plan(names: list[str], preset: str) -> dict[str, list[str]]:
    """``{slug: presets to run}`` for ``check --preset PRESET``: at ``cpu``, each study's CPU presets
    (:attr:`Study.cpu_presets`: cpu and any other that decides a claim on a CPU, such as cpu-depth or lm); at any
    other preset, that preset for the studies that declare it."""
    plan = {}
    for slug in names:
        study = get_study(slug)
        chosen = study.cpu_presets if preset == "cpu" else [preset] if preset in study.presets else []
        if chosen:
            plan[slug] = chosen
    return plan


def _label(res: Result, preset: str) -> str:
    """A run's name in a check's output: the study, and its preset where it is not the one asked for."""
    return res.study if res.preset == preset else f"{res.study} ({res.preset})"


def _eta(jobs: list[Any], finished: set[Any], expected: dict[Any, float], n_proc: int) -> str:
    """`` · ETA 4.2 min``: the unfinished runs' expected times (store, else recorded; unknown ones at the mean of the
    known) shared by ``n_proc`` workers; "" when nothing is known."""
    known = [t for t in expected.values() if t != float("inf")]
    left = [job for job in jobs if job not in finished]
    if not known or not left:
        return ""
    mean = sum(known) / len(known)
    seconds = sum(expected[j] if expected[j] != float("inf") else mean for j in left) / max(1, min(n_proc, len(left)))
    return f" · ETA {seconds / 60:.1f} min"


def _error_line(outcome: BaseException, slug: str, missing: list[str]) -> str:
    """A study's error in one line, printed as it happens (its traceback with --debug); a missing resource is noted
    in ``missing``."""
    if _DEBUG["on"]:
        raise outcome
    gap = _missing(outcome)
    line = f"missing resource: {gap}" if gap is not None else _one_line(outcome)
    if gap is not None:
        missing.append(slug)
    err.print(f"[bold red]{slug}: error:[/] {escape(line)}", highlight=False, soft_wrap=True)
    return line


def _total(results: list[Result]) -> dict[str, int]:
    from theorylab.core.study import OUTCOMES

    return {k: sum(r.counts()[k] for r in results) for k in OUTCOMES}


def _check_json(results: list[Result]) -> list[dict[str, Any]]:
    return [r.to_json() for r in results]


def _say_meaning() -> None:
    out.print(
        "passed as stated: the claim in the form its card or paper states it; passed with departures (†): a "
        "recipe, size, definition or threshold differs, as declared; known failures: the stated claim fails in "
        "our reproduction for a declared reason (exit 0 unless --strict); not decided: this preset cannot "
        "decide it (the detail says what does).",
        highlight=False,
        soft_wrap=True,
        style="dim",
    )


def _check_over_seeds(
    groups: dict[str, list[str]],
    seeds_text: str,
    device: str,
    force: bool,
    overrides: dict[str, dict[str, Any]],
    workers: str,
    strict: bool,
    as_json: bool,
    store: Optional[Path],
) -> None:
    """``check --seeds`` / ``run --seeds``: every study of ``groups`` (preset -> studies) at every seed, all in one
    queue (``check --preset cpu``: every CPU preset's runs side by side), then, per preset, each claim's rate over
    the seeds."""
    from theorylab.core.runner import Job, check_runs, check_workers
    from theorylab.core.seeds import parse_seeds

    with _user_errors():
        seed_list = parse_seeds(seeds_text)
        st = Store(store)
        jobs = [Job(slug, preset, seed) for preset, names in groups.items() for slug in names for seed in seed_list]
        n_proc, threads = check_workers(_workers(workers), len(jobs), device)
    n_jobs = len(jobs)
    missing: list[str] = []
    short: set[str] = set()
    started = time.perf_counter()
    studies = list(dict.fromkeys(slug for names in groups.values() for slug in names))
    err.print(
        f"checking {len(studies)} stud{'y' if len(studies) == 1 else 'ies'} ({', '.join(groups)}) at "
        f"{len(seed_list)} seeds ({seeds_text}): {n_jobs} runs, {n_proc} at a time ...",
        highlight=False,
    )

    def done(job: Job, outcome: Result | BaseException, k: int) -> None:
        tier = f" ({job.preset})" if len(groups) > 1 else ""
        if isinstance(outcome, BaseException):
            before = len(missing)
            _error_line(outcome, f"{job.slug}{tier} seed {job.seed}", missing)
            if len(missing) > before:
                short.add(job.preset)  # a missing resource (exit 2 unless a claim failed)
            return
        elapsed = time.perf_counter() - started
        eta = elapsed / k * (n_jobs - k)
        err.print(
            f"  {k}/{n_jobs} {job.slug}{tier} seed {job.seed}: {outcome.wall_s:.1f} s"
            f"{' (reused)' if outcome.reused else ''}, {_counts_line(outcome.counts(), compact=True)} · ETA "
            f"{eta / 60:.1f} min",
            highlight=False,
            soft_wrap=True,
        )

    ran = check_runs(
        jobs,
        store=st,
        force=force,
        device=device,
        overrides=overrides,
        workers=n_proc,
        show_progress=n_proc == 1,
        on_done=done,
    )
    codes = []
    for preset, names in groups.items():
        outcomes = {(job.slug, job.seed): out for job, out in ran.items() if job.preset == preset}
        codes.append(
            _seed_report(preset, names, seeds_text, seed_list, outcomes, strict, as_json, preset in short, started)
        )
    if any(codes):
        raise typer.Exit(1 if 1 in codes else max(codes))


def _seed_report(
    preset: str,
    names: list[str],
    seeds_text: str,
    seed_list: list[int],
    outcomes: dict[tuple[str, int], Result | BaseException],
    strict: bool,
    as_json: bool,
    missing: bool,
    started: float,
) -> int:
    """One preset's claims over the seeds (a table, or one JSON document); the exit code it asks for (0, 1: a
    failure, 2: a missing resource)."""
    from theorylab.core.seeds import MARKS, claim_rates

    rates = claim_rates(outcomes, {slug: [c.id for c in get_study(slug).claims] for slug in names})
    unexplained = [r for r in rates if r.unexplained]
    known = [r for r in rates if r.count("known")]
    if as_json:
        print(
            json.dumps(
                {
                    "preset": preset,
                    "seeds": seed_list,
                    "claims": [r.to_json(seed_list) for r in rates],
                    "runs": [
                        o.to_json()
                        if isinstance(o, Result)
                        else {"study": slug, "seed": seed, "status": "error", "message": _one_line(o)}
                        for (slug, seed), o in outcomes.items()
                    ],
                }
            )
        )
    else:
        table = Table(title=f"theorylab check --preset {preset} --seeds {seeds_text}: claims over seeds")
        for col in ("study", "claim", "passed/decided", "95% interval", f"seeds {seeds_text}", "declared"):
            table.add_column(col, no_wrap=col not in ("claim", "declared"), overflow="fold")
        for r in rates:
            lo, hi = r.interval
            note = []
            if r.known:
                note.append(
                    "[magenta]known: " + escape(r.known.removeprefix("known failure on ").split(":", 1)[0]) + "[/]"
                )
            if r.departures:
                note.append(f"[cyan]† {len(r.departures)} departure{'s' if len(r.departures) > 1 else ''}[/]")
            rate = f"[bold red]{r.rate}[/]" if r.unexplained else r.rate
            table.add_row(
                r.study,
                r.claim.split("/", 1)[-1],
                rate,
                "" if r.decided == 0 else f"[{lo:.2f}, {hi:.2f}]",
                r.marks(seed_list),
                ", ".join(note),
            )
        out.print(table)
        out.print(
            "seeds "
            + ", ".join(map(str, seed_list))
            + ": "
            + ", ".join(
                f"{m} {w}"
                for w, m in (
                    ("passed", MARKS["passed"]),
                    ("failed", MARKS["failed"]),
                    ("known failure", MARKS["known"]),
                    ("passed unexpectedly", MARKS["unexpected"]),
                    ("not decided", MARKS["undecided"]),
                    ("judge error", MARKS["error"]),
                    ("run did not finish", MARKS["not evaluated"]),
                )
            ),
            highlight=False,
            soft_wrap=True,
        )
        for r in unexplained + [r for r in known if not r.unexplained]:
            tag = "[bold red]unexplained[/]" if r.unexplained else "[magenta]known[/]"
            out.print(f"  {tag} [bold]{r.claim}[/] {r.rate}: {escape(r.first_failure)}", highlight=False)
        runs = [o for o in outcomes.values() if isinstance(o, Result)]
        always = sum(1 for r in rates if r.decided and r.passed == r.decided)
        out.print(
            f"{len(rates)} claims over {len(seed_list)} seeds: {always} passed on every seed that decided them, "
            f"{len(known)} with known failures, {len(unexplained)} with unexplained failures, "
            f"{sum(1 for r in rates if not r.decided)} not decided on any seed · runs: "
            f"{_counts_line(_total(runs))} · {len(outcomes) - len(runs)} run errors · total "
            f"{time.perf_counter() - started:.1f} s",
            highlight=False,
            soft_wrap=True,
        )
        _say_meaning()
    if unexplained or (strict and known) or any(not o.ok(strict) for o in outcomes.values() if isinstance(o, Result)):
        return 1
    return 2 if missing else 0


@app.command()
def sweep(
    slug: str = typer.Argument(..., help="Study slug."),
    grid: List[str] = typer.Option(..., "--grid", "-g", help="key=v1,v2,... (several --grid form a product)."),
    set_: Optional[List[str]] = SetOpt,
    preset: str = PresetOpt,
    seed: int = SeedOpt,
    executor: str = typer.Option("inline", "--executor", "-e", help="inline | process | ray"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (default: start a local Ray)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Parallel points (process/ray)."),
    device: str = typer.Option("cpu", "--device", help="auto | cpu | cuda (per point)"),
    precision: Optional[str] = PrecisionOpt,
    as_json: bool = JsonOpt,
    store: Optional[Path] = StoreOpt,
) -> None:
    """Run a grid of configs; finished points are skipped; one tidy table per study table."""
    from theorylab.core.sweep import parse_grid, run_sweep

    with _user_errors():
        st = Store(store)
        study = get_study(slug)
        parsed = parse_grid(study, grid)
        overrides = _overrides(slug, set_, precision)

        def report_point(point: dict[str, Any], run_id: str, status: str) -> None:
            err.print(f"  {point} -> {run_id} {status}", highlight=False)

        res = run_sweep(
            slug,
            parsed,
            preset=preset,
            seed=seed,
            overrides=overrides,
            executor=executor,
            address=address,
            workers=workers,
            store=st,
            device=device,
            on_point=report_point,
        )
    if as_json:
        print(
            json.dumps(
                {
                    "sweep_id": res.sweep_id,
                    "study": slug,
                    "ran": res.n_ran,
                    "reused": res.n_reused,
                    "path": str(res.path),
                    "tables": {k: str(res.path / f"{k}.parquet") for k in res.tables},
                    "points": json.loads(res.points.to_json(orient="records")),
                }
            )
        )
        return
    out.print(
        f"sweep [cyan]{res.sweep_id}[/] of {slug}: {len(res.points)} points, ran {res.n_ran}, reused {res.n_reused}"
    )
    verdicts = res.tables["verdicts"]
    if len(verdicts):
        words = {
            "passed": "passed",
            "departed": "passed†",
            "failed": "FAILED",
            "known": "failed (known)",
            "unexpected": "PASSED UNEXPECTEDLY",
            "undecided": "not decided",
            "error": "ERROR",
        }
        summary = verdicts.assign(passed=verdicts["outcome"].map(words))
        keys = list(parsed)
        pivot = summary.pivot_table(index=keys, columns="claim", values="passed", aggfunc="first")
        table = Table(title="verdicts by grid point")
        for col in [*keys, *[c.split("/", 1)[-1] for c in pivot.columns]]:
            table.add_column(str(col))
        for idx, row in pivot.iterrows():
            idx = idx if isinstance(idx, tuple) else (idx,)
            table.add_row(*[_fmt(i) for i in idx], *[str(v) for v in row.to_numpy()])
        out.print(table)
    out.print(f"tables: {res.path}  ({', '.join(sorted(res.tables))})")


@app.command()
def report(
    open_: bool = typer.Option(False, "--open", help="Open the report in a browser."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Output folder (default <store>/report)."),
    store: Optional[Path] = StoreOpt,
) -> None:
    """Write a static HTML report (studies, verdicts, figures, configs) of the store."""
    from theorylab.core.report import write_report

    with _user_errors():
        index = write_report(Store(store, create=False), out_dir)
    out.print(f"report: {index}")
    if open_:
        webbrowser.open(index.resolve().as_uri())


@app.command()
def pages(
    slugs: Optional[List[str]] = typer.Argument(None, help="Studies to write pages for (default: all)."),
    stores: List[Path] = typer.Option(
        ..., "--store", help="Store to read runs from (repeatable: the first that has a run of a preset gives it)."
    ),
    seed: int = typer.Option(0, "--seed", help="The seed whose runs the pages show.", min=0),
    out_dir: Path = typer.Option(Path("docs/studies"), "--out", help="Folder of the study pages."),
) -> None:
    """Write the study pages (claims table, figures, sizes, departures) from stored runs; hand-written prose
    outside the generated blocks is kept."""
    from theorylab.pages import write_pages

    with _user_errors():
        studies = [get_study(slug) for slug in dict.fromkeys(slugs)] if slugs else list(all_studies().values())
        opened = [Store(path, create=False) for path in stores]
        reports = write_pages(studies, opened, out_dir, seed=seed)
    for r in reports:
        runs = ", ".join(f"{p} {rid}" for p, rid in r.runs.items()) or "no run"
        size = sum(r.images.values()) / 1024
        out.print(f"{r.path}: {runs}; {len(r.images)} images, {size:.0f} KB", highlight=False)


def _load_or_explain(st: Store, run_id: str) -> Result:
    """A complete run, or a :class:`ConfigError` that says what became of an attempt that left nothing stored
    (``interrupted``: Ctrl-C or a kill; ``failed``: it raised), so a user is not told only "no such run"."""
    try:
        return st.load(run_id)
    except ConfigError:
        attempts = [r for r in st.rows() if r["run_id"].startswith(run_id) and r["status"] in ("interrupted", "failed")]
        if len(attempts) == 1:
            a = attempts[0]
            raise ConfigError(
                f"run {a['run_id']} ({a['study']}, preset {a['preset']}, seed {a['seed']}) was "
                f"{a['status']}: {a['message'] or 'no message'}; nothing of it is stored, run it "
                f"again to redo it"
            ) from None
        raise


@app.command()
def show(
    run_id: str = typer.Argument(..., help="Run id or a unique prefix."),
    as_json: bool = JsonOpt,
    store: Optional[Path] = StoreOpt,
) -> None:
    """Show a stored run: config, scalars, verdicts, tables, figures."""
    with _user_errors():
        res = _load_or_explain(Store(store, create=False), run_id)
    if as_json:
        print(json.dumps({**res.to_json(), "config": res.config, "scalars": res.scalars}, default=str))
        return
    _run_summary(res)
    out.print("config: " + escape(json.dumps(res.config)))
    if res.scalars:
        out.print("scalars: " + escape(json.dumps(res.scalars, default=str)))


def main() -> None:
    try:
        app()
    except ConfigError as e:  # pragma: no cover - commands catch their own
        err.print(f"error: {escape(str(e))}")
        sys.exit(2)


if __name__ == "__main__":
    main()
