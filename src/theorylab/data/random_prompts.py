"""Random embedded prompts: a context and a query drawn from a Gaussian embedding table.

:func:`embedded_prompt_pair` is the input of the implicit-patch checks (Goldwaser et al., arXiv
2511.17864): a prompt of ``context`` tokens then a query, embedded by rows of an ``N(0, 1)`` table,
and the embedding of a *different* query token with the same context (the token-dependence control:
a patch computed for one query must miss another's output).
"""

from __future__ import annotations

import torch
from torch import Tensor


def embedded_prompt_pair(
    vocab: int, d: int, context: int, generator: torch.Generator, dtype: torch.dtype = torch.float64
) -> tuple[Tensor, Tensor]:
    """``(X, other)``: ``X`` ``(context + 1, d)`` the embedded prompt (context rows, then the query),
    ``other`` ``(d,)`` the embedding of a token uniform among the ``vocab - 1`` tokens other than the query.

    Draws, in order: the table ``(vocab, d)``, the ``context + 1`` token ids, the other token's offset.
    """
    if vocab < 2 or d < 1 or context < 0:
        raise ValueError(f"need vocab >= 2, d >= 1, context >= 0; got {vocab}, {d}, {context}")
    table = torch.randn(vocab, d, generator=generator, dtype=dtype)
    ids = torch.randint(0, vocab, (context + 1,), generator=generator)
    other = (ids[-1] + 1 + torch.randint(0, vocab - 1, (1,), generator=generator)[0]) % vocab
    return table[ids], table[other]
