"""bilinear-attention-operator: a head's score is the bilinear form x_i M x_jᵀ, M = W_qᵀ W_k / √d_h.

Paper: Li Hengyu, arXiv 2607.06621 (2026); only its first sentence was available, so the card is
reconstructed, with Saponati et al., ICML 2025 (arXiv 2502.10927) as the anchor for the
encoder-symmetric / decoder-directional finding. Claims 1–5 are exact or derived:

- the extracted M (ours, GPT-2's Conv1D, BERT's Linear) reproduces each module's own logits;
- M = S + A splits orthogonally, and xᵀAx = 0;
- at random init the symmetry score is ½ + 1/(2d) and the directionality is centred;
- tied queries and keys give a symmetric PSD operator of rank d_h with no rotation;
- rank M <= d_h, and M's complex eigenvalues come in conjugate pairs.

Claims 6–7 (paper preset) compare an encoder (masked LM) and a decoder (causal LM) trained on the
same text: the encoder's operators end more symmetric, the decoder's more directional.
"""

from __future__ import annotations

import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.text import char_stream
from theorylab.probes.bilinear_operators import (
    CONVENTION_MODELS,
    convention_check,
    random_init_head_rows,
)
from theorylab.studies.bilinear_attention_operator.config import PRESETS, BilinearOperatorConfig
from theorylab.studies.bilinear_attention_operator.figures import (
    figure_inertia,
    figure_layers,
    figure_scatter,
    figure_spectra,
    figure_tracking,
)
from theorylab.studies.bilinear_attention_operator.judges import claims
from theorylab.train.encoder_decoder import train_encoder_decoder_pairs

PAPER = "Li, arXiv 2607.06621 (2026); anchor: Saponati et al., arXiv 2502.10927 (ICML 2025)"


def _convention(cfg: BilinearOperatorConfig, ctx: RunContext) -> pd.DataFrame:
    """Every head's logits from M against the module itself: ours (causal or not, with biases), GPT-2, BERT."""
    tokens = torch.randint(0, 50, (2, 12), generator=ctx.generator("convention/tokens"))
    seeds = {k: ctx.seed(f"convention/{k}") for k in CONVENTION_MODELS}
    table = convention_check(
        cfg.hf_d_model,
        cfg.hf_n_layers,
        tokens,
        seeds,
        {k: ctx.generator(f"convention/bias/{k}") for k in CONVENTION_MODELS},
    )
    ctx.table("convention", table)
    return table


def _pair(cfg: BilinearOperatorConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An encoder (masked LM, bidirectional) and a decoder (causal LM) of the same size on the same text."""
    vocab, stream = char_stream(cfg.corpus)
    track, finals = train_encoder_decoder_pairs(
        stream,
        len(vocab),
        width=cfg.pair_d_model,
        heads=cfg.pair_n_heads,
        layers=cfg.pair_n_layers,
        context=cfg.pair_length,
        batch=cfg.pair_batch,
        steps=cfg.pair_steps,
        lr=cfg.pair_lr,
        log_every=cfg.pair_log_every,
        init_seeds=[ctx.seed(f"pair/init/{seed}") for seed in range(cfg.pair_seeds)],
        data_generator=lambda seed, kind: ctx.generator(f"pair/data/{seed}/{kind}"),
        device=ctx.device,
        progress=ctx.progress,
        check=ctx.check_finite,
        precision=cfg.precision,
    )
    ctx.table("pair_tracking", track)
    return track, pd.DataFrame(finals)


@study(
    "bilinear-attention-operator",
    title="The attention score as a bilinear form in M = W_qᵀW_k: symmetry, directionality, spectrum",
    paper=PAPER,
    config=BilinearOperatorConfig,
    presets=PRESETS,
    family="attention",
    claims=claims,
)
def run(cfg: BilinearOperatorConfig, ctx: RunContext) -> None:
    _convention(cfg, ctx)
    random_seeds = [ctx.seed(f"random/{i}") for i in range(cfg.random_models)]
    rows = random_init_head_rows(cfg.d_model, cfg.n_heads, random_seeds, "random init", progress=ctx.progress)
    tied_seeds = [ctx.seed(f"tied/{i}") for i in range(cfg.tied_models)]
    rows += random_init_head_rows(cfg.d_model, cfg.n_heads, tied_seeds, "tied QK", qk="tied")
    track, final = _pair(cfg, ctx)
    heads = pd.concat([pd.DataFrame(rows), final], ignore_index=True)
    ctx.table("heads", heads)
    figure_scatter(ctx, heads)
    figure_tracking(ctx, track)
    figure_spectra(ctx, cfg)
    figure_inertia(ctx, heads)
    figure_layers(ctx, heads)
