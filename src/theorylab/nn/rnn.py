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

    def __init__(
        self,
        kind: Literal["gru", "lstm", "elman"] = "gru",
        *,
        vocab_size: int,
        hidden: int,
        embedding: int = 8,
        d_output: int = 2,
        n_layers: int = 1,
        padding_idx: int | None = None,
        seed: int | None = None,
    ):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"unknown RNN kind '{kind}'; allowed: {', '.join(KINDS)}")
        for name, value, low in (
            ("vocab_size", vocab_size, 2),
            ("hidden", hidden, 1),
            ("embedding", embedding, 1),
            ("d_output", d_output, 1),
            ("n_layers", n_layers, 1),
        ):
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


class StackedGRU(nn.Module):
    """Several one-layer GRU ``RNN`` models trained as one: their states are stacked into one block-diagonal GRU of
    state size sum(h_i), so one call of torch's recurrence advances every model (speed: small GRUs on a CPU are
    bound by the per-token overhead, not by the arithmetic). The parameters are the models' own (each block is
    assembled from them at every forward pass), so gradients, Adam steps and the models after training are those of
    separate training, up to floating-point summation order. Each model reads its own tokens.

    ``forward(tokens)``: tokens ``(M, B, T)`` (model i reads ``tokens[i]``) -> logits ``(M, B, d_output)``, read from
    the state after the last token."""

    def __init__(self, models: list[RNN]):
        super().__init__()
        if not models:
            raise ValueError("StackedGRU needs at least one model")
        bad = [i for i, m in enumerate(models) if m.kind != "gru" or m.rnn.num_layers != 1]
        if bad:
            raise ValueError(f"StackedGRU stacks one-layer GRU models only; models {bad} are not")
        self.models = nn.ModuleList(models)
        self.hidden = [m.hidden for m in models]
        self.offsets = [sum(self.hidden[:i]) for i in range(len(models))]

    def _gates(self, name: str, block: bool) -> Tensor:
        """The stacked (3H, ...) weight or (3H,) bias: gate by gate (r, z, n), block-diagonal over the models."""
        parts = []
        for g in range(3):
            pieces = [getattr(m.rnn, name)[g * h : (g + 1) * h] for m, h in zip(self.models, self.hidden)]
            parts.append(torch.block_diag(*pieces) if block else torch.cat(pieces))
        return torch.cat(parts)

    def forward(self, tokens: Tensor) -> Tensor:
        if tokens.dim() != 3 or tokens.shape[0] != len(self.models):
            raise ValueError(f"tokens must be (M = {len(self.models)}, B, T); got {tuple(tokens.shape)}")
        x = torch.cat([m.embed(tokens[i]) for i, m in enumerate(self.models)], dim=-1)  # (B, T, sum e)
        weights = [
            self._gates("weight_ih_l0", True),
            self._gates("weight_hh_l0", True),
            self._gates("bias_ih_l0", False),
            self._gates("bias_hh_l0", False),
        ]
        h0 = x.new_zeros(1, x.shape[0], sum(self.hidden))
        out, _ = torch._VF.gru(x, h0, weights, True, 1, 0.0, self.training, False, True)  # (B, T, H)
        last = out[:, -1]  # (B, H)
        return torch.stack([m.head(last[:, o : o + h]) for m, o, h in zip(self.models, self.offsets, self.hidden)])
