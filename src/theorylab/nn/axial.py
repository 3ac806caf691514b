"""Axial layers: one set of weights for fields with any number of spatial axes.

Kim, Park, Bruna, Yang, Lee, *Axial Neural Networks for Dimension-Free Foundation Models*, arXiv
2510.13665 (NeurIPS 2025). A field ``x`` has shape ``[B, C, n_1, ..., n_d]``; ``Π_i`` moves spatial
axis ``i`` last and ``⊕`` is a symmetric aggregate over axes (``"sum"`` or ``"mean"``). Every layer
applies the same operator along every axis (or pair of axes) and aggregates symmetrically, so

    f(Π x) = Π f(x)  for every permutation Π of the spatial axes,

and the parameter count does not depend on ``d``: one ``state_dict`` runs on 1-D, 2-D, 3-D (and
higher) fields. All convolutions are periodic (circular padding), so the conv layers are also
exactly equivariant to periodic shifts.

Set form (SX, the paper's y = φ(⊕_Π Π⁻¹ ψ(Π x))):

- :class:`SXConv`: ``y = ⊕_i Π_i⁻¹ Conv1d_k(Π_i x) + b``; one shared ``Conv1d`` runs along axis i with
  the other axes folded into the batch, one bias. Its linear kernel is cross-shaped,
  ``K(z) = Σ_i k(z_i) Π_{j≠i} δ(z_j)`` (the paper's eq. 14).
- :class:`SXAttention`: ``y = W_o ⊕_i Π_i⁻¹ SelfAttn(Π_i x)`` with shared Q/K/V/O: each position
  attends along each of its axis lines, ``N · Σ_i n_i`` score entries per head (N = Π_i n_i)
  instead of N² for full attention (:func:`axial_score_entries`, :func:`full_score_entries`).

Graph form (GX: axes are the nodes of a complete graph; more expressive):

- :class:`GXLift`: node features ``h_i = ⊕_{j≠i} Conv2d(x on the axis pair (i, j)) + b``, one
  shared ``Conv2d`` whose first kernel axis runs along the node axis i; ``h``: ``[B, d, C, *spatial]``.
  A 1-D input is repeated along a new axis of the same length to make a 2-D tensor first.
- :class:`GXMessage`: ``h'_i = h_i + act(U(h_i) + ⊕_{j≠i} M_{j→i}(h_j))``; conv messages: U a 1-D
  conv along axis i, M a 2-D conv of h_j on the plane (i, j); attention messages: U = SelfAttn of
  h_i along axis i, M = SelfAttn of h_j along axis j (two weight sets, shared over axes).
- :class:`GXReadout`: ``y = ⊕_i h_i`` (parameter-free), back to a field ``[B, C, *spatial]``.

With lift + readout and no activation, the GX linear kernel is ``Σ_{i≠j} k(z_i, z_j) Π_{l∉{i,j}} δ(z_l)``
(a symmetrised Conv2d): it represents ∂x∂y, which is orthogonal to every SX kernel.

Networks: :class:`XCNN` (SXConv or GX stack, then mean+std pooling over space and a linear head;
:meth:`XCNN.features` returns the field before pooling) and :class:`XViT` (axis-shared patch
embedding, pre-norm axial-attention transformer blocks, axis-shared de-embedding back to a field).
:class:`AxisPositionalEncoding` is the optional positional encoding; it tells the axes apart and
so breaks the axis-permutation (and shift) equivariance on purpose, as the paper notes.

Reconstruction notes (not verified against the paper's equations): the GX node features are full
fields (no pooling over the other axes; a pooled per-axis profile could not represent ∂x∂y), and
the GX messages above are our equivariant choice.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Literal, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Aggregate = Literal["sum", "mean"]
AGGREGATES = ("sum", "mean")
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"gelu": F.gelu, "relu": F.relu, "tanh": torch.tanh}


# ----------------------------------------------------------------------------------------------------------------
# Axis utilities
# ----------------------------------------------------------------------------------------------------------------


def axis_permutations(d: int) -> list[tuple[int, ...]]:
    """All ``d!`` permutations of ``range(d)``, identity first."""
    if d < 0:
        raise ValueError(f"d must be >= 0, got {d}")
    return list(itertools.permutations(range(d)))


def permute_axes(x: Tensor, perm: Sequence[int], start: int = 2) -> Tensor:
    """Permute the axes of ``x`` from ``start`` on: new axis ``a`` is old axis ``perm[a]``
    (``x.permute(0, .., start - 1, start + perm[0], ...)``; ``start = 2`` for ``[B, C, *spatial]``)."""
    d = x.ndim - start
    if sorted(perm) != list(range(d)):
        raise ValueError(
            f"perm {tuple(perm)} is not a permutation of the {d} axes from dim {start} of a {x.ndim}-D tensor"
        )
    return x.permute(*range(start), *(start + p for p in perm))


def axial_score_entries(spatial: Sequence[int]) -> int:
    """Attention scores one head of :class:`SXAttention` forms per sample: ``N · Σ_i n_i`` (N = Π_i n_i)."""
    return math.prod(spatial) * sum(spatial)


def full_score_entries(spatial: Sequence[int]) -> int:
    """Attention scores of full attention over all N = Π_i n_i positions: ``N²``."""
    return math.prod(spatial) ** 2


def _fold(x: Tensor, axes: Sequence[int]) -> tuple[Tensor, Callable[[Tensor], Tensor]]:
    """Fold every spatial axis not in ``axes`` into the batch: ``[B, C, *spatial]`` -> ``[B·M, C, *(n_a for a
    in axes)]`` (in the order given), and the map that puts a result ``[B·M, C', *sizes']`` back to
    ``[B, C', *spatial']`` (the sizes along ``axes`` may have changed, e.g. by a strided conv)."""
    B, C, *sp = x.shape
    others = [a for a in range(len(sp)) if a not in axes]
    order = [0, *(2 + a for a in others), 1, *(2 + a for a in axes)]
    folded = x.permute(order).reshape(-1, C, *(sp[a] for a in axes))
    inverse = [order.index(k) for k in range(x.ndim)]

    def restore(y: Tensor) -> Tensor:
        return y.reshape(B, *(sp[a] for a in others), *y.shape[1:]).permute(inverse)

    return folded, restore


def _aggregate(total: Tensor, count: int, aggregate: str) -> Tensor:
    return total / count if aggregate == "mean" else total


def _check_choice(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")


def _check_field(x: Tensor, channels: int, name: str, min_dims: int = 1) -> None:
    if x.ndim < 2 + min_dims or x.shape[1] != channels:
        raise ValueError(
            f"{name} needs a field [B, {channels}, n_1, ..., n_d] with d >= {min_dims}; got shape {tuple(x.shape)}"
        )


def _check_sizes(x: Tensor, pad: int, name: str) -> None:
    if any(n < pad for n in x.shape[2:]):
        raise ValueError(
            f"{name}: every spatial size must be >= kernel_size // 2 = {pad} for circular padding; "
            f"got {tuple(x.shape[2:])}"
        )


def _init_conv(weight: Tensor, bias: Tensor | None, fan_in: int) -> None:
    """torch's Conv default: kaiming-uniform(a=√5) weights, bias ~ U(±1/√fan_in)."""
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        bound = 1 / math.sqrt(fan_in)
        nn.init.uniform_(bias, -bound, bound)


def _add_rolled(dst: Tensor, src: Tensor, shift: int, dim: int) -> None:
    """``dst += torch.roll(src, shift, dim)`` in place, without materialising the rolled copy."""
    n = src.shape[dim]
    s = shift % n
    if s == 0:
        dst += src
        return
    dst.narrow(dim, s, n - s).add_(src.narrow(dim, 0, n - s))
    dst.narrow(dim, 0, s).add_(src.narrow(dim, n - s, s))


def _copy_rolled(dst: Tensor, src: Tensor, shift: int, dim: int) -> None:
    """``dst[:] = torch.roll(src, shift, dim)`` in place."""
    n = src.shape[dim]
    s = shift % n
    if s == 0:
        dst.copy_(src)
        return
    dst.narrow(dim, s, n - s).copy_(src.narrow(dim, 0, n - s))
    dst.narrow(dim, 0, s).copy_(src.narrow(dim, n - s, s))


def _shift_sum(z: Tensor) -> Tensor:
    """``Σ_i Σ_t roll(z[..., t, :], pad − t, axis i)`` for channels-last taps ``z`` ``[B, *spatial, k, C]``
    (pad = k // 2)."""
    k, d = z.shape[-2], z.ndim - 3
    pad = k // 2
    total = d * z[..., pad, :]  # the centre tap is not shifted on any axis
    for i in range(d):
        for t in range(k):
            if t != pad:
                _add_rolled(total, z[..., t, :], pad - t, 1 + i)
    return total


class _AxisShiftSum(torch.autograd.Function):
    """Channels-last taps ``z`` ``[B, *spatial, k, C]`` -> ``Σ_i Σ_t roll(z_t, pad − t, axis i)`` ``[B, *spatial, C]``,
    by in-place shifted adds both ways (autograd's slice-copy backward would be several times slower); the
    adjoint is the same sum with the shifts reversed, taken for each tap."""

    generate_vmap_rule = True  # so torch.func.vmap can batch models (e.g. seeds) through it

    @staticmethod
    def forward(z: Tensor) -> Tensor:
        return _shift_sum(z)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.k = inputs[0].shape[-2]

    @staticmethod
    def backward(ctx, g: Tensor) -> Tensor:
        return _AxisShiftSumAdjoint.apply(g, ctx.k)


class _AxisShiftSumAdjoint(torch.autograd.Function):
    """The adjoint of :class:`_AxisShiftSum`: ``g`` ``[B, *spatial, C]`` -> ``[B, *spatial, k, C]``, tap t holding
    ``Σ_i roll(g, t − pad, axis i)`` (differentiable again: its adjoint is :class:`_AxisShiftSum`)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(g: Tensor, k: int) -> Tensor:
        d, pad = g.ndim - 2, k // 2
        out = g.new_empty(*g.shape[:-1], k, g.shape[-1])
        for t in range(k):
            if t == pad:
                out[..., t, :] = d * g
            else:
                _copy_rolled(out[..., t, :], g, t - pad, 1)  # the first axis writes, the others add
                for i in range(1, d):
                    _add_rolled(out[..., t, :], g, t - pad, 1 + i)
        return out

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        pass

    @staticmethod
    def backward(ctx, gz: Tensor) -> tuple[Tensor, None]:
        return _AxisShiftSum.apply(gz), None


def _identity(x: Tensor) -> Tensor:
    return x


def _bias_view(b: Tensor, d: int) -> Tensor:
    return b.view(-1, *[1] * d)


def repeat_to_2d(x: Tensor) -> Tensor:
    """The GX trick for a 1-D field: repeat ``[B, C, n]`` along a new last axis of the same length -> ``[B, C, n, n]``.
    Every layer here keeps a field that is constant along an axis constant along it, so averaging that
    axis out again (:class:`GXReadout` with ``dims=1``) recovers a 1-D field."""
    if x.ndim != 3:
        raise ValueError(f"repeat_to_2d needs a 1-D field [B, C, n]; got shape {tuple(x.shape)}")
    return x.unsqueeze(-1).expand(*x.shape, x.shape[-1]).contiguous()


# ----------------------------------------------------------------------------------------------------------------
# SX layers
# ----------------------------------------------------------------------------------------------------------------


class SXConv(nn.Module):
    """``y = ⊕_i Π_i⁻¹ Conv1d_k(Π_i x) + b``: one periodic 1-D conv (weights ``[C_out, C_in, k]``, no bias of its
    own) shared by every spatial axis, one bias. ``x``: ``[B, C_in, *spatial]`` with any d >= 1.

    Computed as one channel mix per tap, ``z_t = W_t x`` (shared by all axes), then periodic shifts of the
    taps along each axis, added in place: d times less channel mixing than d folded ``Conv1d`` calls and
    no transposes. With fewer input than output channels (a first layer) the input is shifted instead
    (``k·C_in`` values per point, not ``k·C_out``) before one GEMM; both paths equal the folded ``Conv1d``s to
    float rounding. A kernel wider than an axis wraps around it (a periodic convolution)."""

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: int = 3, aggregate: Aggregate = "sum", bias: bool = True
    ):
        super().__init__()
        if in_channels < 1 or out_channels < 1 or kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(
                f"SXConv needs channels >= 1 and an odd kernel_size >= 1; got in={in_channels}, "
                f"out={out_channels}, kernel_size={kernel_size}"
            )
        _check_choice("aggregate", aggregate, AGGREGATES)
        self.in_channels, self.out_channels, self.kernel_size, self.aggregate = (
            in_channels,
            out_channels,
            kernel_size,
            aggregate,
        )
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        _init_conv(self.weight, self.bias, in_channels * kernel_size)

    def forward(self, x: Tensor) -> Tensor:
        _check_field(x, self.in_channels, "SXConv")
        k, d = self.kernel_size, x.ndim - 2
        # Conv1d along axis i is y[n] = Σ_t W_t x[n + t − pad] (circular). The channel mixes z_t = W_t x do not
        # depend on the axis, so they are computed once (one matmul) and only the shifts differ per axis.
        # Channels last, so that the mix is one GEMM and a stack of SXConvs never copies between layers.
        # With fewer input than output channels (a first layer) the shifts are cheaper on the input side:
        # u_t = Σ_i roll(x, pad − t, axis i) (k·C_in values per point, the adjoint's taps reversed), then one
        # GEMM y = Σ_t W_t u_t; the same sums in another order (equal to float rounding).
        xl = x.movedim(1, -1)  # (B, *spatial, C_in)
        if self.in_channels < self.out_channels:
            w = self.weight.flip(2).permute(2, 1, 0).reshape(k * self.in_channels, self.out_channels)
            if self.aggregate == "mean":
                w = w / d
            u = _AxisShiftSumAdjoint.apply(xl, k)  # (B, *spatial, k, C_in), tap t' = k − 1 − t
            y = u.flatten(-2) @ w
        else:
            w = self.weight.permute(1, 2, 0).reshape(self.in_channels, k * self.out_channels)
            if self.aggregate == "mean":
                w = w / d
            z = xl * w[0] if self.in_channels == 1 else xl @ w  # an outer product is slow as a GEMM
            y = _AxisShiftSum.apply(z.unflatten(-1, (k, self.out_channels)))  # (B, *spatial, C_out)
        if self.bias is not None:
            y = y + self.bias
        return y.movedim(-1, 1)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, aggregate={self.aggregate!r}"


class _AxisSelfAttention(nn.Module):
    """Multi-head softmax self-attention along one spatial axis of a channels-last field ``[B, *spatial, C]``,
    the other axes folded into the batch; explicit scores (so they can be counted), no positional encoding."""

    def __init__(self, channels: int, heads: int, bias: bool = True):
        super().__init__()
        if channels < 1 or heads < 1 or channels % heads:
            raise ValueError(
                f"attention needs channels divisible by heads >= 1; got channels={channels}, heads={heads}"
            )
        self.channels, self.heads = channels, heads
        self.qkv = nn.Linear(channels, 3 * channels, bias=bias)
        self.out = nn.Linear(channels, channels, bias=bias)

    def attend(self, qkv: Tensor, axis: int) -> tuple[Tensor, int]:
        """Attention along spatial ``axis`` of projected ``qkv`` ``[B, *spatial, 3C]`` (before the output
        projection) -> ``([B, *spatial, C], score entries per sample and head)``."""
        B, *sp, _ = qkv.shape
        n, H, C = sp[axis], self.heads, self.channels
        t = qkv.movedim(1 + axis, -2)  # (B, *others, n, 3C)
        others = t.shape[1:-2]
        q, k, v = t.reshape(-1, n, 3, H, C // H).permute(2, 0, 3, 1, 4)  # each (M, H, n, C/H)
        scores = q @ k.transpose(-1, -2) / math.sqrt(C // H)  # (M, H, n, n)
        a = torch.softmax(scores, dim=-1) @ v  # (M, H, n, C/H)
        a = a.transpose(1, 2).reshape(B, *others, n, C).movedim(-2, 1 + axis)
        return a, scores.shape[0] * n * n // B


class SXAttention(nn.Module):
    """``y = W_o ⊕_i Π_i⁻¹ SelfAttn(Π_i x) + b_o`` with one set of Q/K/V/O weights shared by every axis.

    ``forward``: ``[B, C, *spatial]``; :meth:`forward_channels_last`: ``[B, *spatial, C]``. After each call,
    ``last_score_entries`` holds the number of attention scores formed per sample and head (counted
    from the score tensors: ``N · Σ_i n_i``)."""

    def __init__(self, channels: int, heads: int = 1, aggregate: Aggregate = "sum", bias: bool = True):
        super().__init__()
        _check_choice("aggregate", aggregate, AGGREGATES)
        self.attn = _AxisSelfAttention(channels, heads, bias)
        self.channels, self.heads, self.aggregate = channels, heads, aggregate
        self.last_score_entries = 0

    def forward_channels_last(self, h: Tensor) -> Tensor:
        if h.ndim < 3 or h.shape[-1] != self.channels:
            raise ValueError(
                f"SXAttention needs [B, n_1, ..., n_d, {self.channels}] (channels last); got shape {tuple(h.shape)}"
            )
        d = h.ndim - 2
        qkv = self.attn.qkv(h)
        total, entries = None, 0
        for i in range(d):
            a, e = self.attn.attend(qkv, i)
            total, entries = (a if total is None else total + a), entries + e
        self.last_score_entries = entries
        return self.attn.out(_aggregate(total, d, self.aggregate))

    def forward(self, x: Tensor) -> Tensor:
        _check_field(x, self.channels, "SXAttention")
        return self.forward_channels_last(x.movedim(1, -1)).movedim(-1, 1)


# ----------------------------------------------------------------------------------------------------------------
# GX layers
# ----------------------------------------------------------------------------------------------------------------


def _pair_conv(x: Tensor, weight: Tensor, i: int, j: int) -> Tensor:
    """Periodic 2-D conv of ``x`` ``[B, C, *spatial]`` on the axis plane (i, j), the kernel's first axis along i."""
    pad = weight.shape[-1] // 2
    folded, restore = _fold(x, (i, j))  # (B·M, C, n_i, n_j)
    return restore(F.conv2d(F.pad(folded, (pad,) * 4, mode="circular"), weight))


def _line_conv(x: Tensor, weight: Tensor, i: int) -> Tensor:
    pad = weight.shape[-1] // 2
    folded, restore = _fold(x, (i,))
    return restore(F.conv1d(F.pad(folded, (pad, pad), mode="circular"), weight))


class GXLift(nn.Module):
    """``h_i = ⊕_{j≠i} Conv2d(x on the axis pair (i, j)) + b``: field ``[B, C_in, *spatial]`` -> node features
    ``[B, d, C_out, *spatial]`` (node i belongs to axis i). One periodic ``Conv2d`` (``[C_out, C_in, k, k]``)
    is shared by all ordered pairs; its first kernel axis runs along the node axis. A 1-D field is
    repeated to 2-D first (:func:`repeat_to_2d`), giving 2 nodes on ``[n, n]``."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int = 3,
        aggregate: Aggregate = "mean",
        bias: bool = True,
    ):
        super().__init__()
        if in_channels < 1 or out_channels < 1 or kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(
                f"GXLift needs channels >= 1 and an odd kernel_size >= 1; got in={in_channels}, "
                f"out={out_channels}, kernel_size={kernel_size}"
            )
        _check_choice("aggregate", aggregate, AGGREGATES)
        self.in_channels, self.out_channels, self.kernel_size, self.aggregate = (
            in_channels,
            out_channels,
            kernel_size,
            aggregate,
        )
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size, kernel_size))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        _init_conv(self.weight, self.bias, in_channels * kernel_size**2)

    def forward(self, x: Tensor) -> Tensor:
        _check_field(x, self.in_channels, "GXLift")
        if x.ndim == 3:
            x = repeat_to_2d(x)
        _check_sizes(x, self.kernel_size // 2, "GXLift")
        d = x.ndim - 2
        nodes = []
        for i in range(d):
            total = None
            for j in range(d):
                if j != i:
                    y = _pair_conv(x, self.weight, i, j)
                    total = y if total is None else total + y
            h = _aggregate(total, d - 1, self.aggregate)
            nodes.append(h if self.bias is None else h + _bias_view(self.bias, d))
        return torch.stack(nodes, dim=1)  # (B, d, C_out, *spatial)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, aggregate={self.aggregate!r}"


class _ChannelNorm(nn.Module):
    """LayerNorm over the channel axis ``dim`` of a field (pointwise, so it commutes with axis permutations)."""

    def __init__(self, channels: int, dim: int):
        super().__init__()
        self.norm, self.dim = nn.LayerNorm(channels), dim

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(x.movedim(self.dim, -1)).movedim(-1, self.dim)


class GXMessage(nn.Module):
    """One message-passing round over the axis graph: ``h'_i = h_i + act(norm(U(h_i) + ⊕_{j≠i} M_{j→i}(h_j)))``
    on node features ``[B, d, C, *spatial]`` (d >= 2).

    ``message="conv"``: U = periodic 1-D conv along axis i, M_{j→i} = periodic 2-D conv of h_j on the
    plane (i, j) (first kernel axis along i), one bias. ``message="attention"``: U = SelfAttn of h_i along
    axis i, M_{j→i} = SelfAttn of h_j along its own axis j (card: "SelfAttn(h_j) mapped back to axis i";
    all nodes share one spatial layout, so the map back is the identity); two weight sets."""

    def __init__(
        self,
        channels: int,
        kernel_size: int = 3,
        message: Literal["conv", "attention"] = "conv",
        heads: int = 1,
        aggregate: Aggregate = "mean",
        activation: str | None = "gelu",
        norm: bool = False,
    ):
        super().__init__()
        _check_choice("message", message, ("conv", "attention"))
        _check_choice("aggregate", aggregate, AGGREGATES)
        if activation is not None:
            _check_choice("activation", activation, tuple(ACTIVATIONS))
        if channels < 1 or kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(
                f"GXMessage needs channels >= 1 and an odd kernel_size >= 1; got channels={channels}, "
                f"kernel_size={kernel_size}"
            )
        self.channels, self.kernel_size, self.message, self.aggregate = channels, kernel_size, message, aggregate
        self.act = ACTIVATIONS[activation] if activation is not None else _identity
        self.norm = _ChannelNorm(channels, 2) if norm else None
        if message == "conv":
            self.node_weight = nn.Parameter(torch.empty(channels, channels, kernel_size))
            self.edge_weight = nn.Parameter(torch.empty(channels, channels, kernel_size, kernel_size))
            self.bias = nn.Parameter(torch.empty(channels))
            _init_conv(self.node_weight, None, channels * kernel_size)
            _init_conv(self.edge_weight, self.bias, channels * kernel_size**2)
        else:
            self.node_attn = _AxisSelfAttention(channels, heads)
            self.edge_attn = _AxisSelfAttention(channels, heads)

    def _updates(self, h: Tensor) -> list[Tensor]:
        d = h.shape[1]
        if self.message == "conv":
            _check_sizes(h[:, 0], self.kernel_size // 2, "GXMessage")
            out = []
            for i in range(d):
                total = None
                for j in range(d):
                    if j != i:
                        y = _pair_conv(h[:, j], self.edge_weight, i, j)
                        total = y if total is None else total + y
                u = _line_conv(h[:, i], self.node_weight, i) + _aggregate(total, d - 1, self.aggregate)
                out.append(u + _bias_view(self.bias, d))
            return out
        hl = h.movedim(2, -1)  # (B, d, *spatial, C)
        own = [self.node_attn.out(self.node_attn.attend(self.node_attn.qkv(hl[:, i]), i)[0]) for i in range(d)]
        sent = [self.edge_attn.out(self.edge_attn.attend(self.edge_attn.qkv(hl[:, j]), j)[0]) for j in range(d)]
        return [
            (own[i] + _aggregate(sum(sent[j] for j in range(d) if j != i), d - 1, self.aggregate)).movedim(-1, 1)
            for i in range(d)
        ]

    def forward(self, h: Tensor) -> Tensor:
        if h.ndim < 5 or h.shape[1] != h.ndim - 3 or h.shape[2] != self.channels:
            raise ValueError(
                f"GXMessage needs node features [B, d, {self.channels}, n_1, ..., n_d] with d >= 2; "
                f"got shape {tuple(h.shape)}"
            )
        u = torch.stack(self._updates(h), dim=1)
        if self.norm is not None:
            u = self.norm(u)
        return h + self.act(u)


class GXReadout(nn.Module):
    """``y = ⊕_i h_i``: node features ``[B, d, C, *spatial]`` -> field ``[B, C, *spatial]`` (no parameters).
    ``forward(h, dims=1)`` also averages out the axis added by :func:`repeat_to_2d` for a 1-D input."""

    def __init__(self, aggregate: Aggregate = "mean"):
        super().__init__()
        _check_choice("aggregate", aggregate, AGGREGATES)
        self.aggregate = aggregate

    def forward(self, h: Tensor, dims: int | None = None) -> Tensor:
        if h.ndim < 4 or h.shape[1] != h.ndim - 3:
            raise ValueError(f"GXReadout needs node features [B, d, C, n_1, ..., n_d]; got shape {tuple(h.shape)}")
        y = h.mean(1) if self.aggregate == "mean" else h.sum(1)
        if dims is not None and dims < y.ndim - 2:
            y = y.mean(dim=tuple(range(2 + dims, y.ndim)))
        return y


# ----------------------------------------------------------------------------------------------------------------
# Positional encoding, patch embedding
# ----------------------------------------------------------------------------------------------------------------


class AxisPositionalEncoding(nn.Module):
    """Adds ``Σ_i W_i φ(t_i)`` to a field ``[B, C, *spatial]``, ``t_i = position_i / n_i``,
    ``φ(t) = [sin 2πft, cos 2πft]_{f=1..F}``, with a learned ``W_i`` (``[C, 2F]``) per axis index ``i < max_dims``.
    It knows which axis is which and where each point is, so it breaks axis-permutation and shift
    equivariance on purpose (the paper's PE caveat). Fixed parameter count for every d <= max_dims."""

    def __init__(self, channels: int, max_dims: int = 4, frequencies: int = 4):
        super().__init__()
        if channels < 1 or max_dims < 1 or frequencies < 1:
            raise ValueError(
                f"AxisPositionalEncoding needs channels, max_dims, frequencies >= 1; got {channels}, "
                f"{max_dims}, {frequencies}"
            )
        self.max_dims, self.frequencies = max_dims, frequencies
        self.weight = nn.Parameter(torch.randn(max_dims, channels, 2 * frequencies) / math.sqrt(2 * frequencies))

    def forward(self, x: Tensor, channel_dim: int = 1) -> Tensor:
        sp = x.shape[channel_dim + 1 :]
        if len(sp) > self.max_dims:
            raise ValueError(f"AxisPositionalEncoding was built for at most {self.max_dims} axes; got {len(sp)}")
        f = torch.arange(1, self.frequencies + 1, dtype=x.dtype, device=x.device)
        out = x
        for i, n in enumerate(sp):
            t = torch.arange(n, dtype=x.dtype, device=x.device)[:, None] / n * f * 2 * math.pi  # (n, F)
            e = torch.cat([t.sin(), t.cos()], -1) @ self.weight[i].to(x.dtype).T  # (n, C)
            shape = [1] * len(sp)
            shape[i] = n
            out = out + e.T.reshape(-1, *shape)
        return out


def _pool_except(x: Tensor, axis: int, p: int) -> Tensor:
    """Average ``[B, C, *spatial]`` over non-overlapping windows of ``p`` along every spatial axis except ``axis``."""
    if p == 1 or x.ndim == 3:
        return x
    B, C, *sp = x.shape
    shape, reduce = [B, C], []
    for a, n in enumerate(sp):
        if a == axis:
            shape.append(n)
        else:
            shape += [n // p, p]
            reduce.append(len(shape) - 1)
    return x.reshape(shape).mean(dim=reduce)


def _upsample_except(x: Tensor, axis: int, p: int) -> Tensor:
    """Nearest-neighbour upsampling by ``p`` along every spatial axis except ``axis``."""
    for a in range(x.ndim - 2):
        if a != axis:
            x = x.repeat_interleave(p, dim=2 + a)
    return x


class AxialPatchEmbed(nn.Module):
    """Dimension-agnostic patch embedding: ``y = ⊕_i Conv1d_{p, stride p}`` along axis i of ``x`` average-pooled by
    ``p`` along the other axes, one shared ``[C_out, C_in, p]`` weight and one bias. ``[B, C_in, *n]`` ->
    ``[B, C_out, *(n / p)]``; the patch kernel is ``⊕_i w(z_i) / p^(d-1)``, symmetric under axis swaps."""

    def __init__(self, in_channels: int, out_channels: int, patch: int, aggregate: Aggregate = "mean"):
        super().__init__()
        if in_channels < 1 or out_channels < 1 or patch < 1:
            raise ValueError(
                f"AxialPatchEmbed needs channels >= 1 and patch >= 1; got {in_channels}, {out_channels}, {patch}"
            )
        _check_choice("aggregate", aggregate, AGGREGATES)
        self.in_channels, self.patch, self.aggregate = in_channels, patch, aggregate
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, patch))
        self.bias = nn.Parameter(torch.empty(out_channels))
        _init_conv(self.weight, self.bias, in_channels * patch)

    def forward(self, x: Tensor) -> Tensor:
        _check_field(x, self.in_channels, "AxialPatchEmbed")
        if any(n % self.patch for n in x.shape[2:]):
            raise ValueError(f"spatial sizes {tuple(x.shape[2:])} must be divisible by patch = {self.patch}")
        d = x.ndim - 2
        total = None
        for i in range(d):
            folded, restore = _fold(_pool_except(x, i, self.patch), (i,))
            y = restore(F.conv1d(folded, self.weight, stride=self.patch))
            total = y if total is None else total + y
        return _aggregate(total, d, self.aggregate) + _bias_view(self.bias, d)


class AxialPatchUnembed(nn.Module):
    """The de-embedding that mirrors :class:`AxialPatchEmbed`: ``y = ⊕_i ConvTranspose1d_{p, stride p}`` along axis
    i, nearest-upsampled by ``p`` along the other axes; ``[B, C_in, *m]`` -> ``[B, C_out, *(p m)]``."""

    def __init__(self, in_channels: int, out_channels: int, patch: int, aggregate: Aggregate = "mean"):
        super().__init__()
        if in_channels < 1 or out_channels < 1 or patch < 1:
            raise ValueError(
                f"AxialPatchUnembed needs channels >= 1 and patch >= 1; got {in_channels}, {out_channels}, {patch}"
            )
        _check_choice("aggregate", aggregate, AGGREGATES)
        self.in_channels, self.patch, self.aggregate = in_channels, patch, aggregate
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, patch))
        self.bias = nn.Parameter(torch.empty(out_channels))
        _init_conv(self.weight, self.bias, in_channels)

    def forward(self, h: Tensor) -> Tensor:
        _check_field(h, self.in_channels, "AxialPatchUnembed")
        d = h.ndim - 2
        total = None
        for i in range(d):
            folded, restore = _fold(h, (i,))
            y = _upsample_except(restore(F.conv_transpose1d(folded, self.weight, stride=self.patch)), i, self.patch)
            total = y if total is None else total + y
        return _aggregate(total, d, self.aggregate) + _bias_view(self.bias, d)


# ----------------------------------------------------------------------------------------------------------------
# Networks
# ----------------------------------------------------------------------------------------------------------------


class XCNN(nn.Module):
    """An axial CNN classifier/regressor for fields ``[B, C_in, *spatial]`` of any dimension d >= 1.

    ``kind="sx"``: ``layers`` x [SXConv, (LayerNorm), act]; ``kind="gx"``: GXLift, (LayerNorm), act, then
    ``layers - 1`` GXMessage rounds, then GXReadout (1-D inputs via :func:`repeat_to_2d`). Then mean and
    std over all spatial points (``2 width`` features) and a linear head to ``out_features``
    (axis-permutation and periodic-shift *invariant*). :meth:`features` returns the field before
    pooling, ``[B, width, *spatial]`` (equivariant). With ``pos_embed`` an :class:`AxisPositionalEncoding`
    is added after the first layer (breaks both equivariances).

    ``aggregate`` defaults to ``"mean"`` here (the layers default to the card's Σ): the response to a field
    of unit-variance noise then keeps its scale from one d to another, which zero-shot transfer across d
    needs. Card quick size: ``XCNN(1, width=16, layers=3, kernel_size=3, out_features=2)``, 1,698 parameters.
    Paper toy: SXCNN ``width=64, layers=5``; GXCNN ``kind="gx", width=32, layers=5`` (1 lift + 4 rounds).
    """

    def __init__(
        self,
        in_channels: int = 1,
        width: int = 16,
        layers: int = 3,
        kernel_size: int = 3,
        out_features: int = 2,
        kind: Literal["sx", "gx"] = "sx",
        aggregate: Aggregate = "mean",
        activation: str = "gelu",
        norm: bool = False,
        message: Literal["conv", "attention"] = "conv",
        heads: int = 1,
        pos_embed: bool = False,
        max_dims: int = 4,
    ):
        super().__init__()
        _check_choice("kind", kind, ("sx", "gx"))
        _check_choice("activation", activation, tuple(ACTIVATIONS))
        if layers < 1 or width < 1 or out_features < 1:
            raise ValueError(f"XCNN needs layers, width, out_features >= 1; got {layers}, {width}, {out_features}")
        self.in_channels, self.width, self.kind = in_channels, width, kind
        self.act = ACTIVATIONS[activation]
        if kind == "sx":
            sizes = [in_channels] + [width] * layers
            self.convs = nn.ModuleList(SXConv(a, b, kernel_size, aggregate) for a, b in zip(sizes[:-1], sizes[1:]))
            self.norms = nn.ModuleList(_ChannelNorm(width, 1) for _ in range(layers)) if norm else None
        else:
            self.lift = GXLift(in_channels, width, kernel_size, aggregate)
            self.lift_norm = _ChannelNorm(width, 2) if norm else None
            self.messages = nn.ModuleList(
                GXMessage(width, kernel_size, message, heads, aggregate, activation, norm) for _ in range(layers - 1)
            )
            self.readout = GXReadout(aggregate)
        self.pos = AxisPositionalEncoding(width, max_dims) if pos_embed else None
        self.head = nn.Linear(2 * width, out_features)

    def features(self, x: Tensor) -> Tensor:
        """The field before pooling: ``[B, C_in, *spatial]`` -> ``[B, width, *spatial]``."""
        _check_field(x, self.in_channels, "XCNN")
        if self.kind == "sx":
            h = x
            for k, conv in enumerate(self.convs):
                h = conv(h)
                if k == 0 and self.pos is not None:
                    h = self.pos(h)
                if self.norms is not None:
                    h = self.norms[k](h)
                h = self.act(h)
            return h
        dims = x.ndim - 2
        h = self.lift(x)  # (B, d', width, *spatial')
        if self.pos is not None:
            h = self.pos(h, channel_dim=2)
        if self.lift_norm is not None:
            h = self.lift_norm(h)
        h = self.act(h)
        for msg in self.messages:
            h = msg(h)
        return self.readout(h, dims=dims)

    def forward(self, x: Tensor) -> Tensor:
        h = self.features(x).flatten(2)  # (B, width, N)
        pooled = torch.cat([h.mean(-1), h.std(-1, correction=0)], dim=1)  # (B, 2 width)
        return self.head(pooled)


class _XViTBlock(nn.Module):
    def __init__(self, d_model: int, heads: int, mlp_ratio: int, aggregate: Aggregate):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = SXAttention(d_model, heads, aggregate)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(), nn.Linear(mlp_ratio * d_model, d_model)
        )

    def forward(self, h: Tensor) -> Tensor:  # (B, *spatial, D)
        h = h + self.attn.forward_channels_last(self.norm1(h))
        return h + self.mlp(self.norm2(h))


class XViT(nn.Module):
    """An axial vision transformer on fields of any dimension (the base of X-MPP-style surrogates).

    ``[B, C_in, *n]`` -> :class:`AxialPatchEmbed` (patch ``p`` along every axis) -> (optional
    :class:`AxisPositionalEncoding`) -> ``depth`` pre-norm blocks [h + SXAttention(LN h); h + MLP(LN h)]
    -> LayerNorm -> :class:`AxialPatchUnembed` -> ``[B, C_out, *n]``. With ``deembed=False`` it returns the
    token field ``[B, d_model, *(n / p)]``. Every n_i must be divisible by ``p``. Exactly equivariant to
    axis permutations (PE off) and to periodic shifts by multiples of ``p`` (PE off). Time history,
    if any, goes into the channels.
    """

    def __init__(
        self,
        in_channels: int = 1,
        out_channels: int = 1,
        d_model: int = 32,
        depth: int = 2,
        heads: int = 2,
        patch: int = 4,
        mlp_ratio: int = 2,
        aggregate: Aggregate = "mean",
        pos_embed: bool = False,
        deembed: bool = True,
        max_dims: int = 4,
    ):
        super().__init__()
        if depth < 0 or mlp_ratio < 1:
            raise ValueError(f"XViT needs depth >= 0 and mlp_ratio >= 1; got {depth}, {mlp_ratio}")
        self.in_channels, self.patch = in_channels, patch
        self.embed = AxialPatchEmbed(in_channels, d_model, patch, aggregate)
        self.pos = AxisPositionalEncoding(d_model, max_dims) if pos_embed else None
        self.blocks = nn.ModuleList(_XViTBlock(d_model, heads, mlp_ratio, aggregate) for _ in range(depth))
        self.norm = nn.LayerNorm(d_model)
        self.unembed = AxialPatchUnembed(d_model, out_channels, patch, aggregate) if deembed else None

    def forward(self, x: Tensor) -> Tensor:
        h = self.embed(x)  # (B, D, *(n / p))
        if self.pos is not None:
            h = self.pos(h)
        h = h.movedim(1, -1)  # (B, *(n / p), D)
        for block in self.blocks:
            h = block(h)
        h = self.norm(h).movedim(-1, 1)
        return h if self.unembed is None else self.unembed(h)


class XFieldCNN(nn.Module):
    """An axial field-to-field CNN for next-step forecasting on fields of any dimension d >= 1.

    ``[B, C_in, *n]`` -> ``layers`` x [SXConv(k), act] -> a linear SXConv(k) to ``out_channels``, plus the
    last ``out_channels`` input channels when ``residual`` (so the net learns the increment ``u_{t+1} − u_t``).
    With ``aggregate="sum"`` the increment of a linear net is ``Σ_i k(z_i)``, the form of an explicit step of
    ``Σ_i L_i u`` (advection, diffusion along each axis), the same kernel in every d: what a model pretrained
    on 1-D and 2-D fields can carry to 3-D (studies/axial-networks.md, claim 11). Time history goes into the
    channels (oldest first). Equivariant to axis permutations and periodic shifts.
    """

    def __init__(
        self,
        in_channels: int = 1,
        out_channels: int = 1,
        width: int = 16,
        layers: int = 2,
        kernel_size: int = 5,
        aggregate: Aggregate = "sum",
        activation: str = "gelu",
        residual: bool = True,
    ):
        super().__init__()
        _check_choice("activation", activation, tuple(ACTIVATIONS))
        if layers < 0 or width < 1 or out_channels < 1:
            raise ValueError(
                f"XFieldCNN needs layers >= 0, width >= 1, out_channels >= 1; got {layers}, {width}, {out_channels}"
            )
        if residual and out_channels > in_channels:
            raise ValueError(f"a residual XFieldCNN needs out_channels ({out_channels}) <= in_channels ({in_channels})")
        self.in_channels, self.out_channels, self.residual = in_channels, out_channels, residual
        sizes = [in_channels] + [width] * layers
        self.convs = nn.ModuleList(SXConv(a, b, kernel_size, aggregate) for a, b in zip(sizes[:-1], sizes[1:]))
        self.out = SXConv(sizes[-1], out_channels, kernel_size, aggregate)
        self.act = ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        _check_field(x, self.in_channels, "XFieldCNN")
        h = x
        for conv in self.convs:
            h = self.act(conv(h))
        y = self.out(h)
        return y + x[:, -self.out_channels :] if self.residual else y
