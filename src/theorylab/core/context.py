"""The run context a study's ``run(cfg, ctx)`` receives: seeds, device, progress, recording."""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
import math
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, TypeVar

import numpy as np
import pandas as pd
import torch

T = TypeVar("T")


class Diverged(RuntimeError):
    """Raised inside a run when a watched quantity becomes NaN or infinite."""

    def __init__(self, what: str, step: int | None):
        self.what = what
        self.step = step
        at = f" at step {step}" if step is not None else ""
        super().__init__(f"{what} is not finite{at}")


def resolve_device(device: str) -> torch.device:
    """``auto`` picks CUDA when present; asking for ``cuda`` without one is a user error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        from theorylab.core.config import ConfigError

        raise ConfigError("device 'cuda' requested but no CUDA device is available; use --device cpu or auto")
    if device not in ("cpu", "cuda"):
        from theorylab.core.config import ConfigError

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

    def __init__(self, seed: int, device: str | torch.device = "cpu", workdir: Path | None = None, show_progress: bool = False):
        self.seed = int(seed)
        self.device = device if isinstance(device, torch.device) else resolve_device(device)
        self.workdir = Path(workdir) if workdir is not None else None
        self.show_progress = show_progress
        self.tables: dict[str, pd.DataFrame] = {}
        self.scalars: dict[str, Any] = {}
        self.figures: list[str] = []
        self.log_lines: list[str] = []

    # --- randomness -------------------------------------------------------------------------
    def seed_sequence(self, name: str) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.seed, spawn_key=(_stream_key(name),))

    def rng(self, name: str) -> np.random.Generator:
        """A NumPy generator for the named stream."""
        return np.random.default_rng(self.seed_sequence(name))

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
        return frame

    def scalar(self, name: str, value: Any) -> None:
        if isinstance(value, (np.generic, torch.Tensor)):
            value = value.item()
        self.scalars[name] = value

    def log(self, message: str) -> None:
        self.log_lines.append(message)

    def figure(self, name: str, fig: Any) -> str | None:
        """Save a matplotlib figure as ``figures/<name>.png`` and ``.pdf``; returns the png path."""
        import matplotlib.pyplot as plt

        if self.workdir is None:
            plt.close(fig)
            return None
        folder = self.workdir / "figures"
        folder.mkdir(parents=True, exist_ok=True)
        png = folder / f"{name}.png"
        fig.savefig(png, dpi=120, bbox_inches="tight")
        fig.savefig(folder / f"{name}.pdf", bbox_inches="tight")
        plt.close(fig)
        rel = f"figures/{name}.png"
        if rel not in self.figures:
            self.figures.append(rel)
        return str(png)

    # --- progress and health ----------------------------------------------------------------
    def progress(self, items: Iterable[T], description: str = "", total: int | None = None) -> Iterator[T]:
        if not self.show_progress or not sys.stderr.isatty():
            yield from items
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, transient=True) as bar:
            task = bar.add_task(description, total=total)
            for item in items:
                yield item
                bar.advance(task)

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


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block (typically a module's initialisation) with torch's CPU RNG seeded to ``seed``,
    restoring the caller's RNG state on exit: reproducible init that neither reads nor moves the
    global stream."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
