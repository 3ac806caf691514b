"""Check extracted query-key operators against what the attention modules really compute.

:func:`attention_io` runs a model once and records, per layer, the attention module's input ``x``
(after the layer's norm) and its attention probabilities. :func:`operator_logit_errors` rebuilds
every head's logits from :func:`theorylab.probes.bilinear_operators.head_operators` as ``x M xᵀ`` plus the
query bias's key-side term and compares log-softmaxes (logits are defined up to a per-row constant,
which is all the key bias adds): a transposed M, a wrong head slice or a Conv1D/Linear mix-up shows
up as an O(1) error. Works for :class:`~theorylab.nn.ToyTransformer` and Hugging Face GPT-2 and BERT
(eager attention); rotary models have position-dependent operators and are refused.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import pandas as pd
import torch
from torch import Tensor, nn

from theorylab.probes.bilinear_operators import head_operators


def _attention_modules(model: nn.Module) -> list[nn.Module]:
    from theorylab.nn.toy_transformer import ToyTransformer

    if isinstance(model, ToyTransformer):
        if model.cfg.positional == "rotary":
            raise ValueError("rotary positions make the operator position-dependent; compare at zero offset instead")
        return [b.attn for b in model.blocks]
    kind = getattr(getattr(model, "config", None), "model_type", None)
    if kind == "gpt2":
        blocks = model.transformer.h if hasattr(model, "transformer") else model.h
        return [b.attn for b in blocks]
    if kind in ("bert", "roberta"):
        encoder = model.bert.encoder if hasattr(model, "bert") else model.encoder
        return [layer.attention.self for layer in encoder.layer]
    raise ValueError(f"operator checks support ToyTransformer, GPT-2 and BERT, not {kind!r}")


@torch.no_grad()
def attention_io(model: nn.Module, inputs: Tensor) -> list[tuple[Tensor, Tensor]]:
    """``[(x: (B, T, d), probs: (B, H, T, T))]`` per layer for one forward pass on ``inputs``."""
    from theorylab.nn.toy_transformer import ToyTransformer

    modules = _attention_modules(model)
    seen: dict[int, Tensor] = {}
    probs: dict[int, Tensor] = {}
    handles = []
    for i, m in enumerate(modules):

        def grab(_m, args, kwargs, i=i):
            seen.setdefault(i, (args[0] if args else kwargs["hidden_states"]).detach())

        handles.append(m.register_forward_pre_hook(grab, with_kwargs=True))
        if isinstance(model, ToyTransformer):
            handles.append(
                m.hook_pattern.register_forward_hook(lambda _m, _a, out, i=i: probs.__setitem__(i, out.detach()))
            )
    try:
        if isinstance(model, ToyTransformer):
            model(inputs)
        else:
            for i, a in enumerate(model(inputs, output_attentions=True).attentions):
                probs[i] = a.detach()
    finally:
        for h in handles:
            h.remove()
    return [(seen[i], probs[i]) for i in range(len(modules))]


@torch.no_grad()
def operator_logit_errors(
    model: nn.Module, inputs: Tensor, transform: Callable[[Tensor], Tensor] | None = None
) -> pd.DataFrame:
    """Per (layer, head): ``max |log p_module − log_softmax(x M xᵀ + key_term·x)|`` over the entries the
    module attends to, and that error relative to the largest |logit| (``rel_error``).

    ``transform`` replaces each M before the comparison (a control: ``lambda M: M.T`` must fail)."""
    ops = head_operators(model)
    if transform is not None:
        ops = [replace(op, M=transform(op.M)) for op in ops]
    rows = []
    for layer, (x, p) in enumerate(attention_io(model, inputs)):
        x = x.to(torch.float64) if p.dtype == torch.float64 else x
        for op in (o for o in ops if o.layer == layer):
            s = op.scores(x.to(op.M.dtype))  # (B, T, T)
            live = p[:, op.head] > 0
            mine = torch.log_softmax(s.masked_fill(~live, float("-inf")), -1)
            theirs = torch.log(p[:, op.head].to(mine.dtype))
            err = float((mine - theirs)[live].abs().max())
            scale = float(s[live].abs().max())
            rows.append(
                dict(
                    layer=layer,
                    head=op.head,
                    key_head=op.key_head,
                    abs_error=err,
                    logit_scale=scale,
                    rel_error=err / max(scale, 1e-30),
                )
            )
    return pd.DataFrame(rows)
