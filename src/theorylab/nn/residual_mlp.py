"""Pure-MLP residual stacks for masked-token prediction (studies/rg-order-parameter).

Two variants, both with PyTorch default initialisation and every block output exposed:

- ``mixer`` (default, MLP-Mixer style, no attention): ``h0 = E[x] + p`` (learned position vectors);
  each block applies ``h <- h + MLP_tok(LN(h))`` along positions (L -> tok_mult·L -> L) and then
  ``h <- h + MLP_ch(LN(h))`` along features (d -> ch_mult·d -> d), GELU activations.
- ``window``: position t sees the concatenated one-hot window ``x_{t-w..t+w}`` (a padding id outside
  the sequence) through one linear map to ``d``; then channel-only residual MLP blocks, so the
  network is purely per-position after the embedding.
- ``flat``: the whole one-hot sequence, flattened to ``L·in_vocab`` inputs, through one linear map to a
  single ``d``-wide stream per sequence (shape (B, 1, d)); channel-only residual MLP blocks; the
  readout maps that stream to all ``L·out_vocab`` logits. Every position sees every token from layer 0.

All end in a final LN and a linear readout to ``out_vocab`` logits per position. ``forward(x, return_layers=True)``
returns ``(logits, [h_1, ..., h_N])``, the outputs of the N blocks, each (B, L, d) ((B, 1, d) for
``flat``; layer 0, the embedding, is ``embed(x)``).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from theorylab.core.rng import seeded


class _MLP(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class MixerBlock(nn.Module):
    """``h + MLP_tok(LN(h))`` along positions, then ``h + MLP_ch(LN(h))`` along features; ``tok=False``
    drops the token-mixing half (the window variant's channel-only block)."""

    def __init__(self, d: int, length: int, tok_mult: int = 2, ch_mult: int = 4, tok: bool = True) -> None:
        super().__init__()
        self.tok = tok
        if tok:
            self.ln_tok, self.mlp_tok = nn.LayerNorm(d), _MLP(length, tok_mult * length)
        self.ln_ch, self.mlp_ch = nn.LayerNorm(d), _MLP(d, ch_mult * d)

    def forward(self, h: Tensor) -> Tensor:
        if self.tok:
            h = h + self.mlp_tok(self.ln_tok(h).transpose(-1, -2)).transpose(-1, -2)
        return h + self.mlp_ch(self.ln_ch(h))


class ResidualMLPStack(nn.Module):
    """A residual MLP stack over token sequences (B, L) of ids in ``[0, in_vocab)``.

    ``variant="mixer"``: token + channel mixing blocks; ``variant="window"``: a linear embedding of
    the one-hot window of half-width ``window`` and channel-only blocks; ``variant="flat"``: a linear
    embedding of the flattened one-hot sequence into one stream per sequence, channel-only blocks and a
    readout to every position's logits. ``seed`` (optional) makes
    the default initialisation reproducible without moving the global RNG."""

    def __init__(
        self,
        in_vocab: int,
        out_vocab: int,
        length: int,
        d: int = 32,
        n_blocks: int = 6,
        variant: Literal["mixer", "window", "flat"] = "mixer",
        window: int = 4,
        tok_mult: int = 2,
        ch_mult: int = 4,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        if variant not in ("mixer", "window", "flat"):
            raise ValueError(f"variant must be 'mixer', 'window' or 'flat', got {variant!r}")
        if min(in_vocab, out_vocab, length, d, n_blocks, tok_mult, ch_mult) < 1 or window < 0:
            raise ValueError("in_vocab, out_vocab, length, d, n_blocks, tok_mult, ch_mult must be >= 1, window >= 0")
        self.in_vocab, self.out_vocab, self.length, self.d = in_vocab, out_vocab, length, d
        self.variant, self.window, self.n_blocks = variant, window, n_blocks
        if seed is None:
            self._build(tok_mult, ch_mult)
        else:
            with seeded(seed):
                self._build(tok_mult, ch_mult)

    def _build(self, tok_mult: int, ch_mult: int) -> None:
        d, length = self.d, self.length
        if self.variant == "mixer":
            self.embed_tok = nn.Embedding(self.in_vocab, d)
            self.embed_pos = nn.Embedding(length, d)
        elif self.variant == "window":  # one linear map on the concatenated one-hot window (in_vocab + a padding id)
            self.embed_win = nn.Linear((2 * self.window + 1) * (self.in_vocab + 1), d)
        else:  # one linear map on the flattened one-hot sequence
            self.embed_flat = nn.Linear(length * self.in_vocab, d)
        self.blocks = nn.ModuleList(
            MixerBlock(d, length, tok_mult, ch_mult, tok=self.variant == "mixer") for _ in range(self.n_blocks)
        )
        self.ln_out = nn.LayerNorm(d)
        self.readout = nn.Linear(d, self.out_vocab * (length if self.variant == "flat" else 1))

    def embed(self, x: Tensor) -> Tensor:
        """Layer 0: (B, L, d); (B, 1, d) for ``flat``."""
        if x.dim() != 2 or x.shape[1] != self.length:
            raise ValueError(f"tokens must have shape (B, {self.length}), got {tuple(x.shape)}")
        if self.variant == "mixer":
            return self.embed_tok(x) + self.embed_pos.weight[None]
        if self.variant == "flat":  # one-hot index of (position t, token x_t) in the flattened input: t·in_vocab + x_t
            idx = x + torch.arange(self.length, device=x.device) * self.in_vocab  # (B, L)
            return (self.embed_flat.weight.T[idx].sum(-2) + self.embed_flat.bias)[:, None]  # (B, 1, d)
        w, pad = self.window, self.in_vocab
        padded = nn.functional.pad(x, (w, w), value=pad)
        offsets = torch.arange(2 * w + 1, device=x.device)
        # index of (offset o, token at t + o - w) in the concatenated one-hot: o * (in_vocab + 1) + token
        win = padded.unfold(1, 2 * w + 1, 1) + offsets * (self.in_vocab + 1)  # (B, L, 2w + 1)
        return self.embed_win.weight.T[win].sum(-2) + self.embed_win.bias

    def forward(self, x: Tensor, return_layers: bool = False) -> Tensor | tuple[Tensor, list[Tensor]]:
        h = self.embed(x)
        layers = []
        for block in self.blocks:
            h = block(h)
            layers.append(h)
        logits = self.readout(self.ln_out(h))
        if self.variant == "flat":
            logits = logits.reshape(len(x), self.length, self.out_vocab)  # (B, 1, L·V) -> (B, L, V)
        return (logits, layers) if return_layers else logits
