"""Linear-fit R² on a held-out split, and retraining a chosen subset of a model's parameters.

- :func:`linear_fit_r2`: least squares ``Y ≈ [X, 1] W`` fitted on one part of the rows, scored (R² pooled over
  output coordinates) on the rest, e.g. the superposition test of Ravfogel et al. (arXiv 2605.12426): learned
  subject embeddings regressed on their attributes' unembedding rows;
- :func:`set_trainable` / :func:`retrain_subset`: ``requires_grad`` from a list of parameter-name prefixes (a
  freeze list), optionally restricted to rows of an embedding, then full-batch AdamW on what is left trainable
  (the transfer test: freeze attention, MLP, relation embeddings and readout; train only subject embeddings).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch import Tensor, nn


def linear_fit_r2(X: Tensor, Y: Tensor, split: Tensor | float = 0.5, intercept: bool = True) -> dict[str, Any]:
    """Fit ``Y ≈ X W + b`` by least squares on the ``split`` rows, report R² on the others.

    ``split``: a boolean mask of the fit rows (n,), or a fraction (the first ``round(f n)`` rows fit, the rest are
    held out; shuffle beforehand). R² = 1 - sum (Y - Ŷ)² / sum (Y - mean_fit(Y))², pooled over all columns, on the
    held-out rows (and on the fit rows for ``r2_fit``); the centring uses the fit rows' mean, so a map that
    predicts nothing scores <= 0 out of sample. ``prediction``: the fitted map on the held-out rows (float64).
    """
    if X.dim() != 2 or Y.dim() != 2 or len(X) != len(Y):
        raise ValueError(
            f"'X' and 'Y' must be (n, p) and (n, q) with the same n; got {tuple(X.shape)}, {tuple(Y.shape)}"
        )
    n = len(X)
    if isinstance(split, Tensor):
        fit = split.to(torch.bool)
        if fit.shape != (n,):
            raise ValueError(f"'split' mask must have shape ({n},); got {tuple(fit.shape)}")
    else:
        if not 0 < split < 1:
            raise ValueError(f"'split' must be a fraction in (0, 1) or a mask; got {split}")
        fit = torch.arange(n) < round(split * n)
    if fit.all() or not fit.any():
        raise ValueError("'split' must leave rows on both sides")
    X, Y = X.double(), Y.double()
    A = torch.cat([X, torch.ones(n, 1, dtype=X.dtype)], dim=1) if intercept else X
    W = torch.linalg.lstsq(A[fit], Y[fit], driver="gelsd").solution
    mean = Y[fit].mean(dim=0)

    def r2(rows: Tensor) -> float:
        res = ((Y[rows] - A[rows] @ W) ** 2).sum()
        tot = ((Y[rows] - mean) ** 2).sum()
        return float(1 - res / tot)

    return dict(r2=r2(~fit), r2_fit=r2(fit), n_fit=int(fit.sum()), n_test=int((~fit).sum()), prediction=A[~fit] @ W)


def set_trainable(model: nn.Module, prefixes: Sequence[str]) -> list[str]:
    """``requires_grad = True`` exactly for parameters whose name starts with one of ``prefixes`` ("" matches
    all); returns the trainable names. An unknown prefix (matching nothing) is an error: a typo would freeze all."""
    names = [n for n, _ in model.named_parameters()]
    unknown = [p for p in prefixes if not any(n.startswith(p) for n in names)]
    if unknown:
        raise ValueError(f"'trainable' prefixes {unknown} match no parameter; parameters: {names}")
    chosen = []
    for n, p in model.named_parameters():
        on = any(n.startswith(q) for q in prefixes)
        p.requires_grad_(on)
        if on:
            chosen.append(n)
    return chosen


def retrain_subset(
    model: nn.Module,
    trainable: Sequence[str],
    inputs: Tensor,
    targets: Tensor,
    loss: Callable[[Tensor, Tensor], Tensor],
    *,
    steps: int,
    lr: float,
    weight_decay: float = 0.0,
    rows: dict[str, Tensor] | None = None,
    evaluate: Callable[[int], None] | None = None,
    evaluate_every: int | None = None,
    chunk: int | None = None,
) -> list[float]:
    """Full-batch AdamW on the parameters named by ``trainable`` (prefixes, see :func:`set_trainable`), in place.

    ``rows[name]`` (a boolean mask over the parameter's first axis) keeps the other rows exactly fixed: their
    gradient is zeroed, and AdamW with zero weight decay never moves a coordinate whose gradient was always 0.
    ``evaluate(n)`` runs after ``n`` updates (0, every ``evaluate_every``, and the last). ``chunk``: accumulate the
    full-batch gradient over row chunks of ``inputs`` (the same update for a mean-reduced ``loss``, less memory).
    Returns the loss per step.
    """
    if steps < 1:
        raise ValueError(f"'steps' must be >= 1; got {steps}")
    names = set_trainable(model, trainable)
    params = dict(model.named_parameters())
    hooks = []
    for name, mask in (rows or {}).items():
        if name not in names:
            raise ValueError(f"'rows' names {name!r}, which is not trainable")
        if weight_decay:
            raise ValueError("'rows' needs weight_decay = 0 (decay would move the fixed rows)")
        keep = mask.to(params[name].device, torch.bool).reshape(-1, *([1] * (params[name].dim() - 1)))
        hooks.append(params[name].register_hook(lambda g, keep=keep: g * keep))
    opt = torch.optim.AdamW([params[n] for n in names], lr=lr, weight_decay=weight_decay, foreach=True)
    losses: Tensor | None = None  # one preallocated buffer: a list of 0-d tensors grew the heap ~8 MB a step
    try:
        if evaluate is not None:
            evaluate(0)
        for step in range(steps):
            opt.zero_grad(set_to_none=True)
            if chunk is None or chunk >= len(inputs):
                value = loss(model(inputs), targets)
                value.backward()
            else:
                value = torch.zeros((), device=inputs.device)
                for i in range(0, len(inputs), chunk):
                    part = loss(model(inputs[i : i + chunk]), targets[i : i + chunk]) * (
                        len(targets[i : i + chunk]) / len(targets)
                    )
                    part.backward()
                    value = value + part.detach()
            opt.step()
            if losses is None:
                losses = torch.empty(steps, dtype=value.dtype, device=value.device)
            losses[step] = value.detach()  # no device sync per step
            done = step + 1
            if evaluate is not None and (done == steps or (evaluate_every and done % evaluate_every == 0)):
                evaluate(done)
    finally:
        for h in hooks:
            h.remove()
    return [] if losses is None else losses.double().cpu().tolist()
