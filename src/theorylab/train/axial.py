"""Training and evaluation of field classifiers for the axial-networks GP toy (studies/axial-networks.md).

:func:`train_classifier` is a plain Adam + cross-entropy loop over shuffled mini-batches (epochs, not steps: the
card's protocol) for any model mapping ``[B, C, *spatial]`` to logits ``[B, K]``; :func:`accuracy` reads one
in batches. :class:`CNN3DBaseline` is the paper toy's 3D-CNN baseline: 3 periodic Conv3d layers, mean+std
pooling and a linear head; a field of another dimension is brought to 3 axes first (:func:`to_3d`: a 1-D or
2-D field gets trailing singleton axes, a 4-D or 5-D field has its trailing axes flattened into the third).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def to_3d(x: Tensor) -> Tensor:
    """``[B, C, *spatial]`` -> ``[B, C, a, b, c]``: singleton axes (d < 3) or axes 3.. flattened into the third."""
    d = x.ndim - 2
    if d < 1:
        raise ValueError(f"to_3d needs a field [B, C, n_1, ..., n_d] with d >= 1; got shape {tuple(x.shape)}")
    if d <= 3:
        return x.reshape(*x.shape, *[1] * (3 - d))
    return x.flatten(4)


class CNN3DBaseline(nn.Module):
    """The paper toy's 3D-CNN: ``layers`` x [Conv3d(k³, periodic), act], mean+std pooling, a linear head.
    Inputs of any dimension go through :func:`to_3d`; a singleton axis is padded circularly (a no-op)."""

    def __init__(
        self, in_channels: int = 1, width: int = 32, layers: int = 3, kernel_size: int = 3, out_features: int = 2
    ):
        super().__init__()
        if layers < 1 or width < 1 or kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(
                f"CNN3DBaseline needs layers, width >= 1 and an odd kernel_size; got {layers}, {width}, {kernel_size}"
            )
        sizes = [in_channels] + [width] * layers
        self.convs = nn.ModuleList(nn.Conv3d(a, b, kernel_size) for a, b in zip(sizes[:-1], sizes[1:]))
        self.pad = kernel_size // 2
        self.head = nn.Linear(2 * width, out_features)

    def forward(self, x: Tensor) -> Tensor:
        h = to_3d(x)
        for conv in self.convs:
            pads = []
            for n in reversed(h.shape[2:]):  # circular padding needs pad <= size; zero-pad short axes instead
                pads.append(min(self.pad, n))
            h = F.pad(h, [p for p in pads for _ in (0, 1)], mode="circular")
            extra = [self.pad - p for p in pads for _ in (0, 1)]
            h = F.gelu(conv(F.pad(h, extra) if any(extra) else h))
        h = h.flatten(2)
        return self.head(torch.cat([h.mean(-1), h.std(-1, correction=0)], dim=1))


def train_classifier(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    epochs: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    check: Callable[..., None] | None = None,
    device: torch.device | str = "cpu",
) -> list[float]:
    """Adam (``lr``) on cross-entropy for ``epochs`` passes over ``(x, y)`` in shuffled mini-batches of ``batch``
    (``generator`` draws the order); returns the mean loss per epoch. ``check(what, value, step)`` (e.g.
    ``RunContext.check_finite``) sees every epoch's loss."""
    if epochs < 1 or batch < 1 or not lr > 0:
        raise ValueError(f"train_classifier needs epochs, batch >= 1 and lr > 0; got {epochs}, {batch}, {lr}")
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"x and y must hold the same number (>= 1) of samples; got {len(x)} and {len(y)}")
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for epoch in range(epochs):
        order = torch.randperm(len(x), generator=generator)
        total = 0.0
        for start in range(0, len(x), batch):
            idx = order[start : start + batch]
            loss = F.cross_entropy(model(x[idx].to(device)), y[idx].to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / len(x))
        if check is not None:
            check("classifier loss", losses[-1], epoch)
        elif not math.isfinite(losses[-1]):
            raise FloatingPointError(f"classifier loss is {losses[-1]} at epoch {epoch}")
    model.eval()
    return losses


@torch.no_grad()
def accuracy(model: nn.Module, x: Tensor, y: Tensor, batch: int = 32, device: torch.device | str = "cpu") -> float:
    """The fraction of ``x`` whose argmax logit is ``y`` (the model in eval mode, batches of ``batch``)."""
    if len(x) == 0:
        raise ValueError("accuracy needs at least one sample")
    model.to(device).eval()
    hits = sum(
        int((model(x[s : s + batch].to(device)).argmax(-1).cpu() == y[s : s + batch]).sum())
        for s in range(0, len(x), batch)
    )
    return hits / len(x)
