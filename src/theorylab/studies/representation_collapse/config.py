"""representation-collapse: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, DModel, LearningRate, Length, MLPMult, NHeads, NLayers, Seeds, Steps, VocabSize


class RepresentationCollapseConfig(StudyConfig):
    models: Seeds = Field(3, description="random-init models (one seed each) of the dilution and count tests (card: 3)")
    d_model: DModel = Field(64, description="width d of the random-init models (card: 64)")
    n_heads: NHeads = Field(4, description="heads per layer (card: 4)")
    n_layers: NLayers = Field(2, description="layers of the random-init models (card: 2)")
    mlp_mult: MLPMult = Field(4, description="GELU MLP width as a multiple of d")
    vocab_size: Annotated[VocabSize, Field(le=100_000)] = Field(64, description="vocabulary V (card: 64)")
    lengths: tuple[Length, ...] = Field(
        (16, 64, 256, 1024, 4096), min_length=3, description="context lengths L, increasing (card: 16 ... 4096)"
    )
    edit_batch: Batch = Field(8, description="sequences per length of the edit test (card: 8)")
    slope_from: Length = Field(64, description="the dilution slope is fitted over lengths >= this (card: 64)")
    bound_batch: Batch = Field(
        8, description="input pairs per length of the attention-only bound check (one random layer)"
    )
    cosine_sequences: Annotated[int, Field(ge=2, le=100_000)] = Field(
        64, description="sequences of the calibrated-cosine sanity data"
    )
    recall: bool = Field(False, description="train the recall models (paper claims 6-7; GPU advised)")
    recall_models: Seeds = Field(5, description="trained recall models (card: 5 seeds)")
    recall_d_model: DModel = Field(256, description="width of the recall model (card: 256)")
    recall_n_layers: NLayers = Field(4, description="layers of the recall model (card: 4, RoPE)")
    recall_pairs: Annotated[int, Field(ge=1, le=1000)] = Field(8, description="key-value pairs per prompt (ours)")
    recall_train_length: Length = Field(128, description="training length L_train (card: 128)")
    recall_steps: Steps = Field(20_000, description="AdamW steps (card: 20k)")
    recall_lr: LearningRate = Field(3e-4, description="AdamW learning rate (card: 3e-4)")
    recall_batch: Batch = Field(64, description="prompts per step")
    recall_lengths: tuple[Length, ...] = Field(
        (128, 256, 512, 1024, 2048), min_length=3, description="evaluation lengths (card: 128 ... 2048)"
    )
    recall_eval_batch: Batch = Field(64, description="prompts per evaluation length")

    @model_validator(mode="after")
    def _checks(self) -> "RepresentationCollapseConfig":
        for name in ("lengths", "recall_lengths"):
            values = getattr(self, name)
            if list(values) != sorted(set(values)):
                raise ValueError(f"'{name}' must be strictly increasing; got {values}")
        if sum(L >= self.slope_from for L in self.lengths) < 2:
            raise ValueError(f"'slope_from' ({self.slope_from}) must leave >= 2 of 'lengths' {self.lengths}")
        if self.d_model % self.n_heads:
            raise ValueError(f"'n_heads' ({self.n_heads}) must divide 'd_model' ({self.d_model})")
        if (
            2 * self.recall_pairs + 1 > min(self.recall_train_length, self.recall_lengths[0])
            or self.recall_pairs > self.vocab_size // 2 - 1
        ):
            raise ValueError(
                f"'recall_pairs' ({self.recall_pairs}) must satisfy 2 pairs + 1 <= every recall length "
                f"and pairs <= vocab_size // 2 - 1"
            )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~30 s: 3 random-init 2-layer d = 64 models, L = 16 ... 4096, the count "
        "construction in float64 / float32 / bfloat16, the attention-only bound, the cosine "
        "sanity data",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~7 min at one thread (estimated from 268 s at 1500 recall steps, seed 0, peak 1.9 GB): the "
        "quick tables and 2 recall models (d = 128, 2 layers, RoPE) trained 2500 steps at L = 32 and read at "
        "L = 32 ... 512 (the card's 16x length range). At 1500 steps the models answered 1.00 and 0.75 (seed 0), "
        "1.00 and 1.00 (seed 1) at L = 32 on an AVX2 EPYC, but 1.00 and 0.28 at seed 0 on an AVX-512 one (the "
        "second model still on the recall plateau, so the claims were not decided); at 2500 steps both learn "
        "(seed 0, AVX-512). Measured before: d = 64 (2 layers, L = 32-64, 4-8 pairs) stays on the copy-a-present-value "
        "plateau (accuracy ~1/pairs) for 1500-4000 steps at lr 1e-3 and 3e-3; d = 128 reaches accuracy 1.0 at "
        "L = 32 by step 1200 (~80 ms a step)",
        recall=(True, "card: the trained recall model of claims 6-7"),
        recall_models=(2, "CPU budget (card: 5 seeds): ~120 s of one core per model"),
        recall_d_model=(128, "CPU budget (card: 256); d = 64 did not leave the recall plateau in 4000 steps"),
        recall_n_layers=(2, "CPU budget (card: 4): two layers suffice for the key -> value lookup"),
        recall_pairs=(4, "CPU budget (ours: 8): 4 pairs fit L = 32"),
        recall_train_length=(32, "CPU budget (card: 128): a step costs ~linear in L"),
        recall_steps=(
            2500,
            "CPU budget (card: 20k): accuracy 1.0 at L = 32 by step ~1200 on one CPU, still on the plateau at 1500 "
            "on another (measured, d = 128)",
        ),
        recall_lr=(1e-3, "the card's 3e-4 needs more than the CPU budget's steps"),
        recall_batch=(32, "CPU budget (ours: 64)"),
        recall_lengths=((32, 64, 128, 256, 512), "L_train ... 16 L_train, the card's range 128 ... 2048 scaled"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: adds 5 recall models (d = 256, 4 layers, RoPE) trained 20k steps at L = 128 and read at L = 128 ... 2048."
        " Estimate: one core trains a recall model at 3.9 s a step (measured: d = 256, 4 layers, batch 64, L = 128), "
        "so 5 x 20k steps are 3.9e5 core-seconds, 110-220 min at 30-60 cores per H100",
        gpu_minutes=150,
        recall=(True, "card: the trained recall model of claims 6-7"),
    ),
}
