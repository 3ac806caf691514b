"""In-context linear regression (Dherin et al., arXiv 2507.16003, Sec. 4): training, and the explicit
fine-tuning the implicit patch is compared with.

- :func:`train_in_context_regression`: Adam on fresh prompts of
  :func:`~theorylab.data.tasks.in_context_linear_regression` every step; the loss is the squared
  error of the prediction read at the query's last coordinate.
- :func:`online_finetune`: explicit online gradient descent on one weight matrix over the context
  examples, each seen alone (one SGD step per example), then the query's squared error after each
  step: the explicit counterpart of the implicit patch ΔW(C≤i).
- :func:`implicit_vs_explicit`: both on a set of test prompts (the implicit side is
  :func:`theorylab.probes.weight_patches.context_growth_patches`), as rows.
"""

from __future__ import annotations

import copy
from typing import Callable, Iterable

import torch
from torch import Tensor, nn

from theorylab.data.tasks import in_context_linear_regression
from theorylab.probes.weight_patches import context_growth_patches


def train_in_context_regression(
    model: nn.Module,
    *,
    steps: int,
    tasks: int,
    length: int,
    dim: int,
    lr: float,
    generator: torch.Generator,
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
    check: Callable[[str, Tensor, int], None] | None = None,
) -> list[dict]:
    """Adam (``lr``) for ``steps`` steps, each on ``tasks`` new prompts of ``length`` tokens of width
    ``dim + 1`` drawn from ``generator``; loss ``mean (model(tokens)[:, -1, -1] − y_query)²``.
    Returns ``[{step, loss}]`` for every step; ``check(what, loss, step)`` sees each loss first."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    log = []
    for step in range(steps) if progress is None else progress(range(steps), "train in-context regression"):
        batch = in_context_linear_regression(tasks, length, dim, generator=generator)
        loss = (model(batch.tokens)[:, -1, -1] - batch.y_query).pow(2).mean()
        if check is not None:
            check("in-context regression loss", loss, step)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.append(dict(step=step, loss=loss.item()))
    return log


def online_finetune(
    model: nn.Module, tokens: Tensor, y_query: float, lr: float, param: str = "blocks.0.W1"
) -> list[float]:
    """Online SGD on one parameter of a copy of ``model`` (``model`` is left unchanged).

    ``tokens``: one prompt ``(T, dim + 1)``, examples ``[x_j, y_j]`` then the query ``[x_q, 0]``. For
    j = 1..T−1: one SGD step (``lr``) on ``½ (model([x_j, 0])[-1, -1] − y_j)²`` (the example alone,
    its label hidden as in the query), then the query's squared error ``(model(query)[-1, -1] − y_query)²``.
    Returns those T−1 errors (Dherin et al. compare them with the implicit patch of ``param``).
    """
    tuned = copy.deepcopy(model).requires_grad_(False)
    weight = tuned.get_parameter(param)
    weight.requires_grad_(True)
    opt = torch.optim.SGD([weight], lr=lr)
    errors = []
    query = tokens[-1:]
    for i in range(1, len(tokens)):
        x = tokens[i - 1 : i].clone()
        y = float(x[0, -1])
        x[0, -1] = 0.0
        loss = 0.5 * (tuned(x)[-1, -1] - y) ** 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            errors.append((float(tuned(query)[-1, -1]) - y_query) ** 2)
    return errors


def implicit_vs_explicit(
    model: nn.Module,
    tokens: Tensor,
    y_query: Tensor,
    lr: float,
    param: str = "W1",
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
) -> tuple[list[dict], list[dict]]:
    """Dherin et al.'s comparison on test prompts ``tokens`` ``(n, T, dim + 1)`` with labels ``y_query`` ``(n,)``.

    ``model``: a stack of vanilla blocks (:func:`theorylab.nn.regression_stack.in_context_regression_stack`).
    Returns ``(implicit, explicit)`` rows, each with ``task``: per prompt and context length i, the
    implicit patch of ``param`` (:func:`~theorylab.probes.weight_patches.context_growth_patches`, also
    on a float32 copy), and ``finetuned_sq_error`` after i steps of :func:`online_finetune` on the first
    block's ``param``.
    """
    model32 = copy.deepcopy(model).float()
    rows, ft_rows = [], []
    tasks = range(len(tokens))
    for t in tasks if progress is None else progress(tasks, "implicit patches per context length"):
        y = float(y_query[t])
        rows += [dict(task=t, **r) for r in context_growth_patches(model, tokens[t], y, model32, name=param)]
        errors = online_finetune(model, tokens[t], y, lr, f"blocks.0.{param}")
        ft_rows += [dict(task=t, i=i + 1, finetuned_sq_error=e) for i, e in enumerate(errors)]
    return rows, ft_rows
