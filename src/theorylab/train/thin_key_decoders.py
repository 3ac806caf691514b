"""A decoder and its thin-key twin, trained on the same text and measured (query-key-asymmetry card;
anchor arXiv 2603.04427: a decoder with query/key width d_select = d_h/4 loses little perplexity, and
the keys of a trained decoder truncate more cheaply than its queries)."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import pandas as pd
import torch
from torch import Tensor

from theorylab.data.text import random_windows
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.qk_compression import qk_rank_profile, truncation_curve
from theorylab.probes.qk_identities import next_token_losses
from theorylab.train.language import train_language_model


def thin_key_decoders(
    stream: Tensor,
    vocab_size: int,
    *,
    width: int,
    heads: int,
    layers: int,
    context: int,
    batch: int,
    steps: int,
    lr: float,
    thin_fraction: float | None,
    rank_fractions: Sequence[float],
    eval_batches: int,
    init_seed: int,
    eval_generator: torch.Generator,
    data_generator: Callable[[str], torch.Generator],
    progress: Callable | None = None,
    check: Callable | None = None,
    device: torch.device | str = "cpu",
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(truncation, ranks, decoders)`` tables.

    Trains (AdamW, :func:`~theorylab.train.language.train_language_model`, next-token objective) a causal
    pre-LN decoder with learned positions and a final norm on the first 95% of ``stream``: the ``"full"``
    one (query/key width d_h = width/heads), then, unless ``thin_fraction`` is None, a ``"thin keys"`` one
    with d_select = round(thin_fraction·d_h) and the same values, from the same ``init_seed``; each on
    batches from ``data_generator(variant)``. Held-out loss on ``eval_batches`` batches of the last 5%
    (drawn from ``eval_generator``). Tables: ``decoders`` (variant, d_select, held_out_loss, perplexity,
    qk_params, final_train_loss); for the full model only, ``truncation`` (:func:`truncation_curve` at
    ``rank_fractions`` of d_h) and ``ranks`` (:func:`qk_rank_profile`)."""
    cut = int(0.95 * len(stream))
    train, held = stream[:cut], stream[cut:]
    eval_tokens = torch.cat([random_windows(held, batch, context + 1, eval_generator) for _ in range(eval_batches)]).to(
        device
    )

    def loss_fn(m):
        return next_token_losses(m, eval_tokens).mean()

    dh = width // heads
    variants = [("full", dh)] + (
        [("thin keys", max(1, int(round(thin_fraction * dh))))] if thin_fraction is not None else []
    )
    trunc_rows, rank_rows, lm_rows = [], [], []
    for name, select in variants:
        model = ToyTransformer(
            d_model=width,
            n_heads=heads,
            head_rank=select,
            value_dim=dh,
            n_layers=layers,
            mlp_width=4 * width,
            vocab_size=vocab_size,
            causal=True,
            positional="learned",
            max_len=context,
            final_norm=True,
            seed=init_seed,
        ).to(device)
        log = train_language_model(
            model,
            train,
            objective="clm",
            steps=steps,
            batch=batch,
            length=context,
            lr=lr,
            generator=data_generator(name),
            log_every=max(1, steps // 10),
            progress=progress,
            check=check,
            device=device,
        )
        model.eval()
        with torch.no_grad():
            held_loss = float(loss_fn(model))
        qk_params = sum(b.attn.W_Q.numel() + b.attn.W_K.numel() for b in model.blocks)
        lm_rows.append(
            dict(
                variant=name,
                d_select=select,
                held_out_loss=held_loss,
                perplexity=math.exp(held_loss),
                qk_params=qk_params,
                final_train_loss=log[-1]["loss"],
            )
        )
        if name == "full":
            trunc_rows += truncation_curve(model, loss_fn, rank_fractions, dh)
            rank_rows += qk_rank_profile(model, dh)
    return pd.DataFrame(trunc_rows), pd.DataFrame(rank_rows), pd.DataFrame(lm_rows)
