"""ff-vs-attention: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator

from theorylab.core import ConfigError, Preset, StudyConfig
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
    Precision,
    Probability,
    Rank,
    SampleSize,
    Seeds,
    Steps,
    VocabSize,
)
from theorylab.data.text import CORPORA, check_corpus, resolve_corpus
from theorylab.data.trigger_text import (
    CorpusTooShort,
    TriggerCorpus,
    word_trigger_corpus,
)


class FFvsAttentionConfig(StudyConfig):
    # --- task -----------------------------------------------------------------------------------
    vocab_size: Annotated[VocabSize, Field(ge=4)] = Field(
        64, description="tokens V of the bigram chain (quick 64, paper 65); the noise token is V - 1"
    )
    length: Annotated[Length, Field(ge=8)] = Field(64, description="sequence length T (quick 64, paper 256)")
    p_noise: Annotated[Probability, Field(lt=1)] = Field(
        0.5, description="training probability p of the noise token after a trigger"
    )
    dirichlet_alpha: Concentration = Field(0.2, description="Dirichlet concentration of the bigram rows")
    trigger_boost: Annotated[Probability, Field(lt=1)] = Field(
        0.1, description="f_q: every row jumps to the trigger with this probability (0 = plain chain)"
    )
    background: str = Field(
        "dirichlet",
        min_length=1,
        description="background chain: 'dirichlet', or a corpus ('kjv' "
        "or a text file) whose character bigrams are used (V = characters + 1 noise token; the authors use tiny "
        "Shakespeare)",
    )
    data_seed: int = Field(0, ge=0, description="seed of the bigram chain (fixed across training seeds)")
    train_bank: Annotated[SampleSize, Field(ge=0)] = Field(
        6400, description="training sequences drawn once and resampled (0: fresh sequences every step)"
    )
    test_sequences: Annotated[SampleSize, Field(ge=16)] = Field(256, description="test sequences at p = 0")
    # --- model ----------------------------------------------------------------------------------
    d_model: Annotated[DModel, Field(ge=4)] = Field(64, description="width d (quick 64, paper 256)")
    mlp_mult: MLPMult = Field(4, description="FF hidden width = mlp_mult * d")
    # --- optimisation ---------------------------------------------------------------------------
    optimizer: str = Field(
        "adam",
        pattern="^(adam|sgd)$",
        description="'adam' (quick) or 'sgd' with momentum (paper, as the authors' code)",
    )
    lr: LearningRate = Field(3e-3, description="learning rate (quick Adam 3e-3; paper SGD 0.03)")
    momentum: float = Field(0.9, ge=0, lt=1, description="SGD momentum (paper 0.9)")
    schedule: str = Field(
        "cosine",
        pattern="^(cosine|constant)$",
        description="learning-rate schedule: cosine decay to 0 (quick) or constant (paper, as the authors' code)",
    )
    weight_decay: float = Field(0.0, ge=0, le=1.0, description="weight decay (paper 1e-4)")
    batch: Batch = Field(64, description="sequences per step (quick 64, paper 512)")
    steps: Steps = Field(800, description="training steps (quick 800, paper 5000)")
    evaluate_every: Every = Field(50, description="steps between test evaluations")
    seeds: Seeds = Field(1, description="training seeds, trained as one batch (paper 5)")
    precision: Precision = Field(
        "auto",
        description="arithmetic of every training step (the synthetic models' and the language model's forward and "
        "backward; weights, optimiser and measurements stay fp32): fp32, bf16 autocast, or auto (bf16 where the "
        "hardware has bf16 units: GPUs, CPUs with AMX or AVX512-BF16; fp32 elsewhere)",
    )
    # --- variants (paper) -----------------------------------------------------------------------
    no_ff_variant: bool = Field(False, description="also train the model without any FF layer (claim no-ff-variant)")
    value_ranks: tuple[Rank, ...] = Field(
        (1, 2, 4, 8, 16, 32),
        min_length=1,
        description="ranks kept when the no-FF "
        "model's layer-2 value matrix W_V is truncated (its lower singular directions dropped); quick d = 64: up to "
        "d/2",
    )
    p_sweep: tuple[Probability, ...] = Field(
        (), description="extra training noise levels p (claim p-sweep); empty: none"
    )
    # --- real-text part -------------------------------------------------------------------------
    lm: bool = Field(True, description="run the real-text language-model part")
    lm_corpus: Corpus = Field(
        "stdlib",
        min_length=1,
        description="word-level text: 'stdlib' (prose of Python's own "
        "docstrings, 240k words), 'kjv' (Debian's bible-kjv, 790k words) or a local plain-text file",
    )
    lm_vocab_size: Annotated[VocabSize, Field(ge=16)] = Field(
        2000, description="word vocabulary of the language model (most frequent words + <unk>)"
    )
    lm_length: Annotated[Length, Field(ge=8)] = Field(128, description="training window length of the language model")
    lm_d_model: Annotated[DModel, Field(ge=8)] = Field(128, description="width of the language model")
    lm_n_layers: Annotated[NLayers, Field(ge=2)] = Field(4, description="layers of the language model (card: 4)")
    lm_n_heads: NHeads = Field(4, description="heads per layer of the language model")
    lm_batch: Batch = Field(32, description="windows per step of the language model")
    lm_steps: Steps = Field(1500, description="training steps of the language model")
    lm_lr: LearningRate = Field(3e-3, description="AdamW learning rate of the language model")
    lm_task_rate: Probability = Field(
        1.0, description="fraction of training windows carrying the written-in trigger task"
    )
    lm_p_noise: Annotated[Probability, Field(lt=1)] = Field(
        0.5, description="probability of the generic word after the trigger word in training windows"
    )
    lm_ranks: tuple[Annotated[Rank, Field(ge=0)], ...] = Field(
        (1, 4, 16), min_length=1, description="LASER ranks kept in the last MLP"
    )
    lm_local: str | None = Field(
        None,
        description="a local Hugging Face causal-LM directory (e.g. Pythia weights you "
        "own): probed instead of training our own model",
    )
    lm_probes: Annotated[SampleSize, Field(ge=16)] = Field(512, description="held-out probe windows")

    @model_validator(mode="after")
    def _consistent(self) -> "FFvsAttentionConfig":
        if self.train_bank and self.train_bank < self.batch:
            raise ValueError(f"'train_bank' ({self.train_bank}) must be 0 or >= 'batch' ({self.batch})")
        if (
            self.background != "dirichlet"
            and self.background not in CORPORA
            and not Path(self.background).expanduser().is_file()
        ):
            raise ValueError(
                f"'background' must be 'dirichlet', one of {sorted(CORPORA)} or an existing text file; "
                f"{self.background!r} is neither"
            )
        if self.lm:
            check_corpus("lm_corpus", self.lm_corpus)
        if self.lm_local is not None and self.lm and not Path(self.lm_local).expanduser().is_dir():
            raise ValueError(f"'lm_local' must be a local model directory; {self.lm_local!r} does not exist")
        if self.lm_d_model % self.lm_n_heads:
            raise ValueError(f"'lm_n_heads' ({self.lm_n_heads}) must divide 'lm_d_model' ({self.lm_d_model})")
        return self


TRIGGER_WORD = "of"


def lm_corpus(cfg: FFvsAttentionConfig) -> TriggerCorpus:
    """Vocabulary, train/held-out token streams (first 90% / last 10% of the text) and the task."""
    try:
        return word_trigger_corpus(resolve_corpus(cfg.lm_corpus), cfg.lm_vocab_size, TRIGGER_WORD, cfg.lm_length)
    except CorpusTooShort as err:
        raise ConfigError(
            f"lm_corpus: {err.words} words is too short for windows of lm_length = {cfg.lm_length}"
        ) from None


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: the card's quick sizes (V = T = d = 64, f_q = 0.1, batch 64, 800 Adam steps, one seed); "
        "the model without FF "
        "layers (preset no-ff-cpu), the p sweep and the real-text part (preset lm) need more than the minute "
        "and are off",
        lm=(False, "a language model learning in-context recall on real text: ~5 min more (preset lm)"),
    ),
    "no-ff-cpu": Preset.of(
        "no-ff-cpu",
        "CPU, ~85 s on 2 cores: the quick preset plus the model without FF layers at the same sizes (claim "
        "no-ff-variant; its induction head "
        "needs the full 800 steps: at 400 its in-context accuracy is still 0)",
        lm=(False, "as quick"),
        no_ff_variant=(True, "claim no-ff-variant"),
    ),
    "cpu": Preset.of(
        "cpu",
        "CPU, a few minutes of one core: the quick preset plus the model without FF layers (claim no-ff-variant, as "
        "no-ff-cpu) and the p sweep (claim p-sweep: three more models at p = 0.1, 0.3, 0.7 beside quick's 0.5), all at "
        "the card's quick sizes (V = T = d = 64, 800 Adam steps); the real-text LM is the lm preset",
        lm=(False, "the real-text language model takes ~4 min more on 2 cores: the lm preset decides its claim"),
        no_ff_variant=(True, "claim no-ff-variant"),
        p_sweep=((0.1, 0.3, 0.7), "claim p-sweep: the card's grid {0.1, 0.3, 0.5, 0.7} with quick's 0.5"),
    ),
    "lm": Preset.of(
        "lm",
        "CPU, ~5 min on 2 cores (seed 0, measured on an idle AMD EPYC with AVX-512: 298 s wall, 1.2 GB; the LM's "
        "3000 steps ~230 s of it at ~13 steps/s of 32 x 128 tokens; on a busier AVX2 box of the same kind it took "
        "2104 s of CPU at load 5-9): the quick synthetic part plus the real-text language model (King James "
        "Bible, 2 layers, d = 64)",
        lm_n_layers=(2, "the smallest depth with an induction path"),
        lm_d_model=(64, "CPU budget"),
        lm_vocab_size=(1000, "CPU budget: the readout dominates the step"),
        lm_steps=(3000, "the in-context path forms after ~2000 steps on this corpus"),
        lm_corpus=(
            "kjv",
            "the corpus the lm preset was tuned on (Debian's bible-kjv; elsewhere --set lm_corpus=stdlib "
            "or a text file)",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 120 min on one H100: 5 variants (full, no-FF, p = 0.1, 0.3, 0.7) x 5 seeds x 5000 steps of the "
        "2-layer d = 256 model with 4d FF at 512 x 256 tokens a step, ~1.5 TFLOP a model-step (quick's 800 steps of "
        "~2.8 GFLOP took ~55 s on 2 cores), so ~180 PFLOP, plus the 4-layer LM (10k steps x 16k tokens, ~4 PFLOP): "
        "60-120 min at 25-50 TFLOP/s): "
        "the authors' k = 1, p = 0.5 configuration (V = 65, T = 256, d = 256, SGD lr 0.03 + momentum 0.9, wd "
        "1e-4, batch 512, "
        "5000 steps, 5 seeds), the no-FF variant, the p sweep and a 4-layer language model on the King James Bible",
        gpu_minutes=120,
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
        lm_corpus=(
            "kjv",
            "the larger real corpus where Debian's bible-kjv is installed (elsewhere: --set "
            "lm_corpus=stdlib or a local text file)",
        ),
    ),
}
