"""Long-context representation collapse: how much the last token's final state still tells inputs apart.

studies/representation-collapse.md, after Barbero et al. 2024 ("Transformers need glasses!": softmax dilution,
the count construction, low-precision collapse) and Sun & Hsieh, arXiv 2410.12292 (anisotropy-calibrated cosine).

- :func:`last_hidden`: the last token's state at the final layer, after the final norm (before the readout).
- :func:`sensitivity`: S = ‖h_last(x) − h_last(x′)‖ per sequence (measurement 1; O(1/L) under dilution).
- :func:`count_gap`: G(L) = ‖h_last([a]^L b) − h_last([a]^{L+1} b)‖ in a given dtype with a bit-identity flag
  (measurement 2; O(1/L²) in exact arithmetic, exactly 0 once below the format's resolution).
- :func:`calibrated_cosine`: mean within-sequence cosine minus mean cross-sequence cosine (measurement 3).
- :func:`loglog_slope`: the least-squares slope of log y against log L, for the rates above.

Models: a :class:`~theorylab.nn.toy_transformer.ToyTransformer` is read at its ``hook_final`` point; any other
module through a forward hook on its final norm (``final_module`` or the first of ``norm_final``, ``model.norm``,
``transformer.ln_f``, ``norm``, ``ln_f`` that exists).
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from theorylab.data.tasks import count_sequences

_FINAL_NORM_NAMES = ("norm_final", "model.norm", "transformer.ln_f", "norm", "ln_f")


def _final_module(model: nn.Module) -> nn.Module:
    modules = dict(model.named_modules())
    for name in _FINAL_NORM_NAMES:
        if name in modules:
            return modules[name]
    raise ValueError(f"no final norm found (looked for {_FINAL_NORM_NAMES}); pass final_module=")


@torch.no_grad()
def last_hidden(model: nn.Module, x: Tensor, final_module: nn.Module | None = None) -> Tensor:
    """The last position's final-layer state after the final norm: ``(batch, d)`` for tokens ``x`` ``(batch, T)``.

    With no ``final_module`` a model with a ``hook_final`` point (ToyTransformer) is read there, else the output
    of its final norm is caught by a temporary forward hook (the readout's input, whatever the model returns).
    """
    if final_module is None and "hook_final" in dict(model.named_modules()):
        final_module = model.get_submodule("hook_final")
    module = final_module if final_module is not None else _final_module(model)
    caught: list[Tensor] = []
    handle = module.register_forward_hook(lambda _m, _i, out: caught.append(out[0] if isinstance(out, tuple) else out))
    try:
        model(x)
    finally:
        handle.remove()
    if not caught:
        raise RuntimeError("the final module never ran in the forward pass")
    return caught[-1][:, -1].detach()


def _distance(h1: Tensor, h2: Tensor) -> Tensor:
    # Subtract in float64 so the distance itself adds no rounding: it is zero exactly when the states are equal.
    return (h1.double() - h2.double()).norm(dim=-1)


def sensitivity(model: nn.Module, x: Tensor, x_edit: Tensor, final_module: nn.Module | None = None) -> Tensor:
    """``S_b = ‖h_last(x_b) − h_last(x′_b)‖`` per sequence, ``(batch,)`` float64 (measurement 1 of the card).

    Under softmax dilution an edit far from the last token moves it by O(1/L) (Barbero et al. 2024;
    :func:`theorylab.theory.softmax.dilution_bound`). Both inputs run in one batch when their lengths agree.
    """
    if x.shape != x_edit.shape:
        raise ValueError(f"x and x_edit must have one shape; got {tuple(x.shape)} and {tuple(x_edit.shape)}")
    h = last_hidden(model, torch.cat([x, x_edit]), final_module)
    return _distance(h[: len(x)], h[len(x):])


def bit_identical(h1: Tensor, h2: Tensor) -> bool:
    """Whether two tensors hold the same bits: their raw bytes compared with :func:`torch.equal`.

    Unlike value equality this tells −0.0 from 0.0 and calls two NaNs with the same payload equal.
    """
    if h1.dtype != h2.dtype or h1.shape != h2.shape:
        return False
    return torch.equal(h1.reshape(-1).view(torch.uint8), h2.reshape(-1).view(torch.uint8))


class CountGap(NamedTuple):
    """``gap``: ‖h_last(x_L) − h_last(x_{L+1})‖ (in float64, from states computed in the dtype);
    ``identical``: the two states are bit-identical."""

    gap: float
    identical: bool


def count_gap(model: nn.Module, L: int, a: int, b: int, dtype: torch.dtype = torch.float64,
              final_module: nn.Module | None = None) -> CountGap:
    """G(L) on Barbero et al.'s count construction [a]^L b vs [a]^{L+1} b, run in ``dtype`` (measurement 2).

    The model is cast to ``dtype`` on a copy when its parameters differ (the caller's model is left alone), so
    pass ``final_module`` (a module of the model given) only for a model already in ``dtype``.
    """
    if next(model.parameters()).dtype != dtype:
        if final_module is not None:
            raise ValueError("final_module refers to the original model; cast the model to dtype first")
        model = copy.deepcopy(model).to(dtype)
    x_l, x_next = count_sequences(L, a, b)
    h1, h2 = last_hidden(model, x_l, final_module), last_hidden(model, x_next, final_module)
    return CountGap(float(_distance(h1, h2)[0]), bit_identical(h1, h2))


def calibrated_cosine(H: Tensor) -> float:
    """``C = mean cos(h_i, h_j)`` over pairs i ≠ j within a sequence − mean cos over pairs from different sequences.

    Sun & Hsieh, arXiv 2410.12292: the cross-sequence mean is the anisotropy baseline, so a representation space
    that is merely narrow (every state near one direction) gives C ≈ 0 and only within-sequence collapse gives
    C > 0. ``H``: ``(batch, L, d)`` with batch >= 2 and L >= 2. Vectorised through sums of unit vectors:
    Σ_{i≠j} u_i·u_j = ‖Σ_i u_i‖² − L per sequence, and the cross pairs are ‖Σ_all‖² − Σ_b ‖Σ_i u_bi‖².
    """
    if H.ndim != 3 or H.shape[0] < 2 or H.shape[1] < 2:
        raise ValueError(f"need H of shape (batch >= 2, L >= 2, d); got {tuple(H.shape)}")
    B, L, _ = H.shape
    U = H.double()
    U = U / U.norm(dim=-1, keepdim=True)
    seq_sums = U.sum(dim=1)  # (B, d)
    seq_sq = (seq_sums**2).sum(-1)  # (B,)
    # ‖u_i‖² = 1 exactly up to rounding; subtracting the measured diagonal keeps a zero vector's NaN visible
    diag = (U**2).sum(dim=(1, 2))
    within = ((seq_sq - diag) / (L * (L - 1))).mean()
    total = seq_sums.sum(0)
    across = ((total**2).sum() - seq_sq.sum()) / (B * (B - 1) * L * L)
    return float(within - across)


def loglog_slope(L, y) -> float:
    """Least-squares slope of ``log y`` against ``log L``; every ``y`` must be positive (a zero gap has no log)."""
    L, y = np.asarray(L, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if L.shape != y.shape or L.size < 2 or np.any(y <= 0) or np.any(L <= 0):
        raise ValueError(f"need >= 2 positive (L, y) pairs of one shape; got L = {L}, y = {y}")
    return float(np.polyfit(np.log(L), np.log(y), 1)[0])
