"""A multi-frame conditional diffusion model with per-frame noise levels and level classifiers (diffusion-forcing
style; the SNS model of Liu, Zanna, Bruna, arXiv 2603.17750).

:class:`ConditionalDiffusion` wraps a backbone over ``frames`` frames ``[B, F, C, *spatial]``, each diffused to its
own level, plus ``anchors`` clean anchor frames. It returns the per-frame noise prediction ε̂ ``[B, F, C, *spatial]``
and one :class:`LevelClassifierHead` per frame (logits ``[B, F, levels]``). The backbone is any network that returns
``(ε̂, features)``:

- ``layout="flat"``: :func:`mlp_backbone` (a residual MLP on the flattened frames, the card's quick backbone;
  no anchor), which sees ``[B, F·C·N]``;
- ``layout="channels"``: :func:`unet_backbone` (``theorylab.nn.unet.UNet``, the card's paper backbone), which sees
  the frames stacked on the channel axis ``[B, (A + F)·C, *spatial]`` and returns ``F·C`` channels.

Both networks are noise-blind (no level input): the levels are inferred from the frames, which is what the heads
are trained for.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.nn.unet import UNet


class LevelClassifierHead(nn.Module):
    """Logits over ``levels`` noise levels of one frame, from a backbone's pooled features ``[B, d]``."""

    def __init__(self, features: int, levels: int):
        super().__init__()
        self.linear = nn.Linear(features, levels)

    def forward(self, h: Tensor) -> Tensor:
        return self.linear(h)


class _ResidualMLP(nn.Module):
    """``blocks`` x [LayerNorm, Linear, GELU, Linear] residual blocks of width ``width`` on a flattened input;
    returns ``(ε̂ [B, n_out], features [B, width])``."""

    def __init__(self, n_in: int, n_out: int, width: int, blocks: int):
        super().__init__()
        self.inp = nn.Linear(n_in, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))
            for _ in range(blocks)
        )
        self.norm = nn.LayerNorm(width)
        self.eps = nn.Linear(width, n_out)
        self.features = width

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        # the functional form of the same modules: a rollout calls this ~10^4 times at batch <= 16, where the
        # modules' Python dispatch costs as much as the matmuls (tested equal to the module form)
        h = F.linear(x.flatten(1), self.inp.weight, self.inp.bias)
        for ln, fc1, _, fc2 in self.blocks:
            z = F.layer_norm(h, ln.normalized_shape, ln.weight, ln.bias, ln.eps)
            h = h + F.linear(F.gelu(F.linear(z, fc1.weight, fc1.bias)), fc2.weight, fc2.bias)
        h = F.layer_norm(h, self.norm.normalized_shape, self.norm.weight, self.norm.bias, self.norm.eps)
        return F.linear(h, self.eps.weight, self.eps.bias), h


class _UNetFeatures(UNet):
    """The kit's periodic :class:`theorylab.nn.unet.UNet` returning ``(ε̂, pooled bottleneck)``, so that any number
    of level heads can read the bottleneck."""

    def __init__(
        self, dims: Literal[1, 2], in_channels: int, out_channels: int, width: int, levels: int, groups: int = 8
    ):
        super().__init__(dims, in_channels, out_channels, width, levels, groups)
        self.features = width * 2**levels

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        return self.forward_with_bottleneck(x)


def mlp_backbone(n: int, frames: int = 2, channels: int = 1, width: int = 256, blocks: int = 3) -> nn.Module:
    """The quick backbone: a residual MLP on ``frames`` flattened frames of ``channels`` x ``n`` points."""
    return _ResidualMLP(frames * channels * n, frames * channels * n, width, blocks)


def unet_backbone(
    dims: Literal[1, 2], frames: int = 2, channels: int = 1, anchors: int = 1, width: int = 64, levels: int = 3
) -> nn.Module:
    """The paper backbone: a periodic U-Net on ``(anchors + frames)·channels`` input and ``frames·channels`` output
    channels (3 -> 2 for one-channel KF with an anchor; 6 -> 4 for two-layer QG)."""
    return _UNetFeatures(dims, (anchors + frames) * channels, frames * channels, width, levels)


class ConditionalDiffusion(nn.Module):
    """A joint noise-blind DDPM over ``frames`` frames with per-frame levels and one level head per frame.

    ``forward(noisy [B, F, C, *spatial], anchor=None [B, A, C, *spatial])`` returns ``(ε̂ [B, F, C, *spatial],
    logits [B, F, levels])``; ``levels=False`` skips the heads (logits ``None``: a
    reverse-diffusion step needs only ε̂). ``layout`` says how the backbone sees the frames (module docstring)."""

    def __init__(
        self,
        backbone: nn.Module,
        frames: int = 2,
        levels: int = 1000,
        anchors: int = 0,
        layout: Literal["flat", "channels"] = "flat",
    ):
        super().__init__()
        if frames < 1 or levels < 2 or anchors < 0:
            raise ValueError(
                f"ConditionalDiffusion needs frames >= 1, levels >= 2, anchors >= 0; got {frames}, {levels}, {anchors}"
            )
        if layout not in ("flat", "channels"):
            raise ValueError(f"layout must be 'flat' or 'channels', got {layout!r}")
        if layout == "flat" and anchors:
            raise ValueError("the flat (MLP) layout takes no anchor frames")
        self.backbone, self.frames, self.levels, self.anchors, self.layout = backbone, frames, levels, anchors, layout
        self.heads = nn.ModuleList(LevelClassifierHead(backbone.features, levels) for _ in range(frames))

    def forward(self, noisy: Tensor, anchor: Tensor | None = None, levels: bool = True) -> tuple[Tensor, Tensor | None]:
        B, F = noisy.shape[:2]
        if F != self.frames:
            raise ValueError(f"expected {self.frames} frames, got {F}")
        if self.anchors:
            if anchor is None or anchor.shape[1] != self.anchors:
                raise ValueError(f"this model needs {self.anchors} anchor frame(s)")
            x = torch.cat([anchor, noisy], 1)
        else:
            x = noisy
        inp = x.flatten(1) if self.layout == "flat" else x.flatten(1, 2)
        eps, h = self.backbone(inp)
        logits = torch.stack([head(h) for head in self.heads], 1) if levels else None
        return eps.reshape(noisy.shape), logits
