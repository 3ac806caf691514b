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
from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
import torch
from pydantic import Field, model_validator

from theorylab.core import Claims, ConfigError, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import Undecided
from theorylab.core.fields import (
    Batch,
    Concentration,
    Corpus,
    DModel,
    Every,
    LearningRate,
    Length,
    MLPMult,
    NHeads,
    NLayers,
    Probability,
    Rank,
    SampleSize,
    Seeds,
    Steps,
    VocabSize,
)
from theorylab.core.plotting import color, new_figure
from theorylab.data.markov import TriggerBatch, TriggerNoiseTask, top_successor
from theorylab.data.text import CORPORA, TriggerWordTask, WordVocab, check_corpus, resolve_corpus
from theorylab.data.trigger_text import (
    CorpusTooShort,
    TriggerCorpus,
    held_out_probes,
    name_mask,
    trigger_noise_task,
    trigger_prompts,
    word_trigger_corpus,
)
from theorylab.nn.transformer_recipes import recall_transformer, small_gpt
from theorylab.probes.lowrank import laser_grid, laser_selection, pick_value_rank
from theorylab.probes.trigger_recall import measure_hf_recall, measure_word_recall, value_truncation
from theorylab.theory.level_crossings import first_point_above
from theorylab.train.batched import AdamWSchedule, StackedModels
from theorylab.train.language import train_trigger_lm
from theorylab.train.trigger_recall import train_trigger_recall

PAPER = "Chen, Bruna, Bietti, arXiv 2406.03068 (2024); ICLR 2025"
REF = "arXiv 2406.03068"



class FFvsAttentionConfig(StudyConfig):
    # --- task -----------------------------------------------------------------------------------
    vocab_size: Annotated[VocabSize, Field(ge=4)] = Field(64, description="tokens V of the bigram chain (quick 64, "
        "paper 65); the noise token is V - 1")
    length: Annotated[Length, Field(ge=8)] = Field(64, description="sequence length T (quick 64, paper 256)")
    p_noise: Annotated[Probability, Field(lt=1)] = Field(0.5, description="training probability p of the noise token "
        "after a trigger")
    dirichlet_alpha: Concentration = Field(0.2, description="Dirichlet concentration of the bigram rows")
    trigger_boost: Annotated[Probability, Field(lt=1)] = Field(0.1, description="f_q: every row jumps to the trigger "
        "with this probability (0 = plain chain)")
    background: str = Field("dirichlet", min_length=1, description="background chain: 'dirichlet', or a corpus ('kjv' "
        "or a text file) whose character bigrams are used (V = characters + 1 noise token; the authors use tiny "
        "Shakespeare)")
    data_seed: int = Field(0, ge=0, description="seed of the bigram chain (fixed across training seeds)")
    train_bank: Annotated[SampleSize, Field(ge=0)] = Field(6400, description="training sequences drawn once and "
        "resampled (0: fresh sequences every step)")
    test_sequences: Annotated[SampleSize, Field(ge=16)] = Field(256, description="test sequences at p = 0")
    # --- model ----------------------------------------------------------------------------------
    d_model: Annotated[DModel, Field(ge=4)] = Field(64, description="width d (quick 64, paper 256)")
    mlp_mult: MLPMult = Field(4, description="FF hidden width = mlp_mult * d")
    # --- optimisation ---------------------------------------------------------------------------
    optimizer: str = Field("adam", pattern="^(adam|sgd)$", description="'adam' (quick) or 'sgd' with momentum (paper, "
        "as the authors' code)")
    lr: LearningRate = Field(3e-3, description="learning rate (quick Adam 3e-3; paper SGD 0.03)")
    momentum: float = Field(0.9, ge=0, lt=1, description="SGD momentum (paper 0.9)")
    schedule: str = Field("cosine", pattern="^(cosine|constant)$", description="learning-rate schedule: cosine decay "
        "to 0 (quick) or constant (paper, as the authors' code)")
    weight_decay: float = Field(0.0, ge=0, le=1.0, description="weight decay (paper 1e-4)")
    batch: Batch = Field(64, description="sequences per step (quick 64, paper 512)")
    steps: Steps = Field(800, description="training steps (quick 800, paper 5000)")
    evaluate_every: Every = Field(50, description="steps between test evaluations")
    seeds: Seeds = Field(1, description="training seeds, trained as one batch (paper 5)")
    # --- variants (paper) -----------------------------------------------------------------------
    no_ff_variant: bool = Field(False, description="also train the model without any FF layer (claim no-ff-variant)")
    value_ranks: tuple[Rank, ...] = Field((1, 2, 4, 8, 16, 32), min_length=1, description="ranks kept when the no-FF "
        "model's layer-2 value matrix W_V is truncated (its lower singular directions dropped); quick d = 64: up to "
        "d/2")
    p_sweep: tuple[Probability, ...] = Field((), description="extra training noise levels p (claim p-sweep); empty: "
        "none")
    # --- real-text part -------------------------------------------------------------------------
    lm: bool = Field(True, description="run the real-text language-model part")
    lm_corpus: Corpus = Field("stdlib", min_length=1, description="word-level text: 'stdlib' (prose of Python's own "
        "docstrings, 240k words), 'kjv' (Debian's bible-kjv, 790k words) or a local plain-text file")
    lm_vocab_size: Annotated[VocabSize, Field(ge=16)] = Field(2000, description="word vocabulary of the language "
        "model (most frequent words + <unk>)")
    lm_length: Annotated[Length, Field(ge=8)] = Field(128, description="training window length of the language model")
    lm_d_model: Annotated[DModel, Field(ge=8)] = Field(128, description="width of the language model")
    lm_n_layers: Annotated[NLayers, Field(ge=2)] = Field(4, description="layers of the language model (card: 4)")
    lm_n_heads: NHeads = Field(4, description="heads per layer of the language model")
    lm_batch: Batch = Field(32, description="windows per step of the language model")
    lm_steps: Steps = Field(1500, description="training steps of the language model")
    lm_lr: LearningRate = Field(3e-3, description="AdamW learning rate of the language model")
    lm_task_rate: Probability = Field(1.0, description="fraction of training windows carrying the written-in trigger "
        "task")
    lm_p_noise: Annotated[Probability, Field(lt=1)] = Field(0.5, description="probability of the generic word after "
        "the trigger word in training windows")
    lm_ranks: tuple[Annotated[Rank, Field(ge=0)], ...] = Field((1, 4, 16), min_length=1, description="LASER ranks "
        "kept in the last MLP")
    lm_local: str | None = Field(None, description="a local Hugging Face causal-LM directory (e.g. Pythia weights you "
        "own): probed instead of training our own model")
    lm_probes: Annotated[SampleSize, Field(ge=16)] = Field(512, description="held-out probe windows")

    @model_validator(mode="after")
    def _consistent(self) -> "FFvsAttentionConfig":
        if self.train_bank and self.train_bank < self.batch:
            raise ValueError(f"'train_bank' ({self.train_bank}) must be 0 or >= 'batch' ({self.batch})")
        if self.background != "dirichlet" and self.background not in CORPORA and not Path(self.background).expanduser(
            ).is_file():
            raise ValueError(f"'background' must be 'dirichlet', one of {sorted(CORPORA)} or an existing text file; "
                             f"{self.background!r} is neither")
        if self.lm:
            check_corpus("lm_corpus", self.lm_corpus)
        if self.lm_local is not None and self.lm and not Path(self.lm_local).expanduser().is_dir():
            raise ValueError(f"'lm_local' must be a local model directory; {self.lm_local!r} does not exist")
        if self.lm_d_model % self.lm_n_heads:
            raise ValueError(f"'lm_n_heads' ({self.lm_n_heads}) must divide 'lm_d_model' ({self.lm_d_model})")
        return self


# --------------------------------------------------------------------------------------------
# Synthetic part: the paper's two-layer model trained on the trigger task, measured over training
# --------------------------------------------------------------------------------------------


def train_variant(cfg: FFvsAttentionConfig, ctx: RunContext, task: TriggerNoiseTask, test: TriggerBatch, p_noise: float,
                  ff: bool, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train ``cfg.seeds`` models as one batch; return the measurement curve (one row per step and
    seed) and, for a model without FF layers, the layer-2 value truncation at the end (else empty)."""
    init = [int(ctx.rng(f"init/{name}/seed{s}").integers(2**62)) for s in range(cfg.seeds)]
    width = cfg.mlp_mult * cfg.d_model if ff else 0  # ff=False removes both FF layers
    models = StackedModels([recall_transformer(cfg.d_model, task.vocab, cfg.length, width, seed) for seed in init]).to(
        ctx.device)
    optim = AdamWSchedule(
        lr=cfg.lr, kind="sgd" if cfg.optimizer == "sgd" else "adamw", momentum=cfg.momentum,
        weight_decay=cfg.weight_decay, schedule=cfg.schedule,
    )
    curve, bad = train_trigger_recall(
        models, task, test, p_noise=p_noise, steps=cfg.steps, batch=cfg.batch, seq_len=cfg.length,
        train_bank=cfg.train_bank, optim=optim,
        generator=ctx.generator(f"data/{name}"), name=name, labels=dict(variant=name, p_noise=p_noise, ff=ff),
        progress=ctx.progress, device=ctx.device,
        # only the main model's curve is read at every step (claim ff-first, figure training_dynamics);
        # the variants are judged at their last step, so they are measured at the start and the end only
        evaluate_every=cfg.evaluate_every if name == "full" else cfg.steps,
    )
    for s, step in bad.items():
        ctx.log(f"{name}: seed {s} diverged at step {step}; its rows are dropped")
    truncation = pd.DataFrame()
    if not ff:
        truncation = pd.DataFrame([dict(variant=name, p_noise=p_noise, seed=s, **row) for s in range(
            cfg.seeds) if s not in bad
                                   for row in value_truncation(models.member(s), test, task.noise, cfg.value_ranks)])
    return curve, truncation


# --------------------------------------------------------------------------------------------
# Real-text part: a small language model on a real corpus, then LASER on its last MLP
# --------------------------------------------------------------------------------------------

TRIGGER_WORD = "of"


def lm_corpus(cfg: FFvsAttentionConfig) -> TriggerCorpus:
    """Vocabulary, train/held-out token streams (first 90% / last 10% of the text) and the task."""
    try:
        return word_trigger_corpus(resolve_corpus(cfg.lm_corpus), cfg.lm_vocab_size, TRIGGER_WORD, cfg.lm_length)
    except CorpusTooShort as err:
        raise ConfigError(
            f"lm_corpus: {err.words} words is too short for windows of lm_length = {cfg.lm_length}") from None


def held_out_splits(cfg: FFvsAttentionConfig, ctx: RunContext, test_stream: np.ndarray, task: TriggerWordTask) -> dict[
    str, tuple[TriggerBatch, torch.Tensor]]:
    """Two disjoint held-out halves, each with trigger probes (p = 0) and untouched windows: one picks the (layer, rank)
    to truncate, the other judges it."""
    return held_out_probes(test_stream, task, cfg.lm_probes, cfg.lm_length, {split: ctx.generator(
        f"lm/{split}") for split in ("validation", "test")})


def run_lm(cfg: FFvsAttentionConfig, ctx: RunContext, corpus: TriggerCorpus | None = None) -> pd.DataFrame:
    """Train the language model, then measure it whole and with each layer's MLP input matrix truncated to each rank.
    ``corpus``: the output of :func:`lm_corpus` when the caller has already loaded it."""
    vocab, train_stream, test_stream, task = corpus if corpus is not None else lm_corpus(cfg)
    if cfg.lm_local is not None:
        return run_pretrained(cfg, ctx, vocab, test_stream, task)
    model_seed = int(ctx.rng("lm/init").integers(2**62))
    models = StackedModels([small_gpt(cfg.lm_d_model, cfg.lm_n_layers, cfg.lm_n_heads, len(vocab), cfg.lm_length,
                                      model_seed)]).to(ctx.device)
    optim = AdamWSchedule(lr=cfg.lm_lr, betas=(0.9, 0.95), weight_decay=0.1, warmup_frac=0.05)
    log = train_trigger_lm(models, train_stream, task, steps=cfg.lm_steps, batch=cfg.lm_batch, length=cfg.lm_length,
                           p_noise=cfg.lm_p_noise,
                           task_rate=cfg.lm_task_rate, optim=optim, generator=ctx.generator("lm/data"),
                           progress=ctx.progress, device=ctx.device)
    ctx.table("lm_loss", log.table().drop(columns="member"))
    model = models.member(0)
    is_name, successor = name_mask(vocab), top_successor(train_stream, len(vocab))
    weights = [f"blocks.{layer}.mlp.up.weight" for layer in range(cfg.lm_n_layers)]
    rows = []
    for split, (probes, natural) in held_out_splits(cfg, ctx, test_stream, task).items():
        measure = partial(measure_word_recall, model, probes, natural, task.generic, is_name, successor)
        rows += [dict(split=split, **row) for row in laser_grid(model, weights, cfg.lm_ranks, measure)]
    ctx.log(f"language model: trigger {TRIGGER_WORD!r}, generic answer {vocab.words[task.generic]!r}, "
            f"{len(task.answers)} names as answers")
    return pd.DataFrame(rows).assign(matrix="up", n_layers=cfg.lm_n_layers, trigger=TRIGGER_WORD, generic=vocab.words[
        task.generic])


def run_pretrained(cfg: FFvsAttentionConfig, ctx: RunContext, vocab: WordVocab, test_stream: np.ndarray,
                   task: TriggerWordTask) -> pd.DataFrame:
    """The same probes and LASER grid on a local Hugging Face model (the paper's Pythia setting)."""
    from theorylab.nn.hf import load_local_causal_lm, mlp_input_weights

    model, tokenizer = load_local_causal_lm(cfg.lm_local, ctx.device)
    names = mlp_input_weights(model)
    generic = vocab.words[task.generic]
    rows = []
    for split, (probes, natural) in held_out_splits(cfg, ctx, test_stream, task).items():
        prompts, answers = trigger_prompts(probes, vocab)
        measure = partial(measure_hf_recall, model, tokenizer, prompts, answers, generic, [vocab.decode(
            w) for w in natural])
        rows += [dict(split=split, **row) for row in laser_grid(model, ctx.progress(names, f"LASER grid ({split})"),
                                                                cfg.lm_ranks, measure)]
    ctx.log(f"pretrained model {cfg.lm_local}: {len(names)} layers, trigger {TRIGGER_WORD!r}, generic {generic!r}")
    return pd.DataFrame(rows).assign(matrix="mlp input", n_layers=len(names), trigger=TRIGGER_WORD, generic=generic)


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------

PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: the card's quick sizes (V = T = d = 64, f_q = 0.1, batch 64, 800 Adam steps, one seed); "
        "the model without FF "
        "layers (preset no-ff-cpu), the p sweep and the real-text part (preset lm) need more than the minute "
        "and are off",
        lm=(False, "a language model that learns in-context recall on real text takes minutes"),
    ),
    "no-ff-cpu": Preset.of(
        "no-ff-cpu",
        "CPU, ~85 s on 2 cores: the quick preset plus the model without FF layers at the same sizes (claim "
        "no-ff-variant; its induction head "
        "needs the full 800 steps: at 400 its in-context accuracy is still 0)",
        lm=(False, "as quick"),
        no_ff_variant=(True, "claim no-ff-variant"),
    ),
    "lm": Preset.of(
        "lm",
        "CPU, minutes: the quick synthetic part plus the real-text language model (King James Bible, 2 layers, d = 64)",
        lm_n_layers=(2, "the smallest depth with an induction path"),
        lm_d_model=(64, "CPU budget"),
        lm_vocab_size=(1000, "CPU budget: the readout dominates the step"),
        lm_steps=(3000, "the in-context path forms after ~2000 steps on this corpus"),
        lm_corpus=("kjv", "the corpus the lm preset was tuned on (Debian's bible-kjv; elsewhere --set lm_corpus=stdlib "
                          "or a text file)"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: the authors' k = 1, p = 0.5 configuration (V = 65, T = 256, d = 256, SGD lr 0.03 + momentum 0.9, wd "
        "1e-4, batch 512, "
        "5000 steps, 5 seeds), the no-FF variant, the p sweep and a 4-layer language model on the King James Bible",
        vocab_size=(65, "the repo's tiny-Shakespeare character vocabulary size (we draw a Dirichlet chain)"),
        length=(256, "paper T = 256"),
        trigger_boost=(0.0, "T = 256 holds enough triggers without a boost"),
        train_bank=(0, "fresh sequences every step, as the authors' generator"),
        d_model=(256, "paper d = 256"),
        optimizer=("sgd", "the authors' script: SGD with momentum"),
        lr=(0.03, "the authors' script"),
        schedule=("constant", "the authors' script"),
        weight_decay=(1e-4, "the authors' script"),
        batch=(512, "the authors' script"),
        steps=(5000, "the authors' script"),
        seeds=(5, "card: 5 seeds"),
        no_ff_variant=(True, "claim no-ff-variant"),
        value_ranks=((2, 4, 8, 16, 32, 64, 128), "up to d/2 of d = 256"),
        p_sweep=((0.1, 0.3, 0.5, 0.7), "claim p-sweep"),
        lm_d_model=(256, "a 4-layer, 256-wide model"),
        lm_n_heads=(8, "head size 32"),
        lm_vocab_size=(4000, "most frequent words of the corpus"),
        lm_batch=(128, "GPU batch"),
        lm_steps=(10_000, "GPU minutes"),
        lm_probes=(2048, "held-out probe windows"),
        lm_ranks=((1, 4, 16, 64), "up to a quarter of the 256 dimensions"),
        lm_corpus=("kjv", "the larger real corpus where Debian's bible-kjv is installed (elsewhere: --set "
                          "lm_corpus=stdlib or a local text file)"),
    ),
}


# --------------------------------------------------------------------------------------------
# Run, figures
# --------------------------------------------------------------------------------------------


def final(curve: pd.DataFrame) -> pd.DataFrame:
    """The last evaluation of every (variant, seed)."""
    last = curve.groupby(["variant", "seed"])["step"].transform("max")
    return curve[curve["step"] == last]


def crossing_steps(curve: pd.DataFrame) -> tuple[int | None, int | None]:
    """t_FF: first evaluation where the mean FF2 margin is > 0; t_ICL: first where mean acc_noFF2 >= 0.5."""
    mean = curve.groupby("step")[["ff2_margin", "acc_noFF2"]].mean().sort_index()
    return first_point_above(mean.index, mean["ff2_margin"], 0.0), first_point_above(mean.index, mean["acc_noFF2"], 0.5,
        inclusive=True)


def _figure_dynamics(ctx: RunContext, curve: pd.DataFrame) -> None:
    fig, ax = new_figure(width=7.5, height=4.2)
    g = curve.groupby("step")
    lines = [("acc_full", "accuracy (full)"), ("acc_noFF2", "accuracy (FF2 dropped)"), ("P_noise_full",
        "P(noise) (full)"), ("induction_mass", "layer-2 attention on o")]
    for i, (col, label) in enumerate(lines):
        mean, lo, hi = g[col].mean(), g[col].min(), g[col].max()
        ax.plot(mean.index, mean.values, color=color(i), label=label)
        if curve["seed"].nunique() > 1:
            ax.fill_between(mean.index, lo.values, hi.values, color=color(i), alpha=0.2, lw=0)
    ax.set_xlabel("training step")
    ax.set_ylabel("probability / accuracy at test triggers (p = 0)")
    ax.set_ylim(-0.02, 1.02)
    right = ax.twinx()
    margin = g["ff2_margin"].mean()
    right.plot(margin.index, margin.values, color=color(4), ls="--", label="FF2 margin for noise (right)")
    right.axhline(0, color="0.6", lw=0.8)
    right.set_ylabel("FF2 direct-logit margin of the noise token")
    t_ff, t_icl = crossing_steps(curve)
    for t, name in ((t_ff, "t_FF"), (t_icl, "t_ICL")):
        if t is not None:
            ax.axvline(t, color="0.3", ls=":", lw=1)
            ax.text(t, 1.0, f" {name}", va="top", fontsize=8)
    handles = ax.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=8, loc="center right")
    ax.set_title("FF2 learns the noise association before attention learns in-context recall")
    ctx.figure("training_dynamics", fig)


def _figure_ablation(ctx: RunContext, end: pd.DataFrame) -> None:
    fig, ax = new_figure(width=6.0, height=3.8)
    settings = [("full", "P_answer_full", "P_noise_full"), ("FF2 dropped", "P_answer_noFF2", "P_noise_noFF2"), (
        "attention 2 dropped", "P_answer_noAttn2", "P_noise_noAttn2")]
    x = np.arange(len(settings))
    p_o = np.array([end[a].mean() for _, a, _ in settings])
    p_tau = np.array([end[b].mean() for _, _, b in settings])
    ax.bar(x, p_o, color=color(0), label="P(o): in-context answer")
    ax.bar(x, p_tau, bottom=p_o, color=color(1), label="P(noise)")
    ax.bar(x, 1 - p_o - p_tau, bottom=p_o + p_tau, color="0.8", label="P(other)")
    ax.set_xticks(x, [s for s, _, _ in settings])
    ax.set_ylabel("mean probability at test triggers")
    ax.legend(fontsize=8)
    ax.set_title("Where the two answers live")
    ctx.figure("ablation_bars", fig)


def _figure_p_sweep(ctx: RunContext, end: pd.DataFrame) -> None:
    sweep = end[end["ff"]].groupby("p_noise")["P_noise_full"].agg(["mean", "min", "max"])
    if len(sweep) < 2:
        return
    fig, ax = new_figure(width=4.8, height=4.0)
    ax.plot([0, 1], [0, 1], color="0.5", ls="--", label="Bayes: P(noise) = p")
    ax.errorbar(sweep.index, sweep["mean"], yerr=[sweep["mean"] - sweep["min"], sweep["max"] - sweep["mean"]], fmt="o",
                color=color(0), label="trained (seed range)")
    ax.set_xlabel("training noise probability p")
    ax.set_ylabel("P(noise) at test triggers")
    ax.legend(fontsize=8)
    ctx.figure("p_sweep", fig)


def _figure_lm(ctx: RunContext, lm: pd.DataFrame) -> None:
    _, test = laser_selection(lm)
    base = lm[(lm["split"] == "test") & ~lm["truncated"]].iloc[0]
    fig, (left, mid, right) = new_figure(ncols=3, width=13.0, height=3.9)
    for i, (layer, t) in enumerate(test.groupby("layer")):
        t = t.sort_values("rank")
        kw = dict(color=color(i), marker="o", label=f"MLP {int(layer)}")
        left.plot(t["rank"], t["icl_acc"], **kw)
        mid.plot(t["rank"], t["P_answer"], **kw)
        mid.plot(t["rank"], t["P_generic"], **{**kw, "ls": "--", "marker": "s", "label": None})
        right.plot(t["rank"], 100 * t["ppl_change"], **kw)
    left.axhline(base["icl_acc"], color="0.4", ls="--", label="no truncation")
    mid.axhline(base["P_answer"], color="0.4", lw=0.8)
    mid.axhline(base["P_generic"], color="0.4", lw=0.8, ls="--")
    right.axhline(10, color="0.6", ls=":", label="+10%")
    generic = lm["generic"].iloc[0]
    for ax, ylabel in ((left, "in-context accuracy (test)"), (mid, f"P(name) solid, P('{generic}') dashed (test)"), (
        right, "natural-text perplexity change (%)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("rank kept in the MLP input matrix")
        ax.set_ylabel(ylabel)
    left.legend(fontsize=8)
    fig.suptitle(f"LASER on a {int(lm['n_layers'].iloc[0])}-layer model trained on real text: in-context name vs "
                 f"generic '{generic}'")
    ctx.figure("lm_truncation", fig)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


claims = Claims("ff-vs-attention")


def _paper_scale(cfg: dict) -> bool:
    return cfg["d_model"] >= 256 and cfg["length"] >= 256 and cfg["steps"] >= 5000


def _main_end(res) -> pd.DataFrame:
    end = final(res.table("curves"))
    return end[end["variant"] == "full"]


S_BAYES = (
    "The full model predicts the noise token at its training rate: mean P(noise) at test triggers lies in [p - 0.15, p "
    "+ 0.2] (Bayes: p)."
)


@claims.add("bayes-noise-rate", S_BAYES, REF + ", Sec. 3 (Bayes-optimal noise rate)")
def judge_bayes(res, v) -> Verdict:
    p = res.config["p_noise"]
    end = _main_end(res)
    value = float(end["P_noise_full"].mean())
    lo, hi = p - 0.15, p + 0.2
    detail = (
        f"P(noise) = {value:.3f} over {len(end)} seed(s) (per seed "
        f"{', '.join(f'{v:.3f}' for v in end['P_noise_full'])}); need [{lo:.2f}, {hi:.2f}]"
    )
    return v.judged(lo <= value <= hi, value, p, "[-0.15, +0.2]", detail)


S_ABLATE = ("Dropping FF2 deletes the association and keeps the in-context answer: accuracy without FF2 >= 0.8 (quick) "
            "/ 0.9 (paper), "
            "P(noise) without FF2 <= 0.15, and accuracy gains >= 0.25 over the full model.")


@claims.add("ablate-ff2", S_ABLATE, REF + ", Sec. 3, Fig. 2 (FF2 ablation)")
def judge_ablate(res, v) -> Verdict:
    end = _main_end(res)
    bar = 0.9 if _paper_scale(res.config) else 0.8
    acc, acc_full, p_noise = float(end["acc_noFF2"].mean()), float(end["acc_full"].mean()), float(end[
        "P_noise_noFF2"].mean())
    gain = acc - acc_full
    ok = acc >= bar and p_noise <= 0.15 and gain >= 0.25
    detail = (
        f"acc without FF2 {acc:.3f} (need >= {bar}); P(noise) without FF2 {p_noise:.3f} (need <= 0.15); full-model acc "
        f"{acc_full:.3f}, gain {gain:+.3f} (need >= 0.25)"
    )
    return v.judged(ok, acc, f">= {bar}", bar, detail)


S_FF2 = (
    "FF2 stores the noise association: its direct-logit margin for the noise token is > 0 at >= 90% of test trigger "
    "positions at the end of training."
)


@claims.add("ff2-stores-noise", S_FF2, REF + ", Sec. 3 (FF stores the bigram)")
def judge_ff2(res, v) -> Verdict:
    end = _main_end(res)
    frac = float(end["ff2_margin_positive"].mean())
    detail = (
        f"fraction with positive margin {frac:.3f} (need >= 0.9); mean margin {float(end['ff2_margin'].mean()):.3f}"
    )
    return v.judged(frac >= 0.9, frac, ">= 0.9", 0.9, detail)


S_FIRST = (
    "The association is learned first: t_FF (first evaluation with mean FF2 margin > 0) <= t_ICL / 2 (t_ICL: first "
    "evaluation with accuracy without FF2 >= 0.5)."
)


@claims.add("ff-first", S_FIRST, REF + ", Sec. 4 (gradient noise: FF learns first)")
def judge_first(res, v) -> Verdict:
    curve = res.table("curves")
    t_ff, t_icl = crossing_steps(curve[curve["variant"] == "full"])
    every = res.config["evaluate_every"]
    if t_icl is None:
        return v.judged(False, None, None, None, f"in-context accuracy without FF2 never reached 0.5 (t_FF = {t_ff}); "
                                                 f"the in-context mechanism did not form")
    if t_ff is None:
        return v.judged(False, None, None, None, f"the FF2 margin never turned positive (t_ICL = {t_icl})")
    detail = (
        f"t_FF = {t_ff}, t_ICL = {t_icl} (evaluations every {every} steps; t_FF is an upper bound at that resolution); "
        f"need t_FF <= t_ICL / 2 = {t_icl / 2:g}"
    )
    return v.judged(t_ff <= t_icl / 2, t_ff / t_icl, "<= 0.5", 0.5, detail)


S_INDUCTION = (
    "The in-context answer comes from an induction head: mean layer-2 attention on the token after the previous "
    "trigger >= 0.2 (quick) / 0.4 (paper) (uniform causal attention: ~1/t)."
)


@claims.add("induction-head", S_INDUCTION, REF + ", Sec. 3 (induction head)")
def judge_induction(res, v) -> Verdict:
    end = _main_end(res)
    bar = 0.4 if _paper_scale(res.config) else 0.2
    mass = float(end["induction_mass"].mean())
    uniform = 2.0 / res.config["length"]
    detail = (
        f"induction mass {mass:.3f} (need >= {bar}); uniform attention over the prefix would give about {uniform:.3f}"
    )
    return v.judged(mass >= bar, mass, f">= {bar}", bar, detail)


S_NOFF = ("Without FF layers the association moves into the layer-2 attention value path: the no-FF model's P(noise) "
          "still lies in [p - 0.15, p + 0.2], "
          "and dropping the lower singular directions of the layer-2 value matrix W_V (keeping its top-k part, k "
          "chosen on one half of the test "
          "sequences; the authors' value truncation) brings P(noise) below 0.15 on the other half without lowering the "
          "in-context accuracy "
          "(which must be at least 5x chance, 5/V). "
          "(Second half reconstructed; dropping a whole attention layer is reported, not judged: it removes the "
          "in-context answer too.)")


@claims.add("no-ff-variant", S_NOFF, REF + ", Sec. 3 (models without FF)")
def judge_no_ff(res, v) -> Verdict:
    end = final(res.table("curves"))
    noff = end[end["variant"] == "no-ff"]
    if noff.empty:
        raise Undecided("this config trains no model without FF layers (no_ff_variant=false; off at quick for the CPU "
                        "budget: "
                        "--preset no-ff-cpu trains it at quick sizes in ~85 s on 2 cores, the paper preset at "
                        "paper size)")
    p = res.config["p_noise"]
    value = float(noff["P_noise_full"].mean())
    picked = pick_value_rank(res.table("value_truncation"))
    p_cut, acc_cut, acc_full = float(picked["P_noise"].mean()), float(picked["acc"].mean()), float(picked[
        "acc_untouched"].mean())
    # the in-context path must exist for "keeps the in-context answer" to mean anything: at least 5x chance (1/V)
    floor = 5.0 / res.config["vocab_size"]
    ok = p - 0.15 <= value <= p + 0.2 and p_cut < 0.15 and acc_cut >= max(acc_full, floor)
    detail = (f"no-FF P(noise) {value:.3f} (need [{p - 0.15:.2f}, {p + 0.2:.2f}]); layer-2 W_V kept at rank "
              f"{', '.join(str(int(r)) for r in picked['rank'])} of {res.config['d_model']} (picked on the validation "
              f"half): on the test half P(noise) "
              f"{float(picked['P_noise_untouched'].mean()):.3f} -> {p_cut:.3f} (need < 0.15), in-context accuracy "
              f"{acc_full:.3f} -> {acc_cut:.3f} (need no fall, and >= {floor:.3f} = 5/V); "
              f"reported: whole layer-2 attention dropped: P(noise) {float(picked['P_noise_no_layer'].mean()):.3f}, "
              f"accuracy {float(picked['acc_no_layer'].mean()):.3f}; "
              f"attention 1 dropped: P(noise) {float(noff['P_noise_noAttn1'].mean()):.3f}")
    return v.judged(ok, value, p, "[-0.15, +0.2]", detail)


S_SWEEP = (
    "Over training noise levels p in {0.1, 0.3, 0.5, 0.7}: |P(noise) - p| <= 0.12 and accuracy without FF2 >= 0.85 at "
    "every p."
)

# Measured at quick sizes (seed 0, --set p_sweep=0.1,0.3,0.7): the reason the quick preset leaves the sweep to the paper
# preset.
SWEEP_AT_QUICK = ("measure it at reduced size with --set p_sweep=0.1,0.3,0.7 (three more models, minutes on 2 CPU "
                  "cores); what that measured when "
                  "we ran it, and why the card's accuracy bar needs paper size, is in docs/studies/ff-vs-attention.md; "
                  "judged at paper size")


@claims.add("p-sweep", S_SWEEP, REF + ", Sec. 3 (noise level)")
def judge_sweep(res, v) -> Verdict:
    end = final(res.table("curves"))
    full = end[end["ff"]].groupby("p_noise")[["P_noise_full", "acc_noFF2"]].mean()
    if len(full) < 2:
        raise Undecided(f"this config trains no p sweep (p_sweep empty; four models exceed the quick budget); "
                        f"{SWEEP_AT_QUICK}")
    errors = (full["P_noise_full"] - full.index.to_numpy()).abs()
    ok = bool((errors <= 0.12).all() and (full["acc_noFF2"] >= 0.85).all())
    detail = "; ".join(f"p={p:g}: P(noise) {r.P_noise_full:.3f}, acc without FF2 {r.acc_noFF2:.3f}" for p,
                       r in full.iterrows())
    return v.judged(ok, float(errors.max()), 0.0, 0.12, detail)


S_LASER = ("Our analogue of the Pythia finding, on a language model trained on real text: a low-rank truncation of a "
           "late MLP (second half of the layers; "
           "layer and rank picked on a validation split, as LASER does) raises in-context accuracy at held-out trigger "
           "prompts by >= 0.1 "
           "while natural-text perplexity changes by <= 10%.")


# Measured on CPU (preset lm: KJV, 2 layers, d = 64, 3000 steps, seed 0): why the quick preset leaves this claim to the
# paper preset.
LASER_AT_CPU = ("measure it on CPU with --preset lm (a 2-layer language model on the KJV, minutes); what that measured "
                "when we ran it is in the "
                "docs/studies/ff-vs-attention.md; judged at paper size")


@claims.add("truncation-helps", S_LASER, REF + ", Sec. 5 (LASER on Pythia; our own LM here)")
def judge_laser(res, v) -> Verdict:
    lm = res.table("lm", unless=f"this config does not train the language model (lm=false: minutes on CPU); "
                                f"{LASER_AT_CPU}")
    pick, test = laser_selection(lm)
    base = lm[(lm["split"] == "test") & ~lm["truncated"]].iloc[0]
    late = test[test["layer"] >= test["n_layers"] / 2]
    grid = "; ".join(
        f"layer {int(r.layer)} rank {int(r.rank)}: {r.gain:+.3f} ({r.ppl_change:+.0%})" for r in late.itertuples())
    head = f"test split: full model in-context accuracy {base['icl_acc']:.3f}, perplexity {base['perplexity']:.1f}"
    if pick is None:
        return v.judged(False, None, ">= 0.1", 0.1, f"{head}; no late-layer truncation keeps validation perplexity "
                                                    f"within 10% (test grid, gain (perplexity change): {grid})")
    ok = pick["gain"] >= 0.1 and abs(pick["ppl_change"]) <= 0.10
    detail = (f"{head}; picked on the validation split: layer {int(pick['layer'])}, rank {int(pick['rank'])} -> test "
              f"gain {pick['gain']:+.3f} (need >= 0.1), "
              f"perplexity {pick['ppl_change']:+.1%} (need within 10%); late-layer test grid: {grid}")
    return v.judged(ok, float(pick["gain"]), ">= 0.1", 0.1, detail)


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
        raise ConfigError(f"length/trigger_boost: only {int(test.seen.sum())} test trigger positions with an earlier "
                          f"trigger; raise length or trigger_boost")
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
    _figure_dynamics(ctx, main)
    _figure_ablation(ctx, end[end["variant"] == "full"])
    _figure_p_sweep(ctx, end)
    t_ff, t_icl = crossing_steps(main)
    ctx.scalar("t_FF", t_ff)
    ctx.scalar("t_ICL", t_icl)
    for col in ("acc_full", "acc_noFF2", "P_noise_full", "P_noise_noFF2", "induction_mass", "ff2_margin_positive"):
        ctx.scalar(col, float(end.loc[end["variant"] == "full", col].mean()))
    if cfg.lm:
        lm = run_lm(cfg, ctx, corpus)
        ctx.table("lm", lm)
        _figure_lm(ctx, lm)
