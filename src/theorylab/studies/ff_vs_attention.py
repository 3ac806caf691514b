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
(:mod:`theorylab.studies.ff_vs_attention_lm`), then LASER-style truncation of its last MLP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from pydantic import Field, model_validator

from theorylab.core import Claims, ConfigError, Diverged, Preset, RunContext, StudyConfig, Verdict, study
from theorylab.core.errors import Undecided
from theorylab.core.plotting import color, new_figure
from theorylab.data.markov import TriggerBatch, TriggerNoiseTask, bigram_counts
from theorylab.data.text import CORPORA, CharVocab, check_corpus, TriggerWordTask, WordVocab, proper_names, random_windows, resolve_corpus
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.ablation import ablate, attention_to, direct_logit, logit_margin, low_rank
from theorylab.train.batched import AdamWSchedule, StackedModels, train_stacked

PAPER = "Chen, Bruna, Bietti, arXiv 2406.03068 (2024); ICLR 2025"
REF = "arXiv 2406.03068"
IGNORE = -100

Prob = Annotated[float, Field(ge=0.0, le=1.0)]


class FFvsAttentionConfig(StudyConfig):
    # --- task -----------------------------------------------------------------------------------
    vocab: int = Field(64, ge=4, le=100_000, description="tokens V of the bigram chain (quick 64, paper 65); the noise token is V - 1")
    seq_len: int = Field(64, ge=8, le=8192, description="sequence length T (quick 64, paper 256)")
    p_noise: float = Field(0.5, ge=0.0, lt=1.0, description="training probability p of the noise token after a trigger")
    dirichlet_alpha: float = Field(0.2, gt=0, le=100, description="Dirichlet concentration of the bigram rows")
    trigger_boost: float = Field(0.1, ge=0.0, lt=1.0, description="f_q: every row jumps to the trigger with this probability (0 = plain chain)")
    background: str = Field(
        "dirichlet", min_length=1,
        description="background chain: 'dirichlet', or a corpus ('kjv' or a text file) whose character bigrams are used (V = characters + 1 noise token; the authors use tiny Shakespeare)",
    )
    data_seed: int = Field(0, ge=0, description="seed of the bigram chain (fixed across training seeds)")
    train_bank: int = Field(6400, ge=0, le=10_000_000, description="training sequences drawn once and resampled (0: fresh sequences every step)")
    test_sequences: int = Field(256, ge=16, le=1_000_000, description="test sequences at p = 0")
    # --- model ----------------------------------------------------------------------------------
    d_model: int = Field(64, ge=4, le=8192, description="width d (quick 64, paper 256)")
    ff_mult: int = Field(4, ge=1, le=64, description="FF hidden width = ff_mult * d")
    # --- optimisation ---------------------------------------------------------------------------
    optimizer: str = Field("adam", pattern="^(adam|sgd)$", description="'adam' (quick) or 'sgd' with momentum (paper, as the authors' code)")
    lr: float = Field(3e-3, gt=0, le=10.0, description="learning rate (quick Adam 3e-3; paper SGD 0.03)")
    momentum: float = Field(0.9, ge=0, lt=1, description="SGD momentum (paper 0.9)")
    schedule: str = Field("cosine", pattern="^(cosine|constant)$", description="learning-rate schedule: cosine decay to 0 (quick) or constant (paper, as the authors' code)")
    weight_decay: float = Field(0.0, ge=0, le=1.0, description="weight decay (paper 1e-4)")
    batch: int = Field(64, ge=1, le=65536, description="sequences per step (quick 64, paper 512)")
    steps: int = Field(800, ge=1, le=10_000_000, description="training steps (quick 800, paper 5000)")
    eval_every: int = Field(50, ge=1, le=1_000_000, description="steps between test evaluations")
    seeds: int = Field(1, ge=1, le=64, description="training seeds, trained as one batch (paper 5)")
    # --- variants (paper) -----------------------------------------------------------------------
    no_ff_variant: bool = Field(False, description="also train the model without any FF layer (claim no-ff-variant)")
    value_ranks: tuple[Annotated[int, Field(ge=1, le=65536)], ...] = Field(
        (1, 2, 4, 8, 16, 32), min_length=1,
        description="ranks kept when the no-FF model's layer-2 value matrix W_V is truncated (its lower singular directions dropped); quick d = 64: up to d/2",
    )
    p_sweep: tuple[Prob, ...] = Field((), description="extra training noise levels p (claim p-sweep); empty: none")
    # --- real-text part -------------------------------------------------------------------------
    lm: bool = Field(True, description="run the real-text language-model part")
    lm_corpus: str = Field("stdlib", min_length=1, description="word-level text: 'stdlib' (prose of Python's own docstrings, 240k words), 'kjv' (Debian's bible-kjv, 790k words) or a local plain-text file")
    lm_vocab: int = Field(2000, ge=16, le=200_000, description="word vocabulary of the language model (most frequent words + <unk>)")
    lm_seq_len: int = Field(128, ge=8, le=4096, description="training window length of the language model")
    lm_d_model: int = Field(128, ge=8, le=8192, description="width of the language model")
    lm_layers: int = Field(4, ge=2, le=64, description="layers of the language model (card: 4)")
    lm_heads: int = Field(4, ge=1, le=128, description="heads per layer of the language model")
    lm_batch: int = Field(32, ge=1, le=65536, description="windows per step of the language model")
    lm_steps: int = Field(1500, ge=1, le=10_000_000, description="training steps of the language model")
    lm_lr: float = Field(3e-3, gt=0, le=1.0, description="AdamW learning rate of the language model")
    lm_task_rate: float = Field(1.0, ge=0.0, le=1.0, description="fraction of training windows carrying the written-in trigger task")
    lm_p_noise: float = Field(0.5, ge=0.0, lt=1.0, description="probability of the generic word after the trigger word in training windows")
    lm_ranks: tuple[Annotated[int, Field(ge=0, le=65536)], ...] = Field((1, 4, 16), min_length=1, description="LASER ranks kept in the last MLP")
    lm_pretrained: str | None = Field(
        None, description="a local Hugging Face causal-LM directory (e.g. Pythia weights you own): probed instead of training our own model"
    )
    lm_probes: int = Field(512, ge=16, le=1_000_000, description="held-out probe windows")

    @model_validator(mode="after")
    def _consistent(self) -> "FFvsAttentionConfig":
        if self.train_bank and self.train_bank < self.batch:
            raise ValueError(f"'train_bank' ({self.train_bank}) must be 0 or >= 'batch' ({self.batch})")
        if self.background != "dirichlet" and self.background not in CORPORA and not Path(self.background).expanduser().is_file():
            raise ValueError(f"'background' must be 'dirichlet', one of {sorted(CORPORA)} or an existing text file; {self.background!r} is neither")
        if self.lm:
            check_corpus("lm_corpus", self.lm_corpus)
        if self.lm_pretrained is not None and self.lm and not Path(self.lm_pretrained).expanduser().is_dir():
            raise ValueError(f"'lm_pretrained' must be a local model directory; {self.lm_pretrained!r} does not exist")
        if self.lm_d_model % self.lm_heads:
            raise ValueError(f"'lm_heads' ({self.lm_heads}) must divide 'lm_d_model' ({self.lm_d_model})")
        return self


# --------------------------------------------------------------------------------------------
# Synthetic part: model, data, measurements
# --------------------------------------------------------------------------------------------

FF2 = "blocks.1.mlp"
ATTN1 = "blocks.0.attn"
ATTN2 = "blocks.1.attn"


def build_model(cfg: FFvsAttentionConfig, seed: int, ff: bool = True, vocab: int | None = None) -> ToyTransformer:
    """The paper's two-layer model (Sec. 3; Bietti et al. 2023): one head per layer, learned
    absolute positions, no norm, ReLU FF of width 4d after each attention, token embedding and
    unembedding frozen at N(0, 1/d), no biases. ``ff=False`` removes both FF layers; ``vocab``
    overrides ``cfg.vocab`` (a text background fixes its own)."""
    return ToyTransformer(
        d_model=cfg.d_model, n_layers=2, n_heads=1, mlp_width=cfg.ff_mult * cfg.d_model if ff else 0, activation="relu",
        norm="none", causal=True, positional="learned", max_len=cfg.seq_len, vocab_size=vocab or cfg.vocab, freeze_embedding=True,
        freeze_readout=True, embedding_std=cfg.d_model**-0.5, bias=False, seed=seed,
    )


def make_task(cfg: FFvsAttentionConfig) -> TriggerNoiseTask:
    """The card's Dirichlet chain on ``cfg.vocab`` tokens, or the character-bigram chain of a text
    (as the authors' tiny-Shakespeare background) with one extra token as the noise token."""
    if cfg.background == "dirichlet":
        return TriggerNoiseTask.dirichlet(cfg.vocab, cfg.dirichlet_alpha, cfg.trigger_boost, seed=cfg.data_seed)
    text = resolve_corpus(cfg.background)
    chars = CharVocab.from_text(text)
    vocab = len(chars) + 1  # the last id is the noise token, never emitted by the text
    return TriggerNoiseTask.from_transition(bigram_counts(chars.encode(text), vocab), noise=vocab - 1, trigger_boost=cfg.trigger_boost)


def trigger_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy at the trigger positions only (targets = IGNORE elsewhere); vmap-safe."""
    mask = targets != IGNORE
    logp = logits.log_softmax(-1).gather(-1, targets.clamp(min=0)[..., None]).squeeze(-1)
    return -(logp * mask).sum() / mask.sum().clamp(min=1)


def previous_trigger_next(batch: TriggerBatch) -> torch.Tensor:
    """For each position t holding the trigger, the position right after the previous trigger
    occurrence (where o, or noise, was written): the key an induction head attends to. -1 if none."""
    n, t = batch.tokens.shape
    pos = torch.arange(t).expand(n, t)
    is_trig = batch.after_trigger
    marked = torch.where(is_trig, pos, torch.full_like(pos, -1))
    last = torch.cummax(marked, dim=1).values  # latest trigger at or before t
    prev = torch.full_like(pos, -1)
    prev[:, 1:] = last[:, :-1]  # latest trigger strictly before t
    return torch.where(is_trig & (prev >= 0), prev + 1, torch.full_like(prev, -1))


@torch.no_grad()
def measure(model: ToyTransformer, test: TriggerBatch, noise: int) -> dict[str, float]:
    """The card's test measurements at trigger positions with an earlier trigger (p = 0 data)."""
    device = next(model.parameters()).device
    tokens = test.tokens.to(device)
    where = test.seen.to(device)
    answer = test.outputs.to(device)[:, None].expand_as(tokens)[where]
    names = ["blocks.1.attn.hook_pattern"] + (["blocks.1.hook_mlp_out"] if model.blocks[1].mlp is not None else [])
    logits, cache = model.run_with_cache(tokens, names)
    probs = logits[where].softmax(-1)
    out = dict(
        acc_full=float((probs.argmax(-1) == answer).double().mean()),
        P_noise_full=float(probs[:, noise].double().mean()),
        P_answer_full=float(probs.gather(-1, answer[:, None]).double().mean()),
    )
    key = previous_trigger_next(test).to(device)
    out["induction_mass"] = float(attention_to(cache["blocks.1.attn.hook_pattern"][:, 0], key)[where].double().nanmean())
    if model.blocks[1].mlp is not None:
        ff2 = direct_logit(cache["blocks.1.hook_mlp_out"][where], model.readout.weight)
        margin = logit_margin(ff2, noise).double()
        out["ff2_margin"] = float(margin.mean())
        out["ff2_margin_positive"] = float((margin > 0).double().mean())
        with ablate(model, FF2):
            p2 = model(tokens)[where].softmax(-1)
        out.update(
            acc_noFF2=float((p2.argmax(-1) == answer).double().mean()),
            P_noise_noFF2=float(p2[:, noise].double().mean()),
            P_answer_noFF2=float(p2.gather(-1, answer[:, None]).double().mean()),
        )
    for layer, name in ((1, ATTN1), (2, ATTN2)):
        with ablate(model, name):
            p3 = model(tokens)[where].softmax(-1)
        out[f"P_noise_noAttn{layer}"] = float(p3[:, noise].double().mean())
        out[f"P_answer_noAttn{layer}"] = float(p3.gather(-1, answer[:, None]).double().mean())
    return out


VALUE2 = "blocks.1.attn.W_V"


def split_halves(test: TriggerBatch) -> dict[str, TriggerBatch]:
    """The test sequences cut in two disjoint halves: 'validation' picks, 'test' judges."""
    half = len(test.tokens) // 2
    cut = lambda a, b: TriggerBatch(test.tokens[a:b], test.outputs[a:b], test.after_trigger[a:b], test.seen[a:b])  # noqa: E731
    return {"validation": cut(0, half), "test": cut(half, len(test.tokens))}


@torch.no_grad()
def value_truncation(model: ToyTransformer, test: TriggerBatch, noise: int, ranks: tuple[int, ...]) -> list[dict]:
    """The no-FF model's layer-2 attention value path (card, claim 6): the value matrix W_V of
    layer 2 truncated to its top-``rank`` singular directions (the authors' ``wv_low_rank`` on the
    second layer; LASER's operation), measured at test triggers on each half of ``test``. Rank -1
    is the untouched model; rank 0 zeroes W_V, i.e. drops the whole layer-2 attention output."""
    device = next(model.parameters()).device
    rows = []
    for split, half in split_halves(test).items():
        tokens, where = half.tokens.to(device), half.seen.to(device)
        answer = half.outputs.to(device)[:, None].expand_as(tokens)[where]
        for rank in (-1, 0, *ranks):
            if rank < 0:
                probs = model(tokens)[where].softmax(-1)
            else:
                with low_rank(model, {VALUE2: rank}):
                    probs = model(tokens)[where].softmax(-1)
            rows.append(dict(split=split, rank=rank, positions=int(where.sum()), P_noise=float(probs[:, noise].double().mean()),
                             P_answer=float(probs.gather(-1, answer[:, None]).double().mean()), acc=float((probs.argmax(-1) == answer).double().mean())))
    return rows


def train_variant(cfg: FFvsAttentionConfig, ctx: RunContext, task: TriggerNoiseTask, test: TriggerBatch, p_noise: float, ff: bool, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train ``cfg.seeds`` models as one batch; return the measurement curve (one row per step and
    seed) and, for a model without FF layers, the layer-2 value truncation at the end (else empty)."""
    device = ctx.device
    seeds = range(cfg.seeds)
    init = [int(ctx.rng(f"init/{name}/seed{s}").integers(2**62)) for s in seeds]
    models = StackedModels([build_model(cfg, seed, ff=ff, vocab=task.vocab) for seed in init]).to(device)
    gen = ctx.generator(f"data/{name}")
    bank = task.sample(cfg.train_bank, cfg.seq_len, p_noise, gen) if cfg.train_bank else None

    def batches(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        if bank is not None:
            idx = torch.randint(cfg.train_bank, (cfg.seeds, cfg.batch), generator=gen)
            x, y = bank.tokens[idx], bank.targets(IGNORE)[idx]
        else:
            b = task.sample(cfg.seeds * cfg.batch, cfg.seq_len, p_noise, gen)
            x, y = b.tokens.view(cfg.seeds, cfg.batch, -1), b.targets(IGNORE).view(cfg.seeds, cfg.batch, -1)
        return x.to(device), y.to(device)

    rows: list[dict] = []

    def evaluate(n_updates: int) -> None:
        for s in seeds:
            rows.append(dict(variant=name, p_noise=p_noise, ff=ff, seed=s, step=n_updates, **measure(models.member(s), test, task.noise)))

    optim = AdamWSchedule(
        lr=cfg.lr, kind="sgd" if cfg.optimizer == "sgd" else "adamw", momentum=cfg.momentum, weight_decay=cfg.weight_decay, schedule=cfg.schedule,
    )
    log = train_stacked(
        models, batches, trigger_loss, steps=cfg.steps, optim=optim, progress=ctx.progress, description=f"train {name}",
        # only the main model's curve is read at every step (claim association-first, figure training_dynamics);
        # the variants are judged at their last step, so they are measured at the start and the end only
        evaluate=evaluate, evaluate_every=cfg.eval_every if name == "full" else cfg.steps,
    )
    if log.diverged_at.min() >= 0:
        raise Diverged(f"training loss of every seed of {name}", int(log.diverged_at.min()))
    curve = pd.DataFrame(rows)
    bad = {s: int(log.diverged_at[s]) for s in seeds if log.diverged_at[s] >= 0}
    for s, step in bad.items():
        ctx.log(f"{name}: seed {s} diverged at step {step}; its rows are dropped")
    truncation = pd.DataFrame()
    if not ff:
        truncation = pd.DataFrame([dict(variant=name, p_noise=p_noise, seed=s, **row) for s in seeds if s not in bad
                                   for row in value_truncation(models.member(s), test, task.noise, cfg.value_ranks)])
    return curve[~curve["seed"].isin(list(bad))], truncation


# --------------------------------------------------------------------------------------------
# Real-text part: a small language model on a real corpus, then LASER on its last MLP
# --------------------------------------------------------------------------------------------

TRIGGER_WORD = "of"


Corpus = tuple[WordVocab, np.ndarray, np.ndarray, TriggerWordTask]


def lm_corpus(cfg: FFvsAttentionConfig) -> Corpus:
    """Vocabulary, train/held-out token streams (first 90% / last 10% of the text) and the task."""
    text = resolve_corpus(cfg.lm_corpus)
    vocab = WordVocab.from_text(text, cfg.lm_vocab)
    stream = vocab.encode(text)
    cut = int(0.9 * len(stream))
    if cut <= cfg.lm_seq_len or len(stream) - cut <= cfg.lm_seq_len:
        raise ConfigError(f"lm_corpus: {len(stream)} words is too short for windows of lm_seq_len = {cfg.lm_seq_len}")
    task = TriggerWordTask.from_corpus(vocab, stream[:cut], TRIGGER_WORD)
    return vocab, stream[:cut], stream[cut:], task


def build_lm(cfg: FFvsAttentionConfig, vocab_size: int, seed: int) -> ToyTransformer:
    """A small GPT-style model: pre-LayerNorm, GELU MLP of width 4d, learned positions, causal."""
    return ToyTransformer(
        d_model=cfg.lm_d_model, n_layers=cfg.lm_layers, n_heads=cfg.lm_heads, mlp_width=4 * cfg.lm_d_model, activation="gelu",
        norm="layer", final_norm=True, causal=True, positional="learned", max_len=cfg.lm_seq_len, vocab_size=vocab_size, seed=seed,
    )


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over every position; vmap-safe."""
    logp = logits[:, :-1].log_softmax(-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return -logp.mean()


def repeated_names(windows: torch.Tensor, is_name: torch.Tensor) -> torch.Tensor:
    """Natural repeated-name completions: position t of a window where the next token is a proper
    name that already occurred at or before t. (n, T) bool (the last position is never marked)."""
    nxt = windows[:, 1:]  # (n, T-1)
    earlier = (windows[:, None, :] == nxt[:, :, None]) & torch.ones(nxt.shape[1], windows.shape[1], dtype=torch.bool).tril()  # key j <= t
    mask = torch.zeros_like(windows, dtype=torch.bool)
    mask[:, :-1] = is_name[nxt] & earlier.any(-1)
    return mask


def top_successor(stream: np.ndarray, vocab_size: int) -> torch.Tensor:
    """The corpus's most frequent next token after each token (its bigram arg-max): (V,)."""
    pairs, counts = np.unique(stream[:-1] * vocab_size + stream[1:], return_counts=True)
    prev, nxt = pairs // vocab_size, pairs % vocab_size
    order = np.lexsort((counts, prev))  # by prev, then count ascending: the last of each prev wins
    top = np.arange(vocab_size)
    top[prev[order]] = nxt[order]
    return torch.from_numpy(top)


@torch.no_grad()
def lm_measure(model: ToyTransformer, probes: TriggerBatch, natural: torch.Tensor, task: TriggerWordTask, is_name: torch.Tensor,
               successor: torch.Tensor, chunk: int = 256) -> dict[str, float]:
    """In-context recall at held-out trigger positions (p = 0); on untouched held-out text, the
    perplexity and the natural repeated-name completions (probability of the name vs of the
    corpus's most frequent successor of the current word)."""
    device = next(model.parameters()).device
    sums = dict.fromkeys(("correct", "p_answer", "p_generic", "count", "nat_correct", "nat_p_name", "nat_p_generic", "nat_count"), 0.0)
    for i in range(0, len(probes.tokens), chunk):
        tokens = probes.tokens[i : i + chunk].to(device)
        where = probes.seen[i : i + chunk].to(device)
        answer = probes.outputs[i : i + chunk].to(device)[:, None].expand_as(tokens)[where]
        probs = model(tokens)[where].softmax(-1).double()
        sums["correct"] += float((probs.argmax(-1) == answer).sum())
        sums["p_answer"] += float(probs.gather(-1, answer[:, None]).sum())
        sums["p_generic"] += float(probs[:, task.generic].sum())
        sums["count"] += int(where.sum())
    nll = []
    for i in range(0, len(natural), chunk):
        w = natural[i : i + chunk]
        logits = model(w.to(device))
        nll.append(float(next_token_loss(logits, w.to(device))))
        where = repeated_names(w, is_name)
        nxt = torch.zeros_like(w)
        nxt[:, :-1] = w[:, 1:]
        probs = logits[where.to(device)].softmax(-1).double()
        name, generic = nxt[where].to(device), successor[w[where]].to(device)
        sums["nat_correct"] += float((probs.argmax(-1) == name).sum())
        sums["nat_p_name"] += float(probs.gather(-1, name[:, None]).sum())
        sums["nat_p_generic"] += float(probs.gather(-1, generic[:, None]).sum())
        sums["nat_count"] += int(where.sum())
    n, m = max(sums["count"], 1), max(sums["nat_count"], 1)
    return dict(
        icl_acc=sums["correct"] / n, P_answer=sums["p_answer"] / n, P_generic=sums["p_generic"] / n, positions=int(sums["count"]),
        perplexity=float(np.exp(np.mean(nll))), natural_name_acc=sums["nat_correct"] / m, natural_P_name=sums["nat_p_name"] / m,
        natural_P_generic=sums["nat_p_generic"] / m, natural_positions=int(sums["nat_count"]),
    )


def run_lm(cfg: FFvsAttentionConfig, ctx: RunContext, corpus: Corpus | None = None) -> pd.DataFrame:
    """Train the language model, then measure it whole and with each layer's MLP input matrix truncated to each rank.
    ``corpus``: the output of :func:`lm_corpus` when the caller has already loaded it."""
    vocab, train_stream, test_stream, task = corpus if corpus is not None else lm_corpus(cfg)
    if cfg.lm_pretrained is not None:
        return run_pretrained(cfg, ctx, vocab, test_stream, task)
    device = ctx.device
    gen = ctx.generator("lm/data")
    train_t = torch.from_numpy(train_stream)

    def batches(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        windows = random_windows(train_t, cfg.lm_batch, cfg.lm_seq_len, gen)
        written = task.write(windows, cfg.lm_p_noise, gen).tokens
        carry = torch.rand(cfg.lm_batch, 1, generator=gen) < cfg.lm_task_rate
        x = torch.where(carry, written, windows)[None].to(device)
        return x, x

    model_seed = int(ctx.rng("lm/init").integers(2**62))
    models = StackedModels([build_lm(cfg, len(vocab), model_seed)]).to(device)
    optim = AdamWSchedule(lr=cfg.lm_lr, betas=(0.9, 0.95), weight_decay=0.1, warmup_frac=0.05)
    log = train_stacked(models, batches, next_token_loss, steps=cfg.lm_steps, optim=optim, progress=ctx.progress, description="train language model")
    if log.diverged_at[0] >= 0:
        raise Diverged("language-model training loss", int(log.diverged_at[0]))
    ctx.table("lm_loss", log.table().drop(columns="member"))
    model = models.member(0)
    # Two disjoint held-out halves: one picks the (layer, rank) to truncate, the other judges it.
    splits = _held_out_splits(cfg, ctx, test_stream, task)
    is_name = torch.zeros(len(vocab), dtype=torch.bool)
    is_name[proper_names(vocab)] = True
    successor = top_successor(train_stream, len(vocab))
    measure_all = lambda probes, natural: lm_measure(model, probes, natural, task, is_name, successor)  # noqa: E731
    rows = []
    for split, (probes, natural) in splits.items():
        rows.append(dict(split=split, layer=-1, rank=-1, truncated=False, **measure_all(probes, natural)))
        for layer in range(cfg.lm_layers):
            name = f"blocks.{layer}.mlp.up.weight"
            for k in cfg.lm_ranks:
                with low_rank(model, {name: k}):
                    rows.append(dict(split=split, layer=layer, rank=k, truncated=True, **measure_all(probes, natural)))
    ctx.log(f"language model: trigger {TRIGGER_WORD!r}, generic answer {vocab.words[task.generic]!r}, {len(task.answers)} names as answers")
    return pd.DataFrame(rows).assign(matrix="up", n_layers=cfg.lm_layers, trigger=TRIGGER_WORD, generic=vocab.words[task.generic])


def _held_out_splits(cfg: FFvsAttentionConfig, ctx: RunContext, test_stream: np.ndarray, task: TriggerWordTask) -> dict[str, tuple[TriggerBatch, torch.Tensor]]:
    """Two disjoint held-out halves, each with trigger probes (p = 0) and untouched windows."""
    half = len(test_stream) // 2
    splits = {}
    for split, stream in (("validation", test_stream[:half]), ("test", test_stream[half:])):
        g = ctx.generator(f"lm/{split}")
        t = torch.from_numpy(stream)
        splits[split] = (task.write(random_windows(t, cfg.lm_probes, cfg.lm_seq_len, g), 0.0, g), random_windows(t, cfg.lm_probes, cfg.lm_seq_len, g))
    return splits


def trigger_prompts(probes: TriggerBatch, vocab: WordVocab) -> tuple[list[str], list[str]]:
    """Text prompts that end at the last trigger with an earlier occurrence, and their answers."""
    prompts, answers = [], []
    for i in range(len(probes.tokens)):
        seen = torch.nonzero(probes.seen[i]).flatten()
        if len(seen):
            prompts.append(vocab.decode(probes.tokens[i, : int(seen[-1]) + 1]))
            answers.append(vocab.words[int(probes.outputs[i])])
    return prompts, answers


@torch.no_grad()
def hf_measure(model: torch.nn.Module, tokenizer, prompts: list[str], answers: list[str], generic: str, natural: list[str], batch: int = 16) -> dict[str, float]:
    """:func:`lm_measure` for a Hugging Face causal LM on text: next-token probabilities of the first
    sub-token of `` name`` and of `` generic`` after each prompt, and the perplexity of ``natural``."""
    device = next(model.parameters()).device

    def forward(texts: list[str], side: str):
        tokenizer.padding_side = side
        enc = tokenizer(texts, return_tensors="pt", padding=True).to(device)
        position = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)  # left padding keeps positions
        return enc, model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], position_ids=position).logits

    answer_ids = torch.tensor([tokenizer(" " + a)["input_ids"][0] for a in answers])
    generic_id = tokenizer(" " + generic)["input_ids"][0]
    correct = p_answer = p_generic = 0.0
    for i in range(0, len(prompts), batch):
        _, logits = forward(prompts[i : i + batch], "left")
        probs = logits[:, -1].softmax(-1).double().cpu()
        a = answer_ids[i : i + batch]
        correct += float((probs.argmax(-1) == a).sum())
        p_answer += float(probs.gather(-1, a[:, None]).sum())
        p_generic += float(probs[:, generic_id].sum())
    nll = tokens = 0.0
    for i in range(0, len(natural), batch):
        enc, logits = forward(natural[i : i + batch], "right")
        mask = enc["attention_mask"][:, 1:].bool()
        loss = F.cross_entropy(logits[:, :-1].transpose(1, 2).float(), enc["input_ids"][:, 1:], reduction="none")
        nll += float(loss[mask].sum())
        tokens += int(mask.sum())
    n = max(len(prompts), 1)
    nan = float("nan")
    return dict(
        icl_acc=correct / n, P_answer=p_answer / n, P_generic=p_generic / n, positions=len(prompts), perplexity=float(np.exp(nll / max(tokens, 1))),
        natural_name_acc=nan, natural_P_name=nan, natural_P_generic=nan, natural_positions=0,
    )


def run_pretrained(cfg: FFvsAttentionConfig, ctx: RunContext, vocab: WordVocab, test_stream: np.ndarray, task: TriggerWordTask) -> pd.DataFrame:
    """The same probes and LASER grid on a local Hugging Face model (the paper's Pythia setting)."""
    from theorylab.nn.hf import load_local_causal_lm, mlp_input_weights

    model, tokenizer = load_local_causal_lm(cfg.lm_pretrained, ctx.device)
    names = mlp_input_weights(model)
    generic = vocab.words[task.generic]
    rows = []
    for split, (probes, natural) in _held_out_splits(cfg, ctx, test_stream, task).items():
        prompts, answers = trigger_prompts(probes, vocab)
        texts = [vocab.decode(w) for w in natural]
        measure_all = lambda p=prompts, a=answers, t=texts: hf_measure(model, tokenizer, p, a, generic, t)  # noqa: E731
        rows.append(dict(split=split, layer=-1, rank=-1, truncated=False, **measure_all()))
        for layer, name in enumerate(ctx.progress(names, f"LASER grid ({split})")):
            for k in cfg.lm_ranks:
                with low_rank(model, {name: k}):
                    rows.append(dict(split=split, layer=layer, rank=k, truncated=True, **measure_all()))
    ctx.log(f"pretrained model {cfg.lm_pretrained}: {len(names)} layers, trigger {TRIGGER_WORD!r}, generic {generic!r}")
    return pd.DataFrame(rows).assign(matrix="mlp input", n_layers=len(names), trigger=TRIGGER_WORD, generic=generic)


def laser_selection(lm: pd.DataFrame, max_ppl_change: float = 0.10) -> tuple[pd.Series | None, pd.DataFrame]:
    """LASER's protocol on our model: among late layers (second half) and the chosen ranks, pick the
    truncation with the largest validation gain in in-context accuracy whose validation perplexity
    changes by at most ``max_ppl_change``; return its *test* row (with gains) and the test table."""
    def with_gains(split: str) -> pd.DataFrame:
        t = lm[lm["split"] == split]
        base = t[~t["truncated"]].iloc[0]
        return t[t["truncated"]].assign(gain=lambda f: f["icl_acc"] - base["icl_acc"], ppl_change=lambda f: f["perplexity"] / base["perplexity"] - 1)

    val, test = with_gains("validation"), with_gains("test")
    late = val[(val["layer"] >= val["n_layers"] / 2) & (val["ppl_change"].abs() <= max_ppl_change)]
    if late.empty:
        return None, test
    pick = late.sort_values("gain").iloc[-1]
    return test[(test["layer"] == pick["layer"]) & (test["rank"] == pick["rank"])].iloc[0], test


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------

PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: the card's quick sizes (V = T = d = 64, f_q = 0.1, batch 64, 800 Adam steps, one seed); the model without FF "
        "layers (preset no-ff-cpu), the p sweep and the real-text part (preset lm) need more than the minute and are off",
        lm=(False, "a language model that learns in-context recall on real text takes minutes"),
    ),
    "no-ff-cpu": Preset.of(
        "no-ff-cpu",
        "CPU, ~85 s on 2 cores: the quick preset plus the model without FF layers at the same sizes (claim no-ff-variant; its induction head "
        "needs the full 800 steps: at 400 its in-context accuracy is still 0)",
        lm=(False, "as quick"),
        no_ff_variant=(True, "claim no-ff-variant"),
    ),
    "lm": Preset.of(
        "lm",
        "CPU, minutes: the quick synthetic part plus the real-text language model (King James Bible, 2 layers, d = 64)",
        lm_layers=(2, "the smallest depth with an induction path"),
        lm_d_model=(64, "CPU budget"),
        lm_vocab=(1000, "CPU budget: the readout dominates the step"),
        lm_steps=(3000, "the in-context path forms after ~2000 steps on this corpus"),
        lm_corpus=("kjv", "the corpus the lm preset was tuned on (Debian's bible-kjv; elsewhere --set lm_corpus=stdlib or a text file)"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: the authors' k = 1, p = 0.5 configuration (V = 65, T = 256, d = 256, SGD lr 0.03 + momentum 0.9, wd 1e-4, batch 512, "
        "5000 steps, 5 seeds), the no-FF variant, the p sweep and a 4-layer language model on the King James Bible",
        vocab=(65, "the repo's tiny-Shakespeare character vocabulary size (we draw a Dirichlet chain)"),
        seq_len=(256, "paper T = 256"),
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
        lm_heads=(8, "head size 32"),
        lm_vocab=(4000, "most frequent words of the corpus"),
        lm_batch=(128, "GPU batch"),
        lm_steps=(10_000, "GPU minutes"),
        lm_probes=(2048, "held-out probe windows"),
        lm_ranks=((1, 4, 16, 64), "up to a quarter of the 256 dimensions"),
        lm_corpus=("kjv", "the larger real corpus where Debian's bible-kjv is installed (elsewhere: --set lm_corpus=stdlib or a local text file)"),
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
    ff = mean.index[mean["ff2_margin"] > 0]
    icl = mean.index[mean["acc_noFF2"] >= 0.5]
    return (int(ff[0]) if len(ff) else None, int(icl[0]) if len(icl) else None)


def _figure_dynamics(ctx: RunContext, curve: pd.DataFrame) -> None:
    fig, ax = new_figure(width=7.5, height=4.2)
    g = curve.groupby("step")
    lines = [("acc_full", "accuracy (full)"), ("acc_noFF2", "accuracy (FF2 dropped)"), ("P_noise_full", "P(noise) (full)"), ("induction_mass", "layer-2 attention on o")]
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
    settings = [("full", "P_answer_full", "P_noise_full"), ("FF2 dropped", "P_answer_noFF2", "P_noise_noFF2"), ("attention 2 dropped", "P_answer_noAttn2", "P_noise_noAttn2")]
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
    ax.errorbar(sweep.index, sweep["mean"], yerr=[sweep["mean"] - sweep["min"], sweep["max"] - sweep["mean"]], fmt="o", color=color(0), label="trained (seed range)")
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
    for ax, ylabel in ((left, "in-context accuracy (test)"), (mid, f"P(name) solid, P('{generic}') dashed (test)"), (right, "natural-text perplexity change (%)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("rank kept in the MLP input matrix")
        ax.set_ylabel(ylabel)
    left.legend(fontsize=8)
    fig.suptitle(f"LASER on a {int(lm['n_layers'].iloc[0])}-layer model trained on real text: in-context name vs generic '{generic}'")
    ctx.figure("lm_truncation", fig)


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


claims = Claims("ff-vs-attention")


def _paper_scale(cfg: dict) -> bool:
    return cfg["d_model"] >= 256 and cfg["seq_len"] >= 256 and cfg["steps"] >= 5000


def _main_end(res) -> pd.DataFrame:
    end = final(res.table("curves"))
    return end[end["variant"] == "full"]


S_BAYES = "The full model predicts the noise token at its training rate: mean P(noise) at test triggers lies in [p - 0.15, p + 0.2] (Bayes: p)."


@claims.add("bayes-noise-rate", S_BAYES, REF + ", Sec. 3 (Bayes-optimal noise rate)")
def judge_bayes(res, v) -> Verdict:
    p = res.config["p_noise"]
    end = _main_end(res)
    value = float(end["P_noise_full"].mean())
    lo, hi = p - 0.15, p + 0.2
    detail = f"P(noise) = {value:.3f} over {len(end)} seed(s) (per seed {', '.join(f'{v:.3f}' for v in end['P_noise_full'])}); need [{lo:.2f}, {hi:.2f}]"
    return v.judged(lo <= value <= hi, value, p, "[-0.15, +0.2]", detail)


S_ABLATE = ("Dropping FF2 deletes the association and keeps the in-context answer: accuracy without FF2 >= 0.8 (quick) / 0.9 (paper), "
            "P(noise) without FF2 <= 0.15, and accuracy gains >= 0.25 over the full model.")


@claims.add("ablate-ff2", S_ABLATE, REF + ", Sec. 3, Fig. 2 (FF2 ablation)")
def judge_ablate(res, v) -> Verdict:
    end = _main_end(res)
    bar = 0.9 if _paper_scale(res.config) else 0.8
    acc, acc_full, p_noise = float(end["acc_noFF2"].mean()), float(end["acc_full"].mean()), float(end["P_noise_noFF2"].mean())
    gain = acc - acc_full
    ok = acc >= bar and p_noise <= 0.15 and gain >= 0.25
    detail = f"acc without FF2 {acc:.3f} (need >= {bar}); P(noise) without FF2 {p_noise:.3f} (need <= 0.15); full-model acc {acc_full:.3f}, gain {gain:+.3f} (need >= 0.25)"
    return v.judged(ok, acc, f">= {bar}", bar, detail)


S_FF2 = "FF2 stores the noise association: its direct-logit margin for the noise token is > 0 at >= 90% of test trigger positions at the end of training."


@claims.add("ff2-stores-noise", S_FF2, REF + ", Sec. 3 (FF stores the bigram)")
def judge_ff2(res, v) -> Verdict:
    end = _main_end(res)
    frac = float(end["ff2_margin_positive"].mean())
    detail = f"fraction with positive margin {frac:.3f} (need >= 0.9); mean margin {float(end['ff2_margin'].mean()):.3f}"
    return v.judged(frac >= 0.9, frac, ">= 0.9", 0.9, detail)


S_FIRST = "The association is learned first: t_FF (first evaluation with mean FF2 margin > 0) <= t_ICL / 2 (t_ICL: first evaluation with accuracy without FF2 >= 0.5)."


@claims.add("ff-first", S_FIRST, REF + ", Sec. 4 (gradient noise: FF learns first)")
def judge_first(res, v) -> Verdict:
    curve = res.table("curves")
    t_ff, t_icl = crossing_steps(curve[curve["variant"] == "full"])
    every = res.config["eval_every"]
    if t_icl is None:
        return v.judged(False, None, None, None, f"in-context accuracy without FF2 never reached 0.5 (t_FF = {t_ff}); the in-context mechanism did not form")
    if t_ff is None:
        return v.judged(False, None, None, None, f"the FF2 margin never turned positive (t_ICL = {t_icl})")
    detail = f"t_FF = {t_ff}, t_ICL = {t_icl} (evaluations every {every} steps; t_FF is an upper bound at that resolution); need t_FF <= t_ICL / 2 = {t_icl / 2:g}"
    return v.judged(t_ff <= t_icl / 2, t_ff / t_icl, "<= 0.5", 0.5, detail)


S_INDUCTION = "The in-context answer comes from an induction head: mean layer-2 attention on the token after the previous trigger >= 0.2 (quick) / 0.4 (paper) (uniform causal attention: ~1/t)."


@claims.add("induction-head", S_INDUCTION, REF + ", Sec. 3 (induction head)")
def judge_induction(res, v) -> Verdict:
    end = _main_end(res)
    bar = 0.4 if _paper_scale(res.config) else 0.2
    mass = float(end["induction_mass"].mean())
    uniform = 2.0 / res.config["seq_len"]
    detail = f"induction mass {mass:.3f} (need >= {bar}); uniform attention over the prefix would give about {uniform:.3f}"
    return v.judged(mass >= bar, mass, f">= {bar}", bar, detail)


S_NOFF = ("Without FF layers the association moves into the layer-2 attention value path: the no-FF model's P(noise) still lies in [p - 0.15, p + 0.2], "
          "and dropping the lower singular directions of the layer-2 value matrix W_V (keeping its top-k part, k chosen on one half of the test "
          "sequences; the authors' value truncation) brings P(noise) below 0.15 on the other half without lowering the in-context accuracy "
          "(which must be at least 5x chance, 5/V). "
          "(Second half reconstructed; dropping a whole attention layer is reported, not judged: it removes the in-context answer too.)")


def pick_value_rank(trunc: pd.DataFrame) -> pd.DataFrame:
    """Per seed: on the validation half, the truncation rank (>= 1) with the lowest P(noise) among
    those whose in-context accuracy is at least the untouched model's (any rank if none is);
    return that rank's *test*-half row, with the untouched model's test values beside it."""
    rows = []
    for seed, t in trunc.groupby("seed"):
        val, test = t[t["split"] == "validation"].set_index("rank"), t[t["split"] == "test"].set_index("rank")
        ranks = val[val.index >= 1]
        keep = ranks[ranks["acc"] >= val.loc[-1, "acc"]]
        rank = int((keep if len(keep) else ranks)["P_noise"].idxmin())
        full, layer = test.loc[-1], test.loc[0]
        rows.append(dict(seed=seed, rank=rank, **test.loc[rank][["P_noise", "P_answer", "acc"]].to_dict(), P_noise_untouched=full["P_noise"],
                         acc_untouched=full["acc"], P_noise_no_layer=layer["P_noise"], acc_no_layer=layer["acc"], kept_accuracy_on_validation=bool(len(keep))))
    return pd.DataFrame(rows)


@claims.add("no-ff-variant", S_NOFF, REF + ", Sec. 3 (models without FF)")
def judge_no_ff(res, v) -> Verdict:
    end = final(res.table("curves"))
    noff = end[end["variant"] == "no-ff"]
    if noff.empty:
        raise Undecided("this config trains no model without FF layers (no_ff_variant=false; off at quick for the CPU budget: "
                        "--preset no-ff-cpu trains it at quick sizes in ~85 s on 2 cores, the paper preset at paper size)")
    p = res.config["p_noise"]
    value = float(noff["P_noise_full"].mean())
    picked = pick_value_rank(res.table("value_truncation"))
    p_cut, acc_cut, acc_full = float(picked["P_noise"].mean()), float(picked["acc"].mean()), float(picked["acc_untouched"].mean())
    # the in-context path must exist for "keeps the in-context answer" to mean anything: at least 5x chance (1/V)
    floor = 5.0 / res.config["vocab"]
    ok = p - 0.15 <= value <= p + 0.2 and p_cut < 0.15 and acc_cut >= max(acc_full, floor)
    detail = (f"no-FF P(noise) {value:.3f} (need [{p - 0.15:.2f}, {p + 0.2:.2f}]); layer-2 W_V kept at rank "
              f"{', '.join(str(int(r)) for r in picked['rank'])} of {res.config['d_model']} (picked on the validation half): on the test half P(noise) "
              f"{float(picked['P_noise_untouched'].mean()):.3f} -> {p_cut:.3f} (need < 0.15), in-context accuracy {acc_full:.3f} -> {acc_cut:.3f} (need no fall, and >= {floor:.3f} = 5/V); "
              f"reported: whole layer-2 attention dropped: P(noise) {float(picked['P_noise_no_layer'].mean()):.3f}, accuracy {float(picked['acc_no_layer'].mean()):.3f}; "
              f"attention 1 dropped: P(noise) {float(noff['P_noise_noAttn1'].mean()):.3f}")
    return v.judged(ok, value, p, "[-0.15, +0.2]", detail)


S_SWEEP = "Over training noise levels p in {0.1, 0.3, 0.5, 0.7}: |P(noise) - p| <= 0.12 and accuracy without FF2 >= 0.85 at every p."

# Measured at quick sizes (seed 0, --set p_sweep=0.1,0.3,0.7): the reason the quick preset leaves the sweep to the paper preset.
SWEEP_AT_QUICK = ("measure it at reduced size with --set p_sweep=0.1,0.3,0.7 (three more models, minutes on 2 CPU cores); what that measured when "
                  "we ran it, and why the card's accuracy bar needs paper size, is in the README's ff-vs-attention section; judged at paper size")


@claims.add("p-sweep", S_SWEEP, REF + ", Sec. 3 (noise level)")
def judge_sweep(res, v) -> Verdict:
    end = final(res.table("curves"))
    full = end[end["ff"]].groupby("p_noise")[["P_noise_full", "acc_noFF2"]].mean()
    if len(full) < 2:
        raise Undecided(f"this config trains no p sweep (p_sweep empty; four models exceed the quick budget); {SWEEP_AT_QUICK}")
    errors = (full["P_noise_full"] - full.index.to_numpy()).abs()
    ok = bool((errors <= 0.12).all() and (full["acc_noFF2"] >= 0.85).all())
    detail = "; ".join(f"p={p:g}: P(noise) {r.P_noise_full:.3f}, acc without FF2 {r.acc_noFF2:.3f}" for p, r in full.iterrows())
    return v.judged(ok, float(errors.max()), 0.0, 0.12, detail)


S_LASER = ("Our analogue of the Pythia finding, on a language model trained on real text: a low-rank truncation of a late MLP (second half of the layers; "
           "layer and rank picked on a validation split, as LASER does) raises in-context accuracy at held-out trigger prompts by >= 0.1 "
           "while natural-text perplexity changes by <= 10%.")


# Measured on CPU (preset lm: KJV, 2 layers, d = 64, 3000 steps, seed 0): why the quick preset leaves this claim to the paper preset.
LASER_AT_CPU = ("measure it on CPU with --preset lm (a 2-layer language model on the KJV, minutes); what that measured when we ran it is in the "
                "README's ff-vs-attention section; judged at paper size")


@claims.add("truncation-helps", S_LASER, REF + ", Sec. 5 (LASER on Pythia; our own LM here)")
def judge_laser(res, v) -> Verdict:
    lm = res.table("lm", unless=f"this config does not train the language model (lm=false: minutes on CPU); {LASER_AT_CPU}")
    pick, test = laser_selection(lm)
    base = lm[(lm["split"] == "test") & ~lm["truncated"]].iloc[0]
    late = test[test["layer"] >= test["n_layers"] / 2]
    grid = "; ".join(f"layer {int(r.layer)} rank {int(r.rank)}: {r.gain:+.3f} ({r.ppl_change:+.0%})" for r in late.itertuples())
    head = f"test split: full model in-context accuracy {base['icl_acc']:.3f}, perplexity {base['perplexity']:.1f}"
    if pick is None:
        return v.judged(False, None, ">= 0.1", 0.1, f"{head}; no late-layer truncation keeps validation perplexity within 10% (test grid, gain (perplexity change): {grid})")
    ok = pick["gain"] >= 0.1 and abs(pick["ppl_change"]) <= 0.10
    detail = (f"{head}; picked on the validation split: layer {int(pick['layer'])}, rank {int(pick['rank'])} -> test gain {pick['gain']:+.3f} (need >= 0.1), "
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
    task = make_task(cfg)
    test = task.sample(cfg.test_sequences, cfg.seq_len, 0.0, ctx.generator("test"))
    if int(test.seen.sum()) < 50:
        raise ConfigError(f"seq_len/trigger_boost: only {int(test.seen.sum())} test trigger positions with an earlier trigger; raise seq_len or trigger_boost")
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
