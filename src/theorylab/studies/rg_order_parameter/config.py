"""rg-order-parameter: its config and presets (the paper, the readings and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    CorrelationLength,
    DModel,
    LearningRate,
    Length,
    MLPMult,
    NLayers,
    SampleSize,
    Steps,
    VocabSize,
)

Reading = Literal["mixer", "window", "flat"]
READINGS: tuple[Reading, ...] = ("mixer", "window", "flat")


class RgOrderParameterConfig(StudyConfig):
    vocab_size: Annotated[VocabSize, Field(le=256)] = Field(
        16, description="tokens V of the lazy chain (one-hot inputs; [MASK] is id V); follow-up: 16"
    )
    xis: tuple[CorrelationLength, ...] = Field(
        (1.2, 6.7),
        min_length=2,
        max_length=8,
        description="correlation "
        "lengths ξ of the chains (lazy chain λ = e^(-1/ξ)); the claims read the shortest and the longest; follow-up: "
        "1.2 and 6.7 (card: 1 and 7)",
    )
    readings: tuple[Reading, ...] = Field(
        READINGS,
        min_length=1,
        description="how the MLP stack mixes positions: "
        "'mixer' (token-mixing MLP along positions), 'window' (one-hot window of half-width `window`, per-position "
        "blocks), 'flat' (the flattened one-hot sequence into one stream)",
    )
    length: Annotated[Length, Field(le=512)] = Field(64, description="sequence length L; follow-up: 64")
    d_model: Annotated[DModel, Field(le=4096)] = Field(64, description="residual stream width d; follow-up: 64")
    n_layers: Annotated[NLayers, Field(le=64)] = Field(6, description="residual MLP blocks N; follow-up: 6")
    mlp_mult: MLPMult = Field(4, description="channel-MLP hidden width / d (follow-up: 4d, GELU, LayerNorm)")
    tok_mult: MLPMult = Field(2, description="Mixer token-MLP hidden width / L (card: L -> 2L -> L)")
    window: int = Field(4, ge=0, le=64, description="half-width w of the window reading's one-hot window (card: 4)")
    mask_rate: float = Field(
        0.15,
        gt=0,
        lt=1,
        description="share of positions replaced by [MASK]; the loss is on them only (follow-up: 15 %)",
    )
    steps: Steps = Field(10_000, description="Adam steps, fresh sequences each step (follow-up: 10,000)")
    batch: Batch = Field(32, description="sequences per step (follow-up: 32)")
    lr: LearningRate = Field(3e-4, description="Adam learning rate, no weight decay (follow-up: 3e-4)")
    lr_schedule: Literal["constant", "linear"] = Field(
        "constant",
        description="Adam learning rate over the run: "
        "'constant' (the follow-up states no schedule) or 'linear' decay to 0",
    )
    eval_sequences: Annotated[SampleSize, Field(ge=16, le=65_536)] = Field(
        1024, description="held-out masked sequences B of the spectra, drift and losses (card: 1024)"
    )
    chain_tokens: Annotated[SampleSize, Field(ge=1000, le=10_000_000)] = Field(
        200_000, description="tokens of the empirical autocorrelation check (card: 2e5)"
    )
    chain_lags: int = Field(5, ge=1, le=50, description="lags k = 1..K of the autocorrelation check (card: 5)")

    @model_validator(mode="after")
    def _checks(self) -> "RgOrderParameterConfig":
        if len(set(self.readings)) != len(self.readings):
            raise ValueError(f"'readings' repeats a reading: {self.readings}")
        if len(set(self.xis)) != len(self.xis):
            raise ValueError(f"'xis' repeats a value: {self.xis}")
        if self.n_layers < 3:
            raise ValueError(
                "'n_layers' must be >= 3: the drift claim compares the largest two transitions with the rest"
            )
        if self.chain_lags >= min(self.length, 64):
            raise ValueError(f"'chain_lags' must be below the sequence length ({self.length})")
        return self


# The reduced size quick and cpu share (they differ in readings and steps): value, reason.
CPU_SIZE = dict(
    length=(16, "CPU budget (the Mixer step costs ~L)"),
    d_model=(32, "CPU budget; still above V = 16, so an eRank above 16 is possible"),
    batch=(64, "more masked tokens per step for the fewer steps"),
    lr=(3e-3, "a larger step for the fewer steps"),
    lr_schedule=("linear", "a linear decay reaches the Bayes loss in fewer steps"),
)

PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, <= 60 s: the window reading (the cheapest per-position one) at a reduced size (L = 16, d = 32, "
        "1000 steps of 64 sequences, lr 3e-3 decayed linearly), both ξ; the Mixer and flat readings: cpu preset",
        readings=(("window",), "CPU budget: one reading fits in 60 s, three do not"),
        steps=(1000, "CPU budget"),
        **CPU_SIZE,
    ),
    "cpu": Preset.of(
        "cpu",
        "<= 10 min on 2 CPU cores (~3 min at one thread): the three readings (Mixer, window, flat) at the quick size "
        "(L = 16, d = 32) with 1500 steps of 64 sequences, lr 3e-3 decayed linearly",
        steps=(1500, "CPU budget"),
        **CPU_SIZE,
    ),
    "paper": Preset.of(
        "paper",
        "GPU: the follow-up's setup (arXiv 2607.15449): V = 16, L = 64, ξ ≈ 1.2 and 6.7, 6 residual MLP blocks of "
        "d = 64, 15 % masking, Adam 3e-4, batch 32, 10,000 steps, each of the three readings",
        gpu_minutes=15,
    ),
}
