"""How compressible a trained model's queries and keys are (query-key-asymmetry card; the anchor is
arXiv 2603.04427, "thin keys": keys truncate far more cheaply than queries).

- :func:`truncation_curve`: the loss cost of truncating every head's W_Q, W_K or M = W_Qᵀ W_K to rank
  r = fraction·d_h (:func:`theorylab.probes.lowrank.delta_loss`).
- :func:`qk_rank_profile`: per head, the stable ranks of W_Q, W_K and of the balanced factor of M
  (gauge-free), M's directionality score and the weight norms.
"""

from __future__ import annotations

from typing import Callable, Sequence

from torch import Tensor, nn

from theorylab.probes.bilinear_operators import head_operators
from theorylab.probes.lowrank import delta_loss
from theorylab.probes.spectra import stable_rank
from theorylab.theory.bilinear import balanced_factorization, directionality_score


def truncation_curve(
    model: nn.Module, loss_fn: Callable[[nn.Module], Tensor], fractions: Sequence[float], head_dim: int
) -> list[dict]:
    """Rows ``rank, fraction, which, delta_loss`` for r = max(1, round(fraction·head_dim)) and ``which`` in
    q, k, qk: ``loss_fn(truncated) − loss_fn(model)`` (nats, on whatever data ``loss_fn`` closes over)."""
    rows = []
    for frac in fractions:
        r = max(1, int(round(frac * head_dim)))
        for which in ("q", "k", "qk"):
            rows.append(dict(rank=r, fraction=frac, which=which, delta_loss=delta_loss(model, loss_fn, which, r)))
    return rows


def qk_rank_profile(model: nn.Module, head_dim: int) -> list[dict]:
    """Rows ``layer, head, q_stable_rank, k_stable_rank, balanced_stable_rank, directionality, q_norm,
    k_norm`` of a :class:`~theorylab.nn.ToyTransformer` (float64 on CPU); the balanced factor of M is taken
    at rank ``head_dim``."""
    rows = []
    for op in head_operators(model):
        a = model.blocks[op.layer].attn
        wq, wk = a.W_Q[op.head].detach().double().cpu(), a.W_K[op.head].detach().double().cpu()
        bq, bk = balanced_factorization(op.M.double().cpu(), head_dim)
        rows.append(
            dict(
                layer=op.layer,
                head=op.head,
                q_stable_rank=float(stable_rank(wq)),
                k_stable_rank=float(stable_rank(wk)),
                balanced_stable_rank=float(stable_rank(bq)),
                directionality=float(directionality_score(op.M.double().cpu())),
                q_norm=float(wq.norm()),
                k_norm=float(wk.norm()),
            )
        )
    return rows
