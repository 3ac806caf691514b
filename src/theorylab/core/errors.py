"""The exceptions the faces turn into one line and an exit code; this module imports nothing heavy,
so ``data``, ``nn`` and ``train`` may raise them without pulling in the run machinery.

- :class:`ConfigError` (exit 2): a user mistake in a config, a slug, a preset or a run id.
- :class:`MissingResource` (exit 2): an optional resource (a corpus, an extra, a local model or
  data folder) is not on this machine; the message names it and the command that provides it.
- :class:`Diverged`: a watched quantity became NaN/inf; the run is stored with status ``diverged``.
- :class:`Undecided`: raised inside a judge when the run cannot decide the claim (the config skips
  the part the claim needs); the verdict is "not decided" with the reason, never an error.
- :class:`JudgedNaN`: raised inside a judge when a quantity it compares is NaN; the claim fails with
  the quantity and rows named (a NaN never passes).
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A user-facing configuration mistake: one line, naming the field and what is allowed."""


def _rebuild_error(cls: type, args: tuple, state: dict) -> BaseException:
    """An exception of ``cls`` with ``args`` and attributes ``state``, without calling its ``__init__`` (whose
    signature need not match ``args``): how our errors cross a process boundary."""
    error = cls.__new__(cls, *args)
    BaseException.__init__(error, *args)
    error.__dict__.update(state)
    return error


class RemoteError(RuntimeError):
    """An error raised in a worker process that could not be sent back as itself: its type's name and message."""

    def __init__(self, type_name: str, message: str):
        self.type_name = type_name
        super().__init__(message)

    def __reduce__(self):
        return type(self), (self.type_name, str(self))


class WorkerDied(RuntimeError):
    """The process running a study ended without an answer (a signal: the out-of-memory killer, ``kill``). Raised
    for the study whose process died when it ran alone, so that the message names the one that did."""

    def __init__(self, slug: str, seed: int, exitcode: int | None = None, preset: str = "quick"):
        self.slug, self.seed, self.exitcode, self.preset = slug, seed, exitcode, preset
        how = f"signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
        which = f"seed {seed}" if preset == "quick" else f"{preset}, seed {seed}"
        again = f"theorylab run {slug}{'' if preset == 'quick' else ' --preset ' + preset} --seed {seed}"
        super().__init__(
            f"the process running {slug} ({which}) died ({how if exitcode is not None else 'no exit code'}), "
            f"again when run alone: killed, or out of memory? Nothing of it was stored; see `{again}` for its "
            f"memory estimate and progress"
        )

    def __reduce__(self):
        return type(self), (self.slug, self.seed, self.exitcode, self.preset)


class MissingResource(RuntimeError):
    """An optional resource is missing here. ``what`` names it, ``fix`` is the command that provides it."""

    def __init__(self, what: str, fix: str):
        self.what = what
        self.fix = fix
        super().__init__(f"{what} is not available here; {fix}")

    def __reduce__(self):  # rebuilt as it is (subclasses too) when a process pool sends it back
        return _rebuild_error, (type(self), self.args, self.__dict__)


class Diverged(RuntimeError):
    """Raised inside a run when a watched quantity becomes NaN or infinite."""

    def __init__(self, what: str, step: int | None):
        self.what = what
        self.step = step
        at = f" at step {step}" if step is not None else ""
        super().__init__(f"{what} is not finite{at}")

    def __reduce__(self):
        return _rebuild_error, (type(self), self.args, self.__dict__)


class Undecided(Exception):
    """A judge cannot decide its claim on this run; the message is the reason (one line)."""


class JudgedNaN(Exception):
    """A quantity a judge compares is NaN (or a judged column holds NaN rows): the claim fails, and the
    message names the quantity and the rows. Raised by the ``Judgement`` helpers, never a pass."""


class MissingExtra(MissingResource, ImportError):
    """An optional dependency (a pip extra) is not installed; still an ImportError for callers that
    fall back without it."""

    def __init__(self, what: str, extra: str):
        MissingResource.__init__(self, what, f'install it with `pip install "theorylab[{extra}]"`')
