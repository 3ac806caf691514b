"""Linear probes of a model's activations, once or over training checkpoints.

The probing practice of the truth-probe literature (Azaria & Mitchell 2023; Burns et al. 2022, CCS; Marks & Tegmark
2024, *The Geometry of Truth*) as used by Ravfogel, Yehudai, Linzen, Bruna & Bietti (arXiv 2510.15804, Sec. 4):
a logistic regression with balanced class weights is fitted on one split of the activations at a site and scored by
balanced accuracy on the other.

- :func:`linear_probe`: one probe (scikit-learn ``LogisticRegression``; features standardised on the fit split, an
  affine map that leaves linear separability unchanged but makes the L2 penalty scale-free, so sites of very
  different norms, e.g. before and after a LayerNorm, are probed on equal terms).
- :func:`probe_sites`: one probe per site of one checkpoint.
- :func:`probe_over_training`: :func:`probe_sites` over checkpoints, as tidy rows
  ``{"step", "site", "metric", "value"}`` (a list of dicts; no pandas in the kit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np


def _numpy(a: Any) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().double().numpy()
    return np.asarray(a)


def _split(split: int | float | tuple[Sequence[int], Sequence[int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(split, tuple):
        fit, score = (np.asarray(s, dtype=int) for s in split)
    else:
        k = int(round(split * n)) if isinstance(split, float) else int(split)
        if not 0 < k < n:
            raise ValueError(f"'split' must leave rows on both sides: got {split} for {n} rows")
        fit, score = np.arange(k), np.arange(k, n)
    if len(fit) == 0 or len(score) == 0:
        raise ValueError("'split' must give non-empty fit and score rows")
    return fit, score


def balanced_accuracy(labels: np.ndarray, predicted: np.ndarray) -> float:
    """Mean over the classes present in ``labels`` of the recall of that class."""
    labels, predicted = np.asarray(labels), np.asarray(predicted)
    return float(np.mean([np.mean(predicted[labels == c] == c) for c in np.unique(labels)]))


@dataclass(frozen=True)
class ProbeResult:
    """``score``: balanced (or plain) accuracy on the held-out rows; ``fit_score`` on the fit rows; ``coef`` and
    ``intercept`` in the original (unstandardised) feature coordinates, so ``features @ coef + intercept > 0``
    reproduces the probe's decisions."""

    score: float
    fit_score: float
    coef: np.ndarray
    intercept: float


def linear_probe(
    features: Any,
    labels: Any,
    split: int | float | tuple[Sequence[int], Sequence[int]],
    balanced: bool = True,
    c: float = 1.0,
    max_iter: int = 1000,
    standardize: bool = True,
) -> ProbeResult:
    """Fit a logistic-regression probe of ``labels`` (two classes) on ``features`` (n, d) and score it.

    ``split``: the number (int) or share (float) of leading rows to fit on, the rest scored; or explicit
    ``(fit_rows, score_rows)``. ``balanced``: ``class_weight="balanced"`` and balanced accuracy (else plain)."""
    from sklearn.linear_model import LogisticRegression

    x, y = _numpy(features), _numpy(labels).astype(int).ravel()
    if x.ndim != 2 or len(x) != len(y):
        raise ValueError(f"'features' must be (n, d) with n = len(labels) = {len(y)}; got shape {x.shape}")
    fit, score = _split(split, len(x))
    if len(np.unique(y[fit])) < 2:
        raise ValueError("'labels' on the fit rows must contain both classes")
    mu = x[fit].mean(0) if standardize else np.zeros(x.shape[1])
    sd = x[fit].std(0) if standardize else np.ones(x.shape[1])
    sd = np.where(sd > 1e-12, sd, 1.0)  # constant coordinates carry nothing; keep them finite
    z = (x - mu) / sd
    clf = LogisticRegression(C=c, class_weight="balanced" if balanced else None, max_iter=max_iter)
    clf.fit(z[fit], y[fit])
    metric = balanced_accuracy if balanced else (lambda a, b: float(np.mean(np.asarray(a) == np.asarray(b))))
    coef = clf.coef_[0] / sd
    return ProbeResult(
        score=metric(y[score], clf.predict(z[score])),
        fit_score=metric(y[fit], clf.predict(z[fit])),
        coef=coef,
        intercept=float(clf.intercept_[0] - coef @ mu),
    )


def probe_sites(features: Mapping[str, Any], labels: Any, split, balanced: bool = True, **kw) -> list[dict]:
    """One :func:`linear_probe` per site: rows ``{"site", "metric", "value"}`` with metrics ``"probe"`` (held-out
    score) and ``"probe_fit"`` (score on the fit rows)."""
    rows = []
    for site, f in features.items():
        r = linear_probe(f, labels, split, balanced=balanced, **kw)
        rows += [dict(site=site, metric="probe", value=r.score), dict(site=site, metric="probe_fit", value=r.fit_score)]
    return rows


def probe_over_training(
    checkpoints: Mapping[int, Any],
    sites: Mapping[str, Callable[[Any], Any]],
    labels: Any,
    split,
    balanced: bool = True,
    **kw,
) -> list[dict]:
    """Probe every site of every checkpoint: ``sites[name](checkpoint)`` gives the (n, d) features at that site.

    Returns tidy rows ``{"step", "site", "metric", "value"}`` in step order (the harness that tracks probes across
    training checkpoints; a checkpoint may be a model, a state dict or precomputed activations)."""
    rows = []
    for step in sorted(checkpoints):
        feats = {name: fn(checkpoints[step]) for name, fn in sites.items()}
        rows += [dict(step=step, **r) for r in probe_sites(feats, labels, split, balanced=balanced, **kw)]
    return rows
