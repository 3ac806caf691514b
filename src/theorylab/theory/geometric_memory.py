"""The geometric memorisation construction: sign codes, exact weights, margin and parameter counts in closed form.

Ravfogel, Yehudai, Bruna & Bietti, *Geometric Factual Recall in Transformers* (arXiv 2605.12426): the one-layer
construction for R bijections with d = O(R log N). Only the abstract could be read, so the construction here is the
study card's reconstruction from it
("subject embeddings encode linear superpositions of their attribute vectors", "a small MLP acts as a
relation-conditioned selector via ReLU gating"), written as the state dict of a one-layer
:class:`theorylab.nn.ToyTransformer` (hard attention, ReLU MLP, no norm, learned positions set to 0):

- codes ``u_a in {±1}^k``: the k-bit binary expansion of ``a mod 2^k`` (distinct for ``N <= 2^k``);
  ``<u_a, u_b> <= k - 2`` for distinct codes and ``<u_a, u_a> = k``;
- width ``d = R k + R + k``: R subject blocks, a relation one-hot block, an answer block;
- subject token ``s``: ``e_s = concat_r u_{pi_r(s)}``; relation token ``r``: one-hot ``r`` in the relation block;
- one rank-1 hard-max head: query ``1^T x_rel``, key ``-1^T x_rel``, so the relation position (query 1) scores
  the subject position 0 and itself -1 and attends to the subject; the value/output map copies the subject blocks,
  so the residual at the relation position is ``h = e_s + e_r``;
- MLP of width ``2Rk``: ``out_j = ReLU(h_{r',j} - M(1 - h_{rel,r'})) - ReLU(-h_{r',j} - M(1 - h_{rel,r'}))``
  summed over blocks r' into answer coordinate j, with gate ``M = 2``: the queried block passes (``ReLU(x) -
  ReLU(-x) = x``), the others are gated off (``|h| <= 1 < M``);
- readout ``logit_a = <u_a, answer block>``: the target scores ``k``, every other entity at most ``k - 2``.

Numbers in, numbers out: this module builds tensors keyed by ToyTransformer's parameter names and never imports a
model (``train.fact_recall.construction_model`` loads them).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def code_length(n_entities: int) -> int:
    """``k = ceil(log2 N)``: the fewest bits that give N distinct sign codes (pigeonhole)."""
    if n_entities < 2:
        raise ValueError(f"'n_entities' must be >= 2; got {n_entities}")
    return max(1, math.ceil(math.log2(n_entities)))


def sign_codes(n_entities: int, k: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """``U[a] = (1 - 2 bit_j(a mod 2^k))_{j < k}`` (N, k): distinct iff ``N <= 2^k``; with ``N > 2^k`` entities
    ``a`` and ``a + 2^k`` share a code."""
    if k < 1:
        raise ValueError(f"'k' must be >= 1; got {k}")
    a = torch.arange(n_entities) % (2**k)
    bits = (a[:, None] >> torch.arange(k)) & 1
    return (1 - 2 * bits).to(dtype)


def construction_width(n_relations: int, k: int) -> int:
    """``d = R k + R + k`` (subject blocks, relation one-hot, answer block)."""
    return n_relations * k + n_relations + k


def construction_config(n_entities: int, n_relations: int, k: int, gate: float = 2.0) -> dict:
    """The ToyTransformer keyword arguments of the construction (one layer, one rank-1 hard-max head)."""
    return dict(
        d_model=construction_width(n_relations, k),
        n_layers=1,
        n_heads=1,
        head_rank=1,
        value_dim=n_relations * k,
        attention="hard",
        qk_scale=1.0,
        mlp_width=2 * n_relations * k,
        activation="relu",
        norm="none",
        positional="learned",
        max_len=2,
        vocab_size=n_entities + n_relations,
        d_output=n_entities,
        bias=True,
    )


def construction_weights(
    table: Tensor, k: int, gate: float = 2.0, dtype: torch.dtype = torch.float64
) -> dict[str, Tensor]:
    """Exact weights for the facts ``table[r, s] = pi_r(s)`` (R, N), as a ToyTransformer state dict.

    ``k`` may be smaller than :func:`code_length` (then codes collide: the pigeonhole check of claim 2). ``gate``
    is M; any ``M > 1`` gates off the unqueried blocks (codes are ±1), the card's M = 2.
    """
    if table.dim() != 2:
        raise ValueError(f"'table' must be (R, N); got shape {tuple(table.shape)}")
    if not gate > 1:
        raise ValueError(f"'gate' must be > 1 (codes are ±1); got {gate}")
    rr, n = table.shape
    U = sign_codes(n, k, dtype)
    d = construction_width(rr, k)
    sub, rel, ans = slice(0, rr * k), slice(rr * k, rr * k + rr), slice(rr * k + rr, d)
    embed = torch.zeros(n + rr, d, dtype=dtype)
    embed[:n, sub] = U[table.T].reshape(n, rr * k)  # e_s = concat_r u_{pi_r(s)}
    embed[n:, rel] = torch.eye(rr, dtype=dtype)
    w_q = torch.zeros(1, 1, d, dtype=dtype)
    w_q[0, 0, rel] = 1.0
    w_k = -w_q  # score(query at the relation, key j) = -1[j is the relation token]: the max is the subject
    w_v = torch.zeros(1, rr * k, d, dtype=dtype)
    w_v[0, :, sub] = torch.eye(rr * k, dtype=dtype)
    w_o = w_v[0].T.clone()[None]  # (1, d, Rk): write the copied subject blocks back in place
    # Hidden unit (r', j, sign): sign·h_{r', j} + M h_{rel, r'} - M; output j += sign·unit.
    up = torch.zeros(2 * rr * k, d, dtype=dtype)
    down = torch.zeros(d, 2 * rr * k, dtype=dtype)
    unit = torch.arange(2 * rr * k)
    sign = torch.where(unit % 2 == 0, 1.0, -1.0).to(dtype)
    block, coord = (unit // 2) // k, (unit // 2) % k
    up[unit, block * k + coord] = sign
    up[unit, rr * k + block] = gate
    down[rr * k + rr + coord, unit] = sign
    readout = torch.zeros(n, d, dtype=dtype)
    readout[:, ans] = U
    z = lambda *shape: torch.zeros(*shape, dtype=dtype)  # noqa: E731
    return {
        "pos": z(2, d),
        "embed.weight": embed,
        "blocks.0.attn.W_Q": w_q,
        "blocks.0.attn.W_K": w_k,
        "blocks.0.attn.W_V": w_v,
        "blocks.0.attn.W_O": w_o,
        "blocks.0.attn.b_Q": z(1, 1),
        "blocks.0.attn.b_K": z(1, 1),
        "blocks.0.attn.b_V": z(1, rr * k),
        "blocks.0.attn.b_O": z(d),
        "blocks.0.mlp.up.weight": up,
        "blocks.0.mlp.up.bias": torch.full((2 * rr * k,), -gate, dtype=dtype),
        "blocks.0.mlp.down.weight": down,
        "blocks.0.mlp.down.bias": z(d),
        "readout.weight": readout,
        "readout.bias": z(n),
    }


def construction_margin(n_entities: int, k: int) -> float:
    """The smallest target-minus-runner-up logit over all facts: 2 when the N codes are distinct (``<u_a, u_b> =
    k - 2 hamming(a, b) <= k - 2``, with equality for entities 0 and 1, which differ in bit 0), 0 when two codes
    collide (``N > 2^k``)."""
    if n_entities < 2 or k < 1:
        raise ValueError(f"need n_entities >= 2 and k >= 1; got {n_entities}, {k}")
    return 0.0 if n_entities > 2**k else 2.0


def recall_bound(n_entities: int, k: int) -> float:
    """Pigeonhole: with ``N > 2^k`` at most ``2^k - 1`` entities have a code of their own, so at most a fraction
    ``(2^k - 1)/N`` of every relation's answers can win strictly, whatever the code assignment; 1 otherwise."""
    return 1.0 if n_entities <= 2**k else (2**k - 1) / n_entities


def parameter_counts(n_entities: int, n_relations: int, k: int) -> dict[str, int]:
    """Closed forms for the construction's ToyTransformer (``N`` entities, ``R`` relations, ``d = Rk + R + k``,
    MLP width ``m = 2Rk``): dense counts per part and nonzero counts (what the construction really uses).

    Dense: embedding ``(N + R) d``, positions ``2d``, attention ``2d + 2Rk d + 2 + Rk + d`` (rank-1 Q, K; V, O of
    rank Rk; biases), MLP ``2 m d + m + d``, readout ``N d + N``. Nonzero: embedding ``N R k + R``, attention
    ``2R + 2Rk``, MLP ``8Rk`` (two weights and one bias per hidden unit, one output weight), readout ``N k``: no
    per-fact weights outside the embedding.
    """
    n, rr = n_entities, n_relations
    d, m = construction_width(rr, k), 2 * rr * k
    dense = dict(
        embedding=(n + rr) * d,
        positions=2 * d,
        attention=2 * d + 2 * rr * k * d + 2 + rr * k + d,
        mlp=2 * m * d + m + d,
        readout=n * d + n,
    )
    nonzero = dict(embedding=n * rr * k + rr, positions=0, attention=2 * rr + 2 * rr * k, mlp=8 * rr * k, readout=n * k)
    out = {f"dense_{key}": v for key, v in dense.items()} | {f"nonzero_{key}": v for key, v in nonzero.items()}
    out["dense_total"], out["nonzero_total"] = sum(dense.values()), sum(nonzero.values())
    return out


def margins(logits: Tensor, targets: Tensor) -> Tensor:
    """Per query: target logit minus the largest other logit (> 0 iff the target wins strictly). (B, V), (B,)."""
    target = logits.gather(1, targets[:, None])[:, 0]
    other = logits.scatter(1, targets[:, None], float("-inf")).amax(dim=1)
    return target - other
