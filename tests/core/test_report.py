"""The static HTML report: totals and one row per study on the index, run pages that fit a
1400-px window (checked in headless Chromium where a Chromium binary exists)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from theorylab.core.plotting import new_figure
from theorylab.core.report import badge, write_report
from theorylab.core.runner import execute
from theorylab.core.store import Store

LONG_TOKEN = "unbroken_" + "x" * 400  # no break opportunity: only overflow-wrap can wrap it
LONG_WORDS = " ".join(["a fairly long claim statement that goes on"] * 12)


def _add_figure(store: Store, run_id: str, name: str, width_in: float) -> Path:
    """Add ``figures/<name>.png`` to a stored run (as ``ctx.figure`` would have written it)."""
    path = store.run_path(run_id)
    fig, ax = new_figure(width=width_in, height=3.0)
    ax.plot([0, 1, 2, 3], [0, 1, 0, 1])
    ax.set_title(name)
    (path / "figures").mkdir(exist_ok=True)
    png = path / "figures" / f"{name}.png"
    fig.savefig(png, dpi=100)
    meta = json.loads((path / "meta.json").read_text())
    meta["figures"] = [*meta.get("figures", []), f"figures/{name}.png"]
    (path / "meta.json").write_text(json.dumps(meta, indent=2))
    return png


def _stretch(store: Store, run_id: str) -> None:
    """Give a stored run the long texts that used to overflow: a claim statement and detail with an
    unbreakable token, and long config values."""
    path = store.run_path(run_id)
    verdicts = json.loads((path / "verdicts.json").read_text())
    verdicts[0]["statement"] = f"{LONG_WORDS} {LONG_TOKEN}"
    verdicts[0]["detail"] = f"{LONG_TOKEN} compared against {LONG_TOKEN}"
    verdicts[0]["measured"] = LONG_TOKEN
    (path / "verdicts.json").write_text(json.dumps(verdicts, indent=2))
    config = json.loads((path / "config.json").read_text())
    config["config"]["long_string"] = LONG_TOKEN
    config["config"]["long_list"] = list(range(300))
    (path / "config.json").write_text(json.dumps(config, indent=2))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A store with two toy runs (the latest fails its claim and carries long texts and a figure
    wider than any window) and a study whose run raised; and its report."""
    root = tmp_path_factory.mktemp("report")
    store = Store(root / "store")
    first = execute("toy", "quick", 0, {"n": 200}, store=store, device="cpu")
    _add_figure(store, first.run_id, "first", 4.0)
    latest = execute("toy", "quick", 1, {"n": 200, "bias": 5.0}, store=store, device="cpu")
    assert latest.verdicts[0].outcome == "failed"
    _add_figure(store, latest.run_id, "main", 6.0)
    _add_figure(store, latest.run_id, "wide", 30.0)  # 3000 px wide
    _stretch(store, latest.run_id)
    with pytest.raises(RuntimeError, match="toy-broken always raises"):
        execute("toy-broken", "quick", 0, store=store, device="cpu")
    index = write_report(store, root / "out")
    return {"root": root, "store": store, "index": index, "first": first.run_id, "latest": latest.run_id}


class _Page(HTMLParser):
    """Element text by id/class and the study rows of an index page."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, dict]] = []
        self.rows: dict[str, dict] = {}
        self.cards: dict[str, str] = {}
        self.families: list[list[str]] = []
        self._card: list[str] | None = None
        self._family: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        row = next((self.rows[t[1]["data-study"]] for t in reversed(self.stack) if "data-study" in t[1]), None)
        self.stack.append((tag, a))
        if tag == "tr" and "data-study" in a:
            self.rows[a["data-study"]] = {"links": [], "imgs": [], "badge": None, "badge_class": "", "text": []}
        elif row is not None:
            if tag == "a":
                row["links"].append(a["href"])
            if tag == "img":
                row["imgs"].append(a)
            if "badge" in classes:
                row["badge_class"] = a["class"]
                row["badge"] = []
        if "card" in classes:
            self._card = []
        if tag == "tr" and "family-row" in classes:
            self._family = []
        if self._family is not None and tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        tag_, a = self.stack.pop()
        classes = (a.get("class") or "").split()
        if "card" in classes and self._card is not None:
            num, *what = " ".join(self._card).split()
            self.cards[" ".join(what)] = num
            self._card = None
        if tag == "td" and self._family is not None and self._cell is not None:
            self._family.append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "tr" and self._family is not None:
            self.families.append(self._family)
            self._family = None

    def handle_data(self, data):
        if self._card is not None and data.strip():
            self._card.append(data.strip())
        if self._cell is not None:
            self._cell.append(data)
        row = next((self.rows[t[1]["data-study"]] for t in reversed(self.stack) if "data-study" in t[1]), None)
        if row is not None:
            row["text"].append(data)
            if row["badge"] is not None and any("badge" in (t[1].get("class") or "").split() for t in self.stack):
                row["badge"].append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text())
    return page


def test_badge_tone_is_the_worst_outcome():
    zero = {"passed": 0, "departed": 0, "failed": 0, "known": 0, "unexpected": 0, "undecided": 0, "error": 0}
    assert badge("done", {**zero, "passed": 9}) == {
        "text": "9/9 passed",
        "tone": "good",
        "detail": "all passed as stated",
    }
    # A pass with departures is a pass, said apart; a declared known failure is its own tone; a pass of a claim
    # declared to fail on every seed is bad.
    assert badge("done", {**zero, "passed": 7, "departed": 2}) == {
        "text": "9/9 passed",
        "tone": "good",
        "detail": "2 passed with departures",
    }
    assert badge("done", {**zero, "passed": 8, "known": 1})["tone"] == "known"
    assert badge("done", {**zero, "passed": 8, "known": 1, "unexpected": 1})["tone"] == "bad"
    assert badge("done", {**zero, "passed": 8, "undecided": 1})["tone"] == "undecided"
    assert badge("done", {**zero, "passed": 8, "undecided": 1, "failed": 1}) == {
        "text": "8/10 passed",
        "tone": "bad",
        "detail": "1 failed, 1 not decided",
    }
    assert badge("done", {**zero, "passed": 8, "error": 1}) == {
        "text": "8/9 passed",
        "tone": "bad",
        "detail": "1 judge error",
    }
    assert badge("diverged", {**zero, "undecided": 2}) == {
        "text": "diverged · 0/2 passed",
        "tone": "bad",
        "detail": "2 not decided",
    }
    assert badge("done", zero)["tone"] == "none"


def test_index_has_totals_and_a_row_per_study(report):
    page = _parse(report["index"])
    html = report["index"].read_text()
    # Totals come first, before the study rows, over the latest run of each study.
    assert html.index('id="totals"') < html.index('id="studies"')
    assert page.cards["passed as stated"] == "0" and page.cards["failed"] == "1"
    assert page.cards["passed with departures"] == "0" and page.cards["known failures"] == "0"
    assert page.cards["not decided"] == "0" and page.cards["error"] == "0"
    run, registered = page.cards["studies run"].split("/")
    assert run == "1" and int(registered) >= 3  # toy, toy-broken, toy-missing, and the built-in studies
    # Per family: the toy studies have none ("other"); its row counts the toy's failed claim.
    other = next(f for f in page.families if f[0] == "other")
    # columns: passed as stated, with departures, failed, known, unexpected, not decided, error
    assert other[1].startswith("1/") and other[2:9] == ["0", "0", "1", "0", "0", "0", "0"]
    assert any(f[1].startswith("0/") for f in page.families)  # built-in families, not run here

    toy = page.rows["toy"]
    text = " ".join(" ".join(toy["text"]).split())
    assert "Toy study for the platform tests" in text and "preset quick · seed 1" in text
    assert "".join(toy["badge"]).strip() == "0/1 passed" and "tone-bad" in toy["badge_class"]
    assert "1 earlier run" in text and f"runs/{report['first']}.html" in toy["links"]
    (thumb,) = toy["imgs"]
    assert thumb["class"] == "thumb" and thumb["src"].endswith("figures/main.png")
    assert (report["index"].parent / thumb["src"]).resolve() == (
        report["store"].run_path(report["latest"]) / "figures" / "main.png"
    ).resolve()
    assert toy["links"][0] == f"runs/{report['latest']}.html"  # the thumbnail links to the run page
    assert re.search(r"\.thumb \{[^}]*max-width: 160px", (report["index"].parent / "style.css").read_text())

    broken = page.rows["toy-broken"]
    text = " ".join(" ".join(broken["text"]).split())
    assert "no complete run" in text and "toy-broken always raises" in text
    assert (
        "".join(broken["badge"]).strip() == "run failed" and "tone-bad" in broken["badge_class"] and not broken["imgs"]
    )
    # Studies with a run come first.
    assert list(page.rows).index("toy") < list(page.rows).index("toy-broken")


def test_report_of_an_empty_store(tmp_path):
    index = write_report(Store(tmp_path / "store"), tmp_path / "out")
    page = _parse(index)
    assert page.cards["passed as stated"] == "0" and page.cards["studies run"].startswith("0/")
    assert (
        "toy" in page.rows and not page.rows["toy"]["imgs"] and "".join(page.rows["toy"]["badge"]).strip() == "not run"
    )
    assert not list((tmp_path / "out" / "runs").glob("*.html"))


def test_every_link_of_the_report_exists(report):
    out = report["index"].parent
    for page in [report["index"], *sorted((out / "runs").glob("*.html"))]:
        for link in re.findall(r'(?:href|src)="([^"]+)"', page.read_text()):
            assert (page.parent / link).resolve().exists(), (page, link)


def test_run_page_wraps_long_texts(report):
    page = (report["index"].parent / "runs" / f"{report['latest']}.html").read_text()
    assert LONG_TOKEN in page and 'class="claims"' in page and "<colgroup>" in page
    assert 'class="pill failed"' in page and "tone-bad" in page
    assert '<pre class="wrap">' in page and 'class="kv"' in page and "long_list" in page
    css = (report["index"].parent / "style.css").read_text()
    assert "table-layout: fixed" in css and "overflow-wrap: anywhere" in css
    assert re.search(r"\.figures img \{[^}]*max-width: 100%", css)


# --- headless Chromium ------------------------------------------------------------------------

_BROWSERS = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
    "chrome-headless-shell",
    "headless_shell",
)


def _chromium() -> str | None:
    """A Chromium binary: ``$THEORYLAB_CHROMIUM``, else the first of the usual names on PATH."""
    named = os.environ.get("THEORYLAB_CHROMIUM")
    if named:
        return named if Path(named).exists() else shutil.which(named)
    return next((found for name in _BROWSERS if (found := shutil.which(name))), None)


# Runs argv[3:] with fd argv[1] as its fd 3 and fd argv[2] as its fd 4 (a shell's `3<&N` takes
# one digit only in some shells).
_EXEC_ON_FDS_3_4 = """import fcntl, os, sys
r, w = (fcntl.fcntl(int(fd), fcntl.F_DUPFD_CLOEXEC, 10) for fd in sys.argv[1:3])
os.dup2(r, 3)
os.dup2(w, 4)
os.execv(sys.argv[3], sys.argv[3:])
"""


class _Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
    JSON messages ending in NUL, read by the browser on fd 3, written on fd 4). No CLI-flag modes
    (``--screenshot``, ``--dump-dom``) whose behaviour differs between builds, no port, no package."""

    def __init__(self, binary: str, profile: Path, timeout: float = 120.0):
        self.timeout = timeout
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        extra = shlex.split(os.environ.get("THEORYLAB_CHROMIUM_ARGS", ""))
        cmd = [
            sys.executable,
            "-c",
            _EXEC_ON_FDS_3_4,
            str(to_browser_r),
            str(from_browser_w),
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--no-first-run",
            "--mute-audio",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "--window-size=1400,900",
            *extra,
            "about:blank",
        ]
        self.log = profile / "chromium.log"  # a file, not a pipe nobody reads while the browser runs
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                cmd,
                pass_fds=(to_browser_r, from_browser_w),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"Chromium did not answer in {self.timeout} s: {self._log_tail()}")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium closed the pipe: {self._log_tail()}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_event(self, method: str, session: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read(deadline))

    def open(self, url: str) -> str:
        """A new 1400x900 tab showing ``url`` once loaded (images included) and fonts ready: its session id."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session,
        )
        self.send("Page.navigate", {"url": url}, session)
        self.wait_event("Page.loadEventFired", session)
        self.evaluate(session, "document.fonts.ready.then(() => true)")
        return session

    def evaluate(self, session: str, expression: str):
        answer = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session
        )
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression[:80]}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def screenshot(self, session: str, png: Path, max_height: int = 8000) -> None:
        """The whole page, 1400 px wide (up to ``max_height`` px high)."""
        height = self.evaluate(session, "document.documentElement.scrollHeight")
        clip = {"x": 0, "y": 0, "width": 1400, "height": min(int(height), max_height), "scale": 1}
        data = self.send(
            "Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True}, session
        )["data"]
        png.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


# The page's width as a browser lays it out: the document's scroll width against the window's,
# the right edge of the widest element outside a box that scrolls on its own (a wide data table,
# a <pre>), and whether every image loaded.
_MEASURE = """(() => {
  const d = document.documentElement;
  let right = 0, widest = null;
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect().right;
    if (r > right && !e.closest('.table-wrap, pre')) { right = r; widest = e.tagName + '.' + e.className; }
  }
  return {scroll: d.scrollWidth, client: d.clientWidth, right: Math.ceil(right), widest: widest,
          images: Array.from(document.images).every(i => i.complete && i.naturalWidth > 0),
          n_images: document.images.length};
})()"""


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory):
    binary = _chromium()
    if binary is None:
        pytest.skip(
            f"no Chromium binary on PATH ({', '.join(_BROWSERS)}) and THEORYLAB_CHROMIUM unset: "
            "the report is not rendered in a browser here"
        )
    try:
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        pytest.skip(f"Chromium at {binary} does not start: {err}")
    if version.returncode != 0:
        pytest.skip(f"Chromium at {binary} does not start: {(version.stderr or version.stdout)[-300:]}")
    browser = _Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    yield browser
    browser.close()


def test_report_renders_in_chromium_without_horizontal_scrolling(report, chromium, tmp_path):
    out = report["index"].parent
    shots = Path(os.environ.get("THEORYLAB_REPORT_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    pages = {
        "index": report["index"],
        "run": out / "runs" / f"{report['latest']}.html",
        "run-first": out / "runs" / f"{report['first']}.html",
    }
    for name, page in pages.items():
        session = chromium.open(page.as_uri())
        png = shots / f"report-{name}.png"
        chromium.screenshot(session, png)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        size = chromium.evaluate(session, _MEASURE)
        print(f"{name}: {png} {size}")
        assert size["client"] >= 1380, size  # the 1400-px window, less a scroll bar where one shows
        assert size["scroll"] <= size["client"], f"{name} scrolls horizontally at 1400 px: {size}"
        assert size["right"] <= size["client"], f"{name}: an element sticks out at 1400 px: {size}"
        assert size["images"] and size["n_images"] >= 1, f"{name}: an image did not load: {size}"


def test_prediction_vs_simulation_draws_one_line_and_marker_set_per_group():
    import pandas as pd

    from theorylab.core.plotting import new_figure, prediction_vs_simulation

    t = pd.DataFrame(
        {
            "n": [4, 1, 2, 1, 2, 4],
            "th": [0.25, 1, 0.5, 2, 1, 0.5],
            "m": [0.3, 1.1, 0.4, 2.1, 0.9, 0.6],
            "e": [0.1] * 6,
            "g": [0, 0, 0, 1, 1, 1],
        }
    )
    fig, ax = new_figure()
    prediction_vs_simulation(ax, t, "n", "th", "m", "e", group="g", label="g={group}", logx=True)
    assert len(ax.lines) >= 2 and list(ax.lines[0].get_xdata()) == [1, 2, 4]  # sorted by x
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels.count("theory") == 1 and "g=0" in labels and "g=1" in labels
    assert ax.get_xscale() == "log"
