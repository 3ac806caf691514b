"""Extraction of every attention head's query-key operator ``M`` from a model.

:func:`head_operators` reads a :class:`~theorylab.nn.ToyTransformer` or a Hugging Face GPT-2, BERT or
Llama-family model and returns one :class:`~theorylab.theory.bilinear.HeadOperator` per head, in the
convention of :mod:`theorylab.theory.bilinear` (``s_ij = x_i M x_jᵀ`` for row vectors, the 1/√d_h scale
included; GPT-2's Conv1D weights are stored (in, out), ``nn.Linear``'s (out, in)). The geometry of
the operators (symmetry, directionality, inertia, rotation content) is :mod:`theorylab.theory.bilinear`.

Measurements built on it (bilinear-attention-operator, arXiv 2607.06621): :func:`head_operator_rows`
(every head's geometry and the residuals of its exact identities, with their rounding tolerances),
:func:`random_init_head_rows` (the random-init null and the tied-QK case) and :func:`convention_check`
(extracted logits against the modules' own, on ToyTransformer, GPT-2 and BERT).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Literal, Mapping, Sequence

import torch
from torch import Tensor, nn

from theorylab.probes.spectra import effective_rank, stable_rank
from theorylab.theory.bilinear import (
    HeadOperator,
    conjugate_pair_gap,
    directionality_condition,
    directionality_score,
    inertia,
    rotation_content,
    skew_quadratic_residual,
    split_sym_skew,
    symmetry_score,
)

if TYPE_CHECKING:
    import pandas as pd

EPS = torch.finfo(torch.float64).eps


def head_operators(model: nn.Module) -> list[HeadOperator]:
    """Every head's M, from a :class:`~theorylab.nn.ToyTransformer` or a Hugging Face GPT-2, BERT or Llama-family
    model."""
    from theorylab.nn.toy_transformer import ToyTransformer

    if isinstance(model, ToyTransformer):
        rope = model.cfg.positional == "rotary"
        ops = []
        for i, block in enumerate(model.blocks):
            a = block.attn
            w_k = a.W_Q if a.W_K is None else a.W_K
            for h in range(model.cfg.n_heads):
                term = None if a.b_Q is None else (model.cfg.scale * w_k[h].T @ a.b_Q[h]).detach()
                ops.append(
                    HeadOperator(
                        i,
                        h,
                        a.bilinear(h).detach(),
                        h,
                        rope,
                        key_term=term,
                        query=(model.cfg.scale * a.W_Q[h]).detach(),
                        key=w_k[h].detach(),
                    )
                )
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
        Wq, Wk = W[:, :d], W[:, d : 2 * d]
        for h in range(H):
            q, k = Wq[:, h * dh : (h + 1) * dh], Wk[:, h * dh : (h + 1) * dh]
            out.append(
                HeadOperator(
                    i,
                    h,
                    q @ k.T / math.sqrt(dh),
                    h,
                    key_term=k @ b[h * dh : (h + 1) * dh] / math.sqrt(dh),
                    query=q.T / math.sqrt(dh),
                    key=k.T,
                )
            )
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
            q, k = Wq[h * dh : (h + 1) * dh], Wk[h * dh : (h + 1) * dh]
            term = None if bq is None else k.T @ bq[h * dh : (h + 1) * dh] / math.sqrt(dh)
            out.append(HeadOperator(i, h, q.T @ k / math.sqrt(dh), h, key_term=term, query=q / math.sqrt(dh), key=k))
    return out


def _llama_like(model) -> list[HeadOperator]:
    cfg = model.config
    H = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", H) or H
    dh = getattr(cfg, "head_dim", None) or cfg.hidden_size // H
    scale = getattr(cfg, "query_pre_attn_scalar", None)
    scale = (scale**-0.5) if scale else dh**-0.5
    inner = getattr(model, "model", model)
    out = []
    for i, layer in enumerate(inner.layers):
        sa = layer.self_attn
        Wq, Wk = sa.q_proj.weight.detach(), sa.k_proj.weight.detach()  # (out, in)
        bq = None if sa.q_proj.bias is None else sa.q_proj.bias.detach()  # Qwen2 has one
        for h in range(H):
            g = h // (H // kv)  # the key head this query head shares
            q, k = Wq[h * dh : (h + 1) * dh], Wk[g * dh : (g + 1) * dh]
            term = None if bq is None else scale * k.T @ bq[h * dh : (h + 1) * dh]
            out.append(HeadOperator(i, h, scale * q.T @ k, g, rope=True, key_term=term, query=scale * q, key=k))
    return out


# --------------------------------------------------------------------------------------------
# Per-head measurements (bilinear-attention-operator, arXiv 2607.06621)
# --------------------------------------------------------------------------------------------


def head_operator_rows(model: nn.Module, family: str, **extra) -> list[dict]:
    """One row per head of ``model``: the geometry of its M (float64) and the residuals of its exact identities.

    Columns: family, layer, head, d, symmetry, directionality, skew_ratio ‖A‖/‖S‖, split_error
    (|‖M‖² − ‖S‖² − ‖A‖²|/‖M‖²), cross (|⟨S, A⟩|/‖M‖²), quad_form
    (:func:`~theorylab.theory.bilinear.skew_quadratic_residual`), inertia_pos/neg/zero of S, rotation,
    stable_rank, effective_rank, small_singular (singular values <= 1e-10·σ₁; rank M <= d_h leaves at
    least d − d_h), conjugate_gap, sigma1, then the tolerances: ``tolerance = d²ε`` (float64 rounding
    of a d²-term sum in any order, Higham: the relative tolerance of every exact identity on this
    head) and ``directionality_tolerance`` (d²ε times the score's condition number,
    :func:`~theorylab.theory.bilinear.directionality_condition`), then ``extra``.
    """
    rows = []
    for op in head_operators(model):
        M = op.M.double()
        S, A = split_sym_skew(M)
        pos, neg, zero = inertia(M)
        sv = torch.linalg.svdvals(M)
        lam = torch.linalg.eigvals(M)
        norm2 = float(M.pow(2).sum())
        rows.append(
            dict(
                family=family,
                layer=op.layer,
                head=op.head,
                d=M.shape[0],
                symmetry=float(symmetry_score(M)),
                directionality=float(directionality_score(M)),
                skew_ratio=float(A.norm() / S.norm()),
                split_error=abs(float(M.pow(2).sum() - S.pow(2).sum() - A.pow(2).sum())) / norm2,
                cross=abs(float((S * A).sum())) / norm2,
                quad_form=skew_quadratic_residual(A, M),
                inertia_pos=pos,
                inertia_neg=neg,
                inertia_zero=zero,
                rotation=rotation_content(M),
                stable_rank=float(stable_rank(M)),
                effective_rank=float(effective_rank(M)),
                small_singular=int((sv <= 1e-10 * sv[0]).sum()),
                conjugate_gap=conjugate_pair_gap(lam, float(sv[0])),
                sigma1=float(sv[0]),
                tolerance=M.shape[0] ** 2 * EPS,
                directionality_tolerance=M.shape[0] ** 2 * EPS * directionality_condition(M),
                **extra,
            )
        )
    return rows


def random_init_head_rows(
    d: int,
    heads: int,
    seeds: Sequence[int],
    family: str,
    *,
    qk: Literal["untied", "tied"] = "untied",
    progress: Callable[[Iterable[int], str], Iterator[int]] | None = None,
    description: str = "random-init heads",
) -> list[dict]:
    """:func:`head_operator_rows` of one bias-free, float64, one-layer ToyTransformer (width ``d``, ``heads`` heads)
    per seed, with its position as ``model_index``: the random-init null (entries of W_q, W_k ~ N(0, 1/d)),
    or with ``qk="tied"`` (W_q = W_k) the symmetric PSD case. ``progress`` wraps the loop over models."""
    from theorylab.nn.toy_transformer import ToyTransformer

    rows = []
    indices: Iterable[int] = range(len(seeds)) if progress is None else progress(range(len(seeds)), description)
    for i in indices:
        model = ToyTransformer(d_model=d, n_heads=heads, qk=qk, bias=False, seed=seeds[i]).double()
        rows += head_operator_rows(model, family, model_index=i)
    return rows


def logit_convention_errors(model: nn.Module, tokens: Tensor, name: str):
    """Every head's logits from its extracted M against the module's own
    (:func:`~theorylab.probes.qk_scores.operator_logit_errors`), then the same with M transposed
    (``control=True``: a wrong convention, which must miss). One DataFrame, column ``model`` = ``name``."""
    import pandas as pd

    from theorylab.probes.qk_scores import operator_logit_errors

    right = operator_logit_errors(model, tokens).assign(model=name, control=False)
    transposed = operator_logit_errors(model, tokens, transform=lambda M: M.T).assign(model=name, control=True)
    return pd.concat([right, transposed], ignore_index=True)


# ToyTransformer (causal False/True), HF GPT-2 (Conv1D), HF BERT (Linear)
CONVENTION_MODELS = ("toy/False", "toy/True", "gpt2", "bert")


def convention_check(
    width: int,
    layers: int,
    tokens: Tensor,
    seeds: Mapping[str, int],
    bias_generators: Mapping[str, torch.Generator],
    vocab_size: int = 50,
) -> pd.DataFrame:
    """:func:`logit_convention_errors` on small random-init models of every layout :func:`head_operators` reads.

    Models (keys of ``seeds`` and ``bias_generators``, see ``CONVENTION_MODELS``): a bidirectional and a
    causal ToyTransformer (4 heads, learned positions, MLP 2·width) and, where ``transformers`` is
    installed, GPT-2 (Conv1D weights, stored (in, out)) and BERT (``nn.Linear``, (out, in)), each of
    width ``width`` and ``layers`` layers, with every bias perturbed
    (:func:`~theorylab.nn.parameter_noise.perturb_biases`) so the query bias's key-side term is exercised.
    ``tokens``: (B, T) ids < ``vocab_size``, T <= 16.
    """
    import pandas as pd

    from theorylab.nn.parameter_noise import perturb_biases
    from theorylab.nn.toy_transformer import ToyTransformer

    frames = []
    for causal in (False, True):
        model = ToyTransformer(
            d_model=width,
            n_heads=4,
            n_layers=layers,
            vocab_size=vocab_size,
            causal=causal,
            positional="learned",
            max_len=16,
            mlp_width=2 * width,
            seed=seeds[f"toy/{causal}"],
        )
        perturb_biases(model, bias_generators[f"toy/{causal}"])
        name = f"ToyTransformer ({'causal' if causal else 'bidirectional'}, biases)"
        frames.append(logit_convention_errors(model, tokens, name))
    try:
        from theorylab.nn.hf import random_init
    except ImportError:  # pragma: no cover - depends on the environment
        random_init = None
    if random_init is not None:
        hf = {
            "gpt2": dict(n_embd=width, n_layer=layers, n_head=4, n_positions=32, vocab_size=vocab_size),
            "bert": dict(
                hidden_size=width,
                num_hidden_layers=layers,
                num_attention_heads=4,
                intermediate_size=2 * width,
                vocab_size=vocab_size,
            ),
        }
        for arch, small in hf.items():
            model = random_init(arch, seed=seeds[arch], dtype=torch.float32, **small)
            perturb_biases(model, bias_generators[arch])
            frames.append(logit_convention_errors(model, tokens, f"HF {arch} (random init, biases)"))
    return pd.concat(frames, ignore_index=True)
