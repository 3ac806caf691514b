"""An encoder (masked LM) and a decoder (causal LM) of one size trained on the same text, query-key operators tracked.

The comparison behind the encoder-symmetric / decoder-directional finding (Saponati et al., ICML 2025,
arXiv 2502.10927; bilinear-attention-operator, arXiv 2607.06621): per seed, both models start from
the same initialisation seed, train with :func:`~theorylab.train.language.train_language_model`
(``objective="mlm"`` bidirectional, ``"clm"`` causal), and every head's operator M
(:func:`~theorylab.probes.bilinear_operators.head_operators`) is scored before training and at every
log step (mean symmetry and directionality over heads), then measured in full at the end
(:func:`~theorylab.probes.bilinear_operators.head_operator_rows`).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.bilinear_operators import head_operator_rows, head_operators
from theorylab.theory.bilinear import directionality_score, symmetry_score
from theorylab.train.language import train_language_model

KINDS = (("encoder", False, "mlm"), ("decoder", True, "clm"))  # (kind, causal, objective)


def train_encoder_decoder_pairs(
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
    log_every: int,
    init_seeds: Sequence[int],
    data_generator: Callable[[int, str], torch.Generator],
    device: torch.device | str = "cpu",
    progress: Callable[[Iterable[int], str], Iterator[int]] | None = None,
    check: Callable[[str, Tensor, int], None] | None = None,
    precision: str = "fp32",
) -> tuple[pd.DataFrame, list[dict]]:
    """Train one encoder/decoder pair per entry of ``init_seeds`` on character ``stream`` (tokens < ``vocab_size``).

    Both models: ``layers`` learned-position blocks of width ``width`` (MLP 4·width), ``heads`` heads,
    a final norm, and one extra token (id ``vocab_size``) used as the mask; both start from
    ``init_seeds[i]``. ``data_generator(i, kind)`` ("encoder"/"decoder") draws that model's windows and masks.
    Returns (tracking: one row per (kind, seed, step) with the loss and the mean symmetry and
    directionality over heads, ``step`` = optimizer steps done, 0 before training; final per-head rows
    of the float64 CPU copies, family = kind, with a ``seed`` column). ``precision``: the training steps'
    arithmetic (``"bf16"``: autocast, :func:`~theorylab.train.language.train_language_model`); every
    measurement reads the fp32 weights.
    """
    tracks, finals = [], []
    for seed, init in enumerate(init_seeds):
        for kind, causal, objective in KINDS:
            model = ToyTransformer(
                d_model=width,
                n_heads=heads,
                n_layers=layers,
                mlp_width=4 * width,
                vocab_size=vocab_size + 1,
                causal=causal,
                positional="learned",
                max_len=context,
                final_norm=True,
                seed=init,
            ).to(device)

            def measure(step: int, loss: float, model=model, kind=kind, seed=seed) -> None:  # noqa: ANN001
                ops = head_operators(model)
                tracks.append(
                    dict(
                        kind=kind,
                        seed=seed,
                        step=step,
                        loss=loss,
                        symmetry=float(np.mean([float(symmetry_score(o.M.double())) for o in ops])),
                        directionality=float(np.mean([float(directionality_score(o.M.double())) for o in ops])),
                    )
                )

            measure(-1, math.nan)
            train_language_model(
                model,
                stream,
                objective=objective,
                steps=steps,
                batch=batch,
                length=context,
                lr=lr,
                generator=data_generator(seed, kind),
                mask_id=vocab_size,
                log_every=log_every,
                on_log=measure,
                progress=progress,
                check=check,
                device=device,
                precision=precision,
            )
            finals += head_operator_rows(model.cpu().double(), kind, seed=seed)
    # -1 (before training) -> 0; a log after step k -> k + 1 steps done
    track = pd.DataFrame(tracks).assign(step=lambda t: t["step"] + 1)
    return track, finals
