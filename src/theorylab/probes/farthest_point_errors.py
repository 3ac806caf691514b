"""d·MSE of attention models on the farthest-point task, and the table of the training-free constructions.

Amsel, Yehudai, Bruna, *On the Benefits of Rank in Attention Layers*, arXiv 2407.16153: the target
of query ``x_i`` is the point of its set farthest from it (:mod:`theorylab.data.nearest_points`);
the metric is d·MSE (the zero predictor scores 1). :func:`construction_errors` measures the paper's
exact constructions (:mod:`theorylab.nn.attention_constructions`): the full-rank hard-max head
(Sec. 3, exact at every length), the full-rank softmax head (Sec. 3, -> 0 as beta grows) and random
rank-1 heads with a least-squares readout (Sec. 4, stay near the zero predictor).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Iterator, Sequence

import pandas as pd
import torch
from torch import Tensor, nn

from theorylab.data.nearest_points import d_mse, nearest_point_sets
from theorylab.nn.attention_constructions import fit_head_weights, full_rank_head, random_rank1_heads

SCORE_BUDGET = 2**22  # entries of the (sets, H, T, T) score tensor evaluated at once


@torch.no_grad()
def chunked_dmse(model: nn.Module, x: Tensor, y: Tensor, chunk: int) -> float:
    """d·MSE of ``model`` on sets ``x`` (B, T, d) with targets ``y`` (B, T, d), in chunks of sets.

    The chunk is also capped so that the (sets, H, T, T) scores of all the model's heads (every
    ``block.attn`` of a :class:`~theorylab.nn.ToyTransformer`) hold at most ``SCORE_BUDGET`` entries.
    The result is the set-weighted mean of the chunks' d·MSE.
    """
    heads = sum(block.attn.cfg.n_heads for block in model.blocks)
    chunk = max(1, min(chunk, SCORE_BUDGET // (heads * x.shape[1] ** 2)))  # bound the (sets, H, T, T) scores
    total = 0.0
    for i in range(0, x.shape[0], chunk):
        total += float(d_mse(model(x[i : i + chunk]), y[i : i + chunk])) * len(x[i : i + chunk])
    return total / x.shape[0]


def construction_errors(
    d: int,
    n_points: int,
    count: int,
    hardmax_lengths: Sequence[int],
    betas: Sequence[float],
    rank1_heads: Sequence[int],
    generator: torch.Generator,
    rank1_generators: Sequence[torch.Generator],
    *,
    chunk: int,
    progress: Callable[[Iterable[int], str], Iterator[int]] | None = None,
) -> pd.DataFrame:
    """d·MSE of the paper's training-free constructions: one row per (kind, param, n_points, split).

    - ``full_rank_hardmax`` (param inf): the hard-max head ``Q^T K = -I`` on ``count`` float64 sets
      of each length in ``hardmax_lengths`` (exact: 0 up to rounding);
    - ``full_rank_softmax`` (param beta): the softmax head ``Q^T K = -beta I`` on one draw of ``count``
      float64 sets of ``n_points``, for each beta;
    - ``random_rank1`` (param H): ``H`` random rank-1 hard-max heads (directions from
      ``rank1_generators[i]`` for ``rank1_heads[i]``) with least-squares output weights fitted on
      ``count`` float32 sets ("train") and measured on ``count`` more ("test").

    Every set is drawn from ``generator``, in this order. ``progress`` wraps the loop over head counts.
    Columns: kind, param, n_points, split, dmse, d.
    """
    if len(rank1_generators) != len(rank1_heads):
        raise ValueError(
            f"one generator per rank-1 head count: {len(rank1_generators)} generators, {len(rank1_heads)} counts"
        )
    rows = []
    hard = full_rank_head(d, dtype=torch.float64)
    for length in hardmax_lengths:
        sets = nearest_point_sets(d, length, count, generator, dtype=torch.float64)
        err = chunked_dmse(hard, sets.sequence, sets.targets, chunk)
        rows.append(dict(kind="full_rank_hardmax", param=math.inf, n_points=length, split="test", dmse=err))
    sets = nearest_point_sets(d, n_points, count, generator, dtype=torch.float64)
    for beta in betas:
        err = chunked_dmse(full_rank_head(d, beta, dtype=torch.float64), sets.sequence, sets.targets, chunk)
        rows.append(dict(kind="full_rank_softmax", param=float(beta), n_points=n_points, split="test", dmse=err))
    train = nearest_point_sets(d, n_points, count, generator)
    test = nearest_point_sets(d, n_points, count, generator)
    heads_iter: Iterable[tuple[int, torch.Generator]] = zip(rank1_heads, rank1_generators)
    if progress is not None:
        heads_iter = progress(list(heads_iter), "random rank-1 heads")
    for h, gen in heads_iter:
        model = random_rank1_heads(d, h, gen)
        fit_head_weights(model, train.sequence, train.targets)
        for split, part in (("train", train), ("test", test)):
            err = chunked_dmse(model, part.sequence, part.targets, chunk)
            rows.append(dict(kind="random_rank1", param=float(h), n_points=n_points, split=split, dmse=err))
    return pd.DataFrame(rows).assign(d=d)
