"""Extraction of every attention head's query-key operator ``M`` from a model.

:func:`head_operators` reads a :class:`~theorylab.nn.ToyTransformer` or a Hugging Face GPT-2, BERT or
Llama-family model and returns one :class:`~theorylab.theory.bilinear.HeadOperator` per head, in the
convention of :mod:`theorylab.theory.bilinear` (``s_ij = x_i M x_jᵀ`` for row vectors, the 1/√d_h scale
included; GPT-2's Conv1D weights are stored (in, out), ``nn.Linear``'s (out, in)). The geometry of
the operators (symmetry, directionality, inertia, rotation content) is :mod:`theorylab.theory.bilinear`.
"""

from __future__ import annotations

import math

from torch import nn

from theorylab.theory.bilinear import HeadOperator


def head_operators(model: nn.Module) -> list[HeadOperator]:
    """Every head's M, from a :class:`~theorylab.nn.ToyTransformer` or a Hugging Face GPT-2, BERT or Llama-family model."""
    from theorylab.nn.toy_transformer import ToyTransformer

    if isinstance(model, ToyTransformer):
        rope = model.cfg.positional == "rotary"
        ops = []
        for i, block in enumerate(model.blocks):
            a = block.attn
            w_k = a.W_Q if a.W_K is None else a.W_K
            for h in range(model.cfg.n_heads):
                term = None if a.b_Q is None else (model.cfg.scale * w_k[h].T @ a.b_Q[h]).detach()
                ops.append(HeadOperator(i, h, a.bilinear(h).detach(), h, rope, key_term=term, query=(model.cfg.scale * a.W_Q[h]).detach(), key=w_k[h].detach()))
        return ops
    kind = getattr(getattr(model, "config", None), "model_type", None)
    if kind == "gpt2":
        return _gpt2(model)
    if kind in ("bert", "roberta"):
        return _bert(model)
    if kind in ("llama", "mistral", "qwen2", "gemma", "gemma2", "gemma3_text", "mixtral"):
        return _llama_like(model)
    raise ValueError(f"no query/key layout known for model_type {kind!r}")


def _gpt2(model) -> list[HeadOperator]:
    cfg = model.config
    d, H = cfg.n_embd, cfg.n_head
    dh = d // H
    out = []
    blocks = model.transformer.h if hasattr(model, "transformer") else model.h
    for i, block in enumerate(blocks):
        W = block.attn.c_attn.weight.detach()  # Conv1D (in, 3 d): q = x W[:, :d] + b[:d]
        b = block.attn.c_attn.bias.detach()
        Wq, Wk = W[:, :d], W[:, d:2 * d]
        for h in range(H):
            q, k = Wq[:, h * dh:(h + 1) * dh], Wk[:, h * dh:(h + 1) * dh]
            out.append(HeadOperator(i, h, q @ k.T / math.sqrt(dh), h, key_term=k @ b[h * dh:(h + 1) * dh] / math.sqrt(dh), query=q.T / math.sqrt(dh), key=k.T))
    return out


def _bert(model) -> list[HeadOperator]:
    cfg = model.config
    H = cfg.num_attention_heads
    dh = cfg.hidden_size // H
    encoder = model.bert.encoder if hasattr(model, "bert") else model.encoder
    out = []
    for i, layer in enumerate(encoder.layer):
        sa = layer.attention.self
        Wq, Wk = sa.query.weight.detach(), sa.key.weight.detach()  # (out, in)
        bq = None if sa.query.bias is None else sa.query.bias.detach()
        for h in range(H):
            q, k = Wq[h * dh:(h + 1) * dh], Wk[h * dh:(h + 1) * dh]
            term = None if bq is None else k.T @ bq[h * dh:(h + 1) * dh] / math.sqrt(dh)
            out.append(HeadOperator(i, h, q.T @ k / math.sqrt(dh), h, key_term=term, query=q / math.sqrt(dh), key=k))
    return out


def _llama_like(model) -> list[HeadOperator]:
    cfg = model.config
    H = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", H) or H
    dh = getattr(cfg, "head_dim", None) or cfg.hidden_size // H
    scale = getattr(cfg, "query_pre_attn_scalar", None)
    scale = (scale ** -0.5) if scale else dh ** -0.5
    inner = getattr(model, "model", model)
    out = []
    for i, layer in enumerate(inner.layers):
        sa = layer.self_attn
        Wq, Wk = sa.q_proj.weight.detach(), sa.k_proj.weight.detach()  # (out, in)
        bq = None if sa.q_proj.bias is None else sa.q_proj.bias.detach()  # Qwen2 has one
        for h in range(H):
            g = h // (H // kv)  # the key head this query head shares
            q, k = Wq[h * dh:(h + 1) * dh], Wk[g * dh:(g + 1) * dh]
            term = None if bq is None else scale * k.T @ bq[h * dh:(h + 1) * dh]
            out.append(HeadOperator(i, h, scale * q.T @ k, g, rope=True, key_term=term, query=scale * q, key=k))
    return out
