"""Training stacked algorithm-aligned MPNNs: several seeds, regularisation strengths, losses and tasks in one pass.

Loss per member (Nerem et al., arXiv 2503.19173; Wittig et al., arXiv 2602.13106):
``Σ_v ℓ(h_v^K, y_v) + η ‖θ‖₁`` with ℓ the squared error or the multiplicative ``|1 − ŷ/y|``.
Members share nothing but the graphs; each column of ``targets`` is one member's target.

- :func:`train_members`: the full-batch Adam loop over one stack.
- :func:`train_task_stack`: one stack whose members learn different tasks (each on its own training
  graphs, joined into one disjoint union and masked per member).
- :func:`select_restarts`: per seed, keep the restart with the lowest error on held-out graphs.
"""

from __future__ import annotations

from typing import Callable, Iterable

import pandas as pd
import torch
from torch import Tensor

from theorylab.data.graphs import WeightedGraph, batch, initial_states
from theorylab.nn.losses import mse, multiplicative
from theorylab.probes.algorithm_errors import mean_relative_errors


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
    weights = torch.ones_like(targets) if mask is None else mask.to(targets.dtype)
    weights = weights / weights.sum(0).clamp(min=1)
    model.f.penalty(regulariser)  # an unknown regulariser fails here, before any step
    if len(losses) != model.members or eta.numel() != model.members or targets.shape[1] != model.members:
        raise ValueError(
            f"{model.members} members but {len(losses)} losses, {eta.numel()} etas, {targets.shape[1]} target columns"
        )
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


def train_task_stack(
    tasks: dict[str, tuple[WeightedGraph, Tensor, float, int]],
    member_tasks: list[str],
    aggregations: list[str],
    seeds: list[int],
    eta: Tensor,
    losses: list[str],
    *,
    hidden: int,
    big: float,
    steps: int,
    lr: float,
    schedule: str = "constant",
    regulariser: str = "l1",
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
    check: Callable[[str, Tensor, int], None] | None = None,
):
    """Train one :class:`~theorylab.nn.mpnn.AlignedMPNN` stack whose member j learns task ``member_tasks[j]``.

    ``tasks``: name -> (training graph (batched), node targets, sentinel sign (+1 min-aggregation distances,
    −1 max-plus DPs), rounds). The tasks' graphs form one disjoint union (in the order of ``tasks``); member
    j starts from :func:`~theorylab.data.graphs.initial_states` on its task's nodes and its loss sees only
    them (a mask). Every member runs the largest task's rounds. Returns the network and
    :func:`train_members`' log (``member`` = position j).
    """
    from theorylab.nn.mpnn import AlignedMPNN

    union, ptr = batch([p[0] for p in tasks.values()])
    offset = dict(zip(tasks, ptr.tolist()))
    S = len(member_tasks)
    h0 = torch.zeros(union.num_nodes, S, dtype=torch.float64)
    targets = torch.zeros_like(h0)
    mask = torch.zeros_like(h0, dtype=torch.bool)
    for j, task in enumerate(member_tasks):
        graph, target, sign, _ = tasks[task]
        rows = slice(offset[task], offset[task] + graph.num_nodes)
        h0[rows, j] = initial_states(graph.num_nodes, graph.source, 1, big, sign)[:, 0]
        targets[rows, j] = target
        mask[rows, j] = True
    model = AlignedMPNN(list(aggregations), seeds=seeds, hidden=hidden)
    log = train_members(
        model,
        union.edge_index,
        union.weight,
        h0,
        targets,
        eta=eta,
        losses=losses,
        steps=steps,
        lr=lr,
        schedule=schedule,
        regulariser=regulariser,
        rounds=max(p[3] for p in tasks.values()),
        mask=mask,
        progress=progress,
        check=check,
    )
    return model, log


def select_restarts(
    net,
    group: pd.DataFrame,
    log: pd.DataFrame,
    graph: WeightedGraph,
    target: Tensor,
    *,
    big: float,
    sign: float,
    max_rounds: int,
):
    """Keep, per seed, the restart with the lowest mean relative error on held-out graphs drawn like the training
    set (``graph``, exact node ``target``; :func:`~theorylab.probes.algorithm_errors.mean_relative_errors`):
    model selection that never sees a test graph.

    ``net`` holds one member per row of ``group`` (columns ``member``, ``seed``); ``log`` is the training log
    (``step``, ``member``, ``train_loss``, ``l1``). Returns the table of every restart (``group``'s columns,
    ``val_rel_error``, final ``train_loss`` and ``l1``, ``chosen``), the kept members as a sub-network, and
    their rows of ``group``.
    """
    rel = mean_relative_errors(net, graph, target, big, sign, max_rounds)
    final = log[log["step"] == log["step"].max()].set_index("member")
    table = group.reset_index(drop=True).assign(
        val_rel_error=rel.numpy(),
        train_loss=final.loc[group["member"], "train_loss"].to_numpy(),
        l1=final.loc[group["member"], "l1"].to_numpy(),
    )
    table["chosen"] = table.index.isin(table.groupby("seed")["val_rel_error"].idxmin().to_numpy())
    pos = [i for i, c in enumerate(table["chosen"]) if c]
    return table, net.subset(pos), group.iloc[pos]
