"""The run context a study's ``run(cfg, ctx)`` receives: seeds, device, progress, recording."""

from __future__ import annotations

import hashlib
import math
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

import numpy as np
import pandas as pd
import torch

from theorylab.core.errors import ConfigError, Diverged
from theorylab.core.executors import JobExecutor
from theorylab.core.rng import seeded

__all__ = ["Diverged", "RunContext", "resolve_device", "seeded"]

T = TypeVar("T")

PROGRESS_EVERY_S = 30.0  # a line this often on a long stage when stderr is not a terminal


def resolve_device(device: str) -> torch.device:
    """``auto`` picks CUDA when present; asking for ``cuda`` without one is a user error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device 'cuda' requested but no CUDA device is available; use --device cpu or auto")
    if device not in ("cpu", "cuda"):
        raise ConfigError(f"unknown device '{device}'; allowed: auto, cpu, cuda")
    return torch.device(device)


def _stream_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


class RunContext:
    """Everything a study needs besides its config.

    - ``rng(name)`` / ``generator(name)``: independent, reproducible random streams derived from
      the run seed and a stream name (``SeedSequence(seed, spawn_key=(hash(name),))``), so adding
      a stream never changes another one.
    - ``table``, ``scalar``, ``figure``: what the run records; the runner writes them atomically.
    - ``progress``: a rich progress bar over long loops, silent when not on a TTY or under --json.
    - ``check_finite``: marks the run diverged, naming the step, when a value is NaN/inf.
    """

    def __init__(
        self,
        seed: int,
        device: str | torch.device = "cpu",
        workdir: Path | None = None,
        show_progress: bool = False,
        label: str = "",
    ):
        self.run_seed = int(seed)
        self.label = f"[{label}] " if label else ""
        self._started = time.perf_counter()
        self.device = device if isinstance(device, torch.device) else resolve_device(device)
        self.workdir = Path(workdir) if workdir is not None else None
        self.show_progress = show_progress
        self.tables: dict[str, pd.DataFrame] = {}
        self.scalars: dict[str, Any] = {}
        self.figures: list[str] = []
        self.log_lines: list[str] = []
        self.executor: JobExecutor = JobExecutor()  # where map() runs independent jobs (the runner may set Ray)

    # --- randomness -------------------------------------------------------------------------
    def seed_sequence(self, name: str) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.run_seed, spawn_key=(_stream_key(name),))

    def rng(self, name: str) -> np.random.Generator:
        """A NumPy generator for the named stream."""
        return np.random.default_rng(self.seed_sequence(name))

    def seed(self, name: str) -> int:
        """An integer seed (0 <= seed < 2**31) for the named stream: for APIs that take a seed, not a generator."""
        return int(self.rng(name).integers(2**31))

    def map(self, fn: Callable[[Any, Any], T], items: Sequence[Any], description: str = "jobs") -> list[T]:
        """``[fn(item, progress) for item in items]``, in item order, on the run's executor: here, one after another
        (``progress`` is :meth:`progress`), or as Ray tasks (``progress`` is None) with ``--executor ray``. For
        independent grid jobs: ``fn`` must be a module-level function and every item picklable, carrying its
        random streams (generators drawn here from named streams), so that the results, and the tables merged
        from them, are the same wherever the jobs ran."""
        return self.executor.map(fn, items, self.progress, description)

    def generator(self, name: str, device: torch.device | str | None = None) -> torch.Generator:
        """A torch generator for the named stream (on ``device``, CPU by default)."""
        state = self.seed_sequence(name).generate_state(1, dtype=np.uint64)[0]
        gen = torch.Generator(device=device or "cpu")
        gen.manual_seed(int(state) & ((1 << 63) - 1))
        return gen

    # --- recording --------------------------------------------------------------------------
    def table(self, name: str, frame: pd.DataFrame | Mapping[str, Any]) -> pd.DataFrame:
        """Record a tidy table (one row per measurement). Recording the same name twice appends."""
        frame = pd.DataFrame(frame) if not isinstance(frame, pd.DataFrame) else frame
        frame = frame.reset_index(drop=True)
        if name in self.tables:
            frame = pd.concat([self.tables[name], frame], ignore_index=True)
        self.tables[name] = frame
        self._stage(f"table {name} ({len(frame)} rows)")
        return frame

    def scalar(self, name: str, value: Any) -> None:
        if isinstance(value, (np.generic, torch.Tensor)):
            value = value.item()
        self.scalars[name] = value

    def log(self, message: str) -> None:
        self.log_lines.append(message)

    def figure(self, name: str, fig: Any) -> str | None:
        """Save a matplotlib figure as ``figures/<name>.png`` and ``.pdf``; returns the png path."""
        if self.workdir is None:
            _release(fig)
            return None
        folder = self.workdir / "figures"
        folder.mkdir(parents=True, exist_ok=True)
        png = folder / f"{name}.png"
        box = tight_box(fig, FIGURE_DPI)
        fig.savefig(png, dpi=FIGURE_DPI, bbox_inches=box)
        fig.savefig(folder / f"{name}.pdf", bbox_inches=box)
        _release(fig)
        rel = f"figures/{name}.png"
        if rel not in self.figures:
            self.figures.append(rel)
        self._stage(f"figure {name}")
        return str(png)

    # --- progress and health ----------------------------------------------------------------
    def progress(self, items: Iterable[T], description: str = "", total: int | None = None) -> Iterator[T]:
        """Iterate ``items`` while saying where the run is, on stderr (stdout stays the command's
        output, pure JSON under ``--json``): a bar on a terminal; otherwise a line when the stage
        starts, one every ``PROGRESS_EVERY_S`` seconds, and one when it ends."""
        if not self.show_progress:
            yield from items
            return
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, transient=True, console=Console(stderr=True)) as bar:
                task = bar.add_task(f"{self.label}{description}", total=total)
                for item in items:
                    yield item
                    bar.advance(task)
            return
        of = f"/{total}" if total is not None else ""
        started = last = time.perf_counter()
        self.say(f"{description}: started ({total} steps)" if total is not None else f"{description}: started")
        done = 0
        for item in items:
            yield item
            done += 1
            now = time.perf_counter()
            if now - last >= PROGRESS_EVERY_S:
                last = now
                self.say(f"{description}: {done}{of} after {now - started:.0f} s")
        self.say(f"{description}: done {done}{of} in {time.perf_counter() - started:.1f} s")

    def _stage(self, what: str) -> None:
        """A stage finished (a table or figure recorded): a trail on stderr between progress loops."""
        if self.show_progress and not sys.stderr.isatty():
            print(
                f"  {self.label}recorded {what} at {time.perf_counter() - self._started:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    def say(self, message: str) -> None:
        """One progress line on stderr (when this run shows progress) and in the run's log."""
        self.log_lines.append(message)
        if self.show_progress:
            print(f"  {self.label}{message}", file=sys.stderr, flush=True)

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Record the block's wall time as the scalar ``<name>_s``: where a run's time goes (e.g. against the quick
        budget), readable in ``scalars.json`` and ``theorylab show``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.scalar(f"{name}_s", time.perf_counter() - start)

    def autocast(self, precision: str) -> Any:
        """``with ctx.autocast(cfg.precision):`` runs the block at that precision on the run's device
        (:func:`theorylab.core.precision.autocast`)."""
        from theorylab.core.precision import autocast

        return autocast(precision, self.device)

    def check_finite(self, what: str, value: Any, step: int | None = None) -> None:
        """Raise :class:`Diverged` when ``value`` (number, array or tensor) holds NaN or inf."""
        if isinstance(value, torch.Tensor):
            ok = bool(torch.isfinite(value).all())
        elif isinstance(value, (float, int)):
            ok = math.isfinite(value)
        else:
            ok = bool(np.isfinite(np.asarray(value)).all())
        if not ok:
            raise Diverged(what, step)


FIGURE_DPI = 120


def tight_box(fig: Any, dpi: float) -> Any:
    """The figure's tight bounding box in inches, padded as ``savefig`` pads it, found once for every format.

    ``savefig(bbox_inches="tight")`` draws the whole figure only to measure it, so a png and a pdf cost four
    draws; measuring with a bare Agg renderer at the png's dpi gives the same box (the png is pixel-identical,
    tested) without a draw, and leaves the figure's own canvas alone."""
    from matplotlib import rcParams
    from matplotlib.backends.backend_agg import RendererAgg

    old = fig.dpi
    fig.dpi = dpi
    try:
        width, height = fig.bbox.size
        box = fig.get_tightbbox(RendererAgg(int(width), int(height), dpi))
    finally:
        fig.dpi = old
    return box.padded(rcParams["savefig.pad_inches"])


def _release(fig: Any) -> None:
    """Drop a figure that pyplot may be tracking (a user's own ``plt.figure()``); figures from
    :func:`theorylab.core.plotting.new_figure` are plain and need nothing."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(fig)
