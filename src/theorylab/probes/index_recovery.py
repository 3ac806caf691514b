"""How much of a Gaussian index model's hidden space an estimator recovers, one experiment cell at a time.

Each function draws (or takes) samples of ``y = g(W^T x) + noise``
(:class:`theorylab.data.index_models.IndexModel`), fits index-space estimators
(:mod:`theorylab.theory.sdr`, :mod:`theorylab.theory.generative`) and measures the estimate against
the true ``W`` with :mod:`theorylab.probes.subspace` (capture ``|P u_i|^2`` per direction, or the
mean overlap). Survey: Bruna & Hsu, arXiv 2504.05426; generative leap: Damian, Lee, Bruna,
arXiv 2506.05500.

Sweeps take ``rng_for(key)``, a factory of independent NumPy generators, one per cell, keyed by a
string of the cell's coordinates (documented per function), so that every cell is reproducible on
its own and a caller can prefix the key with its own stream name.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from theorylab.data.index_models import IndexModel, Link
from theorylab.probes.subspace import captures, overlap, principal_angles
from theorylab.theory.generative import (
    SequentialLeap,
    TransformedPHD,
    index_space,
    log_abs,
    top_subspace,
    u_and_v_k3_matrices,
)
from theorylab.theory.sdr import SAVE, SIR, SURVEY_SEES

RngFor = Callable[[str], np.random.Generator]
Progress = Callable[[Iterable, str], Iterable]


def nested_captures(
    model: IndexModel, rng: np.random.Generator, alphas: Sequence[float], estimators: Sequence[str], n_slices: int
) -> list[dict]:
    """ "More data" as the same experiment with more samples: one sample of the largest ``n = alpha d``
    from ``rng``; each ``n/d`` in ``alphas`` is fitted on its first ``alpha d`` rows (gains are paired).
    Every estimator (names of :func:`theorylab.theory.generative.index_space`) fits ``r`` directions.
    Rows: alpha, estimator, direction (1-based), capture of that true direction."""
    d, r = model.d, model.link.r
    X_all, y_all, _ = model.sample(int(round(max(alphas) * d)), rng)
    rows = []
    for alpha in alphas:
        n = int(round(alpha * d))
        X, y = X_all[:n], y_all[:n]
        for est in estimators:
            for i, c in enumerate(captures(index_space(est, r, X, y, n_slices), model.W)):
                rows.append(dict(alpha=alpha, estimator=est, direction=i + 1, capture=float(c)))
    return rows


def battery_captures(
    d: int,
    links: Sequence[str],
    seeds: int,
    alphas: Sequence[float],
    estimators: Sequence[str],
    n_slices: int,
    rng_for: RngFor,
    noise: float = 0.0,
    sees: Mapping[tuple[str, str], Sequence[bool]] = SURVEY_SEES,
    progress: Progress | None = None,
) -> list[dict]:
    """The survey's battery: per link and seed (``rng_for(f"{link}/{seed}")``) one model with a random
    ``W`` and :func:`nested_captures`. Rows: link, alpha, seed, estimator, direction, capture, predicted
    (``sees[(link, estimator)][direction - 1]``: whether the population matrix sees that direction)."""
    rows = []
    for link in links if progress is None else progress(links, "battery"):
        for seed in range(seeds):
            rng = rng_for(f"{link}/{seed}")
            model = IndexModel.make(d, link, rng, noise=noise)
            for r in nested_captures(model, rng, alphas, estimators, n_slices):
                rows.append(
                    {
                        "link": link,
                        "alpha": r["alpha"],
                        "seed": seed,
                        **r,
                        "predicted": sees[(link, r["estimator"])][r["direction"] - 1],
                    }
                )
    return rows


def capture_sweep(
    link: str | Link,
    estimators: Sequence[str],
    dims: Sequence[int],
    alphas: Sequence[float],
    seeds: int,
    n_slices: int,
    rng_for: RngFor,
    clip: float = 3.0,
    noise: float = 0.0,
    device: str | None = None,
    progress: Progress | None = None,
    description: str = "capture sweep",
) -> list[dict]:
    """Proportional-limit sweep of a single-index link: for each ``d``, ``alpha = n/d`` and seed
    (``rng_for(f"{d}/{alpha}/{seed}")``), :func:`first_direction_captures` of every estimator on one
    sample. Rows: d, alpha, seed, estimator, capture."""
    rows = []
    for d in dims if progress is None else progress(dims, description):
        for alpha in alphas:
            for seed in range(seeds):
                caps = first_direction_captures(
                    d, link, alpha, rng_for(f"{d}/{alpha}/{seed}"), estimators, n_slices, clip, noise, device
                )
                rows += [dict(d=d, alpha=alpha, seed=seed, estimator=est, capture=c) for est, c in caps.items()]
    return rows


def first_direction_captures(
    d: int,
    link: str | Link,
    alpha: float,
    rng: np.random.Generator,
    estimators: Sequence[str],
    n_slices: int,
    clip: float = 3.0,
    noise: float = 0.0,
    device: str | None = None,
) -> dict[str, float]:
    """Draw a model (random ``W``) and ``max(round(alpha d), n_slices)`` samples from ``rng``; for each
    estimator, the capture of ``u_1`` by its top direction (a single-index link)."""
    model = IndexModel.make(d, link, rng, noise=noise)
    X, y, _ = model.sample(max(int(round(alpha * d)), n_slices), rng)
    return {est: float(captures(index_space(est, 1, X, y, n_slices, clip, device), model.W)[0]) for est in estimators}


def statsmodels_angles(X: np.ndarray, y: np.ndarray, n_slices: int, k: int = 2) -> list[dict]:
    """Largest principal angle between our whitened SIR/SAVE (``k`` directions) and statsmodels'
    ``SlicedInverseReg``/``SAVE`` with the same slicing (``len(y) // n_slices`` observations per slice).
    Raises ImportError without statsmodels."""
    from statsmodels.regression import dimred  # noqa: I001 - optional dependency

    slice_n = len(y) // n_slices  # statsmodels slices by observations per slice
    rows = []
    for name, ours, theirs in (("SIR", SIR, dimred.SlicedInverseReg), ("SAVE", SAVE, dimred.SAVE)):
        mine = ours(k, n_slices).fit(X, y).components_.T
        ref = theirs(y, X).fit(slice_n=slice_n).params[:, :k]
        rows.append(dict(method=name, max_angle=float(principal_angles(mine, ref).max())))
    return rows


def sequential_recovery(model: IndexModel, X: np.ndarray, y: np.ndarray, seed: int, block: int = 2048) -> dict:
    """The agnostic :class:`~theorylab.theory.generative.SequentialLeap` (orders 1-3, ``r + 1`` directions
    at most, 2 permutation nulls): the leap it needed (-1: none), the directions it found, their overlap
    with ``W``, the link's known leap and the stages as ``k=order:directions``."""
    link = model.link
    est = SequentialLeap(max_order=3, r_max=link.r + 1, n_null=2, seed=seed, block=block).fit(X, y)
    found = est.components_.shape[0]
    return dict(
        leap=est.leap_ if est.leap_ is not None else -1,
        found=found,
        r=link.r,
        overlap=overlap(est.components_.T, model.W) if found else 0.0,
        known=link.generative_exponent,
        stages=";".join(f"k={k}:{m}" for k, m in est.stages_),
    )


def k3_overlaps(
    model: IndexModel, X: np.ndarray, y: np.ndarray, block: int = 2048, device: str | None = None
) -> dict[str, float]:
    """Overlap with ``W`` of the top-``r`` eigenvectors of the order-3 U-statistic (``"U"``) and
    V-statistic (``"V"``) on the centred labels (one pass over the pairs)."""
    u, v = u_and_v_k3_matrices(X, y - y.mean(), block=block, device=device)
    return {stat: overlap(top_subspace(m, model.link.r), model.W) for stat, m in (("U", u), ("V", v))}


def order2_overlap(
    model: IndexModel, X: np.ndarray, y: np.ndarray, transform: Callable[[np.ndarray], np.ndarray] = log_abs
) -> float:
    """Overlap with ``W`` of the order-2 estimator (pHd on ``transform(y)``) with ``r`` directions."""
    return overlap(TransformedPHD(model.link.r, transform=transform).fit(X, y).components_.T, model.W)
