"""Transformer-block families whose MLP can absorb a context as a weight patch.

Each block maps one sequence ``X`` of shape ``(T, d)`` to ``(T, d)`` with causal softmax attention
and exposes, at the last position (the query), the states the patch constructions need
(:meth:`PatchableBlock.query_state`): the block input ``x``, the attention branch ``a``, the
residual stream ``h`` the MLP branch is added to, the MLP input ``n``, the output ``out`` (and the
pre-norm sum ``pre`` of a post-norm block, the routing of a mixture-of-experts block).

Families (Goldwaser, Munn, Gonzalvo, Dherin, arXiv 2511.17864, Sec. 3-5; Dherin et al., arXiv
2507.16003, Sec. 2):

- ``vanilla`` (Dherin's contextual block): ``out = W₂ gelu(W₁ LN(x + Attn(X)) + b₁) + b₂``;
- ``llama``: ``h = x + Attn(N₁X)``, ``out = h + W_d(silu(W_g N₂h) ⊙ W_u N₂h)``;
- ``gemma``: ``h = x + N₂(Attn(N₁X))``, ``out = h + N₄(W_d(gelu_tanh(W_g N₃h) ⊙ W_u N₃h))``;
- ``postnorm`` (original transformer): ``h = LN₁(x + Attn(X))``, ``out = LN₂(h + MLP(h))``;
- ``parallel``: ``out = x + Attn(N X) + MLP(N x)``;
- ``moe``: Llama with a top-k router over SwiGLU experts (gate weights: softmax over the top-k logits).

Norm scales are ``1 + g`` (Gemma's parametrisation) with ``g ~ N(0, g_std²)`` so that a missing
``(1 + g)`` factor shows; weights are ``N(0, 1/fan_in)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.core.rng import seeded

FAMILIES = ("vanilla", "llama", "gemma", "postnorm", "parallel", "moe")


def rms_norm(x: Tensor, g: Tensor, eps: float) -> Tensor:
    """``x / rms_ε(x) ⊙ (1 + g)`` over the last axis (Gemma's RMSNorm)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1 + g)


def gelu_tanh(x: Tensor) -> Tensor:
    return F.gelu(x, approximate="tanh")


@dataclass
class GatedMLP:
    """``W_d (act(W_g n) ⊙ W_u n)`` with names for its three matrices (the HF / Llama layout).

    A detached view of a block's gated MLP (:meth:`_GatedBlock.mlp_parts`, :meth:`MoEBlock.experts_parts`);
    the patch formulas (:mod:`theorylab.theory.patches`) take its tensors.
    """

    W_g: Tensor
    W_u: Tensor
    W_d: Tensor
    act: Callable[[Tensor], Tensor]
    names: tuple[str, str, str] = ("gate", "up", "down")

    def inner(self, n: Tensor, dW_g: Tensor | None = None, dW_u: Tensor | None = None) -> Tensor:
        W_g = self.W_g if dW_g is None else self.W_g + dW_g
        W_u = self.W_u if dW_u is None else self.W_u + dW_u
        return self.act(W_g @ n) * (W_u @ n)


class PatchableBlock(nn.Module):
    """Common parts: causal multi-head attention and Gaussian initialisation."""

    family = ""

    def __init__(self, d: int, hidden: int, n_heads: int, g_std: float, eps: float):
        super().__init__()
        if d % n_heads:
            raise ValueError(f"width d={d} is not divisible by n_heads={n_heads}")
        self.d, self.hidden, self.n_heads, self.g_std, self.eps = d, hidden, n_heads, g_std, eps
        self.Wq, self.Wk, self.Wv, self.Wo = (self._matrix(d, d) for _ in range(4))

    def _matrix(self, out: int, inp: int) -> nn.Parameter:
        return nn.Parameter(torch.randn(out, inp, dtype=torch.float64) / math.sqrt(inp))

    def _vector(self, n: int) -> nn.Parameter:
        return nn.Parameter(self.g_std * torch.randn(n, dtype=torch.float64))

    def attend(self, X: Tensor) -> Tensor:
        """Causal softmax attention of every position over itself and the earlier ones; ``X``: ``(..., T, d)``."""
        T, d = X.shape[-2:]
        hd = d // self.n_heads
        q, k, v = ((X @ W.T).unflatten(-1, (self.n_heads, hd)).transpose(-2, -3) for W in (self.Wq, self.Wk, self.Wv))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        mask = torch.ones(T, T, dtype=torch.bool, device=X.device).triu(1)
        attn = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        return (attn @ v).transpose(-2, -3).flatten(-2) @ self.Wo.T

    def parts(self, X: Tensor) -> dict[str, Tensor]:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, X: Tensor) -> Tensor:
        return self.parts(X)["out"]

    def query_state(self, X: Tensor) -> dict[str, Tensor]:
        """The block's states at the last position (detached); ``X``: ``(T, d)``."""
        return {k: v[-1].detach() for k, v in self.parts(X).items()}


class VanillaBlock(PatchableBlock):
    """Dherin's contextual block; ``layer_norm=False`` drops the LayerNorm on the MLP input (their Thm 2.2 setting)."""

    family = "vanilla"

    def __init__(self, d, hidden, n_heads=2, g_std=0.1, eps=1e-5, layer_norm=True):
        super().__init__(d, hidden, n_heads, g_std, eps)
        self.layer_norm = layer_norm
        self.g, self.beta = self._vector(d), self._vector(d)
        self.W1, self.b1 = self._matrix(hidden, d), self._vector(hidden)
        self.W2, self.b2 = self._matrix(d, hidden), self._vector(d)
        self.act = F.gelu

    def parts(self, X):
        a = self.attend(X)
        h = X + a
        n = F.layer_norm(h, (self.d,), 1 + self.g, self.beta, self.eps) if self.layer_norm else h
        out = self.act(n @ self.W1.T + self.b1) @ self.W2.T + self.b2
        return dict(x=X, a=a, h=h, n=n, out=out)


class _GatedBlock(PatchableBlock):
    act = staticmethod(F.silu)

    def __init__(self, d, hidden, n_heads=2, g_std=0.1, eps=1e-6):
        super().__init__(d, hidden, n_heads, g_std, eps)
        self.W_g, self.W_u, self.W_d = self._matrix(hidden, d), self._matrix(hidden, d), self._matrix(d, hidden)

    def mlp_parts(self) -> GatedMLP:
        """Inner map ``act(W_g n) ⊙ W_u n`` and outer map ``W_d``, named as the parameters."""
        return GatedMLP(self.W_g.detach(), self.W_u.detach(), self.W_d.detach(), self.act, names=("W_g", "W_u", "W_d"))

    def mlp(self, n: Tensor) -> Tensor:
        return (self.act(n @ self.W_g.T) * (n @ self.W_u.T)) @ self.W_d.T


class LlamaBlock(_GatedBlock):
    family = "llama"

    def __init__(self, d, hidden, n_heads=2, g_std=0.1, eps=1e-6):
        super().__init__(d, hidden, n_heads, g_std, eps)
        self.g1, self.g2 = self._vector(d), self._vector(d)

    def parts(self, X):
        a = self.attend(rms_norm(X, self.g1, self.eps))
        h = X + a
        n = rms_norm(h, self.g2, self.eps)
        return dict(x=X, a=a, h=h, n=n, out=h + self.mlp(n))


class GemmaBlock(_GatedBlock):
    family = "gemma"
    act = staticmethod(gelu_tanh)

    def __init__(self, d, hidden, n_heads=2, g_std=0.1, eps=1e-6):
        super().__init__(d, hidden, n_heads, g_std, eps)
        self.g1, self.g2, self.g3, self.g4 = (self._vector(d) for _ in range(4))

    def parts(self, X):
        a = rms_norm(self.attend(rms_norm(X, self.g1, self.eps)), self.g2, self.eps)
        h = X + a
        n = rms_norm(h, self.g3, self.eps)
        return dict(x=X, a=a, h=h, n=n, out=h + rms_norm(self.mlp(n), self.g4, self.eps))


class ParallelBlock(_GatedBlock):
    family = "parallel"

    def __init__(self, d, hidden, n_heads=2, g_std=0.1, eps=1e-6):
        super().__init__(d, hidden, n_heads, g_std, eps)
        self.g1 = self._vector(d)

    def parts(self, X):
        n = rms_norm(X, self.g1, self.eps)
        a = self.attend(n)
        h = X + a
        return dict(x=X, a=a, h=h, n=n, out=h + self.mlp(n))


class PostNormBlock(PatchableBlock):
    family = "postnorm"

    def __init__(self, d, hidden, n_heads=2, g_std=0.1, eps=1e-5):
        super().__init__(d, hidden, n_heads, g_std, eps)
        self.g1, self.beta1, self.g2, self.beta2 = (self._vector(d) for _ in range(4))
        self.W1, self.b1 = self._matrix(hidden, d), self._vector(hidden)
        self.W2, self.b2 = self._matrix(d, hidden), self._vector(d)
        self.act = F.gelu

    def parts(self, X):
        a = self.attend(X)
        h = F.layer_norm(X + a, (self.d,), 1 + self.g1, self.beta1, self.eps)
        pre = h + self.act(h @ self.W1.T + self.b1) @ self.W2.T + self.b2
        out = F.layer_norm(pre, (self.d,), 1 + self.g2, self.beta2, self.eps)
        return dict(x=X, a=a, h=h, n=h, pre=pre, out=out)


class MoEBlock(PatchableBlock):
    family = "moe"
    act = staticmethod(F.silu)

    def __init__(self, d, hidden, n_heads=2, g_std=0.1, eps=1e-6, n_experts=4, top_k=2):
        super().__init__(d, hidden, n_heads, g_std, eps)
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k must be in [1, n_experts={n_experts}], got {top_k}")
        self.n_experts, self.top_k = n_experts, top_k
        self.g1, self.g2 = self._vector(d), self._vector(d)
        self.W_r = self._matrix(n_experts, d)
        self.W_g = nn.Parameter(torch.randn(n_experts, hidden, d, dtype=torch.float64) / math.sqrt(d))
        self.W_u = nn.Parameter(torch.randn(n_experts, hidden, d, dtype=torch.float64) / math.sqrt(d))
        self.W_d = nn.Parameter(torch.randn(n_experts, d, hidden, dtype=torch.float64) / math.sqrt(hidden))

    def experts_parts(self) -> list[GatedMLP]:
        return [
            GatedMLP(self.W_g[e].detach(), self.W_u[e].detach(), self.W_d[e].detach(), self.act)
            for e in range(self.n_experts)
        ]

    def route(self, n: Tensor) -> tuple[Tensor, Tensor]:
        """Top-k experts per position and their gate weights (softmax over the selected logits)."""
        logits = n @ self.W_r.T
        top, selected = torch.topk(logits, self.top_k, dim=-1)
        return selected, torch.softmax(top, dim=-1)

    def parts(self, X):
        a = self.attend(rms_norm(X, self.g1, self.eps))
        h = X + a
        n = rms_norm(h, self.g2, self.eps)
        selected, weights = self.route(n)
        z = self.act(torch.einsum("ehd,...td->...teh", self.W_g, n)) * torch.einsum("ehd,...td->...teh", self.W_u, n)
        y = torch.einsum("edh,...teh->...ted", self.W_d, z)  # every expert at every position (E is small)
        picked = torch.gather(y, -2, selected.unsqueeze(-1).expand(*selected.shape, self.d))
        mix = (weights.unsqueeze(-1) * picked).sum(-2)
        return dict(x=X, a=a, h=h, n=n, out=h + mix, selected=selected, weights=weights)


BLOCKS = {cls.family: cls for cls in (VanillaBlock, LlamaBlock, GemmaBlock, PostNormBlock, ParallelBlock, MoEBlock)}


class BlockStack(nn.Module):
    """``depth`` blocks of one family applied in sequence (no embedding or read-out)."""

    def __init__(self, blocks: list[PatchableBlock]):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    @property
    def family(self) -> str:
        return self.blocks[0].family

    def forward(self, X: Tensor) -> Tensor:
        for block in self.blocks:
            X = block(X)
        return X


def make_stack(
    family: str,
    depth: int,
    d: int,
    *,
    seed: int,
    hidden_mult: int = 4,
    n_heads: int = 2,
    g_std: float = 0.1,
    dtype: torch.dtype = torch.float64,
    **kwargs,
) -> BlockStack:
    """A random-init stack (float64 weights drawn from ``seed``, then cast to ``dtype``)."""
    if family not in BLOCKS:
        raise ValueError(f"unknown block family {family!r}; known: {', '.join(FAMILIES)}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    with seeded(seed):
        blocks = [BLOCKS[family](d, hidden_mult * d, n_heads=n_heads, g_std=g_std, **kwargs) for _ in range(depth)]
    return BlockStack(blocks).to(dtype)
