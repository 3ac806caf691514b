"""Training stacked algorithm-aligned MPNNs: several seeds, regularisation strengths, losses and tasks in one pass.

Loss per member (Nerem et al., arXiv 2503.19173; Wittig et al., arXiv 2602.13106):
``Σ_v ℓ(h_v^K, y_v) + η ‖θ‖₁`` with ℓ the squared error or the multiplicative ``|1 − ŷ/y|``.
Members share nothing but the graphs; each column of ``targets`` is one member's target.
"""

from __future__ import annotations

from typing import Callable, Iterable

import pandas as pd
import torch
from torch import Tensor

from theorylab.nn.losses import mse, multiplicative



def train_members(
    model,
    edge_index: Tensor,
    weight: Tensor,
    h0: Tensor,
    targets: Tensor,
    *,
    eta: Tensor,
    losses: list[str],
    steps: int,
    lr: float,
    rounds: int,
    mask: Tensor | None = None,
    schedule: str = "constant",
    regulariser: str = "l1",
    log_every: int = 100,
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
    check: Callable[[str, Tensor, int], None] | None = None,
) -> pd.DataFrame:
    """Full-batch Adam on all members at once; returns a log (step, member, loss, l1).

    ``mask``: ``(N, S)`` nodes that count in each member's loss (members may learn from different
    graphs of one batch); ``schedule``: "constant" or "cosine" (to 0); ``regulariser``: "l1" or
    "smooth-l1" (see ``StackedMLP.penalty``); the log reports ‖θ‖₁ either way.
    """
    is_mult = torch.tensor([name == "multiplicative" for name in losses])
    any_mult, any_mse = bool(is_mult.any()), not bool(is_mult.all())
    weights = (torch.ones_like(targets) if mask is None else mask.to(targets.dtype))
    weights = weights / weights.sum(0).clamp(min=1)
    model.f.penalty(regulariser)  # an unknown regulariser fails here, before any step
    if len(losses) != model.members or eta.numel() != model.members or targets.shape[1] != model.members:
        raise ValueError(f"{model.members} members but {len(losses)} losses, {eta.numel()} etas, {targets.shape[1]} target columns")
    # The L1 penalty drives weights towards 0 through the subnormal range, where CPU arithmetic is many
    # times slower; flushing them to 0 changes nothing above 2e-308 and keeps the steps uniform.
    flushed = torch.set_flush_denormal(True)
    try:
        opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps) if schedule == "cosine" else None
        rows = []
        steps_iter = range(steps) if progress is None else progress(range(steps), "train MPNNs")
        for step in steps_iter:
            h, _ = model(h0, edge_index, weight, rounds=rounds)
            per = 0
            if any_mse:
                sq = mse(h, targets, weights)
                per = sq if not any_mult else torch.where(is_mult, 0.0, sq)
            if any_mult:
                per = per + torch.where(is_mult, multiplicative(h, targets, weights), 0.0)
            l1 = model.f.l1()
            reg = l1 if regulariser == "l1" else model.f.penalty(regulariser)
            loss = (per + eta * reg).sum()
            if check is not None:
                check("MPNN training loss", loss, step)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            if step % log_every == 0 or step == steps - 1:
                per_v, l1_v = per.detach().tolist(), l1.detach().tolist()
                rows.extend(dict(step=step, member=i, loss=per_v[i], l1=l1_v[i]) for i in range(model.members))
    finally:
        if flushed:
            torch.set_flush_denormal(False)
    return pd.DataFrame(rows)
