"""Multitask modular-arithmetic sequences ``[task] a b =`` -> answer, with ``a, b`` in ``Z_p``.

Tokens: ``0..p-1`` are the numbers, ``p + i`` is task ``i`` of ``tasks`` and ``p + len(tasks)`` is ``=``.
A sequence is ``(task, a, b, =)``; the answer is read at the ``=`` position (index 3). Tasks:
``add`` (a + b mod p), ``sub`` (a - b mod p), ``copy_a`` (a), ``max`` (max(a, b)). Used by the
local-perturbation-geometry study (Piontkovskaia & Nikolenko, arXiv 2607.16821; predecessor 2606.10929).
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

TASKS = ("add", "sub", "copy_a", "max")
ANSWER_POSITION = 3


def task_answer(task: str, a: Tensor, b: Tensor, p: int) -> Tensor:
    """The answer of ``task`` on operands ``a, b`` (integer tensors) in ``Z_p``."""
    if task == "add":
        return (a + b) % p
    if task == "sub":
        return (a - b) % p
    if task == "copy_a":
        return a.clone()
    if task == "max":
        return torch.maximum(a, b)
    raise ValueError(f"unknown task {task!r}; choose from {TASKS}")


def _check(p: int, tasks: Sequence[str]) -> None:
    if p < 2:
        raise ValueError(f"p must be >= 2, got {p}")
    bad = [t for t in tasks if t not in TASKS]
    if bad or not tasks or len(set(tasks)) != len(tasks):
        raise ValueError(f"tasks must be distinct names from {TASKS}; got {tuple(tasks)}")


def vocab_size(p: int, n_tasks: int = len(TASKS)) -> int:
    """Numbers, task tokens and ``=``."""
    return p + n_tasks + 1


def task_prompts(p: int, task: str, tasks: Sequence[str] = TASKS) -> tuple[Tensor, Tensor]:
    """Every ``(task, a, b, =)`` for one task, operands in row-major order ``(a, b)``: tokens ``(p^2, 4)``
    and answers ``(p^2,)``. Two tasks' prompts share operands row by row (the CAA contrast)."""
    _check(p, tasks)
    if task not in tasks:
        raise ValueError(f"task {task!r} is not one of {tuple(tasks)}")
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    a, b = a.reshape(-1), b.reshape(-1)
    n = a.numel()
    tokens = torch.stack([torch.full((n,), p + list(tasks).index(task)), a, b, torch.full((n,), p + len(tasks))], dim=1)
    return tokens, task_answer(task, a, b, p)


def multitask_sequences(p: int, tasks: Sequence[str] = TASKS) -> tuple[Tensor, Tensor, Tensor]:
    """All ``len(tasks) * p^2`` sequences: tokens ``(N, 4)``, answers ``(N,)``, task index ``(N,)``."""
    _check(p, tasks)
    parts = [task_prompts(p, t, tasks) for t in tasks]
    tokens = torch.cat([t for t, _ in parts])
    answers = torch.cat([y for _, y in parts])
    task_ids = torch.arange(len(tasks)).repeat_interleave(p * p)
    return tokens, answers, task_ids
