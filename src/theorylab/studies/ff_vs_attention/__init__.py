"""ff-vs-attention: feed-forward layers store distributional associations, attention reasons in context.

Paper: L. Chen, J. Bruna, A. Bietti, "Distributional Associations vs In-Context Reasoning: A
Study of Feed-forward and Attention Layers", arXiv 2406.03068 (2024; v1 "How Truncating Weights
Improves Reasoning in Language Models"), ICLR 2025.

Synthetic part (paper Sec. 3-4): sequences from a bigram chain where, after each trigger token
q, the next token is the sequence's own output o (probability 1 - p, learnable only in context)
or a generic noise token tau (probability p, a global association). A two-layer transformer with
frozen random embeddings is trained with the loss on the trigger's next token only. The
measurements read the model at test (p = 0): its noise probability (Bayes: p), the same with the
second feed-forward layer (FF2) removed, FF2's direct logit margin for tau, and the layer-2
attention mass on the token after the previous trigger (the induction head), over training.

Real-text part (replacing the paper's Pythia ablations, whose weights we do not download): a
small language model trained on a real corpus (the King James Bible from Debian's
``bible-kjv``, or any local text file) into which the trigger task is written with real words
(:mod:`theorylab.data.trigger_text`), then LASER-style truncation of its last MLP.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import torch

from theorylab.core import ConfigError, RunContext, study
from theorylab.data.markov import TriggerBatch, TriggerNoiseTask, top_successor
from theorylab.data.text import TriggerWordTask, WordVocab
from theorylab.data.trigger_text import (
    TriggerCorpus,
    held_out_probes,
    name_mask,
    trigger_noise_task,
    trigger_prompts,
)
from theorylab.nn.transformer_recipes import recall_transformer, small_gpt
from theorylab.probes.lowrank import laser_grid
from theorylab.probes.trigger_recall import measure_hf_recall, measure_word_recall, value_truncation
from theorylab.studies.ff_vs_attention.config import PRESETS, TRIGGER_WORD, FFvsAttentionConfig, lm_corpus
from theorylab.studies.ff_vs_attention.figures import figure_ablation, figure_dynamics, figure_lm, figure_p_sweep
from theorylab.studies.ff_vs_attention.judges import claims, crossing_steps, final
from theorylab.train.batched import AdamWSchedule, StackedModels
from theorylab.train.language import train_trigger_lm
from theorylab.train.trigger_recall import train_trigger_recall

PAPER = "Chen, Bruna, Bietti, arXiv 2406.03068 (2024); ICLR 2025"


def train_variant(
    cfg: FFvsAttentionConfig,
    ctx: RunContext,
    task: TriggerNoiseTask,
    test: TriggerBatch,
    p_noise: float,
    ff: bool,
    name: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train ``cfg.seeds`` models as one batch; return the measurement curve (one row per step and
    seed) and, for a model without FF layers, the layer-2 value truncation at the end (else empty)."""
    init = [int(ctx.rng(f"init/{name}/seed{s}").integers(2**62)) for s in range(cfg.seeds)]
    width = cfg.mlp_mult * cfg.d_model if ff else 0  # ff=False removes both FF layers
    models = StackedModels([recall_transformer(cfg.d_model, task.vocab, cfg.length, width, seed) for seed in init]).to(
        ctx.device
    )
    optim = AdamWSchedule(
        lr=cfg.lr,
        kind="sgd" if cfg.optimizer == "sgd" else "adamw",
        momentum=cfg.momentum,
        weight_decay=cfg.weight_decay,
        schedule=cfg.schedule,
    )
    curve, bad = train_trigger_recall(
        models,
        task,
        test,
        p_noise=p_noise,
        steps=cfg.steps,
        batch=cfg.batch,
        seq_len=cfg.length,
        train_bank=cfg.train_bank,
        optim=optim,
        generator=ctx.generator(f"data/{name}"),
        name=name,
        labels=dict(variant=name, p_noise=p_noise, ff=ff),
        progress=ctx.progress,
        device=ctx.device,
        # only the main model's curve is read at every step (claim ff-first, figure training_dynamics);
        # the variants are judged at their last step, so they are measured at the start and the end only
        evaluate_every=cfg.evaluate_every if name == "full" else cfg.steps,
        precision=cfg.precision,
    )
    for s, step in bad.items():
        ctx.log(f"{name}: seed {s} diverged at step {step}; its rows are dropped")
    truncation = pd.DataFrame()
    if not ff:
        truncation = pd.DataFrame(
            [
                dict(variant=name, p_noise=p_noise, seed=s, **row)
                for s in range(cfg.seeds)
                if s not in bad
                for row in value_truncation(models.member(s), test, task.noise, cfg.value_ranks)
            ]
        )
    return curve, truncation


def held_out_splits(
    cfg: FFvsAttentionConfig, ctx: RunContext, test_stream: np.ndarray, task: TriggerWordTask
) -> dict[str, tuple[TriggerBatch, torch.Tensor]]:
    """Two disjoint held-out halves, each with trigger probes (p = 0) and untouched windows: one picks the (layer, rank)
    to truncate, the other judges it."""
    return held_out_probes(
        test_stream,
        task,
        cfg.lm_probes,
        cfg.lm_length,
        {split: ctx.generator(f"lm/{split}") for split in ("validation", "test")},
    )


def run_lm(cfg: FFvsAttentionConfig, ctx: RunContext, corpus: TriggerCorpus | None = None) -> pd.DataFrame:
    """Train the language model, then measure it whole and with each layer's MLP input matrix truncated to each rank.
    ``corpus``: the output of :func:`lm_corpus` when the caller has already loaded it."""
    vocab, train_stream, test_stream, task = corpus if corpus is not None else lm_corpus(cfg)
    if cfg.lm_local is not None:
        return run_pretrained(cfg, ctx, vocab, test_stream, task)
    model_seed = int(ctx.rng("lm/init").integers(2**62))
    models = StackedModels(
        [small_gpt(cfg.lm_d_model, cfg.lm_n_layers, cfg.lm_n_heads, len(vocab), cfg.lm_length, model_seed)]
    ).to(ctx.device)
    optim = AdamWSchedule(lr=cfg.lm_lr, betas=(0.9, 0.95), weight_decay=0.1, warmup_frac=0.05)
    log = train_trigger_lm(
        models,
        train_stream,
        task,
        steps=cfg.lm_steps,
        batch=cfg.lm_batch,
        length=cfg.lm_length,
        p_noise=cfg.lm_p_noise,
        task_rate=cfg.lm_task_rate,
        optim=optim,
        generator=ctx.generator("lm/data"),
        progress=ctx.progress,
        device=ctx.device,
        precision=cfg.precision,
    )
    ctx.table("lm_loss", log.table().drop(columns="member"))
    model = models.member(0)
    is_name, successor = name_mask(vocab), top_successor(train_stream, len(vocab))
    weights = [f"blocks.{layer}.mlp.up.weight" for layer in range(cfg.lm_n_layers)]
    rows = []
    for split, (probes, natural) in held_out_splits(cfg, ctx, test_stream, task).items():
        measure = partial(measure_word_recall, model, probes, natural, task.generic, is_name, successor)
        rows += [dict(split=split, **row) for row in laser_grid(model, weights, cfg.lm_ranks, measure)]
    ctx.log(
        f"language model: trigger {TRIGGER_WORD!r}, generic answer {vocab.words[task.generic]!r}, "
        f"{len(task.answers)} names as answers"
    )
    return pd.DataFrame(rows).assign(
        matrix="up", n_layers=cfg.lm_n_layers, trigger=TRIGGER_WORD, generic=vocab.words[task.generic]
    )


def run_pretrained(
    cfg: FFvsAttentionConfig, ctx: RunContext, vocab: WordVocab, test_stream: np.ndarray, task: TriggerWordTask
) -> pd.DataFrame:
    """The same probes and LASER grid on a local Hugging Face model (the paper's Pythia setting)."""
    from theorylab.nn.hf import load_local_causal_lm, mlp_input_weights

    model, tokenizer = load_local_causal_lm(cfg.lm_local, ctx.device)
    names = mlp_input_weights(model)
    generic = vocab.words[task.generic]
    rows = []
    for split, (probes, natural) in held_out_splits(cfg, ctx, test_stream, task).items():
        prompts, answers = trigger_prompts(probes, vocab)
        measure = partial(
            measure_hf_recall, model, tokenizer, prompts, answers, generic, [vocab.decode(w) for w in natural]
        )
        rows += [
            dict(split=split, **row)
            for row in laser_grid(model, ctx.progress(names, f"LASER grid ({split})"), cfg.lm_ranks, measure)
        ]
    ctx.log(f"pretrained model {cfg.lm_local}: {len(names)} layers, trigger {TRIGGER_WORD!r}, generic {generic!r}")
    return pd.DataFrame(rows).assign(matrix="mlp input", n_layers=len(names), trigger=TRIGGER_WORD, generic=generic)


@study(
    "ff-vs-attention",
    title="Feed-forward layers store associations, attention reasons in context",
    paper=PAPER,
    config=FFvsAttentionConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
)
def run(cfg: FFvsAttentionConfig, ctx: RunContext) -> None:
    # A missing corpus (CorpusUnavailable: one line naming the install command) fails here, before any training.
    corpus = lm_corpus(cfg) if cfg.lm else None
    task = trigger_noise_task(cfg.background, cfg.vocab_size, cfg.dirichlet_alpha, cfg.trigger_boost, cfg.data_seed)
    test = task.sample(cfg.test_sequences, cfg.length, 0.0, ctx.generator("test"))
    if int(test.seen.sum()) < 50:
        raise ConfigError(
            f"length/trigger_boost: only {int(test.seen.sum())} test trigger positions with an earlier "
            f"trigger; raise length or trigger_boost"
        )
    ctx.log(f"trigger token {task.trigger}, noise token {task.noise}, {int(test.seen.sum())} test positions")
    variants = [(cfg.p_noise, True, "full")]
    if cfg.no_ff_variant:
        variants.append((cfg.p_noise, False, "no-ff"))
    variants += [(p, True, f"p={p:g}") for p in cfg.p_sweep if p != cfg.p_noise]
    trained = [train_variant(cfg, ctx, task, test, p, ff, name) for p, ff, name in variants]
    curves = pd.concat([curve for curve, _ in trained], ignore_index=True)
    ctx.table("curves", curves)
    if cfg.no_ff_variant:
        ctx.table("value_truncation", pd.concat([t for _, t in trained], ignore_index=True))
    main = curves[curves["variant"] == "full"]
    end = final(curves)
    figure_dynamics(ctx, main)
    figure_ablation(ctx, end[end["variant"] == "full"])
    figure_p_sweep(ctx, end)
    t_ff, t_icl = crossing_steps(main)
    ctx.scalar("t_FF", t_ff)
    ctx.scalar("t_ICL", t_icl)
    for col in ("acc_full", "acc_noFF2", "P_noise_full", "P_noise_noFF2", "induction_mass", "ff2_margin_positive"):
        ctx.scalar(col, float(end.loc[end["variant"] == "full", col].mean()))
    if cfg.lm:
        lm = run_lm(cfg, ctx, corpus)
        ctx.table("lm", lm)
        figure_lm(ctx, lm)
