"""representation-collapse: the last token's state forgets the far context as L grows, and low precision erases it.

Paper: Y. Tao, K. Cheng, Y. Lu, C. Liu, J. Chen, arXiv 2607.20484 (2026; only the abstract's first sentence was
seen: "Large Language Models (LLMs) are fundamentally limited by representation collapse, a bottleneck that
severely degrades long-context performance"). The mechanism judged here is the card's reconstruction from Barbero
et al. 2024 ("Transformers need glasses!"): softmax dilution makes an edit of position 1 move the last state by
O(1/L) (bounded by B(L), `theory.softmax.dilution_bound`); in the count construction [a]^L b vs [a]^(L+1) b the
change is O(1/L²), and at finite precision the two states become bit-identical. The measurements live in
`probes.collapse`; the trained recall model of the thesis claims (6-7) is the paper preset's (`train.retrieval`).
"""

from __future__ import annotations

import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.core.rng import seeded
from theorylab.data.tasks import edit_first, random_tokens
from theorylab.nn.toy_transformer import MultiHeadAttention, ToyTransformer, ToyTransformerConfig
from theorylab.probes.collapse import (
    attention_edit_change,
    calibrated_cosine,
    count_gap,
    first_token_skip,
    layer_collapse,
    sensitivity,
)
from theorylab.studies.representation_collapse.config import PRESETS, RepresentationCollapseConfig
from theorylab.studies.representation_collapse.figures import (
    figure_collapse_vs_accuracy,
    figure_count_gap,
    figure_dilution,
)
from theorylab.studies.representation_collapse.judges import claims
from theorylab.train.retrieval import recall_accuracy, train_recall

PAPER = "Tao, Cheng, Lu, Liu, Chen, arXiv 2607.20484 (2026), after Barbero et al. 2024"
DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}


def _model(cfg: RepresentationCollapseConfig, seed: int, kernel: str = "fused") -> ToyTransformer:
    """The card's random-init model: pre-LN, causal, no positions, GELU MLP, a final norm, PyTorch default init."""
    return ToyTransformer(
        d_model=cfg.d_model,
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        mlp_width=cfg.mlp_mult * cfg.d_model,
        causal=True,
        final_norm=True,
        vocab_size=cfg.vocab_size,
        attention_kernel=kernel,
        seed=seed,
    )


def _count(cfg, ctx: RunContext, k: int, model: ToyTransformer, a: int, b: int) -> list[dict]:
    return [
        dict(model=k, dtype=name, L=L, gap=g.gap, identical=g.identical)
        for name, dtype in DTYPES.items()
        for L in cfg.lengths
        for g in [count_gap(model, L, a, b, dtype)]
    ]


def _edit(cfg, ctx: RunContext, k: int, model: ToyTransformer, control: bool) -> list[dict]:
    gen = ctx.generator(f"edit/{k}")
    rows = []
    for L in cfg.lengths:
        x = random_tokens(cfg.edit_batch, L, cfg.vocab_size, generator=gen)
        x_edit = edit_first(x, cfg.vocab_size, gen)
        rows.append(dict(model=k, variant="model", L=L, sensitivity=float(sensitivity(model, x, x_edit).mean())))
        if control and L >= cfg.slope_from:
            with first_token_skip(model):
                s = float(sensitivity(model, x, x_edit).mean())
            rows.append(dict(model=k, variant="first-token skip (control)", L=L, sensitivity=s))
    return rows


def _bound(cfg, ctx: RunContext, k: int) -> list[dict]:
    """One head, attention only, W_O = I: its last output's change under an edit of position 1 against B(L)."""
    with seeded(ctx.seed(f"bound/{k}")):
        attn = MultiHeadAttention(
            ToyTransformerConfig(d_model=cfg.d_model, causal=True, attention_kernel="fused")
        ).double()
    with torch.no_grad():
        attn.W_O.copy_(torch.eye(cfg.d_model, dtype=torch.float64)[None])
        attn.b_O.zero_()
    gen = ctx.generator(f"bound/{k}")
    rows = []
    for L in cfg.lengths:
        x = torch.randn(cfg.bound_batch, L, cfg.d_model, generator=gen, dtype=torch.float64)
        x_edit = x.clone()
        x_edit[:, 0] = torch.randn(cfg.bound_batch, cfg.d_model, generator=gen, dtype=torch.float64)
        changes = attention_edit_change(attn, x, x_edit)
        rows += [dict(model=k, L=L, pair=i, **e._asdict()) for i, e in enumerate(changes)]
    return rows


def _cosine_sanity(cfg, ctx: RunContext) -> pd.DataFrame:
    gen, S, d = ctx.generator("cosine"), cfg.cosine_sequences, cfg.d_model
    iid = torch.randn(S, 64, d, generator=gen, dtype=torch.float64)
    same = torch.randn(S, 1, d, generator=gen, dtype=torch.float64).expand(S, 64, d)
    return ctx.table(
        "cosine_sanity",
        pd.DataFrame(
            [
                dict(case="iid", C=calibrated_cosine(iid)),
                dict(case="identical within a sequence", C=calibrated_cosine(same)),
            ]
        ),
    )


def _recall(cfg, ctx: RunContext) -> pd.DataFrame:
    rows = []
    for r in ctx.progress(range(cfg.recall_models), "recall models"):
        model = ToyTransformer(
            d_model=cfg.recall_d_model,
            n_layers=cfg.recall_n_layers,
            n_heads=cfg.n_heads,
            mlp_width=4 * cfg.recall_d_model,
            causal=True,
            final_norm=True,
            vocab_size=cfg.vocab_size,
            positional="rotary",
            max_len=max(cfg.recall_lengths),
            seed=ctx.seed(f"recall/{r}"),
        ).to(ctx.device)
        gen = ctx.generator(f"recall/{r}")
        train_recall(
            model,
            steps=cfg.recall_steps,
            n_pairs=cfg.recall_pairs,
            length=cfg.recall_train_length,
            vocab=cfg.vocab_size,
            batch=cfg.recall_batch,
            lr=cfg.recall_lr,
            generator=gen,
            check=ctx.check_finite,
            device=ctx.device,
        )
        for L in cfg.recall_lengths:
            acc = recall_accuracy(
                model,
                n_pairs=cfg.recall_pairs,
                length=L,
                vocab=cfg.vocab_size,
                batch=cfg.recall_eval_batch,
                generator=gen,
                device=ctx.device,
            )
            x = random_tokens(min(cfg.recall_eval_batch, 16), L, cfg.vocab_size, generator=gen).to(ctx.device)
            rows += [dict(model=r, L=L, accuracy=acc, **m) for m in layer_collapse(model, x)]
    return ctx.table("recall", pd.DataFrame(rows))


@study(
    "representation-collapse",
    title="Long contexts collapse the last token's state: O(1/L) dilution, O(1/L²) count gap, low-precision identity",
    paper=PAPER,
    config=RepresentationCollapseConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
    # one thread: measured ~1.5x faster than two on a shared 2-core machine
    cpu_threads=1,
)
def run(cfg: RepresentationCollapseConfig, ctx: RunContext) -> None:
    rng = ctx.rng("count tokens")
    count, edit, bound = [], [], []
    for k in ctx.progress(range(cfg.models), "random-init models"):
        model = _model(cfg, ctx.seed(f"model/{k}"))
        a, b = (int(t) for t in rng.choice(cfg.vocab_size, 2, replace=False))
        count += _count(cfg, ctx, k, model, a, b)
        edit += _edit(cfg, ctx, k, model, control=k == 0)
        if k == 0:  # one random attention layer: the bound is a property of the layer, not of the model's seed
            bound += _bound(cfg, ctx, k)
        if k == 0:  # the same weights with the explicit kernel, which rounds every attention weight to bfloat16
            explicit = _model(cfg, ctx.seed(f"model/{k}"), kernel="explicit")
            # at the second-largest length: the explicit bfloat16 kernel costs ~20 s at L = 4096 on 2 cores
            kernel = [
                dict(kernel=kn, L=L, **count_gap(m, L, a, b, torch.bfloat16)._asdict())
                for kn, m in (("fused", model), ("explicit", explicit))
                for L in cfg.lengths[-2:-1]
            ]
    count_t = ctx.table("count", pd.DataFrame(count))
    edit_t = ctx.table("edit", pd.DataFrame(edit))
    bound_t = ctx.table("bound", pd.DataFrame(bound))
    ctx.table("kernel", pd.DataFrame(kernel))
    _cosine_sanity(cfg, ctx)
    figure_dilution(ctx, edit_t, bound_t)
    figure_count_gap(ctx, count_t)
    if cfg.recall:
        figure_collapse_vs_accuracy(ctx, _recall(cfg, ctx))
    ctx.scalar("recall_trained", bool(cfg.recall))
