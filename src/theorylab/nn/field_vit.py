"""A dimension-bound vision transformer on fields, the full-attention counterpart of :class:`nn.axial.XViT`.

Kim et al., *Axial Neural Networks for Dimension-Free Foundation Models* (arXiv 2510.13665) convert CViT and
MPP, transformers built for one spatial dimension, into axial ones. :class:`FieldViT` is our stand-in for the
originals (CViT-S and MPP-Ti themselves are not rebuilt here): a ``Conv{d}d`` patch embedding with stride p,
a learned absolute position embedding over the token grid (so the model is bound to one d and one grid),
pre-norm blocks with full self-attention over all N/p^d tokens, and a ``ConvTranspose{d}d`` de-embedding.
Same width, depth, heads and patch as an :class:`~theorylab.nn.axial.XViT` gives the paper's comparison
of a converted model with its original (studies/axial-networks.md, claims 9-10).

:class:`ZeroPadToDims` is the "fix a maximum dimension and zero-pad" baseline: a field with fewer axes gets
trailing axes of the model's size, filled with zeros except index 0, and the output is read back at index 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
_DECONV = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}


class _Block(nn.Module):
    def __init__(self, d_model: int, heads: int, mlp_ratio: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(), nn.Linear(mlp_ratio * d_model, d_model)
        )

    def forward(self, h: Tensor) -> Tensor:  # (B, T, D)
        a = self.norm1(h)
        h = h + self.attn(a, a, a, need_weights=False)[0]
        return h + self.mlp(self.norm2(h))


class FieldViT(nn.Module):
    """Full-attention ViT for fields ``[B, C_in, *grid]`` of one dimension ``dims`` (1-3) and one ``grid``.

    ``[B, C_in, *grid]`` -> patch embed (stride ``patch``) + learned position embedding -> ``depth`` pre-norm
    blocks [h + MHA(LN h); h + MLP(LN h)] over all tokens -> LayerNorm -> de-embed -> ``[B, C_out, *grid]``.
    Score entries per head: T² for T = N / patch^d tokens (the axial model: T · Σ_i n_i / patch).
    """

    def __init__(
        self,
        grid: tuple[int, ...],
        in_channels: int = 1,
        out_channels: int = 1,
        d_model: int = 32,
        depth: int = 2,
        heads: int = 2,
        patch: int = 4,
        mlp_ratio: int = 2,
    ):
        super().__init__()
        dims = len(grid)
        if dims not in _CONV:
            raise ValueError(f"FieldViT supports 1-3 spatial axes; got grid {grid}")
        if any(n % patch for n in grid) or patch < 1:
            raise ValueError(f"FieldViT grid {grid} must be divisible by patch = {patch}")
        if depth < 0 or mlp_ratio < 1 or d_model % heads:
            raise ValueError(
                f"FieldViT needs depth >= 0, mlp_ratio >= 1 and heads dividing d_model; got {depth}, "
                f"{mlp_ratio}, {heads} / {d_model}"
            )
        self.grid, self.in_channels = tuple(grid), in_channels
        self.tokens = tuple(n // patch for n in grid)
        self.embed = _CONV[dims](in_channels, d_model, patch, stride=patch)
        self.pos = nn.Parameter(0.02 * torch.randn(1, int(torch.tensor(self.tokens).prod()), d_model))
        self.blocks = nn.ModuleList(_Block(d_model, heads, mlp_ratio) for _ in range(depth))
        self.norm = nn.LayerNorm(d_model)
        self.unembed = _DECONV[dims](d_model, out_channels, patch, stride=patch)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 2 + len(self.grid) or tuple(x.shape[2:]) != self.grid or x.shape[1] != self.in_channels:
            raise ValueError(f"FieldViT was built for [B, {self.in_channels}, *{self.grid}]; got {tuple(x.shape)}")
        h = self.embed(x)
        b, dm = h.shape[:2]
        h = h.flatten(2).transpose(1, 2) + self.pos  # (B, T, D)
        for block in self.blocks:
            h = block(h)
        h = self.norm(h).transpose(1, 2).reshape(b, dm, *self.tokens)
        return self.unembed(h)


class ZeroPadToDims(nn.Module):
    """Runs a model built for ``dims`` spatial axes of size ``size`` on fields with fewer axes: a field
    ``[B, C, *n]`` (len(n) <= dims, each n_i <= size) is zero-padded to ``[B, C, size, .., size]`` (the field
    at the low corner) and the output cropped back. The MPP-style "maximum dimension" baseline."""

    def __init__(self, model: nn.Module, dims: int, size: int):
        super().__init__()
        self.model, self.dims, self.size = model, dims, size

    def forward(self, x: Tensor) -> Tensor:
        sp = tuple(x.shape[2:])
        if len(sp) > self.dims or any(n > self.size for n in sp):
            raise ValueError(f"ZeroPadToDims({self.dims} axes of {self.size}) cannot hold a field of shape {sp}")
        full = x.reshape(*x.shape, *[1] * (self.dims - len(sp)))
        pads = [p for n in reversed(full.shape[2:]) for p in (0, self.size - n)]
        y = self.model(F.pad(full, pads))
        return y[(slice(None), slice(None), *[slice(0, n) for n in sp], *[0] * (self.dims - len(sp)))]
