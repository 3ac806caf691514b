"""A small, fully configurable transformer for synthetic-task studies.

One module serves every study that trains a toy transformer (attention-rank, ff-vs-attention,
geometric-memorization, truth-subspaces, ...). What sets it apart from library transformers:

- **head rank is its own argument.** Each head has ``Q_h, K_h in R^{r x d}`` with ``r = head_rank``
  chosen independently of ``d_model / n_heads`` (Amsel, Yehudai, Bruna, arXiv 2407.16153, Sec. 2),
  and its own value/output rank ``value_dim``;
- **hand-built weights**: :meth:`ToyTransformer.set_head` sets one head's ``Q, K, V, O`` so that
  the attention score is exactly ``x_i^T Q^T K x_j`` (the scale is compensated), which exact
  constructions in tests and studies rely on;
- **identity hook points** (as in TransformerLens): probes read or patch attention scores and
  patterns, the residual stream per layer and the MLP input/output through forward hooks on
  :class:`HookPoint` modules, without editing the model. :meth:`ToyTransformer.run_with_cache`
  collects them.

Shapes: ``B`` batch, ``T`` sequence length, ``d`` = ``d_model``, ``H`` heads, ``r`` head rank,
``v`` value dimension per head, ``m`` MLP width.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Callable, Iterator, Literal, Mapping

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor, nn

from theorylab.core.rng import seeded
from theorylab.nn.chunked_ff import chunked_ff


class ToyTransformerConfig(BaseModel):
    """Every architectural choice of :class:`ToyTransformer`, validated on construction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    d_model: int = Field(ge=1, le=65536, description="width of the residual stream d")
    n_layers: int = Field(1, ge=1, le=256, description="number of blocks")
    n_heads: int = Field(1, ge=1, le=65536, description="attention heads per layer H")
    head_rank: int | None = Field(
        None, ge=1, le=65536, description="rank r of each head's Q and K (None: d_model // n_heads)"
    )
    value_dim: int | None = Field(
        None, ge=1, le=65536, description="rank of each head's V and O (None: d_model // n_heads)"
    )
    qk: Literal["untied", "tied"] = Field("untied", description="'tied' uses one matrix for queries and keys (K = Q)")
    attention: Literal["softmax", "hard"] = Field(
        "softmax", description="'hard': one-hot on the arg-max key (not trainable through the pattern)"
    )
    attention_kernel: Literal["auto", "fused", "explicit"] = Field(
        "auto",
        description="softmax attention's kernel: 'fused' (torch's scaled_dot_product_attention: scores, "
        "weights and sums inside one kernel, accumulated in float32 for low-precision inputs, "
        "rounded once), 'explicit' (scores and weights as tensors in the model's dtype), 'auto' "
        "(fused on GPU, explicit on CPU)",
    )
    qk_scale: float | None = Field(None, gt=0, description="score scale (None: 1/sqrt(head_rank))")
    mlp_width: int = Field(0, ge=0, le=1_000_000, description="hidden width of the MLP; 0 means no MLP")
    mlp_layers: tuple[int, ...] | None = Field(
        None, description="0-based layers that have an MLP (None: every layer, when mlp_width > 0)"
    )
    activation: Literal["gelu", "relu"] = Field("gelu", description="MLP non-linearity")
    ff_chunk: int = Field(
        0,
        ge=0,
        le=1 << 24,
        description="tokens per chunk of the cache-friendly MLP path (nn.chunked_ff: forward by chunks, backward "
        "recomputing each chunk's hidden; equal to the plain path to fp32 rounding); 0: the plain path. Used only "
        "when no MLP hook is active and autocast is off",
    )
    norm: Literal["layer", "rms", "sphere", "none"] = Field(
        "layer", description="'sphere': x/|x| times a learned scale"
    )
    norm_position: Literal["pre", "post"] = Field(
        "pre", description="norm before each sub-block (pre) or after the residual sum (post)"
    )
    final_norm: bool = Field(False, description="a norm after the last block (usual with pre-norm)")
    final_norm_kind: Literal["layer", "rms", "sphere", "none"] | None = Field(
        None,
        description="kind of the final norm apart from the blocks' 'norm' (None: the same as 'norm'); e.g. "
        "norm='none' with final_norm_kind='layer' is a final LayerNorm only (Ravfogel et al., "
        "arXiv 2510.15804)",
    )
    residual: bool = Field(True, description="residual connections around attention and MLP")
    residual_scale: float = Field(
        1.0, gt=0, le=1e6, description="α in norm(α·x + G(x)) (post-norm; DeepNorm: (2N)^(1/4)); pre-norm needs 1"
    )
    init: Literal["default", "xavier", "normal"] = Field(
        "default",
        description="'xavier': xavier-normal Q, K (gain "
        "1) and V, O, MLP (gain init_gain), zero biases (DeepNet); 'normal': every weight i.i.d. N(0, init_std^2), "
        "zero biases (small-initialisation regime)",
    )
    init_std: float | None = Field(
        None,
        gt=0,
        le=1e3,
        description="std ε of init='normal' (e.g. 0.05 for the small-init regime of Chen et al., arXiv 2605.01199)",
    )
    output_projection: bool = Field(
        True,
        description="False: no learned W_O; the heads' values (n_heads * value_dim "
        "= d_model) go straight into the stream (W_O a fixed identity "
        "buffer)",
    )
    init_gain: float = Field(
        1.0, gt=0, le=1e6, description="xavier gain β of V, O and the MLP weights (DeepNorm: (8N)^(-1/4))"
    )
    causal: bool = Field(False, description="mask future positions")
    positional: Literal["none", "learned", "sinusoidal", "rotary"] = Field("none", description="positional encoding")
    max_len: int = Field(1024, ge=1, le=1_000_000, description="longest sequence for learned/sinusoidal positions")
    vocab_size: int | None = Field(
        None, ge=2, le=10_000_000, description="token inputs and logits over this vocabulary (None: vector inputs)"
    )
    d_input: int | None = Field(
        None, ge=1, le=65536, description="vector-input size when != d_model (a linear embedding); None: d_model"
    )
    d_output: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="linear readout size (None: vocab_size for tokens, the residual stream otherwise)",
    )
    freeze_embedding: bool = Field(False, description="keep the token embedding at its initial value")
    freeze_readout: bool = Field(False, description="keep the readout (unembedding) at its initial value")
    freeze: tuple[str, ...] = Field(
        (),
        description="parameter-name prefixes kept at their initial value "
        "(requires_grad False), e.g. ('pos', 'blocks.0.attn.W_Q')",
    )
    embedding_std: float | None = Field(
        None,
        gt=0,
        description="init std of the token embedding and readout weights, e.g. d**-0.5 for the N(0, 1/d) "
        "random embeddings of Bietti et al. (None: torch's defaults)",
    )
    bias: bool = Field(True, description="biases in attention, MLP and embeddings")

    @model_validator(mode="after")
    def _consistent(self) -> "ToyTransformerConfig":
        if self.head_rank is None and self.d_model % self.n_heads:
            raise ValueError(
                f"'head_rank' must be given when n_heads ({self.n_heads}) does not divide d_model ({self.d_model})"
            )
        if self.value_dim is None and self.d_model % self.n_heads:
            raise ValueError(
                f"'value_dim' must be given when n_heads ({self.n_heads}) does not divide d_model ({self.d_model})"
            )
        if self.positional == "rotary" and self.rank % 2:
            raise ValueError(f"rotary positions need an even 'head_rank'; got {self.rank}")
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"sinusoidal positions need an even 'd_model'; got {self.d_model}")
        if self.vocab_size is not None and self.d_input is not None:
            raise ValueError("'d_input' is for vector inputs; leave it unset when 'vocab_size' is given")
        if self.freeze_embedding and self.vocab_size is None and self.d_input is None:
            raise ValueError("'freeze_embedding' needs an embedding: set 'vocab_size' or 'd_input'")
        if self.mlp_layers is not None:
            bad = [i for i in self.mlp_layers if not 0 <= i < self.n_layers]
            if bad:
                raise ValueError(f"'mlp_layers' entries must lie in [0, {self.n_layers - 1}]; got {bad}")
            if self.mlp_width == 0 and self.mlp_layers:
                raise ValueError("'mlp_layers' lists layers but 'mlp_width' is 0")
        if self.residual_scale != 1.0 and self.norm_position != "post":
            raise ValueError(
                f"'residual_scale' (α = {self.residual_scale}) is DeepNorm's post-norm residual weight; "
                f"set norm_position='post'"
            )
        if (self.init == "normal") != (self.init_std is not None):
            raise ValueError("'init_std' is the std of init='normal': set both or neither")
        if self.init == "normal" and self.embedding_std is not None:
            raise ValueError("init='normal' sets the embedding and readout too: leave 'embedding_std' unset")
        if not self.output_projection and self.n_heads * self.v_dim != self.d_model:
            raise ValueError(
                f"output_projection=False needs n_heads * value_dim == d_model; got {self.n_heads} * "
                f"{self.v_dim} != {self.d_model}"
            )
        if self.init_gain != 1.0 and self.init != "xavier":
            raise ValueError("'init_gain' scales the xavier init: set init='xavier'")
        if self.freeze_readout and self.d_output is None and self.vocab_size is None:
            raise ValueError("'freeze_readout' needs a readout: set 'vocab_size' or 'd_output'")
        if self.final_norm_kind is not None and not self.final_norm:
            raise ValueError("'final_norm_kind' sets the final norm's kind: set final_norm=True too")
        if any(not p for p in self.freeze):
            raise ValueError("'freeze' entries must be non-empty parameter-name prefixes")
        return self

    @property
    def final_kind(self) -> str:
        """The final norm's kind ('none' when there is no final norm)."""
        if not self.final_norm:
            return "none"
        return self.final_norm_kind if self.final_norm_kind is not None else self.norm

    @property
    def rank(self) -> int:
        return self.head_rank if self.head_rank is not None else self.d_model // self.n_heads

    @property
    def v_dim(self) -> int:
        return self.value_dim if self.value_dim is not None else self.d_model // self.n_heads

    def has_mlp(self, layer: int) -> bool:
        return self.mlp_width > 0 and (self.mlp_layers is None or layer in self.mlp_layers)

    @property
    def scale(self) -> float:
        return self.qk_scale if self.qk_scale is not None else 1.0 / math.sqrt(self.rank)


class HookPoint(nn.Module):
    """Identity module; forward hooks registered on it read (or replace) the tensor passing through."""

    def forward(self, x: Tensor) -> Tensor:
        return x

    @property
    def active(self) -> bool:
        return bool(self._forward_hooks)


class SphereNorm(nn.Module):
    """``x / |x|`` times a learned per-coordinate scale (initialised to 1): outputs on the unit sphere."""

    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        return self.weight * x / (x.norm(dim=-1, keepdim=True) + self.eps)


def make_norm(kind: str, d: int) -> nn.Module:
    if kind == "layer":
        return nn.LayerNorm(d)
    if kind == "rms":
        return nn.RMSNorm(d)
    if kind == "sphere":
        return SphereNorm(d)
    return nn.Identity()


def sinusoidal_positions(length: int, d: int) -> Tensor:
    """Vaswani et al. (2017) Sec. 3.5: ``PE[t, 2i] = sin(t / 10000^(2i/d))``, ``PE[t, 2i+1] = cos(...)``. (length, d)"""
    position = torch.arange(length, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float64) / d)
    table = torch.zeros(length, d, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq)
    return table.float()


def apply_rotary(x: Tensor, base: float = 10000.0) -> Tensor:
    """Rotary position embedding (Su et al. 2021, Eq. 34) on the last axis of ``x``: (..., T, r), r even."""
    t, r = x.shape[-2], x.shape[-1]
    inv_freq = base ** (-torch.arange(0, r, 2, device=x.device, dtype=x.dtype) / r)  # (r/2,)
    angle = torch.arange(t, device=x.device, dtype=x.dtype)[:, None] * inv_freq  # (T, r/2)
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (..., T, r/2, 2)
    return rotated.flatten(-2)


def _is_vmapped(x: Tensor) -> bool:
    return bool(torch._C._functorch.is_batchedtensor(x))


def softmax_rows(scores: Tensor) -> Tensor:
    """Softmax over the last axis. On CPU with short rows, ``exp / sum`` is several times faster
    than the fused kernel (rows shorter than one AVX-512 vector take its slow path); elsewhere, the fused kernel."""
    if scores.is_cuda or scores.shape[-1] >= 16:
        return scores.softmax(dim=-1)
    e = (scores - scores.detach().amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


class MultiHeadAttention(nn.Module):
    """``out_i = sum_h O_h sum_j a^h_ij V_h x_j`` with ``a^h_ij = softmax_j(s * (Q_h x_i)^T (K_h x_j))``.

    Parameters are kept per head: ``W_Q, W_K: (H, r, d)``, ``W_V: (H, v, d)``, ``W_O: (H, d, v)``,
    so ``head_rank`` (r) and ``value_dim`` (v) are free of ``d / H``. Usable on its own.
    Hook points: ``hook_scores`` and ``hook_pattern`` (B, H, T, T), ``hook_z`` (B, H, T, v),
    ``hook_q`` and ``hook_k`` (B, H, T, r): the queries and keys that meet in the scores (after RoPE).
    """

    def __init__(self, cfg: ToyTransformerConfig):
        super().__init__()
        self.cfg = cfg
        h, r, v, d = cfg.n_heads, cfg.rank, cfg.v_dim, cfg.d_model
        self.W_Q = nn.Parameter(torch.randn(h, r, d) / math.sqrt(d))
        self.W_K = None if cfg.qk == "tied" else nn.Parameter(torch.randn(h, r, d) / math.sqrt(d))
        self.W_V = nn.Parameter(torch.randn(h, v, d) / math.sqrt(d))
        if cfg.output_projection:
            self.W_O = nn.Parameter(torch.randn(h, d, v) / math.sqrt(h * v))
        else:
            # Head h's value lands in coordinates h*v .. (h+1)*v of the stream: a fixed block identity, not trained.
            self.register_buffer("W_O", torch.eye(d).reshape(d, h, v).permute(1, 0, 2).contiguous())
        if cfg.bias:
            self.b_Q = nn.Parameter(torch.zeros(h, r))
            self.b_K = None if cfg.qk == "tied" else nn.Parameter(torch.zeros(h, r))
            self.b_V = nn.Parameter(torch.zeros(h, v))
            self.b_O = nn.Parameter(torch.zeros(d))
        else:
            self.b_Q = self.b_K = self.b_V = self.b_O = None
        self.hook_scores = HookPoint()
        self.hook_pattern = HookPoint()
        self.hook_z = HookPoint()
        self.hook_q = HookPoint()
        self.hook_k = HookPoint()

    def _project(self, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        out = torch.einsum("btd,hrd->bhtr", x, weight)  # (B, H, T, r)
        return out if bias is None else out + bias[:, None, :]

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, T, d) -> (B, T, d)."""
        cfg = self.cfg
        q = self._project(x, self.W_Q, self.b_Q)
        k = q if cfg.qk == "tied" else self._project(x, self.W_K, self.b_K)
        v = self._project(x, self.W_V, self.b_V)  # (B, H, T, v)
        if cfg.positional == "rotary":
            q, k = apply_rotary(q), apply_rotary(k)
        q, k = self.hook_q(q), self.hook_k(k)
        probing = self.hook_scores.active or self.hook_pattern.active
        fused = cfg.attention_kernel == "fused" or (cfg.attention_kernel == "auto" and q.is_cuda)
        if cfg.attention == "softmax" and not probing and fused and not _is_vmapped(q):
            # Fused kernel on GPU when nobody reads the pattern; the same numbers as the explicit path up to rounding
            # (in bfloat16 not the same bits: the explicit path rounds every weight to bfloat16, the fused one only
            # the output). On CPU the explicit path is faster at toy sizes, and vmap has no batching rule for it.
            z = F.scaled_dot_product_attention(q, k, v, is_causal=cfg.causal, scale=cfg.scale)
        else:
            scores = self.hook_scores(cfg.scale * q @ k.transpose(-1, -2))  # (B, H, T, T)
            if cfg.causal:
                t = scores.shape[-1]
                future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
                scores = scores.masked_fill(future, float("-inf"))
            if cfg.attention == "softmax":
                z = self.hook_pattern(softmax_rows(scores)) @ v  # (B, H, T, v)
            elif self.hook_pattern.active:
                pattern = F.one_hot(scores.argmax(dim=-1), scores.shape[-1]).to(scores.dtype)
                z = self.hook_pattern(pattern) @ v
            else:
                # Hard-max without an observer: gather the chosen values instead of a one-hot matmul.
                top = scores.argmax(dim=-1)  # (B, H, T)
                z = torch.gather(v, 2, top[..., None].expand(*top.shape, v.shape[-1]))
        z = self.hook_z(z)
        out = torch.einsum("bhtv,hdv->btd", z, self.W_O)  # (B, T, d)
        return out if self.b_O is None else out + self.b_O

    # --- hand-built weights -------------------------------------------------------------------
    @torch.no_grad()
    def set_head(
        self,
        head: int,
        q: Tensor | None = None,
        k: Tensor | None = None,
        v: Tensor | None = None,
        o: Tensor | None = None,
    ) -> None:
        """Set head ``head`` so that its score is exactly ``x_i^T q^T k x_j`` and its output ``o v x_j``.

        Shapes: ``q, k: (r, d)``, ``v: (value_dim, d)``, ``o: (d, value_dim)``. The score scale is
        compensated (``W_Q = q / scale``) and the head's biases are zeroed, so constructions need
        not know either. With tied Q/K, ``k`` must be omitted (the score is ``x^T q^T q x``).
        """
        if not 0 <= head < self.cfg.n_heads:
            raise ValueError(f"head {head} out of range: the layer has {self.cfg.n_heads} heads")
        if q is not None:
            self.W_Q[head] = torch.as_tensor(q, dtype=self.W_Q.dtype) / self.cfg.scale
            if self.b_Q is not None:
                self.b_Q[head] = 0
        if k is not None:
            if self.W_K is None:
                raise ValueError("tied Q/K: set q only; the keys use the same matrix")
            self.W_K[head] = torch.as_tensor(k, dtype=self.W_K.dtype)
            if self.b_K is not None:
                self.b_K[head] = 0
        if v is not None:
            self.W_V[head] = torch.as_tensor(v, dtype=self.W_V.dtype)
            if self.b_V is not None:
                self.b_V[head] = 0
        if o is not None:
            if not self.cfg.output_projection:
                raise ValueError("output_projection=False: W_O is a fixed identity; there is no 'o' to set")
            self.W_O[head] = torch.as_tensor(o, dtype=self.W_O.dtype)

    def bilinear(self, head: int) -> Tensor:
        """The effective score matrix ``s * W_Q^T W_K`` of one head: (d, d)."""
        w_k = self.W_Q if self.W_K is None else self.W_K
        return self.cfg.scale * self.W_Q[head].T @ w_k[head]

    def ov(self, head: int) -> Tensor:
        """The effective value-output map ``W_O W_V`` of one head: (d, d)."""
        return self.W_O[head] @ self.W_V[head]


class MLP(nn.Module):
    """``W_2 act(W_1 x + b_1) + b_2``; hook points ``hook_pre`` and ``hook_post`` (B, T, m)."""

    def __init__(self, cfg: ToyTransformerConfig):
        super().__init__()
        self.up = nn.Linear(cfg.d_model, cfg.mlp_width, bias=cfg.bias)
        self.down = nn.Linear(cfg.mlp_width, cfg.d_model, bias=cfg.bias)
        self.act = nn.GELU() if cfg.activation == "gelu" else nn.ReLU()
        self.activation, self.ff_chunk = cfg.activation, cfg.ff_chunk
        self.hook_pre = HookPoint()
        self.hook_post = HookPoint()

    def forward(self, x: Tensor) -> Tensor:
        if self.ff_chunk and not (self.hook_pre.active or self.hook_post.active or torch.is_autocast_enabled()):
            # the hidden (tokens x width) stays in cache; the hooks read it, so they take the plain path
            flat = x.reshape(-1, x.shape[-1])  # (B*T, d): every token of the batch is chunked, not only T
            out = chunked_ff(
                flat, self.up.weight, self.up.bias, self.down.weight, self.down.bias, self.activation, self.ff_chunk
            )
            return out.reshape(*x.shape[:-1], out.shape[-1])
        return self.down(self.hook_post(self.act(self.hook_pre(self.up(x)))))


class Block(nn.Module):
    """Attention then MLP, each with its norm (pre or post) and residual connection.

    Hook points (B, T, d): ``hook_resid_pre``, ``hook_attn_out``, ``hook_resid_mid``,
    ``hook_mlp_in``, ``hook_mlp_out``, ``hook_resid_post``.
    """

    def __init__(self, cfg: ToyTransformerConfig, layer: int = 0):
        super().__init__()
        self.cfg = cfg
        self.attn = MultiHeadAttention(cfg)
        self.norm_attn = make_norm(cfg.norm, cfg.d_model)
        self.mlp = MLP(cfg) if cfg.has_mlp(layer) else None
        self.norm_mlp = make_norm(cfg.norm, cfg.d_model) if self.mlp is not None else None
        for name in ("resid_pre", "attn_out", "resid_mid", "mlp_in", "mlp_out", "resid_post"):
            setattr(self, f"hook_{name}", HookPoint())

    def _sub(
        self, x: Tensor, layer: nn.Module, norm: nn.Module, hook_in: HookPoint | None, hook_out: HookPoint
    ) -> Tensor:
        if self.cfg.norm_position == "pre":
            inner = norm(x)
            inner = hook_in(inner) if hook_in is not None else inner
            out = hook_out(layer(inner))
            return x + out if self.cfg.residual else out
        inner = hook_in(x) if hook_in is not None else x
        out = hook_out(layer(inner))
        return norm(self.cfg.residual_scale * x + out if self.cfg.residual else out)

    def forward(self, x: Tensor) -> Tensor:
        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(self._sub(x, self.attn, self.norm_attn, None, self.hook_attn_out))
        if self.mlp is not None:
            x = self._sub(x, self.mlp, self.norm_mlp, self.hook_mlp_in, self.hook_mlp_out)
        return self.hook_resid_post(x)


class ToyTransformer(nn.Module):
    """Embedding, ``n_layers`` blocks, optional final norm and readout. See the module docstring.

    Inputs: token ids ``(B, T)`` when ``vocab_size`` is set, else vectors ``(B, T, d_input)``.
    Output: ``(B, T, d_output)``; with vector inputs and no ``d_output`` the residual stream
    ``(B, T, d_model)`` itself (so a one-layer attention-only model is exactly the attention map).

    Build from keyword arguments or a :class:`ToyTransformerConfig`::

        model = ToyTransformer(d_model=16, n_heads=4, head_rank=16, mlp_width=0, norm="none")
    """

    def __init__(self, config: ToyTransformerConfig | None = None, *, seed: int | None = None, **kwargs):
        super().__init__()
        if config is None:
            config = ToyTransformerConfig(**kwargs)
        elif kwargs:
            config = ToyTransformerConfig(**{**config.model_dump(), **kwargs})
        self.cfg = config
        if seed is None:
            self._build()
        else:
            # Initialise from ``seed`` without touching (or depending on) the global RNG.
            with seeded(seed):
                self._build()

    def _build(self) -> None:
        cfg = self.cfg
        d = cfg.d_model
        if cfg.vocab_size is not None:
            self.embed: nn.Module = nn.Embedding(cfg.vocab_size, d)
        elif cfg.d_input is not None:
            self.embed = nn.Linear(cfg.d_input, d, bias=cfg.bias)
        else:
            self.embed = nn.Identity()
        if cfg.embedding_std is not None and cfg.vocab_size is not None:
            nn.init.normal_(self.embed.weight, std=cfg.embedding_std)
        if cfg.freeze_embedding:
            for p in self.embed.parameters():
                p.requires_grad_(False)
        if cfg.positional == "learned":
            self.pos = nn.Parameter(torch.randn(cfg.max_len, d) * 0.02)
        elif cfg.positional == "sinusoidal":
            self.register_buffer("pos", sinusoidal_positions(cfg.max_len, d), persistent=False)
        else:
            self.pos = None
        self.blocks = nn.ModuleList(Block(cfg, layer) for layer in range(cfg.n_layers))
        self.norm_final = make_norm(cfg.final_kind, d)
        out = cfg.d_output if cfg.d_output is not None else cfg.vocab_size
        self.readout = nn.Linear(d, out, bias=cfg.bias) if out is not None else nn.Identity()
        if out is not None and cfg.embedding_std is not None:
            nn.init.normal_(self.readout.weight, std=cfg.embedding_std)
            if self.readout.bias is not None:
                nn.init.zeros_(self.readout.bias)
        if cfg.freeze_readout:
            for p in self.readout.parameters():
                p.requires_grad_(False)
        self.hook_embed = HookPoint()
        self.hook_final = HookPoint()
        if cfg.init == "xavier":
            self._xavier()
        elif cfg.init == "normal":
            self._normal(cfg.init_std)
        if cfg.freeze:
            # A prefix matches a whole dotted name component: 'blocks.0' freezes block 0, never block 0x.
            def hit(name: str, prefix: str) -> bool:
                return name == prefix or name.startswith(prefix.rstrip(".") + ".")

            names = [name for name, _ in self.named_parameters()]
            unmatched = [q for q in cfg.freeze if not any(hit(n, q) for n in names)]
            if unmatched:
                raise ValueError(f"'freeze' prefixes {unmatched} match no parameter; parameters: {names}")
            for name, p in self.named_parameters():
                if any(hit(name, q) for q in cfg.freeze):
                    p.requires_grad_(False)

    @torch.no_grad()
    def _normal(self, std: float) -> None:
        """Small-ε init (Chen, Lin, Xu & Luo, arXiv 2605.01199): every weight matrix (embedding, learned positions,
        Q, K, V, O, MLP, readout) i.i.d. N(0, std²), every bias 0; norm scales keep their 1 and a fixed W_O (a
        buffer) its identity."""
        norms = {
            id(p)
            for m in self.modules()
            if isinstance(m, (nn.LayerNorm, nn.RMSNorm, SphereNorm))
            for p in m.parameters()
        }
        for name, p in self.named_parameters():
            if id(p) in norms:
                continue
            if name.split(".")[-1].startswith("b_") or name.endswith("bias"):
                p.zero_()
            else:
                p.normal_(0.0, std)

    @torch.no_grad()
    def _xavier(self) -> None:
        """DeepNet's init (Wang et al. 2022): xavier-normal, gain 1 on Q and K and ``init_gain`` (β) on
        V, O and both MLP layers; every bias 0. A head's (H, r, d) block counts as one (H·r) x d matrix."""
        beta = self.cfg.init_gain

        def xavier(w: Tensor, fan_in: int, fan_out: int, gain: float) -> None:
            w.normal_(0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))

        for block in self.blocks:
            a = block.attn
            h, r, d = a.W_Q.shape
            v = a.W_V.shape[1]
            xavier(a.W_Q, d, h * r, 1.0)
            if a.W_K is not None:
                xavier(a.W_K, d, h * r, 1.0)
            xavier(a.W_V, d, h * v, beta)
            if isinstance(a.W_O, nn.Parameter):
                xavier(a.W_O, h * v, d, beta)
            for b in (a.b_Q, a.b_K, a.b_V, a.b_O):
                if b is not None:
                    b.zero_()
            if block.mlp is not None:
                for lin in (block.mlp.up, block.mlp.down):
                    xavier(lin.weight, lin.in_features, lin.out_features, beta)
                    if lin.bias is not None:
                        lin.bias.zero_()

    def forward(self, x: Tensor) -> Tensor:
        h = self.embed(x)  # (B, T, d)
        if self.pos is not None:
            t = h.shape[-2]
            if t > self.cfg.max_len:
                raise ValueError(f"sequence length {t} exceeds max_len {self.cfg.max_len}")
            h = h + self.pos[:t]
        h = self.hook_embed(h)
        for block in self.blocks:
            h = block(h)
        return self.readout(self.hook_final(self.norm_final(h)))

    # --- hand-built weights -------------------------------------------------------------------
    def set_head(self, layer: int, head: int, **weights: Tensor) -> None:
        """Set ``q``, ``k``, ``v``, ``o`` of one head exactly; see :meth:`MultiHeadAttention.set_head`."""
        self.blocks[layer].attn.set_head(head, **weights)

    # --- hooks --------------------------------------------------------------------------------
    def hook_names(self) -> list[str]:
        """Every hook point's name, e.g. ``blocks.0.attn.hook_pattern``."""
        return [name for name, module in self.named_modules() if isinstance(module, HookPoint)]

    @contextmanager
    def hooks(self, fns: Mapping[str, Callable[[Tensor], Tensor | None]]) -> Iterator[None]:
        """Run ``fns[name](tensor)`` at each named hook point inside the block; a returned tensor
        replaces the activation (patching). Hooks are removed on exit, even after an error."""
        modules = dict(self.named_modules())
        unknown = [name for name in fns if not isinstance(modules.get(name), HookPoint)]
        if unknown:
            raise KeyError(f"unknown hook point(s) {unknown}; see ToyTransformer.hook_names()")
        handles = [modules[name].register_forward_hook(lambda _m, _i, out, fn=fn: fn(out)) for name, fn in fns.items()]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def run_with_cache(
        self, x: Tensor, names: list[str] | Callable[[str], bool] | None = None
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Forward pass that also returns the activations at the chosen hook points (all by default)."""
        every = self.hook_names()
        chosen = every if names is None else [n for n in every if names(n)] if callable(names) else list(names)
        cache: dict[str, Tensor] = {}

        def keeper(name: str) -> Callable[[Tensor], None]:
            def keep(t: Tensor) -> None:
                cache[name] = t.detach()

            return keep

        with self.hooks({name: keeper(name) for name in chosen}):
            out = self(x)
        return out, cache


def deepnorm(n_layers: int, exponent: float = 0.25) -> dict:
    """DeepNorm for an N-layer decoder (Wang et al., "DeepNet", 2022): post-norm with residual weight
    α = (2N)^(1/4) and xavier gain β = (8N)^(−exponent) on V, O and the MLP (exponent 1/4 is DeepNet's)."""
    return dict(
        n_layers=n_layers,
        norm_position="post",
        residual_scale=(2 * n_layers) ** 0.25,
        init="xavier",
        init_gain=(8 * n_layers) ** (-exponent),
    )


def attention_only(
    d: int,
    n_heads: int,
    head_rank: int,
    *,
    value_dim: int | None = None,
    attention: Literal["softmax", "hard"] = "softmax",
    qk: Literal["untied", "tied"] = "untied",
    qk_scale: float | None = None,
    seed: int | None = None,
) -> ToyTransformer:
    """One attention layer and nothing else (no MLP, norm, residual or bias):
    ``f(X)_i = sum_h O_h sum_j a^h_ij V_h x_j`` with full-rank values by default (``value_dim = d``),
    the single-layer model of Amsel et al. (arXiv 2407.16153, Eq. 1)."""
    return ToyTransformer(
        d_model=d,
        n_layers=1,
        n_heads=n_heads,
        head_rank=head_rank,
        value_dim=value_dim or d,
        qk=qk,
        attention=attention,
        qk_scale=qk_scale,
        mlp_width=0,
        norm="none",
        residual=False,
        bias=False,
        seed=seed,
    )


def frozen_attention_layer(
    d_model: int, n_heads: int, seed: int, dtype: torch.dtype = torch.float64
) -> MultiHeadAttention:
    """One :class:`MultiHeadAttention` (no biases) at its random init, drawn under :func:`seeded` (the global
    RNG is neither read nor moved), cast to ``dtype`` and frozen: a fixed random map to probe, e.g. the
    local gain of Emadi (arXiv 2602.18849)."""
    with seeded(seed):
        attn = MultiHeadAttention(ToyTransformerConfig(d_model=d_model, n_heads=n_heads, bias=False)).to(dtype)
    for p in attn.parameters():
        p.requires_grad_(False)
    return attn
