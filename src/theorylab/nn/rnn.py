"""A token-reading recurrent network: embedding, torch's GRU / LSTM / Elman RNN, linear head on the final state.

The model of the RNN side of Yehudai, Amsel & Bruna, arXiv 2503.01544, Sec. 4 (an RNN reads the serialised tree
left to right; its state size ``hidden`` is the resource that must grow as log n in a suitable order). The
recurrence is torch's own module, so this wrapper adds only the embedding, the padding-aware choice of the final
state and the readout.

Shapes: ``B`` batch, ``T`` tokens, ``e`` embedding, ``h`` hidden.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Literal

import torch
from torch import Tensor, nn

from theorylab.core.rng import seeded

KINDS = ("gru", "lstm", "elman")


class RNN(nn.Module):
    """``RNN(kind, vocab_size, hidden, embedding, d_output)``: tokens ``(B, T)`` -> ``(B, d_output)`` logits read from
    the state after the last non-padding token (``lengths``) or after the last token."""

    def __init__(self, kind: Literal["gru", "lstm", "elman"] = "gru", *, vocab_size: int, hidden: int,
                 embedding: int = 8, d_output: int = 2, n_layers: int = 1, padding_idx: int | None = None,
                 seed: int | None = None):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"unknown RNN kind '{kind}'; allowed: {', '.join(KINDS)}")
        for name, value, low in (("vocab_size", vocab_size, 2), ("hidden", hidden, 1), ("embedding", embedding, 1),
                                 ("d_output", d_output, 1), ("n_layers", n_layers, 1)):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"'{name}' must be an integer >= {low}; got {value}")
        self.kind, self.hidden = kind, hidden
        with seeded(seed) if seed is not None else nullcontext():
            self.embed = nn.Embedding(vocab_size, embedding, padding_idx=padding_idx)
            cls = {"gru": nn.GRU, "lstm": nn.LSTM, "elman": nn.RNN}[kind]
            self.rnn = cls(embedding, hidden, num_layers=n_layers, batch_first=True)
            self.head = nn.Linear(hidden, d_output)

    def states(self, tokens: Tensor) -> Tensor:
        """(B, T, h): the last layer's state after each token."""
        out, _ = self.rnn(self.embed(tokens))
        return out

    def forward(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        out = self.states(tokens)  # (B, T, h)
        if lengths is None:
            last = out[:, -1]
        else:
            last = out[torch.arange(out.shape[0], device=out.device), lengths - 1]  # (B, h)
        return self.head(last)

