from __future__ import annotations

import json
import re
import signal
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from theorylab.cli import app

runner = CliRunner()


def invoke(store: Path, *args: str):
    return runner.invoke(app, [*args, "--store", str(store)])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


def test_list_shows_studies(root):
    res = invoke(root, "list")
    assert res.exit_code == 0
    assert "rmt-diffusion" in res.stdout and "toy" in res.stdout


def test_list_markdown_reads_only_runs_of_the_quick_preset_itself(root):
    toy_row = lambda: next(
        line
        for line in invoke(root, "list", "--markdown").stdout.splitlines()  # noqa: E731
        if line.startswith("| `toy` ")
    )
    assert invoke(root, "run", "toy", "--set", "bias=5").exit_code == 1  # a --set run that fails its claim
    assert "not run" in toy_row()  # ... is not the quick verdict
    assert invoke(root, "run", "toy").exit_code == 0
    assert "1 passed" in toy_row() and "0 failed" in toy_row()


def test_run_json_object(root):
    res = invoke(root, "run", "toy", "--json", "--set", "n=500", "--seed", "3")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert set(obj) == {
        "study",
        "run_id",
        "preset",
        "seed",
        "status",
        "message",
        "counts",
        "wall_s",
        "verdicts",
        "tables",
        "figures",
    }
    assert obj["status"] == "done" and obj["study"] == "toy"
    (v,) = obj["verdicts"]
    assert set(v) == {
        "id",
        "statement",
        "passed",
        "measured",
        "expected",
        "tolerance",
        "detail",
        "error",
        "departures",
        "known",
        "known_strict",
        "nan",
        "outcome",
        "label",
    }
    assert Path(obj["tables"]["steps"]).exists()


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["--set", "nn=5"], r"unknown config field 'nn' \(did you mean 'n'\?\)"),
        (["--set", "n=5"], r"invalid value for 'n': 5 .*10 <= value <= 10000000"),
        (["--set", "n=abc"], r"invalid value for 'n': 'abc'"),
        (["--set", "n"], r"--set expects key=value"),
        (["--preset", "huge"], r"unknown preset 'huge'"),
    ],
)
def test_bad_config_one_line_exit_2(root, args, pattern):
    res = invoke(root, "run", "toy", *args)
    assert res.exit_code == 2
    message = res.stderr.strip()
    assert len(message.splitlines()) == 1 and message.startswith("error:")
    assert re.search(pattern, message), message
    assert "Traceback" not in res.output
    assert not (root / "runs").exists() or not any((root / "runs").iterdir())


def test_unknown_study_exit_2(root):
    res = invoke(root, "run", "tyo")
    assert res.exit_code == 2 and "did you mean 'toy'" in res.stderr


def test_check_json_and_exit_code(root):
    res = invoke(root, "check", "toy", "--json")
    assert res.exit_code == 0
    (obj,) = json.loads(res.stdout)
    assert obj["verdicts"][0]["passed"] is True
    again = invoke(root, "check", "toy")
    assert again.exit_code == 0 and "reused" in again.stdout


def test_check_fails_when_a_claim_fails(root):
    # Tamper with the stored table: `check` re-judges from the store and must report the failure.
    res = invoke(root, "run", "toy", "--json")
    run_id = json.loads(res.stdout)["run_id"]
    import pandas as pd

    path = root / "runs" / run_id / "tables" / "steps.parquet"
    frame = pd.read_parquet(path)
    frame["mean"] = 10.0
    frame.to_parquet(path, index=False)
    res = invoke(root, "check", "toy")
    assert res.exit_code == 1 and "FAILED" in res.stdout


def test_run_exits_1_when_a_claim_fails(root):
    res = invoke(root, "run", "toy", "--set", "bias=1")
    assert res.exit_code == 1 and "FAILED" in res.stdout


def test_judge_that_raises_is_an_error_and_fails(root):
    res = invoke(root, "run", "toy", "--set", "judge_bug=true", "--json")
    assert res.exit_code == 1
    (v,) = json.loads(res.stdout)["verdicts"]
    assert v["passed"] is False and v["error"] is True and v["detail"].startswith("judge raised KeyError")
    assert json.loads(res.stdout)["counts"] == {
        "passed": 0,
        "departed": 0,
        "failed": 0,
        "known": 0,
        "unexpected": 0,
        "undecided": 0,
        "error": 1,
    }
    table = invoke(root, "run", "toy", "--set", "judge_bug=true")
    assert table.exit_code == 1 and "ERROR" in table.stdout


def test_check_goes_on_past_a_study_that_raises(root):
    res = invoke(root, "check", "toy-broken", "toy")
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    assert "toy-broken: error: RuntimeError: toy-broken always raises" in res.stderr
    assert "1 of 2 studies judged" in res.stdout and "1 study errors (toy-broken)" in res.stdout
    assert "passed" in res.stdout  # toy itself was judged
    as_json = invoke(root, "check", "toy-broken", "toy", "--json")
    assert as_json.exit_code == 1
    broken, toy = json.loads(as_json.stdout)  # stdout is pure JSON; progress went to stderr
    assert broken["status"] == "error" and "always raises" in broken["message"] and toy["status"] == "done"


def test_missing_resource_is_one_line_exit_2(root):
    res = invoke(root, "run", "toy-missing")
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "corpus 'toy' is not available here; install it with `pip install toy-corpus`" in res.stderr
    checked = invoke(root, "check", "toy-missing", "toy")
    assert checked.exit_code == 2 and "missing resource: corpus 'toy'" in checked.stderr
    swept = invoke(root, "sweep", "toy-broken", "--grid", "missing=true")
    assert swept.exit_code == 2 and "pip install toy-corpus" in swept.stderr


def test_unexpected_error_is_one_line_unless_debug(root):
    res = invoke(root, "run", "toy", "--set", "fail=true")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "RuntimeError: toy failure (run again with --debug for the traceback)" in res.stderr
    debug = runner.invoke(app, ["--debug", "run", "toy", "--set", "fail=true", "--store", str(root)])
    assert isinstance(debug.exception, RuntimeError)


def test_set_value_the_preset_never_reads_is_a_warning(root):
    res = invoke(root, "run", "toy", "--set", "big_chunk=10", "--set", "steps=2")
    assert res.exit_code == 0
    assert "warning: --set big_chunk=10 had no effect" in res.stderr and "--set steps" not in res.stderr
    reused = invoke(root, "run", "toy", "--set", "big_chunk=10", "--set", "steps=2")
    assert "reused" in reused.stdout and "big_chunk=10 had no effect" in reused.stderr
    read = invoke(root, "run", "toy", "--set", "n=100000", "--set", "big_chunk=50000", "--set", "steps=1")
    assert read.exit_code == 0 and "warning" not in read.stderr


def test_progress_goes_to_stderr_also_under_json(root):
    res = invoke(root, "run", "toy", "--json", "--set", "steps=2")
    json.loads(res.stdout)
    assert "[toy] toy steps: started (2 steps)" in res.stderr and "[toy] toy steps: done 2/2" in res.stderr


def test_diverged_run_exit_1(root):
    res = invoke(root, "run", "toy", "--set", "nan_at=0")
    assert res.exit_code == 1 and "diverged" in res.stdout and "step 0" in res.stdout


def test_show_and_sweep(root):
    run_id = json.loads(invoke(root, "run", "toy", "--json").stdout)["run_id"]
    shown = invoke(root, "show", run_id[:8], "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["config"]["n"] == 1000
    assert invoke(root, "show", "zzzz").exit_code == 2
    sw = invoke(root, "sweep", "toy", "--grid", "n=100,200", "--grid", "scale=1,2", "--json")
    assert sw.exit_code == 0, sw.output
    obj = json.loads(sw.stdout)
    assert obj["ran"] == 4 and Path(obj["tables"]["steps"]).exists()
    again = json.loads(invoke(root, "sweep", "toy", "--grid", "n=100,200", "--grid", "scale=1,2", "--json").stdout)
    assert again["ran"] == 0 and again["reused"] == 4


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("href", "src"):
                self.links.append(value)


def test_report_pages_link_to_existing_files(root, rmt_quick):
    # Put a real study with figures into this store, then render.
    import shutil

    from theorylab.core.store import Store

    st = Store(root)
    shutil.copytree(rmt_quick.path, st.run_path(rmt_quick.run_id))
    st.mark_running(rmt_quick.run_id, "rmt-diffusion", "quick", "x", 0, rmt_quick.version)
    st.mark_finished(st.load(rmt_quick.run_id))
    invoke(root, "run", "toy")
    res = invoke(root, "report")
    assert res.exit_code == 0
    index = root / "report" / "index.html"
    pages = [index, *sorted((root / "report" / "runs").glob("*.html"))]
    assert len(pages) == 3
    n_images = 0
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text())
        for link in parser.links:
            assert (page.parent / link).resolve().exists(), (page, link)
            n_images += link.endswith(".png")
    assert n_images >= 6
    assert "kappa-fixed-point" in (root / "report" / "runs" / f"{rmt_quick.run_id}.html").read_text()


def test_parallel_check_gives_the_one_at_a_time_verdicts_and_errors(tmp_path):
    names = ["toy-broken", "toy", "toy-missing"]
    one = runner.invoke(app, ["check", *names, "--json", "--workers", "1", "--store", str(tmp_path / "one")])
    two = runner.invoke(app, ["check", *names, "--json", "--workers", "2", "--store", str(tmp_path / "two")])
    assert one.exit_code == two.exit_code == 1  # toy-broken raised: an error beats a missing resource
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    assert [r["study"] for r in b] == names  # the order asked for, whatever order they finished in
    for x, y in zip(a, b):
        assert (x["status"], x["message"], x["counts"]) == (y["status"], y["message"], y["counts"])
        assert [(v["id"], v["passed"], v["measured"]) for v in x["verdicts"]] == [
            (v["id"], v["passed"], v["measured"]) for v in y["verdicts"]
        ]
        assert x["run_id"] == y["run_id"]  # the same runs, stored under the same identities
    assert "3 studies (quick), 2 at a time" in two.stderr and "started toy" in two.stderr
    assert "missing resource: corpus 'toy'" in two.stderr and "toy-broken: error: RuntimeError" in two.stderr
    again = runner.invoke(app, ["check", "toy", "toy-missing", "--workers", "2", "--store", str(tmp_path / "two")])
    assert again.exit_code == 2 and "(reused)" in again.stderr  # a missing resource alone: exit 2; toy reused


def test_check_cpu_queues_every_cpu_preset_together_and_shows_each_claim_once(tmp_path):
    args = ["check", "toy-tiered", "--preset", "cpu", "--json", "--store", str(tmp_path)]
    res = runner.invoke(app, [*args, "--workers", "2"])
    assert res.exit_code == 0, res.output
    assert "checking 2 runs (cpu, cpu-wide), 2 at a time" in res.stderr  # one queue, not a batch per preset
    cpu, wide = json.loads(res.stdout)
    assert (cpu["preset"], wide["preset"]) == ("cpu", "cpu-wide")
    # each claim once, from the run of the preset that decides it (quick's claim rides with cpu)
    assert [v["id"] for v in cpu["verdicts"]] == ["toy-tiered/quick-mean", "toy-tiered/cpu-mean"]
    assert [v["id"] for v in wide["verdicts"]] == ["toy-tiered/wide-mean"]
    assert cpu["verdicts"][1]["passed"] and wide["verdicts"][0]["passed"]
    # side by side: each run started before the other ended (2 s each)
    from theorylab.core.store import Store

    a, b = (Store(tmp_path).load(r["run_id"]).scalars for r in (cpu, wide))
    assert a["started"] < b["ended"] and b["started"] < a["ended"]
    again = runner.invoke(app, [*args, "--workers", "2"])
    assert again.exit_code == 0 and again.stderr.count("(reused)") == 2  # resumable: both runs reused


def test_check_cpu_over_seeds_queues_every_cpu_preset_and_reports_each_preset(tmp_path):
    args = ["check", "toy-tiered", "--preset", "cpu", "--seeds", "0-1", "--json", "--store", str(tmp_path)]
    res = runner.invoke(app, [*args, "--workers", "2"])
    assert res.exit_code == 0, res.output
    # one queue of the four runs (two presets x two seeds), not a batch per preset
    assert "checking 1 study (cpu, cpu-wide) at 2 seeds (0-1): 4 runs, 2 at a time" in res.stderr
    assert "toy-tiered (cpu-wide) seed 1" in res.stderr
    cpu, wide = (json.loads(line) for line in res.stdout.strip().splitlines())
    assert (cpu["preset"], wide["preset"], cpu["seeds"]) == ("cpu", "cpu-wide", [0, 1])
    rates = {c["claim"]: c for c in wide["claims"]}
    assert rates["toy-tiered/wide-mean"]["passed"] == 2
    again = runner.invoke(app, [*args, "--workers", "2"])
    assert again.exit_code == 0 and again.stderr.count("(reused)") == 4  # resumable


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_bad_workers_is_one_line_exit_2(root, value):
    res = invoke(root, "check", "toy", "--workers", value)
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "invalid value for 'workers'" in res.stderr
    assert not (root / "runs").exists() or not any((root / "runs").iterdir())


def test_parallel_check_runs_studies_in_their_own_processes_on_their_share_of_threads(tmp_path):
    import os

    from theorylab.core.cpu import available_cores
    from theorylab.core.errors import RemoteError
    from theorylab.core.runner import check_many
    from theorylab.core.store import Store

    outcomes = check_many(
        ["toy", "toy-grid", "toy-broken", "toy"],
        store=Store(tmp_path),
        workers=2,
        overrides={"toy-broken": {"unpicklable": True}, "toy-grid": {"seeds": 1}},
    )
    toy, grid, broken = outcomes  # the slug named twice is one study
    assert toy.passed and grid.passed
    assert toy.scalars["pid"] != os.getpid() and grid.scalars["jobs_in_run_process"] == 4  # inline jobs, in a worker
    assert toy.scalars["torch_threads"] == max(1, available_cores() // 2)
    # an error pickle cannot rebuild comes back as its name and text, and the pool survives it
    assert isinstance(broken, RemoteError) and broken.type_name == "TwoPartError" and str(broken) == "half and half"


def test_a_worker_that_dies_is_named_once_and_the_other_studies_finish(tmp_path):
    from theorylab.core.errors import WorkerDied
    from theorylab.core.runner import check_many
    from theorylab.core.store import Store

    store = Store(tmp_path)
    outcomes = check_many(
        ["toy-broken", "toy", "toy-grid"],
        store=store,
        workers=2,
        overrides={"toy-broken": {"die": True}, "toy-grid": {"seeds": 1}},
    )
    died, toy, grid = outcomes
    assert toy.passed and grid.passed  # run again alone if the pool broke under them, then in a fresh pool
    assert isinstance(died, WorkerDied) and died.exitcode == -signal.SIGKILL
    assert "toy-broken (seed 0) died (signal 9), again when run alone" in str(died)
    assert not any(store.has(row["run_id"]) for row in store.rows("toy-broken"))  # nothing of it stored


def test_a_known_failure_exits_0_unless_strict_and_an_unexpected_pass_exits_1(root):
    res = invoke(root, "run", "toy-declared", "--json")  # seed 0: known failures only, and a pass with departures
    assert res.exit_code == 0, res.output
    verdicts = {v["id"].split("/")[1]: v for v in json.loads(res.stdout)["verdicts"]}
    assert verdicts["always-fails"]["outcome"] == "known" and verdicts["always-fails"]["known_strict"] is True
    assert verdicts["mean-zero"]["outcome"] == "departed"
    assert verdicts["mean-zero"]["departures"] == ["n 200 (card 1000): fewer draws at quick"]
    assert json.loads(res.stdout)["counts"]["known"] == 1 and json.loads(res.stdout)["counts"]["departed"] == 1
    assert invoke(root, "run", "toy-declared", "--strict").exit_code == 1
    res = invoke(root, "run", "toy-declared", "--set", "strict_fails=false")
    assert res.exit_code == 1 and "PASSED UNEXPECTEDLY" in res.stdout
    # the table marks the departure and lists it under the claim; the card's size is the claim as stated
    res = invoke(root, "run", "toy-declared")
    assert "mean-zero †" in res.stdout and "† departs: n 200 (card 1000)" in res.stdout
    assert "failed (known)" in res.stdout and "declared: known failure on every seed" in res.stdout
    res = invoke(root, "run", "toy-declared", "--set", "n=1000", "--json")
    assert {v["id"]: v["outcome"] for v in json.loads(res.stdout)["verdicts"]}["toy-declared/mean-zero"] == "passed"


def test_check_counts_split_passed_as_stated_from_departures_and_known(root):
    res = invoke(root, "check", "toy-declared", "toy", "--workers", "1")
    assert res.exit_code == 0, res.output
    assert re.search(
        r"3 passed as stated, 1 passed with departures, 1 known failure, 0 failed, 0 passed "
        r"unexpectedly, 0 not decided",
        " ".join(res.stdout.split()),
    )


def test_seeds_report_rates_and_exit_1_on_an_unexplained_failure(root):
    res = invoke(root, "check", "toy-declared", "--seeds", "0-2", "--workers", "1", "--json")
    assert res.exit_code == 0, res.output  # seeds 0-2: known failures only
    obj = json.loads(res.stdout)
    assert obj["seeds"] == [0, 1, 2] and [r["seed"] for r in obj["runs"]] == [0, 1, 2]
    rates = {c["claim"].split("/")[1]: c for c in obj["claims"]}
    assert rates["odd-seeds-fail"]["rate"] == "2/3" and rates["odd-seeds-fail"]["seeds"] == {
        "0": "passed",
        "1": "known",
        "2": "passed",
    }
    lo, hi = rates["odd-seeds-fail"]["wilson95"]
    assert 0.2 < lo < 2 / 3 < hi < 1
    assert rates["mean-zero"]["departures"] == ["n 200 (card 1000): fewer draws at quick"]
    # the README table of one seed's quick verdicts (seed 1 adds the odd-seed known failure)
    row = {
        s: next(
            line
            for line in invoke(root, "list", "--markdown", "--seed", str(s)).stdout.splitlines()
            if line.startswith("| `toy-declared`")
        )
        for s in (0, 1)
    }
    assert "1 known failure," in row[0] and "2 known failures" in row[1], row
    res = invoke(root, "check", "toy-declared", "--seeds", "2-4", "--workers", "1")  # seed 3 fails unexplained
    assert res.exit_code == 1
    text = " ".join(res.stdout.split())
    assert "unexplained toy-declared/unexplained-on-seed-3 2/3: seed 3" in text
    assert "1 with unexplained failures" in text and "✓✗✓" in text
    res = invoke(root, "run", "toy-declared", "--seeds", "0,1", "--strict")  # known failures count
    assert res.exit_code == 1
    assert invoke(root, "check", "toy", "--seeds", "3-1").exit_code == 2  # a bad spec: one line, exit 2


def test_report_carries_departures_known_failures_and_the_seed_grid(root, tmp_path):
    assert invoke(root, "check", "toy-declared", "--seeds", "0-3", "--workers", "1").exit_code == 1
    res = invoke(root, "report", "--out", str(tmp_path / "site"))
    assert res.exit_code == 0, res.output
    index = (tmp_path / "site" / "index.html").read_text()
    assert "passed with departures" in index and "known failures" in index and "Claims over seeds" in index
    (grid,) = (tmp_path / "site" / "seeds").glob("toy-declared-quick-*.html")
    page = grid.read_text()
    assert "3/4" in page and "row-unexplained" in page and "† departs:</span> n 200 (card 1000)" in page
    assert "declared: known failure on 5/10 seeds (1, 3, 5, 7, 9)" in page
    run_pages = list((tmp_path / "site" / "runs").glob("*.html"))
    assert any("† departs:</span> n 200 (card 1000)" in p.read_text() for p in run_pages)
    assert any("pill known" in p.read_text() for p in run_pages)


def test_report_and_show_on_a_missing_store_say_so_and_create_nothing(tmp_path):
    missing = tmp_path / "no" / "such"
    for args in (["report"], ["show", "abc"]):
        res = invoke(missing, *args)
        assert res.exit_code == 2, res.output
        assert "no store at" in res.output
        assert not (tmp_path / "no").exists()


def test_an_interrupted_run_reads_interrupted_in_list_show_and_report(root):
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    with pytest.raises(KeyboardInterrupt):
        execute("toy", overrides={"interrupt": True}, store=Store(root))
    (row,) = Store(root).rows()
    listed = invoke(root, "list", "--json")
    toy = next(r for r in json.loads(listed.stdout) if r["slug"] == "toy")
    assert toy["latest"]["status"] == "interrupted"
    assert "interrupted" in invoke(root, "list").stdout
    shown = invoke(root, "show", row["run_id"][:8])
    assert shown.exit_code == 2 and "was interrupted" in shown.output and "run it again" in shown.output
    assert invoke(root, "report").exit_code == 0
    page = (root / "report" / "index.html").read_text()
    assert ">interrupted</span>" in page and "run failed" not in page


def test_ctrl_c_during_run_says_so_in_one_line_and_exits_130(root):
    """Typer turns Ctrl-C into a silent exit 130; run says what it means for the store."""
    res = invoke(root, "run", "toy", "--set", "interrupt=true")
    assert res.exit_code == 130, res.output
    assert "interrupted (Ctrl-C): nothing half-written is kept" in res.output
    assert "Traceback" not in res.output
