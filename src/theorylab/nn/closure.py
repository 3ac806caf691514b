"""Closure networks for coarse PDE models: periodic convolutions, the GZ-FCNN, multiscale and direct closures.

After Otness, Zanna, Bruna, "Data-driven multiscale modeling for correcting dynamical systems" (arXiv 2303.17496;
Mach. Learn.: Sci. Technol. 2025). A closure network maps the resolved coarse state ``ū`` to the subgrid tendency
``S(ū)`` the coarse solver misses (:func:`theorylab.data.pde.closure_target`).

- :class:`PeriodicConv1d`, :class:`PeriodicConv2d`: convolutions on the torus (circular padding of ``k // 2``
  on each side, odd kernels), so the output has the input's grid and shifts commute with the layer.
- :class:`GZFCNN`: the fully convolutional net of Guillaumin & Zanna 2021 (JAMES 13): a stack of periodic
  convolutions with an activation between them and none after the last. :meth:`GZFCNN.paper` builds the
  paper's 2-D sizes (8 layers, ReLU; ``small`` 128 (k5), 64 (k5), 32 (k3) x5, out (k3); ``medium`` kernels
  9/5; ``large`` 11/7); :meth:`GZFCNN.quick` the card's 1-D version (4 layers, k = 5, GELU).
- :class:`MultiscaleClosure`: the paper's chain of scales over ``levels = [n_0, ..., N_c]``. Net 0
  (downscale) predicts the closure coarsened to ``n_0``; net ``k`` (buildup) sees ``ū`` at ``n_k`` and every
  lower prediction upsampled to ``n_k`` and predicts the closure at ``n_k`` as a residual on top of the
  upsampled level-``k−1`` prediction.
- :class:`DirectClosure`: one net from ``ū`` to ``S`` at ``N_c``.

Fields are ``[B, C, n]`` (``dims=1``) or ``[B, C, n, n]`` (``dims=2``); grids change by spectral resampling
(:func:`theorylab.data.pde.resample_spectral`, exact for band-limited fields), or by a caller's
``downsample(x, n)`` (e.g. the sharp dealiased-band truncation of the closure targets).
"""

from __future__ import annotations

from typing import Callable, Literal, Sequence

import torch
from torch import Tensor, nn

from theorylab.data.pde import resample_spectral

GZ_SIZES = {"small": (5, 3), "medium": (9, 5), "large": (11, 7)}  # (first two kernels, the other six)
ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}


class _Periodic:
    def _check(self, kernel_size) -> None:
        ks = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        if any(k < 1 or k % 2 == 0 for k in ks):
            raise ValueError(f"periodic convolutions need odd kernel sizes (the output keeps the grid); got {ks}")


class PeriodicConv1d(nn.Conv1d, _Periodic):
    """A 1-D convolution on the circle: ``Conv1d`` with circular padding ``k // 2`` (odd ``k``), stride 1."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias: bool = True):
        self._check(kernel_size)
        super().__init__(
            in_channels, out_channels, kernel_size, padding=kernel_size // 2, padding_mode="circular", bias=bias
        )


class PeriodicConv2d(nn.Conv2d, _Periodic):
    """A 2-D convolution on the torus: ``Conv2d`` with circular padding ``k // 2`` per axis (odd ``k``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias: bool = True):
        self._check(kernel_size)
        super().__init__(
            in_channels, out_channels, kernel_size, padding=kernel_size // 2, padding_mode="circular", bias=bias
        )


class GZFCNN(nn.Module):
    """A periodic fully convolutional net: ``layers = [(channels, kernel), ...]`` with the last entry's channels
    the output's; ``activation`` between layers, none after the last (Guillaumin & Zanna 2021)."""

    def __init__(
        self,
        dims: Literal[1, 2],
        in_channels: int,
        layers: Sequence[tuple[int, int]],
        activation: Literal["relu", "gelu"] = "relu",
    ):
        super().__init__()
        if dims not in (1, 2) or not layers or in_channels < 1 or activation not in ACTIVATIONS:
            raise ValueError(
                f"GZFCNN needs dims 1 or 2, in_channels >= 1, at least one layer and an activation in "
                f"{sorted(ACTIVATIONS)}; got {dims}, {in_channels}, {len(layers)}, {activation!r}"
            )
        conv = PeriodicConv1d if dims == 1 else PeriodicConv2d
        mods: list[nn.Module] = []
        c_in = in_channels
        for i, (c_out, k) in enumerate(layers):
            mods.append(conv(c_in, c_out, k))
            if i < len(layers) - 1:
                mods.append(ACTIVATIONS[activation]())
            c_in = c_out
        self.dims, self.in_channels, self.out_channels = dims, in_channels, c_in
        self.net = nn.Sequential(*mods)

    @classmethod
    def paper(
        cls,
        size: Literal["small", "medium", "large"] = "small",
        in_channels: int = 2,
        out_channels: int = 2,
        width: float = 1.0,
    ) -> "GZFCNN":
        """The paper's 2-D net: 128 (k1), 64 (k1), 32 (k2) x5, ``out_channels`` (k2), ReLU, where (k1, k2) is
        (5, 3) for ``small``, (9, 5) for ``medium`` and (11, 7) for ``large``; ``width`` scales the hidden
        channels (rounded; 1: the paper's)."""
        return cls(2, in_channels, cls.paper_layers(size, out_channels, width), "relu")

    @staticmethod
    def paper_layers(size: str, out_channels: int, width: float = 1.0) -> list[tuple[int, int]]:
        """The ``(channels, kernel)`` list of :meth:`paper`."""
        if size not in GZ_SIZES or width <= 0:
            raise ValueError(f"GZ-FCNN needs a size in {', '.join(GZ_SIZES)} and width > 0; got {size!r}, {width}")
        k1, k2 = GZ_SIZES[size]
        c = [max(1, round(w * width)) for w in (128, 64, 32)]
        return [(c[0], k1), (c[1], k1)] + [(c[2], k2)] * 5 + [(out_channels, k2)]

    @staticmethod
    def count(dims: int, in_channels: int, layers: Sequence[tuple[int, int]]) -> int:
        """The parameter count of ``GZFCNN(dims, in_channels, layers)`` without building it."""
        total, c_in = 0, in_channels
        for c_out, k in layers:
            total += c_out * c_in * k**dims + c_out
            c_in = c_out
        return total

    @classmethod
    def quick(
        cls, in_channels: int = 1, out_channels: int = 1, width: int = 32, n_layers: int = 4, kernel: int = 5
    ) -> "GZFCNN":
        """The card's 1-D quick net: ``n_layers`` periodic convolutions of ``width`` channels, kernel ``kernel``,
        GELU (width 32: 10,657 parameters with one input channel)."""
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1, got {n_layers}")
        return cls(1, in_channels, [(width, kernel)] * (n_layers - 1) + [(out_channels, kernel)], "gelu")

    def forward(self, x: Tensor) -> Tensor:
        """The periodic stack. A stack of circular convolutions and pointwise activations equals valid (unpadded)
        convolutions of the input padded once, circularly, by the summed halos: the same numbers, with one pad
        instead of one per layer (~20% faster training on small 1-D grids). Grids smaller than the halo fall
        back to padding layer by layer."""
        convs = [m for m in self.net if isinstance(m, (nn.Conv1d, nn.Conv2d))]
        halo = sum(c.kernel_size[0] // 2 for c in convs)
        if halo > min(x.shape[2:]):
            return self.net(x)
        h = nn.functional.pad(x, (halo, halo) * self.dims, mode="circular")
        conv = nn.functional.conv1d if self.dims == 1 else nn.functional.conv2d
        for m in self.net:
            h = conv(h, m.weight, m.bias) if isinstance(m, (nn.Conv1d, nn.Conv2d)) else m(h)
        return h


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def matched_width(count: Callable[[float], int], budget: int, lo: float = 0.05, hi: float = 16.0) -> float:
    """The width factor ``w`` whose parameter count ``count(w)`` is nearest ``budget`` (bisection on the monotone
    count, then the better of the two neighbours), e.g. a direct closure matched to a multiscale one with
    ``count = lambda w: GZFCNN.count(2, C, GZFCNN.paper_layers(size, C, w))``."""
    if count(lo) > budget or count(hi) < budget:
        raise ValueError(f"no width in [{lo}, {hi}] reaches {budget} parameters")
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if count(mid) < budget else (lo, mid)
    return min((lo, hi), key=lambda w: abs(count(w) - budget))


Resample = Callable[[Tensor, int], Tensor]


class MultiscaleClosure(nn.Module):
    """The paper's multiscale closure over ``levels = [n_0, n_1, ..., N_c]`` (strictly increasing grids).

    - Step 0 (downscale): ``net_0`` predicts ``D_{n_0}(S)``, the closure coarsened to ``n_0``. With
      ``downscale_input="resampled"`` (the card's quick reading) it sees ``D_{n_0}(ū)``; with ``"full"`` (the
      official code) it runs at ``N_c`` on ``ū`` and its output is coarsened to ``n_0``.
    - Step k (buildup): ``net_k`` sees ``[D_{n_k}(ū), U_{n_k}(p_0), ..., U_{n_k}(p_{k−1})]`` (``1 + k`` input
      channel groups) and ``p_k = U_{n_k}(p_{k−1}) + net_k(...)`` (a residual on the level below).

    ``downsample(x, n)`` coarsens fields to ``n`` points (default: spectral truncation); ``upsample`` is spectral
    zero-padding. ``channels`` is the field's channel count (1 for KS and NS, 2 for QG). :meth:`levels_forward`
    returns every level's prediction; ``forward`` the last (at ``N_c``).
    """

    def __init__(
        self,
        levels: Sequence[int],
        nets: Sequence[nn.Module],
        dims: Literal[1, 2] = 1,
        downscale_input: Literal["resampled", "full"] = "resampled",
        downsample: Resample | None = None,
    ):
        super().__init__()
        levels = [int(n) for n in levels]
        if (
            len(levels) < 2
            or levels != sorted(set(levels))
            or len(nets) != len(levels)
            or dims not in (1, 2)
            or downscale_input not in ("resampled", "full")
        ):
            raise ValueError(
                f"MultiscaleClosure needs >= 2 strictly increasing levels, one net per level, dims 1 or "
                f"2 and downscale_input 'resampled' or 'full'; got levels {levels}, {len(nets)} nets, "
                f"dims {dims}, {downscale_input!r}"
            )
        self.levels, self.dims, self.downscale_input = levels, dims, downscale_input
        self.nets = nn.ModuleList(nets)
        self._down = downsample or (lambda x, n: resample_spectral(x, n, dims=self.dims))
        self._matrices: dict[tuple, Tensor] = {}

    def _resample_exact(self, x: Tensor, n: int) -> Tensor:
        m = x.shape[-1]
        return self._down(x, n) if n < m else resample_spectral(x, n, dims=self.dims)

    def resample(self, x: Tensor, n: int) -> Tensor:
        """``x`` on ``n`` points per axis: ``downsample`` to a coarser grid, spectral zero-padding to a finer one.
        Both are linear; in 1-D they are applied as a dense ``[m, n]`` matrix built once from the identity (on
        small grids one matmul costs far less than two FFTs)."""
        m = x.shape[-1]
        if n == m:
            return x
        if self.dims != 1:
            return self._resample_exact(x, n).to(x.dtype)
        key = (m, n, x.dtype, x.device)
        if key not in self._matrices:
            eye = torch.eye(m, dtype=torch.float64, device=x.device)[:, None, :]  # m basis fields [m, 1, m]
            self._matrices[key] = self._resample_exact(eye, n)[:, 0, :].to(x.dtype)  # [m, n]
        return x @ self._matrices[key]

    def level_inputs(self, x: Tensor, k: int, lower: Sequence[Tensor]) -> Tensor:
        """The input of ``net_k``: ``ū`` at ``n_k`` (``N_c`` for a ``"full"`` net 0), then each lower prediction
        upsampled to ``n_k``, stacked on the channel axis."""
        if k == 0:
            return x if self.downscale_input == "full" else self.resample(x, self.levels[0])
        n = self.levels[k]
        return torch.cat([self.resample(x, n)] + [self.resample(p, n) for p in lower[:k]], dim=1)

    def level_output(self, k: int, inputs: Tensor, lower: Sequence[Tensor]) -> Tensor:
        """``p_k`` from ``net_k``'s input (the residual on the upsampled level below for k >= 1)."""
        y = self.nets[k](inputs)
        if k == 0:
            return self.resample(y, self.levels[0])
        return self.resample(lower[k - 1], self.levels[k]) + y

    def levels_forward(self, x: Tensor, upto: int | None = None) -> list[Tensor]:
        """``[p_0 at n_0, ..., p_K at n_K]`` for ``x [B, C, N_c(, N_c)]`` (levels up to ``upto`` included)."""
        if x.shape[-1] != self.levels[-1]:
            raise ValueError(f"MultiscaleClosure expects fields on {self.levels[-1]} points, got {x.shape[-1]}")
        preds: list[Tensor] = []
        for k in range(len(self.levels) if upto is None else upto + 1):
            preds.append(self.level_output(k, self.level_inputs(x, k, preds), preds))
        return preds

    def forward(self, x: Tensor) -> Tensor:
        return self.levels_forward(x)[-1]


class DirectClosure(nn.Module):
    """One net from ``ū`` to ``S`` on the coarse grid (the paper's baseline); :meth:`levels_forward` returns
    ``[S]`` for the same interface as :class:`MultiscaleClosure`."""

    def __init__(self, net: nn.Module, n: int):
        super().__init__()
        self.net, self.levels = net, [int(n)]

    def levels_forward(self, x: Tensor, upto: int | None = None) -> list[Tensor]:
        return [self.net(x)]

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)
