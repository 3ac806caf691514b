"""attention-sensitivity: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    Concentration,
    Corpus,
    DModel,
    Every,
    LearningRate,
    Length,
    NHeads,
    NLayers,
    SampleSize,
    Seeds,
    Steps,
)
from theorylab.data.text import check_corpus


class AttentionSensitivityConfig(StudyConfig):
    theta_rows: SampleSize = Field(300, description="random attention rows of the θ checks (card: 300)")
    theta_n_max: int = Field(
        12, ge=2, le=16, description="rows have 2..theta_n_max entries (brute force over 2^n sign vectors)"
    )
    dirichlet_alphas: tuple[Concentration, ...] = Field(
        (0.05, 0.5, 5.0), min_length=1, description="Dirichlet concentrations of the random rows"
    )
    taus: tuple[float, ...] = Field((0.5, 1.0, 2.0), min_length=1, description="softmax temperatures τ")
    gain_d_model: DModel = Field(64, description="width d of the random attention layer")
    gain_n_heads: NHeads = Field(4, description="heads of the random attention layer")
    gain_lengths: tuple[Length, ...] = Field(
        (16, 64, 256, 1024), min_length=2, description="sequence lengths T of the local-gain measurement"
    )
    gain_eps: float = Field(1e-4, gt=0, le=1, description="radius ‖Δ‖ of the perturbation (block-∞/RMS)")
    gain_restarts: int = Field(5, ge=1, le=100, description="restarts of the projected gradient ascent")
    gain_steps: Steps = Field(
        20, description="ascent steps per restart (card: 50; the per-token steepest ascent settles in ~20)"
    )
    control_restarts: int = Field(
        1, ge=1, le=100, description="restarts of the sequence-ℓ2 control (it only has to show the √T growth)"
    )
    deepnorm_d_model: DModel = Field(64, description="d_model of the DeepNorm sweep (4 x d MLP, vocabulary 64)")
    deepnorm_n_heads: NHeads = Field(4, description="heads of the DeepNorm sweep")
    deepnorm_batch: Batch = Field(2, description="sequences per update")
    deepnorm_length: Length = Field(16, description="tokens per sequence")
    deepnorm_n_layers: tuple[NLayers, ...] = Field((6, 12, 24, 48), min_length=2, description="depths N")
    deepnorm_exponents: tuple[float, ...] = Field(
        (0.0, 0.125, 0.25, 0.375, 0.5), min_length=2, description="β = (8N)^(−p) for p in this grid"
    )
    deepnorm_seeds: Seeds = Field(2, description="seeds per (N, p)")
    deepnorm_lr: LearningRate = Field(1e-3, description="step size of the one update")
    grad_n_layers: tuple[NLayers, ...] = Field(
        (8, 16, 32, 48), min_length=1, description="depths of the per-layer gradient-norm figure (pre- vs post-LN)"
    )
    lm_n_layers: NLayers = Field(2, description="GPT-2 layers of the θ-tracking run")
    lm_d_model: DModel = Field(64, description="GPT-2 n_embd")
    lm_n_heads: NHeads = Field(4, description="GPT-2 heads")
    lm_length: Length = Field(64, description="context length (rows with >= 16 keys need >= 17)")
    lm_batch: Batch = Field(32, description="batch size")
    lm_steps: Steps = Field(200, description="AdamW steps")
    lm_lr: LearningRate = Field(1e-3, description="AdamW learning rate")
    lm_log_every: Every = Field(25, description="θ is logged every this many steps (and at 0)")
    lm_corpus: Corpus = Field(
        "stdlib",
        min_length=1,
        description="character-level text: 'stdlib' (prose of Python's "
        "own docstrings, 1.1 MB), 'kjv' (Debian's bible-kjv, 4.4 MB) or a local plain-text file",
    )
    lm_local: str | None = Field(
        None, description="a local GPT-2 checkpoint directory you own: θ is also measured on it (never downloaded)"
    )
    min_keys: int = Field(16, ge=1, le=4096, description="θ only on rows with at least this many keys")
    postln: bool = Field(
        False, description="run the warmup experiment (paper preset: a deep post-LN model with and without warmup)"
    )
    postln_n_layers: NLayers = Field(36, description="post-LN layers of the warmup runs")
    postln_d_model: DModel = Field(1280, description="d_model of the warmup runs")
    postln_n_heads: NHeads = Field(20, description="heads of the warmup runs")
    postln_length: Length = Field(256, description="context of the warmup runs")
    postln_batch: Batch = Field(8, description="batch of the warmup runs")
    postln_steps: Annotated[Steps, Field(ge=2)] = Field(300, description="steps of the warmup runs")
    postln_lr: LearningRate = Field(5e-4, description="peak learning rate of the warmup runs (Adam)")
    postln_warmup_steps: Steps = Field(100, description="linear warmup steps of the warmed run")

    @model_validator(mode="after")
    def _checks(self) -> "AttentionSensitivityConfig":
        check_corpus("lm_corpus", self.lm_corpus)
        widths = (
            (self.gain_d_model, self.gain_n_heads),
            (self.deepnorm_d_model, self.deepnorm_n_heads),
            (self.lm_d_model, self.lm_n_heads),
            (self.postln_d_model, self.postln_n_heads),
        )
        if any(width % heads for width, heads in widths):
            raise ValueError(
                "every width (gain_d_model, deepnorm_d_model, lm_d_model, postln_d_model) must be a "
                "multiple of its head count"
            )
        if self.lm_length <= self.min_keys:
            raise ValueError(
                f"'lm_length' ({self.lm_length}) must exceed 'min_keys' ({self.min_keys}): θ is "
                f"measured on rows with >= min_keys keys"
            )
        if self.postln_warmup_steps >= self.postln_steps:
            raise ValueError(
                f"'postln_warmup_steps' ({self.postln_warmup_steps}) must be below 'postln_steps' ({self.postln_steps})"
            )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, under a minute: 300 θ rows, local gain to T = 1024, DeepNorm sweep N <= "
        "48 at d = 64, a 2-layer GPT-2 trained 200 steps",
    ),
    "cpu": Preset.of(
        "cpu",
        "CPU, ~7 min of one core: the quick preset plus the warmup experiment (claim warmup-needed) on a 36-layer "
        "post-LN model at d = 128 (2 heads of 64), windows of 64, batch 8, 300 steps with and without 100 warmup "
        "steps; the card's 1280-wide model is the paper preset",
        postln=(True, "claim warmup-needed"),
        postln_d_model=(128, "CPU budget: 0.6 s of one core per step at d = 128 (3.8 s at d = 256, T = 128)"),
        postln_n_heads=(2, "head width 64, GPT-2's"),
        postln_length=(64, "CPU budget"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 15 min on one H100: rough; the cpu preset measured 3.8 s of one core a step for the 36-layer post-"
        "LN model at d = 256, T = 128, and d = 1280, T = 256 is ~50x that (~0.7B parameters x 2048 tokens: ~8.7 TFLOP"
        " a step), so the three GPT-2-large-shaped runs (the θ-tracking LM and the warmup pair) x 300 steps are ~8 "
        "PFLOP, ~5 min at ~25-30 TFLOP/s in float32, plus the gain sweep to T = 4096 and 5-seed DeepNorm sweep at d ="
        " 64 and start-up): "
        "GPT-2-large shape (36 layers, 1280 wide, 20 heads) trained 300 steps, local gain to T = 4096, 5 seeds, "
        "the warmup experiment",
        gpu_minutes=15,
        gain_lengths=((16, 64, 256, 1024, 4096), "longer sequences"),
        lm_corpus=(
            "kjv",
            "the larger real corpus where Debian's bible-kjv is installed (elsewhere: --set "
            "lm_corpus=stdlib or a local text file)",
        ),
        deepnorm_seeds=(5, "more seeds"),
        gain_steps=(50, "card"),
        lm_n_layers=(36, "card: GPT-2-large shape"),
        lm_d_model=(1280, "card"),
        lm_n_heads=(20, "card"),
        lm_length=(256, "card"),
        lm_batch=(8, "card"),
        lm_steps=(300, "card"),
        lm_lr=(2.5e-4, "GPT-2-large's own peak learning rate scale"),
        postln=(True, "card: claim 6"),
    ),
}
