"""Equivariance probes: how far a model is from commuting with axis permutations, periodic shifts and reflections.

For a transform T of the input's spatial axes and the matching transform T' of the output,
the error is ``max |model(T x) − T' model(x)|`` (elementwise, absolute), evaluated in a chosen dtype on
a copy of the model (the caller's model is not touched), under ``torch.no_grad`` and ``eval()``.

The output's transform depends on what the model returns (``output``):

- ``"field"``: ``[B, C', *spatial']`` with the same number of spatial axes as the input: T' = T;
- ``"invariant"``: no spatial axes (e.g. logits ``[B, K]``): T' = identity, i.e. invariance;
- ``"nodes"``: axis-node features ``[B, d, C', *spatial']`` (:class:`theorylab.nn.axial.GXLift`): a
  permutation also reorders the node axis;
- ``"auto"`` (default): ``"field"`` if the output has as many axes as the input, ``"invariant"`` if it has 2.

Transforms: every axis permutation (``perms="all"``, identity included, so a non-deterministic
model shows up too), periodic shifts ``torch.roll`` (``shifts``: each entry one int for all axes or one
int per axis) and single-axis reflections ``flip`` (``reflections=True``).

Used by studies/axial-networks.md (claim ``equivariance``) and any symmetry study.
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal, Sequence

import torch
from torch import Tensor, nn

from theorylab.nn.axial import axis_permutations, permute_axes

if TYPE_CHECKING:
    import pandas as pd

Output = Literal["auto", "field", "invariant", "nodes"]


@dataclass(frozen=True)
class _Transform:
    kind: str  # "permutation" | "shift" | "reflection"
    name: str
    perm: tuple[int, ...] | None = None
    shift: tuple[int, ...] | None = None
    axis: int | None = None

    def spatial(self, y: Tensor, start: int) -> Tensor:
        dims = tuple(range(start, y.ndim))
        if self.kind == "permutation":
            return permute_axes(y, self.perm, start)
        if self.kind == "shift":
            return torch.roll(y, self.shift, dims)
        return torch.flip(y, (start + self.axis,))

    def on_output(self, y: Tensor, output: str) -> Tensor:
        if output == "invariant":
            return y
        if output == "field":
            return self.spatial(y, 2)
        if self.kind == "permutation":  # nodes: node a of T x is node perm[a] of x
            y = y[:, list(self.perm)]
        return self.spatial(y, 3)


def _transforms(
    d: int, perms: str | Sequence[Sequence[int]] | None, shifts: Sequence[int | Sequence[int]], reflections: bool
) -> list[_Transform]:
    out = []
    if perms == "all":
        perm_list = axis_permutations(d)
    elif perms is None:
        perm_list = []
    elif isinstance(perms, str):
        raise ValueError(f"perms must be 'all', None or a list of permutations; got {perms!r}")
    else:
        perm_list = [tuple(int(a) for a in p) for p in perms]
    for p in perm_list:
        if sorted(p) != list(range(d)):
            raise ValueError(f"perm {p} is not a permutation of the input's {d} spatial axes")
        out.append(_Transform("permutation", f"perm{p}", perm=p))
    for s in shifts:
        s = (int(s),) * d if isinstance(s, int) else tuple(int(v) for v in s)
        if len(s) != d:
            raise ValueError(f"shift {s} needs one entry per spatial axis ({d})")
        out.append(_Transform("shift", f"shift{s}", shift=s))
    if reflections:
        out += [_Transform("reflection", f"flip({a})", axis=a) for a in range(d)]
    return out


def _inputs(
    inputs: Tensor | Sequence[int] | Sequence[Sequence[int]],
    dtype: torch.dtype,
    device: torch.device,
    generator: torch.Generator | None,
) -> list[Tensor]:
    if isinstance(inputs, Tensor):
        xs = [inputs]
    else:
        shapes = [inputs] if all(isinstance(v, int) for v in inputs) else list(inputs)
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        xs = [torch.randn(*s, generator=g, dtype=torch.float64) for s in shapes]
    for x in xs:
        if x.ndim < 3:
            raise ValueError(f"inputs must be fields [B, C, n_1, ..., n_d] with d >= 1; got shape {tuple(x.shape)}")
    return [x.to(device=device, dtype=dtype) for x in xs]


def _error_rows(
    model: nn.Module | Callable[[Tensor], Tensor],
    inputs: Tensor | Sequence[int] | Sequence[Sequence[int]],
    perms: str | Sequence[Sequence[int]] | None,
    shifts: Sequence[int | Sequence[int]],
    reflections: bool,
    dtype: torch.dtype,
    output: str,
    generator: torch.Generator | None,
) -> list[dict]:
    if output not in ("auto", "field", "invariant", "nodes"):
        raise ValueError(f"output must be 'auto', 'field', 'invariant' or 'nodes'; got {output!r}")
    owner = model.__self__ if inspect.ismethod(model) and isinstance(model.__self__, nn.Module) else None
    if isinstance(model, nn.Module) or owner is not None:  # a module, or a bound method of one (e.g. ``net.features``)
        copied = copy.deepcopy(owner if owner is not None else model).to(dtype=dtype).eval()
        model = getattr(copied, model.__name__) if owner is not None else copied
        param = next(copied.parameters(), None)
        device = param.device if param is not None else torch.device("cpu")
    else:
        device = inputs.device if isinstance(inputs, Tensor) else torch.device("cpu")
    rows = []
    with torch.no_grad():
        for x in _inputs(inputs, dtype, device, generator):
            d = x.ndim - 2
            y = model(x)
            mode = output
            if mode == "auto":
                if y.ndim == x.ndim:
                    mode = "field"
                elif y.ndim == 2:
                    mode = "invariant"
                else:
                    raise ValueError(
                        f"cannot tell how a {y.ndim}-D output of a {x.ndim}-D input transforms; pass "
                        f"output='field', 'invariant' or 'nodes'"
                    )
            for t in _transforms(d, perms, shifts, reflections):
                err = (model(t.spatial(x, 2)) - t.on_output(y, mode)).abs().max().item()
                rows.append(
                    dict(
                        shape=tuple(x.shape), d=d, kind=t.kind, transform=t.name, error=err, scale=y.abs().max().item()
                    )
                )
    return rows


def equivariance_errors(
    model: nn.Module | Callable[[Tensor], Tensor],
    inputs: Tensor | Sequence[int] | Sequence[Sequence[int]],
    perms: str | Sequence[Sequence[int]] | None = "all",
    shifts: Sequence[int | Sequence[int]] = (),
    reflections: bool = False,
    dtype: torch.dtype = torch.float64,
    output: Output = "auto",
    generator: torch.Generator | None = None,
) -> pd.DataFrame:
    """One row per (input, transform): ``shape``, ``d``, ``kind``, ``transform``, ``error`` (max abs of
    ``model(T x) − T' model(x)``) and ``scale`` (max abs of ``model(x)``, to read the error against).

    ``inputs``: a field ``[B, C, *spatial]``, one shape, or a list of shapes (standard normal fields drawn
    from ``generator``, default seed 0). A module (or a bound method of one, such as ``net.features``) is
    deep-copied, cast to ``dtype`` and put in eval mode; another callable runs as given."""
    import pandas as pd

    rows = _error_rows(model, inputs, perms, shifts, reflections, dtype, output, generator)
    return pd.DataFrame(rows, columns=["shape", "d", "kind", "transform", "error", "scale"])


def max_equivariance_error(
    model: nn.Module | Callable[[Tensor], Tensor],
    inputs: Tensor | Sequence[int] | Sequence[Sequence[int]],
    perms: str | Sequence[Sequence[int]] | None = "all",
    shifts: Sequence[int | Sequence[int]] = (),
    reflections: bool = False,
    dtype: torch.dtype = torch.float64,
    output: Output = "auto",
    generator: torch.Generator | None = None,
) -> float:
    """The largest error of :func:`equivariance_errors` over all inputs and transforms (0.0 if there are none)."""
    rows = _error_rows(model, inputs, perms, shifts, reflections, dtype, output, generator)
    return max((r["error"] for r in rows), default=0.0)
