"""A fast-slow language model: a causal decoder (fast, every token) plus a block-pooled slow path (once every P tokens)
joined by a zero-initialised gate.

Gao (arXiv 2606.16730, 2026; layout reconstructed from the abstract): the fast variable is updated every token by
causal attention; the slow variable once every ``P`` tokens (``eps = 1/P``) through causal block-mean pooling with
attention over the ``T/P`` pooled tokens (``P^2`` fewer score entries per layer); a zero-initialised additive gate
couples the two. Per layer ``l`` with residual stream ``h`` (B, T, d):

- fast: ``f = Block_l(h)``, a pre-LN causal block of :class:`~theorylab.nn.toy_transformer.ToyTransformer`;
- slow: ``z = Attn_l(pool_P(LN(h)))`` over the ``ceil(T/P)`` block means, causal over blocks; broadcast back so that a
  token of block ``b`` reads ``z_{b-1}`` (block 0 reads 0): only blocks that ended before the token began;
- out: ``f + g_l * broadcast(z)`` with ``g_l in R^d`` initialised to 0 (:class:`ZeroGate`).

Variants: ``coupled`` (g trainable), ``frozen`` (g fixed at 0 and the slow weights frozen: the slow path exists,
costs its compute, and contributes nothing), ``dense`` (no slow path; the same depth and width). The fast weights are
drawn first from the seed, so ``frozen`` and ``dense`` start from the same fast weights.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from theorylab.core.rng import seeded
from theorylab.nn.toy_transformer import Block, HookPoint, MultiHeadAttention, ToyTransformerConfig, make_norm

Variant = Literal["coupled", "frozen", "dense"]


class BlockMeanPool(nn.Module):
    """Block means over ``P`` consecutive tokens and their broadcast back to the tokens.

    ``pool(x)``: (B, T, d) -> (B, ceil(T/P), d), the last block averaged over the tokens it has.
    ``broadcast(z, T)``: (B, n_blocks, d) -> (B, T, d). With ``causal=True`` token ``t`` of block ``b = t // P``
    receives ``z_{b-1}`` (zeros for block 0), so nothing a token reads depends on a token at or after its block's
    start; ``causal=False`` gives it ``z_b``, the mean over its own block, which includes future tokens (a leak; the
    control of the causality test).
    """

    def __init__(self, P: int, causal: bool = True):
        super().__init__()
        if P < 1:
            raise ValueError(f"block size P must be >= 1; got {P}")
        self.P, self.causal = int(P), causal

    def pool(self, x: Tensor) -> Tensor:
        t = x.shape[-2]
        n = -(-t // self.P)
        pad = n * self.P - t
        if pad:
            x = F.pad(x, (0, 0, 0, pad))
        sums = x.unflatten(-2, (n, self.P)).sum(-2)  # (B, n, d)
        counts = torch.full((n,), float(self.P), dtype=x.dtype, device=x.device)
        counts[-1] = self.P - pad
        return sums / counts[:, None]

    def broadcast(self, z: Tensor, t: int) -> Tensor:
        if self.causal:
            z = F.pad(z, (0, 0, 1, 0))[..., :-1, :]  # block b reads block b - 1; block 0 reads zeros
        return z.repeat_interleave(self.P, dim=-2)[..., :t, :]

    def forward(self, x: Tensor) -> Tensor:
        """``broadcast(pool(x))``: what each token reads of the block means (the identity-free slow path)."""
        return self.broadcast(self.pool(x), x.shape[-2])


class ZeroGate(nn.Module):
    """``out = fast + g * side`` with ``g in R^d`` initialised to 0: a gated side path that starts switched off
    (reusable for any additive side path). ``rms`` is ``sqrt(mean(g^2))``."""

    def __init__(self, d: int, trainable: bool = True):
        super().__init__()
        self.g = nn.Parameter(torch.zeros(d), requires_grad=trainable)

    def forward(self, fast: Tensor, side: Tensor) -> Tensor:
        return fast + self.g * side

    @property
    def rms(self) -> float:
        return float(self.g.detach().pow(2).mean().sqrt())


class FastSlowConfig(BaseModel):
    """The fast-slow LM's architecture, validated on construction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    vocab_size: int = Field(ge=2, le=10_000_000, description="token vocabulary")
    d_model: int = Field(64, ge=1, le=65536, description="residual width d")
    n_layers: int = Field(2, ge=1, le=256, description="layers (each: a fast block and, unless dense, a slow path)")
    n_heads: int = Field(4, ge=1, le=4096, description="heads of the fast and slow attention")
    mlp_width: int = Field(256, ge=0, le=1_000_000, description="fast MLP width (0: none)")
    pool_size: int = Field(
        4, ge=1, le=65536, description="block size P: the slow path runs once every P tokens (eps = 1/P)"
    )
    max_len: int = Field(128, ge=1, le=1_000_000, description="longest sequence (learned positions)")
    variant: Variant = Field("coupled", description="'coupled', 'frozen' (gate 0, slow weights frozen), 'dense'")
    attention_kernel: Literal["auto", "fused", "explicit"] = Field(
        "auto", description="attention kernel of every block (see ToyTransformerConfig; 'fused' is torch's SDPA)"
    )
    causal_pool: bool = Field(True, description="shift the slow path by one block (False leaks the future: a control)")


class FastSlowLayer(nn.Module):
    """One layer: a fast :class:`~theorylab.nn.toy_transformer.Block` and (unless dense) the gated slow path.
    Hook points: ``hook_slow`` (B, T, d), the broadcast slow output before the gate."""

    def __init__(self, fast: Block, cfg: FastSlowConfig):
        super().__init__()
        self.fast = fast
        block_cfg = fast.cfg
        self.slow_norm = self.slow_attn = self.gate = None
        if cfg.variant != "dense":
            self.slow_norm = make_norm("layer", cfg.d_model)
            self.slow_attn = MultiHeadAttention(block_cfg)  # causal over the pooled (block) tokens
            self.gate = ZeroGate(cfg.d_model, trainable=cfg.variant == "coupled")
        self.pool = BlockMeanPool(cfg.pool_size, causal=cfg.causal_pool)
        self.hook_slow = HookPoint()

    def forward(self, h: Tensor) -> Tensor:
        out = self.fast(h)
        if self.gate is None:
            return out
        z = self.slow_attn(self.pool.pool(self.slow_norm(h)))  # (B, ceil(T/P), d)
        return self.gate(out, self.hook_slow(self.pool.broadcast(z, h.shape[-2])))


class FastSlowLM(nn.Module):
    """Token embedding + learned positions, ``n_layers`` :class:`FastSlowLayer`, final LN, readout. See the module
    docstring. Input (B, T) token ids, output (B, T, vocab) logits."""

    def __init__(self, config: FastSlowConfig | None = None, *, seed: int | None = None, **kwargs):
        super().__init__()
        self.cfg = cfg = config if config is not None else FastSlowConfig(**kwargs)
        block_cfg = ToyTransformerConfig(
            d_model=cfg.d_model,
            n_layers=cfg.n_layers,
            n_heads=cfg.n_heads,
            mlp_width=cfg.mlp_width,
            causal=True,
            norm="layer",
            norm_position="pre",
            attention_kernel=cfg.attention_kernel,
        )
        with seeded(seed) if seed is not None else nullcontext():
            # Fast weights first, in one order for every variant: frozen and dense share their fast initialisation.
            self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
            self.pos = nn.Parameter(torch.randn(cfg.max_len, cfg.d_model) * 0.02)
            fast = [Block(block_cfg, layer) for layer in range(cfg.n_layers)]
            self.norm_final = nn.LayerNorm(cfg.d_model)
            self.readout = nn.Linear(cfg.d_model, cfg.vocab_size)
            self.layers = nn.ModuleList(FastSlowLayer(block, cfg) for block in fast)
        if cfg.variant == "frozen":
            for layer in self.layers:
                for p in (*layer.slow_norm.parameters(), *layer.slow_attn.parameters()):
                    p.requires_grad_(False)

    def forward(self, tokens: Tensor) -> Tensor:
        t = tokens.shape[-1]
        if t > self.cfg.max_len:
            raise ValueError(f"sequence length {t} exceeds max_len {self.cfg.max_len}")
        h = self.embed(tokens) + self.pos[:t]
        for layer in self.layers:
            h = layer(h)
        return self.readout(self.norm_final(h))

    def gate_rms(self) -> list[float]:
        """Gate RMS per layer (0.0 for every layer of a dense model)."""
        return [layer.gate.rms if layer.gate is not None else 0.0 for layer in self.layers]


def attention_score_flops(length: int, d_model: int) -> int:
    """Multiply-add FLOPs (2 per product) of one layer's attention scores ``Q K^T`` over ``length`` tokens, all heads
    together (head ranks summing to ``d_model``), without the causal saving: ``2 length^2 d``. The slow path's are
    ``attention_score_flops(T / P, d) = attention_score_flops(T, d) / P^2``."""
    return 2 * length * length * d_model
