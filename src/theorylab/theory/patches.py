"""Context as exact rank-1 weight patches: the lemmas and the per-block constructions.

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
The block constructions (:func:`implicit_patch`) are compositions of it; where a condition fails
they raise :class:`NotControllable` with the condition's name instead of returning a wrong patch.

Vectors are 1-D (one query position); matrices follow ``nn.Linear``'s ``(out, in)`` layout.
The Gemma construction (input patches, then an output patch, then the RMSNorm-scale patch) is our
reconstruction of the paper's; the "output" mode (no input patches) is exact as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

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
        raise NotControllable(f"not output-controllable: the input of {what} is 0, so no patch of {what} reaches the target")
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
    return torch.where(scale == 0, torch.zeros_like(target), target / torch.where(scale == 0, torch.ones_like(scale), scale))


def post_norm_output_patch(W_d: Tensor, z: Tensor, target: Tensor, scale: Tensor, eps: float, *, what: str = "W_d",
                           norm: str = "the post-MLP RMSNorm") -> tuple[Tensor, Tensor]:
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


@dataclass
class GatedMLP:
    """``W_d (act(W_g n) ⊙ W_u n)`` with names for its three matrices (the HF / Llama layout)."""

    W_g: Tensor
    W_u: Tensor
    W_d: Tensor
    act: Callable[[Tensor], Tensor]
    names: tuple[str, str, str] = ("gate", "up", "down")

    def inner(self, n: Tensor, dW_g: Tensor | None = None, dW_u: Tensor | None = None) -> Tensor:
        W_g = self.W_g if dW_g is None else self.W_g + dW_g
        W_u = self.W_u if dW_u is None else self.W_u + dW_u
        return self.act(W_g @ n) * (W_u @ n)


def gated_mlp_patch(
    mlp: GatedMLP,
    n_x: Tensor,
    target: Tensor,
    *,
    n_c: Tensor | None = None,
    post_scale: Tensor | None = None,
    post_scale_name: str | None = None,
    eps: float = 0.0,
) -> Patch:
    """Patch a gated MLP so that, at its query-only input ``n_x``, its branch output equals ``target``.

    - ``n_c`` given ("full" mode): input patches on W_g and W_u first (Dherin's ΔW on each), so the
      inner activation at ``n_x`` becomes the with-context one; then the output patch.
    - Output patch: ΔW_d maps the inner activation z to ``target`` (Llama) or, with a post-norm of
      scale ``post_scale`` (Gemma's N₄), to m* = target ⊘ scale, plus the scale patch
      s' = rms_ε(m*)·s so that N₄'(m*) = target (Goldwaser et al., Gemma block).
    """
    g, u, d = mlp.names
    patch = Patch(info={"mode": "full" if n_c is not None else "output"})
    dW_g = dW_u = None
    if n_c is not None:
        dW_g = input_patch(mlp.W_g, n_x, n_c, what=g)
        dW_u = input_patch(mlp.W_u, n_x, n_c, what=u)
        patch.add(g, dW_g)
        patch.add(u, dW_u)
    z = mlp.inner(n_x, dW_g, dW_u)
    if post_scale is None:
        patch.add(d, rank1_to_target(mlp.W_d, z, target, what=d))
        return patch
    dW_d, new_scale = post_norm_output_patch(mlp.W_d, z, target, post_scale, eps, what=d)
    patch.add(d, dW_d)
    name = post_scale_name or "post_norm"
    patch.deltas[name] = new_scale - post_scale
    patch.scales[name] = (post_scale, new_scale)
    return patch


def moe_patch(
    experts: list[GatedMLP],
    selected: Tensor,
    weights: Tensor,
    n_x: Tensor,
    target: Tensor,
) -> tuple[int, Tensor, Tensor]:
    """MoE output patch: patch the highest-weight expert routed at ``n_x`` so the mixture hits ``target``.

    ``selected``/``weights``: the top-k experts and their gate weights at ``n_x`` (the query-only
    routing, which may differ from the with-context one; the patch does not touch the router).
    Returns ``(expert, ΔW_d of that expert, its inner activation)``. Raises
    :class:`NotControllable` if that expert's gate weight is 0.
    """
    k = int(torch.argmax(weights))
    e, w = int(selected[k]), weights[k]
    if not bool(w > 0):
        raise NotControllable(f"not output-controllable: the gate weight of the selected expert {e} is 0")
    rest = sum((weights[j] * experts[int(selected[j])].W_d @ experts[int(selected[j])].inner(n_x) for j in range(len(selected)) if j != k), torch.zeros_like(target))
    z = experts[e].inner(n_x)
    return e, rank1_to_target(experts[e].W_d, z, (target - rest) / w, what=f"expert {e} down"), z


def implicit_patch(block, with_ctx: Mapping[str, Tensor], query_only: Mapping[str, Tensor], mode: str = "output") -> Patch:
    """The exact patch of one of our blocks (:mod:`theorylab.nn.blocks`), given its query states.

    ``with_ctx`` / ``query_only``: the block's :meth:`~theorylab.nn.blocks.PatchableBlock.query_state`
    at the query with and without the context (the latter at the input the patched block will see).
    ``mode``: "output" (patch the outer map only) or "full" (input patches too, where the inner map
    sees the context: Llama, Gemma, post-norm). The vanilla block always takes Dherin's input patch.
    """
    if mode not in ("output", "full"):
        raise ValueError(f"mode must be 'output' or 'full', got {mode!r}")
    family = block.family
    full = mode == "full" and family in ("llama", "gemma", "postnorm")
    n_c = with_ctx["n"] if full else None
    if family == "vanilla":
        patch = Patch(info={"mode": "input"})
        patch.add("W1", input_patch(block.W1.detach(), query_only["n"], with_ctx["n"], what="W1"))
        return patch
    if family in ("llama", "parallel"):
        return gated_mlp_patch(block.mlp_parts(), query_only["n"], with_ctx["out"] - query_only["h"], n_c=n_c)
    if family == "gemma":
        return gated_mlp_patch(
            block.mlp_parts(), query_only["n"], with_ctx["out"] - query_only["h"], n_c=n_c,
            post_scale=(1 + block.g4).detach(), post_scale_name="g4", eps=block.eps,
        )
    if family == "postnorm":
        # out = LN₂(h + W₂ gelu(W₁ h + b₁) + b₂): match the pre-norm sum, the norm then agrees.
        W1, b1, W2, b2 = (p.detach() for p in (block.W1, block.b1, block.W2, block.b2))
        patch = Patch(info={"mode": "full" if full else "output"})
        dW1 = None
        if full:
            dW1 = input_patch(W1, query_only["n"], n_c, what="W1")
            patch.add("W1", dW1)
        z = block.act((W1 if dW1 is None else W1 + dW1) @ query_only["n"] + b1)
        patch.add("W2", rank1_to_target(W2, z, with_ctx["pre"] - query_only["h"] - b2, what="W2"))
        return patch
    if family == "moe":
        experts = block.experts_parts()
        e, dW, _ = moe_patch(experts, query_only["selected"], query_only["weights"], query_only["n"], with_ctx["out"] - query_only["h"])
        patch = Patch(info={"mode": "output", "expert": e})
        full_delta = torch.zeros_like(block.W_d)
        full_delta[e] = dW
        patch.add("W_d", full_delta, dW)
        return patch
    raise ValueError(f"no patch construction for block family {family!r}")
