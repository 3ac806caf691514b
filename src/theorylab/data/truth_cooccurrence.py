"""Truth co-occurrence data of Ravfogel, Yehudai, Linzen, Bruna & Bietti, *Emergence of Linear Truth Encodings in
Language Models* (arXiv 2510.15804, NeurIPS 2025), Sec. 3 (the toy model).

- :func:`truth_bijection`: a fixed random bijection ``g: X -> Y`` between N entities and N attributes, drawn with
  ``torch.randperm`` on the caller's generator.
- :func:`truth_cooccurrence`: sequences ``(x, y, x', y')``. With probability ρ the context is *true*
  (``y = g(x)`` and ``y' = g(x')``); otherwise *false* (``y`` and ``y'`` independent and uniform on Y). Entity
  tokens are ``0..N-1`` and attribute tokens ``N..2N-1`` (vocabulary ``2N``); the true/false label is kept for
  probes.
- :func:`truth_documents`: the "pretrained LM" stand-in of the study card: documents of ``n_facts`` facts
  ``(subject, relation, attribute)`` over ``R`` relations, each document entirely true with probability ρ, otherwise
  every fact with a uniformly random attribute; plus :func:`corrupt_one_fact`, which replaces one fact's attribute
  by a wrong one (the "one false fact earlier" test).

Everything is drawn from the given ``torch.Generator``; no global RNG is touched.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def truth_bijection(n: int, generator: torch.Generator) -> Tensor:
    """``g`` as a permutation of ``0..n-1``: entity ``x`` maps to attribute index ``g[x]`` (token ``n + g[x]``)."""
    if n < 2:
        raise ValueError(f"'n' must be >= 2; got {n}")
    return torch.randperm(n, generator=generator)


@dataclass(frozen=True)
class TruthBatch:
    """``tokens (B, 4)`` = ``(x, y, x', y')`` as token ids, ``true (B,)`` the context label (bool), ``n`` = N."""

    tokens: Tensor
    true: Tensor
    n: int


def truth_cooccurrence(n: int, rho: float, batch: int, g: Tensor, generator: torch.Generator) -> TruthBatch:
    """``batch`` sequences ``(x, y, x', y')`` of the truth co-occurrence generator (arXiv 2510.15804, Sec. 3).

    ``x, x'`` are i.i.d. uniform on X; with probability ``rho`` both attributes follow ``g``, otherwise both are
    independent uniform attributes (which may equal ``g(x)`` by chance, probability 1/N each)."""
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"'rho' must lie in [0, 1]; got {rho}")
    if g.shape != (n,):
        raise ValueError(f"'g' must be a permutation of length n = {n}; got shape {tuple(g.shape)}")
    x = torch.randint(0, n, (batch, 2), generator=generator)
    true = torch.rand(batch, generator=generator) < rho
    rand_y = torch.randint(0, n, (batch, 2), generator=generator)
    y = torch.where(true[:, None], g[x], rand_y)
    tokens = torch.stack((x[:, 0], n + y[:, 0], x[:, 1], n + y[:, 1]), dim=1)
    return TruthBatch(tokens=tokens, true=true, n=n)


@dataclass(frozen=True)
class TruthDocuments:
    """``tokens (B, 3 * n_facts)``: facts ``(subject, relation, attribute)`` back to back; ``true (B,)`` the
    document label; ``fact_true (B, n_facts)`` whether each fact's attribute is the correct one."""

    tokens: Tensor
    true: Tensor
    fact_true: Tensor


def document_vocab(n_subjects: int, n_relations: int, n_attributes: int) -> dict[str, int]:
    """Token layout of :func:`truth_documents`: subjects first, then relations, then attributes."""
    return dict(
        subject=0, relation=n_subjects, attribute=n_subjects + n_relations, size=n_subjects + n_relations + n_attributes
    )


def fact_table(n_subjects: int, n_relations: int, n_attributes: int, generator: torch.Generator) -> Tensor:
    """A fixed random table ``A[s, r]`` of correct attributes (uniform, drawn once per run): (S, R)."""
    return torch.randint(0, n_attributes, (n_subjects, n_relations), generator=generator)


def truth_documents(
    table: Tensor, n_attributes: int, n_facts: int, rho: float, batch: int, generator: torch.Generator
) -> TruthDocuments:
    """``batch`` documents of ``n_facts`` facts: subjects uniform, relations uniform on R; with probability ``rho``
    the document is true (every attribute is ``table[s, r]``), otherwise every attribute is uniform on the
    attributes (the study card's synthetic pretraining corpus for claim 9)."""
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"'rho' must lie in [0, 1]; got {rho}")
    n_subjects, n_relations = table.shape
    voc = document_vocab(n_subjects, n_relations, n_attributes)
    s = torch.randint(0, n_subjects, (batch, n_facts), generator=generator)
    r = torch.randint(0, n_relations, (batch, n_facts), generator=generator)
    true = torch.rand(batch, generator=generator) < rho
    rand_a = torch.randint(0, n_attributes, (batch, n_facts), generator=generator)
    a = torch.where(true[:, None], table[s, r], rand_a)
    tokens = torch.stack((s + voc["subject"], r + voc["relation"], a + voc["attribute"]), dim=2).flatten(1)
    return TruthDocuments(tokens=tokens, true=true, fact_true=a == table[s, r])


def corrupt_one_fact(
    docs: TruthDocuments, table: Tensor, n_attributes: int, fact: int, generator: torch.Generator
) -> TruthDocuments:
    """The same documents with fact ``fact``'s attribute replaced by a uniformly drawn *wrong* attribute."""
    n_subjects, n_relations = table.shape
    voc = document_vocab(n_subjects, n_relations, n_attributes)
    tokens = docs.tokens.clone()
    s = tokens[:, 3 * fact] - voc["subject"]
    r = tokens[:, 3 * fact + 1] - voc["relation"]
    correct = table[s, r]
    shift = torch.randint(1, n_attributes, correct.shape, generator=generator)
    tokens[:, 3 * fact + 2] = (correct + shift) % n_attributes + voc["attribute"]
    fact_true = docs.fact_true.clone()
    fact_true[:, fact] = False
    return TruthDocuments(tokens=tokens, true=torch.zeros_like(docs.true), fact_true=fact_true)
