"""theorylab: deep-learning theory papers as executable, checked studies.

Python API::

    import theorylab as tl
    res = tl.run("rmt-diffusion", preset="quick", seed=0, n_draws=400)
    res.tables["mean_equiv"], res.scalars, res.verdicts, res.figures
    tl.check()              # run (or reuse) every study's quick preset and judge its claims
    tl.load(res.run_id)     # a stored run
    tl.all_studies()        # slug -> Study
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from theorylab.core.version import package_version

if TYPE_CHECKING:
    from theorylab.core.result import Result
    from theorylab.core.store import Store
    from theorylab.core.study import Study

__version__ = package_version()

# The built-in studies' package: `core` imports it from a source tree that has no installed entry points (an
# installed tree lists each study under the "theorylab.studies" entry-point group). `core` names no study itself.
BUILTIN_STUDY_PACKAGES = ("theorylab.studies",)

# `import theorylab.nn` (or `.theory`, `.data`) runs this file first: it stays light (no pandas, no
# study, no matplotlib); the run machinery loads on first use.
_LAZY = {"Result": "theorylab.core.result", "Store": "theorylab.core.store", "Study": "theorylab.core.study"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'theorylab' has no attribute '{name}'")


def all_studies() -> Mapping[str, Study]:
    """Every registered study, by slug (built-in and plugins; loaded on first use)."""
    from theorylab.core.study import all_studies as registered

    return registered()


def run(
    slug: str,
    preset: str = "quick",
    seed: int = 0,
    *,
    store: str | Store | None = None,
    force: bool = False,
    device: str = "auto",
    executor: str = "inline",
    address: str | None = None,
    **overrides: Any,
) -> Result:
    """Run (or reuse from the store) one study and return its judged :class:`Result`. ``executor="ray"`` runs the
    study's independent grid jobs as Ray tasks (locally, or on the cluster at ``address``): same tables, same
    verdicts."""
    from theorylab.core.context import resolve_device
    from theorylab.core.executors import make_executor
    from theorylab.core.runner import execute

    jobs = make_executor(executor, address, gpu=resolve_device(device).type == "cuda")
    return execute(slug, preset, seed, overrides, store=_store(store), force=force, device=device, executor=jobs)


def check(
    slugs: Iterable[str] | str | None = None,
    preset: str = "quick",
    seed: int = 0,
    *,
    store: str | Store | None = None,
    force: bool = False,
    device: str = "auto",
    workers: int | str = 1,
) -> list[Result]:
    """Run (or reuse) each study and re-judge every claim from the stored results. ``workers``: studies side by side
    in spawned processes ('auto': one per core; see :func:`theorylab.core.runner.check_many` for the
    ``__main__`` guard a script then needs); a study that raises raises here, after the others have finished (use
    ``check_many`` to get every outcome)."""
    from theorylab.core.runner import check_many

    names = [slugs] if isinstance(slugs, str) else list(slugs or all_studies())
    outcomes = check_many(names, preset, seed, store=_store(store), force=force, device=device, workers=workers)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes  # type: ignore[return-value]


def sweep(
    slug: str,
    grid: Mapping[str, Any],
    *,
    preset: str = "quick",
    seed: int = 0,
    executor: str = "inline",
    address: str | None = None,
    store: str | Store | None = None,
    **overrides: Any,
):
    """Run a product grid over config fields; returns a SweepResult with tidy tables."""
    from theorylab.core.sweep import run_sweep

    grid = {k: list(v) if isinstance(v, (list, tuple)) else [v] for k, v in grid.items()}
    return run_sweep(
        slug,
        grid,
        preset=preset,
        seed=seed,
        overrides=overrides,
        executor=executor,
        address=address,
        store=_store(store),
    )


def load(run_id: str, store: str | Store | None = None) -> Result:
    """Load a stored run by id (or unique prefix)."""
    return _store(store).load(run_id)


def _store(store: "str | Store | None") -> "Store":
    from theorylab.core.store import Store

    return store if isinstance(store, Store) else Store(store)


__all__ = ["Result", "Store", "Study", "__version__", "all_studies", "check", "load", "run", "sweep"]
