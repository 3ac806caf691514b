"""bilinear-attention-operator: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    Corpus,
    DModel,
    Draws,
    Every,
    LearningRate,
    Length,
    NHeads,
    NLayers,
    Precision,
    Seeds,
    Steps,
)
from theorylab.data.text import check_corpus


class BilinearOperatorConfig(StudyConfig):
    random_models: Draws = Field(
        64, description="random-init one-layer ToyTransformers of the null (card: 64 x 4 heads)"
    )
    d_model: DModel = Field(128, description="width d of the random and tied models")
    n_heads: NHeads = Field(4, description="heads per layer (d_h = d / heads)")
    tied_models: Draws = Field(8, description="tied-QK models (W_q = W_k)")
    hf_d_model: DModel = Field(64, description="hidden size of the random-init BERT and GPT-2 of the convention check")
    hf_n_layers: NLayers = Field(2, description="layers of the random-init BERT and GPT-2")
    pair_d_model: DModel = Field(64, description="d_model of the encoder/decoder pair")
    pair_n_layers: NLayers = Field(2, description="layers of the pair")
    pair_n_heads: NHeads = Field(4, description="heads of the pair")
    pair_length: Length = Field(64, description="training window")
    pair_batch: Batch = Field(32, description="batch size")
    pair_steps: Steps = Field(300, description="AdamW steps of each model (claims 6-7 need >= 20,000, the card's)")
    pair_lr: LearningRate = Field(1e-3, description="AdamW learning rate")
    pair_seeds: Seeds = Field(1, description="encoder/decoder pairs (card, paper: 3)")
    precision: Precision = Field(
        "fp32",
        description="arithmetic of the encoder/decoder training steps (forward and backward; weights, optimiser and "
        "every operator measurement stay fp32 / float64): fp32, bf16 autocast, or auto (bf16 where the hardware has "
        "bf16 units: GPUs, CPUs with AMX or AVX512-BF16; fp32 elsewhere); quick fp32 (its training is short: bf16 "
        "saved ~10% and would mark its identity checks as departures), cpu auto",
    )
    pair_log_every: Every = Field(50, description="operator scores are logged every this many steps")
    corpus: Corpus = Field(
        "stdlib",
        min_length=1,
        description="character-level text: 'stdlib' (prose of Python's own "
        "docstrings, 1.1 MB), 'kjv' (Debian's bible-kjv, 4.4 MB) or a local plain-text file",
    )

    @model_validator(mode="after")
    def _checks(self) -> "BilinearOperatorConfig":
        check_corpus("corpus", self.corpus)
        for width, heads, name in (
            (self.d_model, self.n_heads, "d_model"),
            (self.hf_d_model, 4, "hf_d_model"),
            (self.pair_d_model, self.pair_n_heads, "pair_d_model"),
        ):
            if width % heads:
                raise ValueError(f"'{name}' ({width}) must be a multiple of its head count ({heads})")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~20 s: 256 random heads (d = 128), tied models, random-init BERT/GPT-2 "
        "convention checks, a 300-step encoder/decoder pair (descriptive)",
    ),
    "cpu": Preset.of(
        "cpu",
        "CPU, ~8 min of one core: claims 6-7 on one encoder/decoder pair at d = 64, 2 layers, 4 heads, 4000 steps "
        "each (the card's pair is d = 256, 4 layers, 20k steps, 3 seeds: the paper preset)",
        pair_steps=(4000, "CPU budget: ~0.055 s of one core a step at d = 64, so two 20k-step models take ~40 min"),
        pair_log_every=(250, "sparser tracking: the operator scores are read 16 times per model"),
        precision=(
            "auto",
            "bf16 training where the CPU has bf16 units: 333 s -> 231 s of one core on an AVX512-BF16 EPYC, the same "
            "verdicts (s(enc) - s(dec) 0.00266 vs 0.00270, drift z 5.0 both)",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 30 min on one H100: the cpu preset's pair took ~0.055 s of one core a step at d = 64, 2 layers, T "
        "= 64; d = 256, 4 layers, T = 128 is ~64x the work (~85 GFLOP a step), and 3 seeds x 2 models x 20k steps = "
        "120k steps (~450k core-s); a model this small is launch/latency-bound on a GPU at ~10-15 ms a step: 20-30 "
        "min, plus 20 operator reads a model): "
        "encoder/decoder pairs with d = 256, 4 layers, 4 heads, 20k steps, 3 seeds",
        gpu_minutes=30,
        pair_d_model=(256, "card"),
        corpus=(
            "kjv",
            "the larger real corpus where Debian's bible-kjv is installed (elsewhere: --set corpus=stdlib "
            "or a local text file)",
        ),
        pair_n_layers=(4, "card"),
        pair_steps=(20_000, "card"),
        pair_seeds=(3, "card"),
        pair_length=(128, "longer windows"),
        pair_log_every=(1000, "sparser tracking"),
    ),
}
