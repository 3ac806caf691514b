"""Synthetic in-context learning tasks.

:func:`in_context_linear_regression` is the task of Dherin et al., "Learning without training",
arXiv 2507.16003, Sec. 4 (after Garg et al., arXiv 2208.01066): each sequence carries its own
weight vector ``w ~ N(0, I)``; tokens ``[x_i, y_i]`` with ``x_i ~ N(0, I)``, ``y_i = wᵀ x_i``, and a
final query token ``[x_q, 0]`` whose label the model must predict from the context.

Token tasks of the representation-collapse study (studies/representation-collapse.md; Barbero et al. 2024,
"Transformers need glasses!"): :func:`random_tokens`, the count construction :func:`count_sequences`
([a]^L b vs [a]^{L+1} b), the one-token edit :func:`edit_first`, and two retrieval tasks for accuracy vs
length, :func:`associative_recall` and :func:`passkey`. Token sequences are ``(batch, T)`` int64.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class RegressionPrompts:
    """``tokens``: ``(n, T, dim + 1)``, the last row of each the query ``[x_q, 0]``; ``y_query``: ``(n,)``; ``w``: ``(n,
    dim)``."""

    tokens: Tensor
    y_query: Tensor
    w: Tensor

    @property
    def n_context(self) -> int:
        return self.tokens.shape[1] - 1


def in_context_linear_regression(
    n_tasks: int,
    length: int,
    dim: int = 2,
    *,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
    noise: float = 0.0,
) -> RegressionPrompts:
    """``n_tasks`` prompts of ``length`` tokens (``length - 1`` examples, then the query)."""
    if n_tasks < 1 or length < 2 or dim < 1:
        raise ValueError(f"need n_tasks >= 1, length >= 2, dim >= 1; got {n_tasks}, {length}, {dim}")
    w = torch.randn(n_tasks, dim, generator=generator, dtype=dtype)
    x = torch.randn(n_tasks, length, dim, generator=generator, dtype=dtype)
    y = torch.einsum("ntd,nd->nt", x, w)
    if noise > 0:
        y = y + noise * torch.randn(y.shape, generator=generator, dtype=dtype)
    tokens = torch.cat([x, y.unsqueeze(-1)], dim=-1)
    y_query = tokens[:, -1, -1].clone()
    tokens[:, -1, -1] = 0.0
    return RegressionPrompts(tokens, y_query, w)


# --- token tasks (representation collapse) -------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalPrompts:
    """``tokens``: ``(batch, L)``; ``answer``: ``(batch,)`` the token to retrieve; ``answer_position``: ``(batch,)``
    the position whose output should predict it (the last); ``source_position``: ``(batch,)`` where the answer
    sits in the context (so its distance to the query is ``answer_position - source_position``)."""

    tokens: Tensor
    answer: Tensor
    answer_position: Tensor
    source_position: Tensor


def random_tokens(batch: int, L: int, vocab: int = 64, *, generator: torch.Generator) -> Tensor:
    """``(batch, L)`` tokens i.i.d. uniform on ``{0, ..., vocab - 1}``."""
    if batch < 1 or L < 1 or vocab < 2:
        raise ValueError(f"need batch >= 1, L >= 1, vocab >= 2; got {batch}, {L}, {vocab}")
    return torch.randint(vocab, (batch, L), generator=generator)


def count_sequences(L: int, a: int, b: int) -> tuple[Tensor, Tensor]:
    """Barbero et al.'s count construction: ``x_L = [a]^L b`` ``(1, L + 1)`` and ``x_{L+1} = [a]^{L+1} b``
    ``(1, L + 2)``. Under a causal model without positions every a-state is the same, so the last token sees
    only how many a's precede it, a difference that shrinks as O(1/L²)."""
    if L < 1 or a == b or min(a, b) < 0:
        raise ValueError(f"need L >= 1 and distinct tokens a, b >= 0; got L = {L}, a = {a}, b = {b}")
    x_l = torch.full((1, L + 1), a, dtype=torch.long)
    x_l[0, -1] = b
    x_next = torch.full((1, L + 2), a, dtype=torch.long)
    x_next[0, -1] = b
    return x_l, x_next


def edit_first(x: Tensor, vocab: int, generator: torch.Generator) -> Tensor:
    """A copy of ``x`` ``(batch, L)`` with the token at position 1 (index 0, the farthest from the last token)
    replaced by a different token, uniform over the ``vocab - 1`` others."""
    if vocab < 2 or x.ndim != 2:
        raise ValueError(f"need (batch, L) tokens and vocab >= 2; got shape {tuple(x.shape)}, vocab {vocab}")
    shift = torch.randint(1, vocab, (x.shape[0],), generator=generator)  # never 0, so the token changes
    out = x.clone()
    out[:, 0] = (x[:, 0] + shift) % vocab
    return out


def associative_recall(
    n_pairs: int, L: int, vocab: int = 64, batch: int = 1, *, generator: torch.Generator
) -> RetrievalPrompts:
    """Associative recall: ``n_pairs`` key-value pairs, filler, then a query key; the answer is its value.

    Layout of each length-``L`` sequence: ``k_1 v_1 ... k_n v_n`` at positions ``0..2n - 1``, filler token 0
    up to position ``L - 2``, the query key at ``L - 1`` (``answer_position``). Keys are distinct within a sequence
    and drawn from ``{1, ..., vocab//2 - 1}``, values from ``{vocab//2, ..., vocab - 1}`` (so they never collide);
    the queried pair is uniform, and ``source_position`` is its value's index. Growing ``L`` moves the pairs away
    from the query, nothing else.
    """
    half = vocab // 2
    if n_pairs < 1 or n_pairs > half - 1 or L < 2 * n_pairs + 1 or batch < 1:
        raise ValueError(
            f"need 1 <= n_pairs <= vocab//2 - 1 and L >= 2 n_pairs + 1; got n_pairs = {n_pairs}, "
            f"L = {L}, vocab = {vocab}, batch = {batch}"
        )
    # distinct keys per sequence: the first n_pairs of a random permutation of the key range
    keys = 1 + torch.argsort(torch.rand(batch, half - 1, generator=generator), dim=-1)[:, :n_pairs]
    values = torch.randint(half, vocab, (batch, n_pairs), generator=generator)
    which = torch.randint(n_pairs, (batch,), generator=generator)
    tokens = torch.zeros(batch, L, dtype=torch.long)
    tokens[:, 0 : 2 * n_pairs : 2] = keys
    tokens[:, 1 : 2 * n_pairs : 2] = values
    rows = torch.arange(batch)
    tokens[:, -1] = keys[rows, which]
    return RetrievalPrompts(tokens, values[rows, which], torch.full((batch,), L - 1), 2 * which + 1)


def passkey(L: int, depth: float, vocab: int = 64, batch: int = 1, *, generator: torch.Generator) -> RetrievalPrompts:
    """Passkey retrieval: random filler with a marked key at relative ``depth``; the last token asks for it.

    Tokens 0 (marker) and 1 (query) are reserved; filler and the passkey are uniform on ``{2, ..., vocab - 1}``.
    The marker sits at ``p = round(depth (L - 3))`` and the passkey at ``p + 1`` (``source_position``), so
    ``depth = 0`` is the start of the context and ``depth = 1`` just before the query at ``L - 1``
    (``answer_position``).
    """
    if L < 3 or not 0.0 <= depth <= 1.0 or vocab < 3 or batch < 1:
        raise ValueError(f"need L >= 3, depth in [0, 1], vocab >= 3, batch >= 1; got {L}, {depth}, {vocab}, {batch}")
    tokens = torch.randint(2, vocab, (batch, L), generator=generator)
    p = round(depth * (L - 3))
    tokens[:, p] = 0
    tokens[:, -1] = 1
    key = tokens[:, p + 1].clone()
    return RetrievalPrompts(tokens, key, torch.full((batch,), L - 1), torch.full((batch,), p + 1))
