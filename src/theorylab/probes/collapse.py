"""Long-context representation collapse: how much the last token's final state still tells inputs apart.

studies/representation-collapse.md, after Barbero et al. 2024 ("Transformers need glasses!": softmax dilution,
the count construction, low-precision collapse) and Sun & Hsieh, arXiv 2410.12292 (anisotropy-calibrated cosine).

- :func:`last_hidden`: the last token's state at the final layer, after the final norm (before the readout).
- :func:`sensitivity`: S = ‖h_last(x) − h_last(x′)‖ per sequence (measurement 1; O(1/L) under dilution).
- :func:`count_gap`: G(L) = ‖h_last([a]^L b) − h_last([a]^{L+1} b)‖ in a given dtype with a bit-identity flag
  (measurement 2; O(1/L²) in exact arithmetic, exactly 0 once below the format's resolution).
- :func:`calibrated_cosine`: mean within-sequence cosine minus mean cross-sequence cosine (measurement 3).
- :func:`loglog_slope`: the least-squares slope of log y against log L, for the rates above.
- :func:`attention_edit_change`: the change of one softmax-attention layer's last output under an edit of position
  1, next to the dilution bound B(L) measured on the same pair of inputs (:func:`theory.softmax.dilution_bound`).
- :func:`first_token_skip`: a negative control that carries position 1 to the last state outside every softmax.
- :func:`layer_collapse`: calibrated cosine and effective rank per token of every layer's states.

Models: a :class:`~theorylab.nn.toy_transformer.ToyTransformer` is read at its ``hook_final`` point; any other
module through a forward hook on its final norm (``final_module`` or the first of ``norm_final``, ``model.norm``,
``transformer.ln_f``, ``norm``, ``ln_f`` that exists).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from theorylab.data.tasks import count_sequences
from theorylab.probes.spectra import effective_rank
from theorylab.theory.softmax import dilution_bound

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
    return _distance(h[: len(x)], h[len(x) :])


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


def count_gap(
    model: nn.Module, L: int, a: int, b: int, dtype: torch.dtype = torch.float64, final_module: nn.Module | None = None
) -> CountGap:
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


class EditChange(NamedTuple):
    """One pair of inputs: the measured ``change`` of the last attention output, the ``bound`` B(L) and its inputs
    (``c`` the largest |score| of the last query over both inputs, ``v_max`` the largest value norm over both,
    ``dv1`` the change of position 1's value)."""

    change: float
    bound: float
    c: float
    v_max: float
    dv1: float


@torch.no_grad()
def attention_edit_change(attn: nn.Module, x: Tensor, x_edit: Tensor) -> list[EditChange]:
    """The last position's output change of a one-head softmax attention layer under an edit of position 1.

    ``attn``: a :class:`~theorylab.nn.toy_transformer.MultiHeadAttention` with one head, its output map ``W_O`` the
    identity and no output bias, so its output is the attention average ``Σ_j p_j v_j`` itself. ``x, x_edit``:
    ``(batch, L, d)`` vector inputs that differ only at position 1 (index 0). The layer's own forward (its kernel,
    normalisation and masking) gives the outputs; the last query's scores are recomputed from the queries and keys
    read at its ``hook_q``/``hook_k`` points and the values from ``W_V``, so
    :func:`~theorylab.theory.softmax.dilution_bound` gets c, max‖v_j‖ and ‖Δv₁‖ of the same two inputs.
    """
    if x.shape != x_edit.shape or x.ndim != 3:
        raise ValueError(f"need two (batch, L, d) inputs of one shape; got {tuple(x.shape)}, {tuple(x_edit.shape)}")
    if attn.W_V.shape[0] != 1:
        raise ValueError(f"the bound is for one head; this layer has {attn.W_V.shape[0]}")
    if not torch.equal(x[:, 1:], x_edit[:, 1:]):
        raise ValueError("x and x_edit must differ only at position 1 (index 0)")
    caught: dict[str, list[Tensor]] = {"q": [], "k": []}
    handles = [
        getattr(attn, f"hook_{n}").register_forward_hook(lambda _m, _i, out, n=n: caught[n].append(out)) for n in caught
    ]
    try:
        out, out_edit = attn(x), attn(x_edit)
    finally:
        for h in handles:
            h.remove()
    # the last query sees every key (causal or not): its scores s_j = scale q_L . k_j, for both inputs
    last = [
        attn.cfg.scale * torch.einsum("br,btr->bt", q[:, 0, -1].double(), k[:, 0].double())
        for q, k in zip(caught["q"], caught["k"])
    ]
    c = torch.maximum(*(s.abs().amax(-1) for s in last))
    values = [torch.einsum("btd,vd->btv", t.double(), attn.W_V[0].double()) for t in (x, x_edit)]
    if attn.b_V is not None:
        values = [v + attn.b_V[0].double() for v in values]
    v_max = torch.maximum(*(v.norm(dim=-1).amax(-1) for v in values))
    dv1 = (values[0][:, 0] - values[1][:, 0]).norm(dim=-1)
    change = _distance(out[:, -1], out_edit[:, -1])
    L = x.shape[1]
    return [
        EditChange(
            float(change[b]),
            dilution_bound(L, float(c[b]), float(v_max[b]), float(dv1[b])),
            float(c[b]),
            float(v_max[b]),
            float(dv1[b]),
        )
        for b in range(len(x))
    ]


@contextmanager
def first_token_skip(model: nn.Module) -> Iterator[None]:
    """Negative control of the dilution rate: inside the block, a ToyTransformer adds position 1's embedding to the
    last position's final residual stream, a path outside every softmax average, so an edit of position 1 moves
    the last state by O(1) at every length (a flat log-log slope instead of −1)."""
    first: dict[str, Tensor] = {}
    last_block = f"blocks.{len(model.blocks) - 1}.hook_resid_post"

    def keep(t: Tensor) -> None:
        first["embedding"] = t[:, 0]

    def add(t: Tensor) -> Tensor:
        out = t.clone()
        out[:, -1] = out[:, -1] + first["embedding"]
        return out

    with model.hooks({"hook_embed": keep, last_block: add}):
        yield


@torch.no_grad()
def layer_collapse(model: nn.Module, x: Tensor) -> list[dict[str, float]]:
    """Within-sequence collapse of every block's output states ``H_l`` ``(batch, L, d)`` of a ToyTransformer.

    Per layer l (1-based): the anisotropy-calibrated cosine :func:`calibrated_cosine` and the effective rank of
    each sequence's ``H_l`` (Roy and Vetterli) divided by L, averaged over the batch (measurements 3 and 4 of the
    card).
    """
    names = [f"blocks.{i}.hook_resid_post" for i in range(len(model.blocks))]
    _, cache = model.run_with_cache(x, names)
    L = x.shape[1]
    return [
        dict(
            layer=i + 1,
            calibrated_cosine=calibrated_cosine(cache[n]),
            erank_per_token=float(effective_rank(cache[n]).mean()) / L,
        )
        for i, n in enumerate(names)
    ]
