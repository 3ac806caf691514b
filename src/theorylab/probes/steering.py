"""Contrastive activation addition (CAA): the steering vector ``v = mean h_l(pos) − mean h_l(neg)``.

Rimsky et al., "Steering Llama 2 via Contrastive Activation Addition" (2024); used by the local-perturbation-geometry
study (Piontkovskaia & Nikolenko, arXiv 2607.16821), which compares ``v`` with the activation shift of a weight edit.
Layer ``l`` is the residual stream after ``l`` blocks (``l = 0``: the embedding), as in HF ``hidden_states[l]``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def residual_hook(model: nn.Module, layer: int) -> str:
    """The hook name of the residual stream after ``layer`` blocks of a :class:`~theorylab.nn.ToyTransformer`."""
    n = len(model.blocks)
    if not 0 <= layer <= n:
        raise ValueError(f"layer must lie in [0, {n}] (residual stream after that many blocks), got {layer}")
    return "hook_embed" if layer == 0 else f"blocks.{layer - 1}.hook_resid_post"


def residual_at(model: nn.Module, tokens: Tensor, layer: int, position: int) -> Tensor:
    """``(B, d)``: the residual stream after ``layer`` blocks at ``position`` for each prompt."""
    name = residual_hook(model, layer)
    if not -tokens.shape[1] <= position < tokens.shape[1]:
        raise ValueError(f"position {position} is outside prompts of length {tokens.shape[1]}")
    store: dict[str, Tensor] = {}
    with model.hooks({name: lambda t: store.__setitem__("h", t)}):
        model(tokens)
    return store["h"][:, position]


def caa_vector(model: nn.Module, pos_prompts: Tensor, neg_prompts: Tensor, layer: int, position: int) -> Tensor:
    """``mean_i h_l(pos_i)[position] − mean_j h_l(neg_j)[position]``: ``(d,)``."""
    if len(pos_prompts) == 0 or len(neg_prompts) == 0:
        raise ValueError("caa_vector needs at least one positive and one negative prompt")
    with torch.no_grad():
        return residual_at(model, pos_prompts, layer, position).mean(0) - residual_at(
            model, neg_prompts, layer, position
        ).mean(0)
