"""The command line: ``theorylab list | run | check | sweep | report | show``."""

from __future__ import annotations

import contextlib
import json
import sys
import time
import webbrowser
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from theorylab.core.config import ConfigError, parse_assignments
from theorylab.core.context import resolve_device
from theorylab.core.errors import MissingResource
from theorylab.core.result import Result
from theorylab.core.store import Store
from theorylab.core.study import Verdict, all_studies, get_study

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Deep-learning theory papers as executable, checked "
    "studies.")
out = Console()
if not out.is_terminal:
    out = Console(width=140)  # pipes and logs: wide enough for the claims table
err = Console(stderr=True)

StoreOpt = typer.Option(None, "--store", help="Store root (default ./runs or $THEORYLAB_STORE).",
                        envvar="THEORYLAB_STORE")
JsonOpt = typer.Option(False, "--json", help="Print one JSON document instead of tables.")
PresetOpt = typer.Option("quick", "--preset", "-p", help="quick (2 CPU cores, <= 60 s) or paper (the paper's "
                                                         "sizes; GPU).")
SeedOpt = typer.Option(0, "--seed", help="Run seed; every random stream derives from it.", min=0)
DeviceOpt = typer.Option("auto", "--device", help="auto | cpu | cuda")
SetOpt = typer.Option(None, "--set", "-s", help="Override a config field: key=value (repeatable).")
ForceOpt = typer.Option(False, "--force", help="Run again even if the store has this exact run.")
PrecisionOpt = typer.Option(None, "--precision", help="fp32 | bf16: the arithmetic of no-gradient passes (transport, "
                                                      "rollouts) in studies that offer the choice (default: the "
                                                      "preset's; bf16 pays off on GPUs and AMX CPUs).")


_DEBUG = {"on": False}


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug",
                                        help="Show the full traceback of an unexpected error.")) -> None:
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
    except (typer.Exit, KeyboardInterrupt):
        raise
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
        err.print(f"[yellow]warning:[/] --set {escape(key)}={escape(str(overrides[key]))} had no effect: "
                  f"the {res.preset} preset of {res.study} never reads '{escape(key)}'", highlight=False,
                  soft_wrap=True)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else escape(str(value))


def _verdict_cell(v: Verdict) -> str:
    if v.error:
        return "[bold red]ERROR[/]"
    return {True: "[green]passed[/]", False: "[bold red]FAILED[/]", None: "[yellow]not decided[/]"}[v.passed]


def _claims_table(results: list[Result], title: str) -> Table:
    table = Table(title=title, show_lines=False)
    for col in ("study", "claim", "verdict", "measured", "expected", "tol"):
        table.add_column(col, no_wrap=col != "claim", overflow="fold")
    for res in results:
        for v in res.verdicts:
            table.add_row(res.study, v.id.split("/", 1)[-1], _verdict_cell(v), _fmt(v.measured), _fmt(v.expected), _fmt(
                v.tolerance))
        if not res.verdicts:
            status = "[bold red]error[/]" if res.status == "error" else escape(res.status)
            table.add_row(res.study, "-", status, "", "", "")
    return table


def _print_claims(results: list[Result], title: str) -> None:
    out.print(_claims_table(results, title))
    for res in results:
        if res.message:
            out.print(f"[red]{res.study}: {escape(res.message)}[/]", highlight=False, soft_wrap=True)
        for v in res.verdicts:
            out.print(f"  {_verdict_cell(v)} [bold]{v.id}[/]: {escape(v.detail)}", highlight=False)


def _run_summary(res: Result) -> None:
    reused = " (reused from the store; --force to rerun)" if res.reused else ""
    out.print(f"[bold]{res.study}[/] run [cyan]{res.run_id}[/] · preset {res.preset} · seed {res.seed} · {res.status} "
              f"· {res.wall_s:.1f} s{reused}")
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
    from theorylab.core.precision import PRECISIONS

    if precision is None:
        return {}
    if precision not in PRECISIONS:
        raise ConfigError(f"invalid value for '--precision': {precision!r}; allowed: {', '.join(PRECISIONS)}")
    if "precision" not in get_study(slug).config.model_fields:
        err.print(f"{slug}: no precision choice (its claims need full-precision arithmetic); --precision "
                  f"{precision} ignored", highlight=False)
        return {}
    return {"precision": precision}


@app.command("list")
def list_cmd(
    markdown: bool = typer.Option(False, "--markdown", help="Print the README studies table (with the latest quick "
                                                            "verdicts)."),
    store: Optional[Path] = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Every study: slug, paper, number of claims, latest verdict."""
    st = Store(store)
    rows = []
    for slug, study in all_studies().items():
        history = st.rows(slug)  # newest first
        latest = next((r for r in history if r["status"] != "running"), None)
        quick = next((r for r in history if r["preset"] == "quick" and r["status"] == "done"), None)
        rows.append({"slug": slug, "paper": study.paper, "family": study.family, "claims": len(study.claims),
                     "latest": latest, "quick": quick,
                     "not_built": dict(study.not_built)})
    if as_json:
        print(json.dumps([{k: v for k, v in r.items()} for r in rows], default=str))
        return
    if markdown:
        print("| slug | paper | claims | quick verdict | quick time | card claims not built |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            q = r["quick"]
            verdict = f"{q['n_passed']} passed, {q['n_failed']} failed, {q['n_undecided']} undecided" + (
                f", {q['n_error']} errors" if q.get('n_error') else "") if q else "not run"
            wall = f"{q['wall_s']:.1f} s" if q else ""
            missing = "; ".join(f"`{cid}` ({why})" for cid, why in r["not_built"].items()) or "none"
            print(f"| `{r['slug']}` | {r['paper']} | {r['claims']} | {verdict} | {wall} | {missing} |")
        return
    table = Table(title="theorylab studies")
    for col in ("slug", "family", "paper", "claims", "latest verdict"):
        table.add_column(col)
    for r in rows:
        lt = r["latest"]
        verdict = (f"{lt['status']}: {lt['n_passed']} passed, {lt['n_failed']} failed, {lt['n_undecided']} undecided "
                   f"({lt['preset']})" if lt else "not run")
        claims = str(r["claims"]) + (f" (+{len(r['not_built'])} not built)" if r["not_built"] else "")
        table.add_row(r["slug"], escape(r["family"]), escape(r["paper"]), claims, verdict)
    out.print(table)


@app.command()
def run(
    slug: str = typer.Argument(..., help="Study slug (see `theorylab list`)."),
    preset: str = PresetOpt,
    set_: Optional[List[str]] = SetOpt,
    seed: int = SeedOpt,
    device: str = DeviceOpt,
    force: bool = ForceOpt,
    precision: Optional[str] = PrecisionOpt,
    executor: str = typer.Option("inline", "--executor", "-e", help="Where a study's independent grid jobs run: "
                                 "inline (here) or ray (one Ray task per job; same tables and verdicts)."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address for --executor ray "
                                          "(default: start a local Ray on every core)."),
    as_json: bool = JsonOpt,
    store: Optional[Path] = StoreOpt,
) -> None:
    """Run one study and judge its claims."""
    from theorylab.core.executors import make_executor
    from theorylab.core.runner import execute

    with _user_errors():
        overrides = _overrides(slug, set_, precision)
        jobs = make_executor(executor, address, gpu=resolve_device(device).type == "cuda")
        res = execute(slug, preset, seed, overrides, store=Store(store), force=force, device=device, show_progress=True,
                      executor=jobs)
    if as_json:
        print(json.dumps(res.to_json()))
    else:
        _run_summary(res)
    _warn_unread(res, overrides)
    if not res.passed:  # a failed claim, a judge that raised, or a diverged run
        raise typer.Exit(1)


@app.command()
def check(
    slugs: Optional[List[str]] = typer.Argument(None, help="Studies to check (default: all)."),
    preset: str = PresetOpt,
    seed: int = SeedOpt,
    device: str = DeviceOpt,
    force: bool = ForceOpt,
    precision: Optional[str] = PrecisionOpt,
    workers: str = typer.Option("auto", "--workers", "-w", help="Studies run side by side: 'auto' (one per core, "
                                "at most 8; one on a GPU) or a number; 1 runs them one at a time with progress bars."),
    as_json: bool = JsonOpt,
    store: Optional[Path] = StoreOpt,
) -> None:
    """Run (or reuse) each study and judge every claim; exit 1 if any claim fails. The main job.

    A study that raises is recorded as an error (one line) and the others go on; exit 1 when a
    claim failed or a study errored, 2 when the only problem is a missing optional resource."""
    from theorylab.core.runner import check_many, check_workers

    names = list(dict.fromkeys(slugs or all_studies()))
    with _user_errors():
        st = Store(store)
        for slug in names:
            get_study(slug)  # unknown slugs fail before any work
        resolve_device(device)
        per_study = {slug: _precision(slug, precision) for slug in names}
    with _user_errors():
        n_proc, threads = check_workers(_workers(workers), len(names), device)
    results: list[Result] = []
    missing: list[str] = []
    error_lines: dict[str, str] = {}  # a study that raised: its one line, said once as it happens
    started = time.perf_counter()
    if n_proc > 1:
        err.print(f"checking {len(names)} studies ({preset}), {n_proc} at a time, {threads} thread"
                  f"{'s' if threads > 1 else ''} each ...", highlight=False)

    def starting(slug: str, k: int) -> None:
        if n_proc == 1:
            err.print(f"checking {slug} ({preset}, {k}/{len(names)}) ...", highlight=False)
        else:
            err.print(f"  started {slug}", highlight=False)

    def done(slug: str, outcome: Result | BaseException, k: int) -> None:
        if isinstance(outcome, BaseException):
            if _DEBUG["on"]:
                raise outcome
            gap = _missing(outcome)
            error_lines[slug] = f"missing resource: {gap}" if gap is not None else _one_line(outcome)
            if gap is not None:
                missing.append(slug)
            err.print(f"[bold red]{slug}: error:[/] {escape(error_lines[slug])}", highlight=False, soft_wrap=True)
        elif n_proc > 1:
            c = outcome.counts()
            err.print(f"  {k}/{len(names)} {slug}: {outcome.wall_s:.1f} s{' (reused)' if outcome.reused else ''}, "
                      f"{c['passed']} passed, {c['failed']} failed, {c['undecided']} not decided", highlight=False)

    for slug, outcome in zip(names, check_many(names, preset, seed, store=st, force=force, device=device,
                                               overrides=per_study, workers=n_proc, show_progress=True,
                                               on_start=starting, on_done=done)):
        results.append(Result.error(slug, preset, seed, error_lines[slug]) if isinstance(outcome, BaseException)
                       else outcome)
    if as_json:
        print(json.dumps([r.to_json() for r in results]))
    else:
        _print_claims(results, f"theorylab check --preset {preset}")
        counts = {k: sum(r.counts()[k] for r in results) for k in ("passed", "failed", "undecided", "error")}
        errored = [r.study for r in results if r.status == "error"]
        walls = ", ".join(
            f"{r.study} {r.wall_s:.1f} s{' (reused)' if r.reused else ''}" for r in results if r.status != "error")
        out.print(f"{len(results) - len(errored)} of {len(results)} studies judged · {counts['passed']} passed, "
                  f"{counts['failed']} failed, "
                  f"{counts['undecided']} not decided, {counts['error']} judge errors, {len(errored)} study errors"
                  f"{' (' + ', '.join(errored) + ')' if errored else ''} · {walls} · total "
                  f"{time.perf_counter() - started:.1f} s", highlight=False)
    broken = [r for r in results if not r.passed and r.study not in missing]
    if broken:
        raise typer.Exit(1)
    if missing:
        raise typer.Exit(2)


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

        res = run_sweep(slug, parsed, preset=preset, seed=seed, overrides=overrides, executor=executor, address=address,
                        workers=workers, store=st, device=device, on_point=report_point)
    if as_json:
        print(json.dumps({"sweep_id": res.sweep_id, "study": slug, "ran": res.n_ran, "reused": res.n_reused,
                          "path": str(res.path),
                          "tables": {k: str(res.path / f"{k}.parquet") for k in res.tables}, "points": json.loads(
                              res.points.to_json(orient="records"))}))
        return
    out.print(f"sweep [cyan]{res.sweep_id}[/] of {slug}: {len(res.points)} points, ran {res.n_ran}, reused "
              f"{res.n_reused}")
    verdicts = res.tables["verdicts"]
    if len(verdicts):
        summary = verdicts.assign(passed=verdicts["passed"].map({True: "passed", False: "FAILED", None: "not decided"}))
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

    index = write_report(Store(store), out_dir)
    out.print(f"report: {index}")
    if open_:
        webbrowser.open(index.resolve().as_uri())


@app.command()
def show(
    run_id: str = typer.Argument(..., help="Run id or a unique prefix."),
    as_json: bool = JsonOpt,
    store: Optional[Path] = StoreOpt,
) -> None:
    """Show a stored run: config, scalars, verdicts, tables, figures."""
    with _user_errors():
        res = Store(store).load(run_id)
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
