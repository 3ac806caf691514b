"""Online SGD of a two-layer ReLU net on a Gaussian index model, tracking what its first layer learns.

The neural-network row of Bruna & Hsu's survey (arXiv 2504.05426, "neural networks trained by
gradient descent"): ``f(x) = 10 a^T relu(W x + b) / width`` trained by one pass of SGD on fresh
samples; the top right singular vector of ``W`` is compared with the hidden direction ``u_1``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from theorylab.data.index_models import IndexModel
from theorylab.probes.subspace import captures


def _first_layer_capture(W: torch.Tensor, model: IndexModel) -> float:
    top = np.linalg.svd(W.detach().numpy(), full_matrices=False)[2][:1].T
    return float(captures(top, model.W)[0])


def train_two_layer_online(
    model: IndexModel,
    width: int,
    lr: float,
    batch: int,
    alphas: Sequence[float],
    init_generator: torch.Generator,
    data_rng: np.random.Generator,
    on_loss: Callable[[torch.Tensor, int], None] | None = None,
) -> list[dict]:
    """Online SGD (square loss, step ``lr``, batches of ``batch`` fresh samples from ``data_rng``) of
    ``f(x) = a^T relu(W x + b) / width * 10`` with ``W ~ N(0, 1/d)``, ``a ~ N(0, 1)`` (from
    ``init_generator``), ``b = 0``, in float64. Returns one row per checkpoint ``n = round(alpha d)``
    (``alphas`` sorted; plus ``alpha = 0`` at initialisation): alpha, n, capture of ``u_1`` by the
    top right singular vector of ``W``, last batch loss. ``on_loss(loss, samples_seen)`` is called
    after every step (e.g. to stop on a non-finite loss)."""
    d = model.d
    W = (torch.randn(width, d, generator=init_generator, dtype=torch.float64) / np.sqrt(d)).requires_grad_()
    b = torch.zeros(width, dtype=torch.float64, requires_grad=True)
    a = (torch.randn(width, generator=init_generator, dtype=torch.float64)).requires_grad_()
    opt = torch.optim.SGD([W, b, a], lr=lr)
    rows = [dict(alpha=0.0, n=0, capture=_first_layer_capture(W, model), loss=float("nan"))]  # at initialisation
    seen = 0
    for alpha in sorted(alphas):
        target = int(round(alpha * d))
        while seen < target:
            X, y, _ = model.sample(min(batch, target - seen), data_rng)
            xt, yt = torch.from_numpy(X), torch.from_numpy(y)
            pred = torch.relu(xt @ W.T + b) @ a / width * 10
            loss = 0.5 * (pred - yt).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += len(y)
            if on_loss is not None:
                on_loss(loss.detach(), seen)
        rows.append(dict(alpha=alpha, n=seen, capture=_first_layer_capture(W, model), loss=float(loss.detach())))
    return rows
