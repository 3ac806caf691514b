"""Fact tables: R random bijections of N entities, multi-hop chains, chain-of-thought traces, Zipf queries.

The setting of Ravfogel, Yehudai, Bruna & Bietti, *Geometric Factual Recall in Transformers* (arXiv 2605.12426):
entities ``[N]``, relations ``[R]``, bijections ``pi_r`` drawn uniformly at random; the fact ``(s, r)`` has the
answer ``pi_r(s)``. Attributes live in the entity set, so chains ``pi_{r2}(pi_{r1}(s))`` are well defined.

Token layout of every sequence: entity ``e`` is token ``e`` and relation ``r`` is token ``N + r`` (vocabulary
``N + R``; :func:`noisy_context` adds noise tokens above it); the target of a query is an entity in ``[N]``.
Everything is drawn from an explicit :class:`torch.Generator`; the outputs are ``int64`` tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def _check(name: str, value: int, low: int) -> None:
    if not isinstance(value, int) or value < low:
        raise ValueError(f"'{name}' must be an integer >= {low}; got {value!r}")


@dataclass(frozen=True)
class FactTable:
    """``table[r, s] = pi_r(s)``: R bijections of ``[N]`` (an ``(R, N)`` int64 tensor, every row a permutation)."""

    table: Tensor

    @property
    def n_entities(self) -> int:
        return int(self.table.shape[1])

    @property
    def n_relations(self) -> int:
        return int(self.table.shape[0])

    @property
    def vocab_size(self) -> int:
        return self.n_entities + self.n_relations

    def relation_token(self, r: Tensor | int) -> Tensor | int:
        return r + self.n_entities

    def queries(self) -> tuple[Tensor, Tensor]:
        """All N·R one-hop facts as token sequences ``[s, N + r]`` (N·R, 2) and targets ``pi_r(s)`` (N·R,),
        ordered relation-major (fact ``i = r·N + s``)."""
        n, rr = self.n_entities, self.n_relations
        s = torch.arange(n).repeat(rr)
        r = torch.arange(rr).repeat_interleave(n)
        return torch.stack([s, r + n], dim=1), self.table[r, s]

    def chains(self, hops: int = 2) -> tuple[Tensor, Tensor, Tensor]:
        """All N·R^hops multi-hop queries ``[s, N + r1, ..., N + r_h]`` (N·R^h, 1 + h), their answers
        ``pi_{r_h}(...pi_{r1}(s))`` and every intermediate entity (N·R^h, h) (the last column is the answer)."""
        _check("hops", hops, 1)
        n, rr = self.n_entities, self.n_relations
        rels = torch.cartesian_prod(*[torch.arange(rr)] * hops).reshape(-1, hops)  # (R^h, h), r1 varies slowest
        s = torch.arange(n).repeat(len(rels))
        rel = rels.repeat_interleave(n, dim=0)  # (N·R^h, h)
        path, cur = [], s
        for j in range(hops):
            cur = self.table[rel[:, j], cur]
            path.append(cur)
        inter = torch.stack(path, dim=1)
        return torch.cat([s[:, None], rel + n], dim=1), inter[:, -1], inter

    def cot_traces(self, hops: int = 2) -> tuple[Tensor, Tensor]:
        """Chain-of-thought traces: ``[s, N + r1, ..., N + r_h, m_1, ..., m_h]`` (N·R^h, 1 + 2h) with the
        intermediate entities emitted first and the answer last, and the next-token targets of the emitted part:
        position ``h + j`` (0-based) predicts ``m_{j+1}`` (an (N·R^h, h) tensor)."""
        seq, _, inter = self.chains(hops)
        return torch.cat([seq, inter], dim=1), inter

    def shuffled(self, generator: torch.Generator) -> "FactTable":
        """The same attribute multiset with every relation re-drawn: a fresh, independent table (a control)."""
        return random_bijections(self.n_entities, self.n_relations, generator)


def random_bijections(n_entities: int, n_relations: int, generator: torch.Generator) -> FactTable:
    """R independent uniform permutations of ``[N]`` (``torch.randperm`` from ``generator``)."""
    _check("n_entities", n_entities, 2)
    _check("n_relations", n_relations, 1)
    return FactTable(torch.stack([torch.randperm(n_entities, generator=generator) for _ in range(n_relations)]))


def zipf_weights(n: int, exponent: float = 1.0) -> Tensor:
    """``p_i ∝ (i + 1)^(-exponent)``, i = 0..n-1 (float64, sums to 1): the query frequencies of Nichani, Lee &
    Bietti (ICLR 2025) and Cabannes, Dohmatob & Bietti's associative-memory scaling laws."""
    _check("n", n, 1)
    if not exponent >= 0:
        raise ValueError(f"'exponent' must be >= 0; got {exponent!r}")
    w = torch.arange(1, n + 1, dtype=torch.float64) ** (-float(exponent))
    return w / w.sum()


def zipf_queries(
    facts: FactTable, n_samples: int, generator: torch.Generator, exponent: float = 1.0, order: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """``n_samples`` one-hop facts drawn i.i.d. with Zipf frequencies over the N·R facts.

    The rank of each fact is a random permutation (``order``, drawn from ``generator`` unless given), so the
    frequent facts are not tied to small entity ids. Returns sequences (n, 2), targets (n,) and fact indices (n,)
    into :meth:`FactTable.queries`.
    """
    _check("n_samples", n_samples, 1)
    seq, tgt = facts.queries()
    m = len(tgt)
    if order is None:
        order = torch.randperm(m, generator=generator)
    elif sorted(order.tolist()) != list(range(m)):
        raise ValueError(f"'order' must be a permutation of the {m} facts")
    rank = torch.multinomial(zipf_weights(m, exponent), n_samples, replacement=True, generator=generator)
    idx = order[rank]
    return seq[idx], tgt[idx], idx


def noisy_context(seq: Tensor, length: int, n_noise: int, vocab_offset: int, generator: torch.Generator) -> Tensor:
    """The noisy-context format of Nichani, Lee & Bietti (ICLR 2025, ``task.py::FactRecall``): each one-hop query
    ``[s, r]`` becomes ``length`` tokens, noise tokens drawn uniformly from ``[vocab_offset, vocab_offset + n_noise)``
    with the subject at a uniformly random position before the last and the relation last. (B, 2) -> (B, length)."""
    _check("length", length, 2)
    _check("n_noise", n_noise, 1)
    if seq.dim() != 2 or seq.shape[1] != 2:
        raise ValueError(f"'seq' must be (B, 2) one-hop queries; got shape {tuple(seq.shape)}")
    b = len(seq)
    out = torch.randint(vocab_offset, vocab_offset + n_noise, (b, length), generator=generator)
    where = torch.randint(0, length - 1, (b,), generator=generator)
    out[torch.arange(b), where] = seq[:, 0]
    out[:, -1] = seq[:, 1]
    return out
