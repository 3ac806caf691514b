"""query-key-asymmetry: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Corpus, DModel, Fraction, LearningRate, Length, NHeads, NLayers, Steps
from theorylab.data.text import check_corpus

Pos = Literal["none", "absolute", "rope"]


class QueryKeyAsymmetryConfig(StudyConfig):
    identity_d_model: Annotated[DModel, Field(ge=4)] = Field(64, description="d of the random-init identity models")
    identity_n_heads: NHeads = Field(4, description="heads of the identity models")
    identity_n_layers: NLayers = Field(2, description="layers of the identity models")
    identity_length: Annotated[Length, Field(ge=4)] = Field(32, description="sequence length T of the identity checks")
    identity_batch: Batch = Field(2, description="sequences per identity check")
    positions: tuple[Pos, ...] = Field(
        ("none", "absolute", "rope"), min_length=1, description="position encodings checked"
    )
    bias_norm: float = Field(10.0, gt=0, le=1e6, description="norm of the random key (or query) bias")
    gauge_condition: float = Field(10.0, ge=1, le=1e6, description="largest condition number of the random gauge G")
    lm_d_model: Annotated[DModel, Field(ge=8)] = Field(128, description="d_model of the trained decoder")
    lm_n_layers: NLayers = Field(2, description="layers of the trained decoder")
    lm_n_heads: NHeads = Field(4, description="heads of the trained decoder")
    lm_length: Annotated[Length, Field(ge=4)] = Field(64, description="training window")
    lm_batch: Batch = Field(32, description="batch size")
    lm_steps: Steps = Field(300, description="AdamW steps (claims 5-6 need >= 5000)")
    lm_lr: LearningRate = Field(1e-3, description="AdamW learning rate")
    rank_fractions: tuple[Annotated[Fraction, Field(gt=0)], ...] = Field(
        (0.125, 0.25, 0.5), min_length=1, description="truncation ranks as fractions of d_h"
    )
    eval_batches: int = Field(4, ge=1, le=10_000, description="held-out batches for ΔLoss and perplexity")
    thin_keys: bool = Field(
        False, description="also train a decoder with d_select = d_h x thin_fraction (claim 6; paper preset)"
    )
    thin_fraction: Annotated[Fraction, Field(gt=0)] = Field(
        0.25, description="query/key width of the thin decoder as a fraction of d_h"
    )
    corpus: Corpus = Field(
        "stdlib",
        min_length=1,
        description="character-level text: 'stdlib' (prose of Python's own "
        "docstrings, 1.1 MB), 'kjv' (Debian's bible-kjv, 4.4 MB) or a local plain-text file",
    )

    @model_validator(mode="after")
    def _checks(self) -> "QueryKeyAsymmetryConfig":
        check_corpus("corpus", self.corpus)
        if self.identity_d_model % self.identity_n_heads or self.lm_d_model % self.lm_n_heads:
            raise ValueError("'identity_d_model' and 'lm_d_model' must be multiples of their head counts")
        if (self.identity_d_model // self.identity_n_heads) % 2:
            raise ValueError(
                "rotary positions need an even head width: identity_d_model / identity_n_heads must be even"
            )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~25 s: identities on random-init models (every position x causal x "
        "dtype), a 300-step decoder with truncation curves (descriptive)",
    ),
    "cpu": Preset.of(
        "cpu",
        "CPU, <= 10 min at one thread: claims 5-6 on a 2-layer d = 64 character decoder (4 heads, d_h = 16) trained "
        "the claims' 5000 steps, with its thin-key twin (d_select = d_h/4 = 4); the card's 125M decoder is the paper "
        "preset",
        lm_d_model=(64, "CPU budget: two 5000-step decoders at d = 128 take ~20 min of one core"),
        lm_batch=(16, "CPU budget: ~0.06 s of one core a step at batch 32 put the two decoders at ~11 min"),
        lm_steps=(5000, "the claims' minimum"),
        thin_keys=(True, "claim 6"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 40 min on one H100: 2 decoders (full and thin-key) x 5000 steps of the GPT-2-small shape (~85M "
        "non-embedding parameters) at 32 x 256 tokens: ~4.2 TFLOP a step, ~42 PFLOP, 25-35 min at 20-30 TFLOP/s in "
        "float32 (the cpu preset's d = 64 decoder runs ~20 GFLOP/s on one core), plus truncation curves and held-out "
        "evaluations): "
        "a GPT-2-small-shaped decoder (12 layers, 768 wide, 12 heads) trained 5000 steps, truncation, and a "
        "thin-key decoder (d_select = d_h/4)",
        gpu_minutes=40,
        lm_d_model=(768, "card: 125M-scale decoder"),
        corpus=(
            "kjv",
            "the larger real corpus where Debian's bible-kjv is installed (elsewhere: --set corpus=stdlib "
            "or a local text file)",
        ),
        lm_n_layers=(12, "card"),
        lm_n_heads=(12, "card"),
        lm_length=(256, "longer windows"),
        lm_steps=(5000, "ours: 5000 steps"),
        lm_lr=(6e-4, "GPT-2-small's peak learning rate"),
        eval_batches=(16, "more held-out data"),
        thin_keys=(True, "card: claim 6"),
    ),
}
