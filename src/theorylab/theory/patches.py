"""Context as exact rank-1 weight patches: the lemmas and the gated-MLP / MoE constructions.

Dherin, Munn, Mazzawi, Wunder, Gonzalvo, "Learning without training: the implicit dynamics of
in-context learning", arXiv 2507.16003 (2025), Thm 2.2: for a block ``f(W A(C, x) + b)``,

    ΔW = (W ΔA) A(x)ᵀ / ‖A(x)‖²,   ΔA = A(C, x) − A(x),

makes the block without the context give the output it gives with it. Goldwaser, Munn, Gonzalvo,
Dherin, "Equivalence of Context and Parameter Updates in Modern Transformer Blocks", arXiv
2511.17864 (2025), extend this to gated MLPs, pre/post-norms, mixture-of-experts and parallel
blocks: an exact patch exists whenever the MLP's inner map is *input-controllable* (a rank-1 patch
of its input matrices moves its input anywhere) and its outer map *output-controllable* (a patch
reaches any target output).

Everything here rests on one identity (:func:`rank1_to_target`): for ``z ≠ 0``,
``(W + (t − W z) zᵀ/‖z‖²) z = t``; the update is rank 1 and the smallest (Frobenius) that does it.
The constructions (:func:`gated_mlp_patch`, :func:`moe_patch`; per block of a model:
:func:`theorylab.probes.weight_patches.implicit_patch`) are compositions of it; where a condition
fails they raise :class:`NotControllable` with the condition's name instead of returning a wrong patch.

Everything takes weights as tensors, never a module. Vectors are 1-D (one query position); matrices
follow ``nn.Linear``'s ``(out, in)`` layout.
The Gemma construction (input patches, then an output patch, then the RMSNorm-scale patch) is our
reconstruction of the paper's; the "output" mode (no input patches) is exact as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
from torch import Tensor


class NotControllable(ValueError):
    """No exact patch of this kind exists here; the message names the controllability condition that fails."""


def rms(v: Tensor, eps: float = 0.0) -> Tensor:
    """``sqrt(mean(v²) + eps)`` over the last axis (the RMSNorm denominator)."""
    return torch.sqrt(v.pow(2).mean(-1, keepdim=True) + eps)


def rank1_to_target(W: Tensor, z: Tensor, target: Tensor, *, what: str = "W") -> Tensor:
    """The least-norm ΔW with ``(W + ΔW) z = target``: ``(target − W z) zᵀ / ‖z‖²`` (rank ≤ 1).

    Raises :class:`NotControllable` when ``z = 0`` (then ``(W + ΔW) z = 0`` for every ΔW).
    """
    zz = torch.dot(z, z)
    if not bool(zz > 0):
        raise NotControllable(
            f"not output-controllable: the input of {what} is 0, so no patch of {what} reaches the target"
        )
    return torch.outer(target - W @ z, z) / zz


def input_patch(W: Tensor, n_from: Tensor, n_to: Tensor, *, what: str = "W") -> Tensor:
    """Dherin's ΔW = W (n_to − n_from) n_fromᵀ / ‖n_from‖²: then ``(W + ΔW) n_from = W n_to``."""
    zz = torch.dot(n_from, n_from)
    if not bool(zz > 0):
        raise NotControllable(f"not input-controllable: the query-only input of {what} is 0")
    return torch.outer(W @ (n_to - n_from), n_from) / zz


def norm_scale_patch(scale: Tensor, m: Tensor, eps: float) -> Tensor:
    """The RMSNorm scale s' with ``m / rms_ε(m) ⊙ s' = m ⊙ s``: ``s' = rms_ε(m) · s`` (a scalar multiple of s)."""
    return rms(m, eps) * scale


def post_norm_target(target: Tensor, scale: Tensor, *, what: str = "the post-MLP RMSNorm") -> Tensor:
    """The pre-norm vector m* = target ⊘ scale that a post-norm with a patched scale maps to ``target``.

    Raises :class:`NotControllable` (not output-controllable) where a scale entry is 0 and the target
    entry is not: the norm's output there is 0 whatever its input.
    """
    dead = (scale == 0) & (target != 0)
    if bool(dead.any()):
        idx = torch.nonzero(dead).flatten().tolist()
        raise NotControllable(
            f"not output-controllable: the scale (1 + g) of {what} is 0 at coordinate(s) {idx[:8]}, "
            "so the block's output there is 0 whatever the MLP weights, but the target is not"
        )
    return torch.where(
        scale == 0, torch.zeros_like(target), target / torch.where(scale == 0, torch.ones_like(scale), scale)
    )


def post_norm_output_patch(
    W_d: Tensor,
    z: Tensor,
    target: Tensor,
    scale: Tensor,
    eps: float,
    *,
    what: str = "W_d",
    norm: str = "the post-MLP RMSNorm",
) -> tuple[Tensor, Tensor]:
    """Output patch through a post-norm (Gemma's N₄): ``(ΔW_d, new scale)`` with ``N₄'((W_d + ΔW_d) z) = target``.

    ``W_d + ΔW_d`` maps z to m* = target ⊘ scale, and the scale becomes rms_ε(m*)·scale.
    """
    m_star = post_norm_target(target, scale, what=norm)
    return rank1_to_target(W_d, z, m_star, what=what), norm_scale_patch(scale, m_star, eps)


@dataclass
class Patch:
    """One block's patch: parameter deltas (full parameter shapes) and the matrices whose rank is claimed.

    ``deltas`` maps parameter names (relative to the patched module) to ΔW; ``factors`` maps the same
    names to the 2-D update whose rank is 1 (for a 3-D expert tensor, the expert's slice);
    ``scales`` maps a norm-scale parameter to ``(old 1+g, new 1+g)``; ``info`` says what was chosen.
    """

    deltas: dict[str, Tensor] = field(default_factory=dict)
    factors: dict[str, Tensor] = field(default_factory=dict)
    scales: dict[str, tuple[Tensor, Tensor]] = field(default_factory=dict)
    info: dict[str, object] = field(default_factory=dict)

    def add(self, name: str, delta: Tensor, factor: Tensor | None = None) -> None:
        self.deltas[name] = delta
        self.factors[name] = delta if factor is None else factor

    def frobenius(self) -> dict[str, float]:
        return {k: float(torch.linalg.matrix_norm(v.double())) for k, v in self.factors.items()}


# --------------------------------------------------------------------------------------------
# Gated MLP with optional post-norm: Llama (SwiGLU), Gemma (GeGLU + post-norm), MoE experts
# --------------------------------------------------------------------------------------------


def gated_inner(
    W_g: Tensor,
    W_u: Tensor,
    act: Callable[[Tensor], Tensor],
    n: Tensor,
    dW_g: Tensor | None = None,
    dW_u: Tensor | None = None,
) -> Tensor:
    """The inner map of a gated MLP ``W_d (act(W_g n) ⊙ W_u n)`` (the HF / Llama layout), with optional patches on W_g,
    W_u."""
    W_g = W_g if dW_g is None else W_g + dW_g
    W_u = W_u if dW_u is None else W_u + dW_u
    return act(W_g @ n) * (W_u @ n)


def gated_mlp_patch(
    W_g: Tensor,
    W_u: Tensor,
    W_d: Tensor,
    act: Callable[[Tensor], Tensor],
    n_x: Tensor,
    target: Tensor,
    *,
    names: tuple[str, str, str] = ("gate", "up", "down"),
    n_c: Tensor | None = None,
    post_scale: Tensor | None = None,
    post_scale_name: str | None = None,
    eps: float = 0.0,
) -> Patch:
    """Patch the gated MLP ``W_d (act(W_g n) ⊙ W_u n)`` so that, at its query-only input ``n_x``, its branch
    output equals ``target``; ``names`` name the three matrices in the returned :class:`Patch`.

    - ``n_c`` given ("full" mode): input patches on W_g and W_u first (Dherin's ΔW on each), so the
      inner activation at ``n_x`` becomes the with-context one; then the output patch.
    - Output patch: ΔW_d maps the inner activation z to ``target`` (Llama) or, with a post-norm of
      scale ``post_scale`` (Gemma's N₄), to m* = target ⊘ scale, plus the scale patch
      s' = rms_ε(m*)·s so that N₄'(m*) = target (Goldwaser et al., Gemma block).
    """
    g, u, d = names
    patch = Patch(info={"mode": "full" if n_c is not None else "output"})
    dW_g = dW_u = None
    if n_c is not None:
        dW_g = input_patch(W_g, n_x, n_c, what=g)
        dW_u = input_patch(W_u, n_x, n_c, what=u)
        patch.add(g, dW_g)
        patch.add(u, dW_u)
    z = gated_inner(W_g, W_u, act, n_x, dW_g, dW_u)
    if post_scale is None:
        patch.add(d, rank1_to_target(W_d, z, target, what=d))
        return patch
    dW_d, new_scale = post_norm_output_patch(W_d, z, target, post_scale, eps, what=d)
    patch.add(d, dW_d)
    name = post_scale_name or "post_norm"
    patch.deltas[name] = new_scale - post_scale
    patch.scales[name] = (post_scale, new_scale)
    return patch


def moe_patch(
    W_g: Tensor | Sequence[Tensor],
    W_u: Tensor | Sequence[Tensor],
    W_d: Tensor | Sequence[Tensor],
    act: Callable[[Tensor], Tensor],
    selected: Tensor,
    weights: Tensor,
    n_x: Tensor,
    target: Tensor,
) -> tuple[int, Tensor, Tensor]:
    """MoE output patch: patch the highest-weight expert routed at ``n_x`` so the mixture hits ``target``.

    ``W_g``, ``W_u``, ``W_d``: the experts' gated-MLP matrices, indexed by expert first (``(E, hidden, d)``,
    ``(E, hidden, d)``, ``(E, d, hidden)`` tensors or sequences of E matrices); ``act``: their activation.
    ``selected``/``weights``: the top-k experts and their gate weights at ``n_x`` (the query-only
    routing, which may differ from the with-context one; the patch does not touch the router).
    Returns ``(expert, ΔW_d of that expert, its inner activation)``. Raises
    :class:`NotControllable` if that expert's gate weight is 0.
    """
    k = int(torch.argmax(weights))
    e, w = int(selected[k]), weights[k]
    if not bool(w > 0):
        raise NotControllable(f"not output-controllable: the gate weight of the selected expert {e} is 0")
    rest = sum(
        (
            weights[j] * W_d[int(selected[j])] @ gated_inner(W_g[int(selected[j])], W_u[int(selected[j])], act, n_x)
            for j in range(len(selected))
            if j != k
        ),
        torch.zeros_like(target),
    )
    z = gated_inner(W_g[e], W_u[e], act, n_x)
    return e, rank1_to_target(W_d[e], z, (target - rest) / w, what=f"expert {e} down"), z
