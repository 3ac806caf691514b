"""The run store: atomic run directories plus an SQLite (WAL) index.

Layout under the root (``./runs``, ``--store`` or ``THEORYLAB_STORE``)::

    index.sqlite               one row per run: study, preset, hash, seed, status, times, verdicts
    runs/<run_id>/             complete runs only (written in tmp/, then renamed)
        config.json  meta.json  scalars.json  verdicts.json  log.txt
        tables/<name>.parquet  figures/<name>.png|pdf
    tmp/                       runs in progress (<run_id>.<host>.<pid>.<rand>); a killed run's folder is
                               removed the next time a store opens, never one of a live process
    sweeps/<sweep_id>/         one tidy Parquet table per study table, grid values as columns

A run directory exists under ``runs/`` if and only if the run completed: the rename from
``tmp/`` is the commit point.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from theorylab.core.result import Result

ENV_VAR = "THEORYLAB_STORE"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    study TEXT NOT NULL,
    preset TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL,
    started REAL,
    finished REAL,
    wall_s REAL,
    version TEXT,
    n_passed INTEGER DEFAULT 0,
    n_failed INTEGER DEFAULT 0,
    n_undecided INTEGER DEFAULT 0,
    n_error INTEGER DEFAULT 0,
    n_departed INTEGER DEFAULT 0,
    n_known INTEGER DEFAULT 0,
    n_unexpected INTEGER DEFAULT 0,
    message TEXT DEFAULT ''
);
CREATE INDEX IF NOT EXISTS runs_by_study ON runs (study, finished);
"""


def default_root() -> Path:
    return Path(os.environ.get(ENV_VAR, "runs"))


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def run_identity(study: str, config: dict[str, Any], seed: int, version: str) -> tuple[str, str]:
    """(run_id, config_hash): the run id hashes study, full config, seed and library version."""
    config_hash = hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]
    run_id = hashlib.sha256(canonical_json([study, config, int(seed), version]).encode()).hexdigest()[:16]
    return run_id, config_hash


class Store:
    def __init__(self, root: str | os.PathLike[str] | None = None, create: bool = True):
        """Open the store at ``root`` (default :func:`default_root`), creating it unless ``create`` is False:
        then a folder that holds no store is a :class:`ConfigError` and nothing is written (commands that only
        read a store, such as ``report`` and ``show``, must not leave an empty one behind on a typo)."""
        self.root = Path(root) if root is not None else default_root()
        if not create and not (self.root / "index.sqlite").is_file():
            from theorylab.core.config import ConfigError

            raise ConfigError(
                f"no store at {self.root}: nothing has run there (a run writes one: "
                f"theorylab run SLUG --store {self.root})"
            )
        self.runs_dir = self.root / "runs"
        self.tmp_dir = self.root / "tmp"
        self.sweeps_dir = self.root / "sweeps"
        for folder in (self.runs_dir, self.tmp_dir, self.sweeps_dir):
            folder.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.executescript(_SCHEMA)
            columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
            for column in ("n_error", "n_departed", "n_known", "n_unexpected"):  # stores written before these
                if column not in columns:  # outcomes were counted apart
                    db.execute(f"ALTER TABLE runs ADD COLUMN {column} INTEGER DEFAULT 0")
        self.clean_stale_workdirs()

    # --- index ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.root / "index.sqlite", timeout=60.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=60000")
            db.row_factory = sqlite3.Row
            yield db
        finally:
            db.close()

    def mark_running(self, run_id: str, study: str, preset: str, config_hash: str, seed: int, version: str) -> None:
        with self._db() as db:
            db.execute(
                "INSERT INTO runs (run_id, study, preset, config_hash, seed, status, started, version) "
                "VALUES (?, ?, ?, ?, ?, 'running', ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET status='running', started=excluded.started, finished=NULL, "
                "message=''",
                (run_id, study, preset, config_hash, seed, time.time(), version),
            )

    def mark_finished(self, result: Result) -> None:
        counts = result.counts()
        with self._db() as db:
            db.execute(
                "INSERT INTO runs (run_id, study, preset, config_hash, seed, status, started, finished, wall_s, "
                "version, n_passed, n_failed, n_undecided, n_error, n_departed, n_known, n_unexpected, message) "
                "VALUES (?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET status=excluded.status, finished=excluded.finished, "
                "wall_s=excluded.wall_s, n_passed=excluded.n_passed, n_failed=excluded.n_failed, "
                "n_undecided=excluded.n_undecided, n_error=excluded.n_error, n_departed=excluded.n_departed, "
                "n_known=excluded.n_known, n_unexpected=excluded.n_unexpected, message=excluded.message",
                (
                    result.run_id,
                    result.study,
                    result.preset,
                    result.seed,
                    result.status,
                    time.time() - result.wall_s,
                    time.time(),
                    result.wall_s,
                    result.version,
                    counts["passed"],
                    counts["failed"],
                    counts["undecided"],
                    counts["error"],
                    counts["departed"],
                    counts["known"],
                    counts["unexpected"],
                    result.message,
                ),
            )

    def mark_failed(self, run_id: str, message: str, status: str = "failed") -> None:
        """Record that a run did not complete: ``failed`` (it raised) or ``interrupted`` (Ctrl-C, a kill, a
        terminated worker): nothing of it is stored either way."""
        if status not in ("failed", "interrupted"):
            raise ValueError(f"status {status!r}: allowed failed, interrupted")
        with self._db() as db:
            db.execute(
                "UPDATE runs SET status=?, finished=?, message=? WHERE run_id=?", (status, time.time(), message, run_id)
            )

    def rows(self, study: str | None = None) -> list[dict[str, Any]]:
        """Index rows, newest first."""
        with self._db() as db:
            if study is None:
                cur = db.execute("SELECT * FROM runs ORDER BY COALESCE(finished, started) DESC")
            else:
                cur = db.execute("SELECT * FROM runs WHERE study=? ORDER BY COALESCE(finished, started) DESC", (study,))
            return [dict(r) for r in cur.fetchall()]

    def row(self, run_id: str) -> dict[str, Any] | None:
        with self._db() as db:
            r = db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
            return dict(r) if r else None

    # --- run directories --------------------------------------------------------------------
    def run_path(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def has(self, run_id: str) -> bool:
        return (self.run_path(run_id) / "meta.json").exists()

    def load(self, run_id: str) -> Result:
        """Load a complete run by id or unique id prefix."""
        path = self.run_path(self.resolve(run_id))
        return Result.load(path)

    def resolve(self, run_id: str) -> str:
        if self.has(run_id):
            return run_id
        matches = sorted(p.name for p in self.runs_dir.glob(f"{run_id}*") if (p / "meta.json").exists())
        if len(matches) == 1:
            return matches[0]
        from theorylab.core.config import ConfigError

        if not matches:
            raise ConfigError(f"no complete run '{run_id}' in store {self.root}")
        raise ConfigError(f"run id prefix '{run_id}' is ambiguous: {', '.join(matches[:5])}")

    def new_workdir(self, run_id: str) -> Path:
        """A fresh work folder ``tmp/<run_id>.<host>.<pid>.<rand>``: the host and pid let a later
        :meth:`clean_stale_workdirs` tell a dead run's debris from a live run's work."""
        path = self.tmp_dir / f"{run_id}.{_HOST}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        path.mkdir(parents=True)
        return path

    def commit(self, workdir: Path, run_id: str, replace: bool = False) -> Path:
        """Atomically publish a finished work directory as ``runs/<run_id>``.

        If another process published the same run first, its result is kept and ours dropped
        (identical inputs give identical results), unless ``replace`` (``--force``).
        """
        target = self.run_path(run_id)
        if replace and target.exists():
            trash = self.tmp_dir / f"{run_id}.old.{uuid.uuid4().hex[:8]}"
            with contextlib.suppress(FileNotFoundError):
                os.rename(target, trash)
                shutil.rmtree(trash, ignore_errors=True)
        try:
            os.rename(workdir, target)
        except OSError:
            if not self.has(run_id):
                raise
            shutil.rmtree(workdir, ignore_errors=True)
        return target

    def discard(self, workdir: Path) -> None:
        shutil.rmtree(workdir, ignore_errors=True)

    def write_json_atomic(self, path: Path, obj: Any) -> None:
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        tmp.write_text(json.dumps(obj, indent=2, default=str))
        os.replace(tmp, path)

    def clean_stale_workdirs(self) -> list[str]:
        """Remove the work folders of runs whose process is gone (killed, crashed), on this host
        only: a folder of a live process, or of another host sharing the store (a Ray cluster on
        a network file system), is never touched. The index row of such a run, still
        ``running``, becomes ``interrupted`` with the reason. Called whenever a store opens; returns
        the names removed."""
        removed = []
        for path in self.tmp_dir.iterdir():
            parts = path.name.split(".")
            if len(parts) != 4 or parts[1] != _HOST or not parts[2].isdigit() or _pid_alive(int(parts[2])):
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
            with self._db() as db:
                db.execute(
                    "UPDATE runs SET status='interrupted', finished=?, message=? WHERE run_id=? AND status='running'",
                    (time.time(), f"killed: process {parts[2]} ended before the run completed", parts[0]),
                )
        return removed


_HOST = socket.gethostname().replace(".", "-") or "host"


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists here (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    try:  # Linux: a killed child not yet reaped by its parent is a zombie, not a live run
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True
