"""focus-dilution: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import DModel, Every, Fraction, LearningRate, Length, SampleSize, Seeds, Steps, VocabSize


class FocusDilutionConfig(StudyConfig):
    vocab_size: VocabSize = Field(
        10, description="tokens V of the Zipf-Markov chain (card: 10 quick; 50, 1000, 10000 paper)"
    )
    d_model: DModel = Field(16, description="embedding width d (card: 16 quick, 256 paper)")
    length: Length = Field(16, description="context T: sequences of T + 1 states, targets the next tokens (card: 16)")
    n_sequences: SampleSize = Field(512, description="training sequences, one full batch (card: 512)")
    zipf_s: float = Field(1.0, ge=0, le=4, description="Zipf exponent s of the base law π₀ ∝ k^(-s) (card: 1)")
    chain_mix: Fraction = Field(0.5, description="weight of the Zipf rows in P = mix·1π₀ᵀ + (1-mix)·R (card: 0.5)")
    init_std: float = Field(
        0.05, gt=0, le=1, description="ε: every weight i.i.d. N(0, ε²) (card: 0.05 quick; 0.01, 0.02, 0.05 paper)"
    )
    residual: bool = Field(
        False, description="a residual stream around attention (card: claims are for False; True is the variant)"
    )
    lr: LearningRate = Field(1.0, description="full-batch gradient-descent step (card: 1.0, a proxy for gradient flow)")
    steps: Steps = Field(4000, description="full-batch steps (card: 4000 quick, ~1e5 paper)")
    seeds: Seeds = Field(
        2, description="members, each with its own chain and init, trained in lockstep (card: 2 quick, 5 paper)"
    )
    evaluate_every: Every = Field(50, description="steps between two log points (card: 50)")
    top_fraction: Annotated[float, Field(gt=0, lt=1)] = Field(
        0.25, description="Top = the top_fraction·V most frequent tokens under π (card: 1/4)"
    )
    min_position: Annotated[int, Field(ge=0, le=1_000_000)] = Field(
        4, description="focus ratio and attention entropy use query positions t >= this (card: 4)"
    )

    # the paper's setting for `focus-then-dilution` (card update, turn 3; notes on the paper): see paper_setting.py
    focus_setting: Literal["paper", "card"] = Field(
        "paper",
        description="how `focus-then-dilution` is judged: 'paper' trains the paper's model (no W_V, no "
        "LayerNorm, last-token loss, π = (0.75, 0.19, 0.05, 0.01)) and judges its attention entropy and attention on "
        "the high-frequency token; 'card' judges the card's top-V/4 focus ratio F on the card's model (the earlier "
        "reading)",
    )
    focus_lambda: Annotated[float, Field(ge=0, lt=1)] = Field(
        0.3, description="λ of the paper's chain P = λI + (1-λ)1πᵀ (ours: the notes give no value)"
    )
    focus_asymmetry: Annotated[float, Field(ge=0, le=2)] = Field(
        1.0,
        description="δ: scale of the low-frequency "
        "deviations (Definition 2.1); 1 = the paper's π, 0 = "
        "perfectly symmetric low frequencies (the control)",
    )
    focus_length: Length = Field(8, description="T of the paper setting's sequences (ours: not in the notes)")
    focus_d_model: DModel = Field(8, description="embedding width d of the paper setting (ours: not in the notes)")
    focus_init_std: float = Field(
        0.01, gt=0, le=1, description="ε of the paper setting: every weight N(0, ε²) (notes: small; the value is ours)"
    )
    focus_lr: LearningRate = Field(1.0, description="GD step on the exact population loss (a proxy for the flow)")
    focus_steps: Steps = Field(
        4000, description="GD steps of the paper setting (the loss is at the entropy rate by ~3000)"
    )
    focus_every: Every = Field(10, description="steps between two log points of the paper setting")

    @model_validator(mode="after")
    def _checks(self) -> "FocusDilutionConfig":
        if self.min_position >= self.length:
            raise ValueError(f"'min_position' ({self.min_position}) must be < 'length' ({self.length})")
        if self.evaluate_every > self.steps:
            raise ValueError(f"'evaluate_every' ({self.evaluate_every}) must be <= 'steps' ({self.steps})")
        if int(self.top_fraction * self.vocab_size) < 1:
            raise ValueError(
                f"'top_fraction' ({self.top_fraction}) times 'vocab_size' ({self.vocab_size}) must be >= 1 token"
            )
        if self.focus_every > self.focus_steps:
            raise ValueError(f"'focus_every' ({self.focus_every}) must be <= 'focus_steps' ({self.focus_steps})")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~30 s: V = 10, d = 16, T = 16, 512 sequences, ε = 0.05, lr 1, 4000 "
        "full-batch steps, 2 members in lockstep, a log point every 50 steps",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~3 min: quick's model and data (V = 10, d = 16, T = 16, 512 sequences, ε = 0.05, lr 1, 2 "
        "members) for 20000 full-batch steps, the budget claim 6 (second-cycle) names; a log point every 50 steps",
        steps=(20_000, "card: claim 6 needs about 5x the quick step budget"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 10 min on one H100: rough; one attention layer trained full-batch: 5 members x 2048 sequences x "
        "128² = 168M attention entries a step (quick's are 0.26M: its 4000 steps take ~40 s, overhead-bound), ~10 "
        "float32 passes fwd and bwd ~7 GB of memory traffic, ~3-5 ms a step on an H100: 20k steps ~2 min, plus 200 "
        "log points and the paper setting): "
        "V = 50, d = 256, T = 128, ε = 0.05, 20000 steps (5x quick's budget, for the second cycle), 5 members; "
        "sweep vocab_size over {50, 1000, 10000} and init_std over {0.01, 0.02, 0.05} with `theorylab sweep`",
        gpu_minutes=10,
        vocab_size=(50, "card: the smallest paper vocabulary"),
        d_model=(256, "card"),
        length=(128, "card"),
        n_sequences=(2048, "ours: the card gives no paper data size"),
        steps=(20_000, "card: claim 6 needs about 5x the quick step budget"),
        seeds=(5, "card"),
        evaluate_every=(100, "ours: 200 log points"),
    ),
}
