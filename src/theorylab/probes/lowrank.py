"""Reversible low-rank edits of query/key weights, and the loss they cost (query-key-asymmetry card).

``truncate(model, which, rank)`` replaces, in every head of a :class:`~theorylab.nn.ToyTransformer`,
W_Q, W_K or the operator M = W_Qᵀ W_K by its best rank-``rank`` approximation (SVD) and restores the
weights on exit, even after an error. For ``which="qk"`` the truncated M is written back in the
balanced gauge W_Q = (U√Σ)ᵀ, W_K = (V√Σ)ᵀ, so only M is changed. ``delta_loss`` measures the loss
change of an edit on fixed data.

LASER (Sharma, Ash, Misra, "The Truth is in There", arXiv 2312.13558), as used by Chen, Bruna,
Bietti (arXiv 2406.03068, Sec. 5): ``laser_grid`` measures a model whole and with each listed
weight matrix replaced by its best rank-k approximation; ``laser_selection`` picks the (layer, rank)
on a validation split and reports it on a test split; ``pick_value_rank`` does the same for the
layer-2 value-matrix truncation of a model without FF layers (arXiv 2406.03068, Sec. 3).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Literal, Sequence

import torch
from torch import Tensor, nn

from theorylab.probes.ablation import low_rank

if TYPE_CHECKING:
    import pandas as pd

Which = Literal["q", "k", "qk"]


def _best_rank(W: Tensor, rank: int) -> Tensor:
    U, s, Vh = torch.linalg.svd(W, full_matrices=False)
    return (U[..., :rank] * s[..., None, :rank]) @ Vh[..., :rank, :]


@contextmanager
@torch.no_grad()
def truncate(model: nn.Module, which: Which, rank: int) -> Iterator[None]:
    """Every head's W_Q (``"q"``), W_K (``"k"``) or M (``"qk"``) at rank ``rank`` inside the block."""
    if which not in ("q", "k", "qk"):
        raise ValueError(f"which must be 'q', 'k' or 'qk', got {which!r}")
    saved = []
    try:
        for block in model.blocks:
            a = block.attn
            if a.W_K is None:
                raise ValueError("tied queries and keys cannot be truncated separately")
            saved.append((a, a.W_Q.detach().clone(), a.W_K.detach().clone()))
            r_head = a.W_Q.shape[1]
            if rank >= r_head:
                continue
            if which == "q":
                a.W_Q.copy_(_best_rank(a.W_Q, rank))
            elif which == "k":
                a.W_K.copy_(_best_rank(a.W_K, rank))
            else:
                M = a.W_Q.transpose(1, 2) @ a.W_K  # (H, d, d): scale left out, it is common to both
                U, s, Vh = torch.linalg.svd(M, full_matrices=False)
                root = s[:, :rank].sqrt()
                a.W_Q.zero_()
                a.W_K.zero_()
                a.W_Q[:, :rank] = (U[:, :, :rank] * root[:, None, :]).transpose(1, 2)
                a.W_K[:, :rank] = root[:, :, None] * Vh[:, :rank, :]
        yield
    finally:
        for a, wq, wk in saved:
            a.W_Q.copy_(wq)
            a.W_K.copy_(wk)


@torch.no_grad()
def delta_loss(model: nn.Module, loss_fn: Callable[[nn.Module], Tensor], which: Which, rank: int) -> float:
    """``loss(truncated) − loss(original)`` on whatever data ``loss_fn`` closes over."""
    base = float(loss_fn(model))
    with truncate(model, which, rank):
        edited = float(loss_fn(model))
    return edited - base


def laser_grid(
    model: nn.Module, weights: Iterable[str], ranks: Sequence[int], measure: Callable[[], dict]
) -> list[dict]:
    """LASER's grid: ``measure()`` on the untouched model (row ``layer=-1, rank=-1, truncated=False``),
    then with the i-th of ``weights`` (parameter names, e.g. each layer's MLP input matrix) at each
    rank in ``ranks`` (rows ``layer=i, rank=k, truncated=True``), the weights restored after each."""
    rows = [dict(layer=-1, rank=-1, truncated=False, **measure())]
    for layer, name in enumerate(weights):
        for k in ranks:
            with low_rank(model, {name: k}):
                rows.append(dict(layer=layer, rank=k, truncated=True, **measure()))
    return rows


def laser_selection(grid: "pd.DataFrame", max_ppl_change: float = 0.10) -> tuple["pd.Series | None", "pd.DataFrame"]:
    """LASER's protocol on a :func:`laser_grid` table with a ``split`` column ('validation', 'test'),
    ``icl_acc``, ``perplexity`` and ``n_layers``: among late layers (second half) and the grid's ranks,
    pick the truncation with the largest validation gain in in-context accuracy whose validation
    perplexity changes by at most ``max_ppl_change``; return its *test* row (with ``gain`` and
    ``ppl_change``; None if no truncation qualifies) and the test table with those columns."""

    def with_gains(split: str) -> "pd.DataFrame":
        t = grid[grid["split"] == split]
        base = t[~t["truncated"]].iloc[0]
        return t[t["truncated"]].assign(
            gain=lambda f: f["icl_acc"] - base["icl_acc"], ppl_change=lambda f: f["perplexity"] / base["perplexity"] - 1
        )

    val, test = with_gains("validation"), with_gains("test")
    late = val[(val["layer"] >= val["n_layers"] / 2) & (val["ppl_change"].abs() <= max_ppl_change)]
    if late.empty:
        return None, test
    pick = late.sort_values("gain").iloc[-1]
    return test[(test["layer"] == pick["layer"]) & (test["rank"] == pick["rank"])].iloc[0], test


def pick_value_rank(trunc: "pd.DataFrame") -> "pd.DataFrame":
    """Per seed of a value-truncation table (:func:`theorylab.probes.trigger_recall.value_truncation`
    rows with a ``seed`` column): on the validation half, the truncation rank (>= 1) with the lowest
    P(noise) among those whose in-context accuracy is at least the untouched model's (any rank if
    none is); return that rank's *test*-half row, with the untouched model's (rank -1) and the
    dropped layer's (rank 0) test values beside it."""
    import pandas as pd

    rows = []
    for seed, t in trunc.groupby("seed"):
        val, test = t[t["split"] == "validation"].set_index("rank"), t[t["split"] == "test"].set_index("rank")
        ranks = val[val.index >= 1]
        keep = ranks[ranks["acc"] >= val.loc[-1, "acc"]]
        rank = int((keep if len(keep) else ranks)["P_noise"].idxmin())
        full, layer = test.loc[-1], test.loc[0]
        rows.append(
            dict(
                seed=seed,
                rank=rank,
                **test.loc[rank][["P_noise", "P_answer", "acc"]].to_dict(),
                P_noise_untouched=full["P_noise"],
                acc_untouched=full["acc"],
                P_noise_no_layer=layer["P_noise"],
                acc_no_layer=layer["acc"],
                kept_accuracy_on_validation=bool(len(keep)),
            )
        )
    return pd.DataFrame(rows)
