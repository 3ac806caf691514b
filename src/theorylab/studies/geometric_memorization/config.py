"""geometric-memorization: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Chunk, DModel, Entities, Every, LearningRate, MLPMult, Relations, Seeds, Steps


class GeometricMemorizationConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "construction_sizes": "construction_n_entities",
        "cot_size": "cot_n_entities",
        "train_sizes": "train_n_entities",
        "assoc_sizes": "assoc_n_entities",
        "twohop_sizes": "twohop_n_entities",
    }
    construction_n_entities: tuple[Entities, ...] = Field(
        (128, 2048, 10_000), min_length=1, description="entity counts N of the exact-construction grid (card)"
    )
    construction_relations: tuple[Relations, ...] = Field(
        (1, 2, 4), min_length=1, description="relation counts R of the construction grid (card)"
    )
    tight_relations: tuple[Relations, ...] = Field(
        (1,),
        min_length=1,
        description="R of the pigeonhole check at k = ceil(log2 N) - 1 (ours: "
        "codes collide per relation block, R does not matter)",
    )
    gate: float = Field(2.0, gt=1, le=100, description="gate M of the ReLU selector (card: 2; any M > 1 works)")
    cot_n_entities: Entities = Field(2048, description="N of the chain-of-thought two-hop construction check (card)")
    cot_relations: Relations = Field(4, description="R of the two-hop check: N·R² queries (card)")
    eval_dtype: Literal["float32", "float64"] = Field(
        "float32",
        description="dtype of the construction's forward pass (its logits are small integers, exact in float32)",
    )
    chunk: Chunk = Field(2048, description="queries per forward pass when scoring N logits each")
    train_n_entities: tuple[Entities, ...] = Field((256,), min_length=1, description="N of the trained models (card)")
    train_relations: tuple[Relations, ...] = Field((2,), min_length=1, description="R of the trained models (card)")
    width_multipliers: tuple[int, ...] = Field(
        (1,), min_length=1, description="d = multiplier x R ceil(log2 N) of the trained models (card)"
    )
    mlp_mult: MLPMult = Field(4, description="MLP width = mlp_mult x d (card: 4d)")
    seeds: Seeds = Field(1, description="trained models per (N, R, d)")
    steps: Steps = Field(
        500,
        description="full-batch AdamW steps (card: 1500; quick 500 for the CPU budget: 100% "
        "is reached by step 250 and the R² moves < 0.01 after it)",
    )
    lr: LearningRate = Field(1e-2, description="AdamW learning rate (card), weight decay 0")
    evaluate_every: Every = Field(100, description="steps between accuracy evaluations of the training curve")
    train_chunk: Chunk | None = Field(None, description="row chunk of the full-batch gradient (None: one pass)")
    transfer_multiplier: int = Field(
        1,
        ge=1,
        le=64,
        description="d multiplier of the models whose MLP is transferred (card: 4; quick: the one trained model)",
    )
    transfer_steps: Steps = Field(150, description="E-only steps on new bijections (card: half the training steps)")
    assoc_n_entities: tuple[Entities, ...] = Field(
        (), description="N of the associative-memory baseline (d fixed, MLP width grown until 100%); empty: skipped"
    )
    assoc_relations: Relations = Field(1, description="R of the associative-memory baseline")
    assoc_d_model: DModel = Field(16, description="fixed width d of the associative-memory baseline (card)")
    assoc_widths: tuple[int, ...] = Field((), description="MLP widths tried in order until 100% recall")
    twohop_n_entities: tuple[Entities, ...] = Field(
        (), description="N of the two-hop CoT vs no-CoT sweep; empty: skipped"
    )
    twohop_relations: Relations = Field(2, description="R of the two-hop sweep (ours)")
    twohop_dims: tuple[int, ...] = Field((), description="widths d swept for both two-hop models (ascending)")

    @model_validator(mode="after")
    def _check(self) -> "GeometricMemorizationConfig":
        bad = [m for m in self.width_multipliers if not 1 <= m <= 64]
        if bad:
            raise ValueError(f"'width_multipliers' entries must lie in [1, 64]; got {bad}")
        for name in ("assoc_widths", "twohop_dims"):
            vals = getattr(self, name)
            if any(v < 1 for v in vals) or list(vals) != sorted(set(vals)):
                raise ValueError(f"'{name}' must be positive and strictly ascending; got {vals}")
        if self.assoc_n_entities and not self.assoc_widths:
            raise ValueError("'assoc_widths' must be given when 'assoc_n_entities' is")
        if self.twohop_n_entities and not self.twohop_dims:
            raise ValueError("'twohop_dims' must be given when 'twohop_n_entities' is")
        if self.transfer_multiplier not in self.width_multipliers:
            raise ValueError(
                f"'transfer_multiplier' ({self.transfer_multiplier}) must be one of 'width_multipliers' "
                f"{self.width_multipliers}"
            )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~40 s: the exact construction (sign codes, hard attention, ReLU "
        "selector) on N in {128, 2048, 10^4} x R in {1, 2, 4}, the pigeonhole check at one bit "
        "fewer, CoT two-hop at N = 2048, R = 4; one trained model N = 256, R = 2, d = 16, MLP "
        "64, 500 full-batch AdamW steps, its superposition R² and a short E-only transfer",
    ),
    "cpu": Preset.of(
        "cpu",
        "1 CPU core: the quick preset's construction checks, with trained models at N = 2^10, R = 2 and d = 1 and 4 x "
        "R log2 N (MLP 4d), 1500 full-batch AdamW steps (card), and the E-only transfer at d = 4 R log2 N for half "
        "the steps, which decides transfer (332 s CPU measured); the two-hop sweep at N = 2^8, R = 2 (CoT vs 2 "
        "layers, d from 4, each sweep stopped once the verdict is fixed), which decides two-hop-tradeoff (~90 s CPU "
        "at seed 0: 3 models of 1500 steps)",
        train_n_entities=((1024,), "card: the smallest paper N"),
        width_multipliers=((1, 4), "card: transfer needs d = 4 R log2 N"),
        steps=(1500, "card"),
        transfer_multiplier=(4, "card"),
        transfer_steps=(750, "card: half the training steps"),
        twohop_n_entities=(
            (256,),
            "two-hop: N = 2^8 (card 2^13): every sweep point trains on all N·R² queries x N "
            "logits: 3 models at seed 0, ~90 s of CPU",
        ),
        twohop_dims=(
            (4, 8, 16, 32),
            "two-hop: doubling from 4, below R log2 N = 16, since real-valued weights "
            "let the one-hop model recall all facts at d = 4 (seed-0 exploration)",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 2500 min on one H100, from the readout's FLOPs: N·R facts x N logits x d per pass, 3 passes a "
        "step; N = 2^16, R = 8, d = 1024 alone is ~1e14 FLOP a step, 2e18 for 20k steps, ~6 h at ~100 TFLOP/s; the "
        "whole R x d grid is ~2.5x that, x 3 seeds): N in {2^10, 2^13, 2^16} x R in {1, 2, 4, 8} x d in {1, 2, 4, "
        "8} x R log2 N, 20k steps, 3 seeds; "
        "transfer at d = 4 R log2 N; the associative-memory baseline (d = 16, MLP width grown); two-hop with and "
        "without CoT at N = 2^13. params-per-fact stays here: its geometric half is a count at N = 2^16 (no CPU "
        "size reaches it: N·R facts x N logits); the measured CPU slice of its baseline (seed 0, 1500 steps, d = "
        "16) recalls 100% at the smallest MLP width 16 at R = 1 for N = 128 and 256 (R = 1 needs no MLP: the "
        "subject embedding alone maps each subject to its attribute's readout row) and at R = 4 for N = 128",
        gpu_minutes=2500,
        train_n_entities=((1024, 8192, 65536), "card"),
        train_relations=((1, 2, 4, 8), "card"),
        width_multipliers=((1, 2, 4, 8), "card"),
        seeds=(3, "card"),
        steps=(20_000, "card"),
        evaluate_every=(1000, "ours"),
        train_chunk=(16_384, "ours: N·R up to 5·10^5 facts x 2^16 logits does not fit in one pass"),
        transfer_multiplier=(4, "card"),
        transfer_steps=(10_000, "card: half the training steps"),
        assoc_n_entities=((1024, 4096, 16384, 65536), "ours: four sizes for the log-log slope"),
        assoc_relations=(1, "ours"),
        assoc_widths=((16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384), "ours: doubling"),
        twohop_n_entities=((8192,), "card"),
        twohop_relations=(2, "ours"),
        twohop_dims=((13, 26, 52, 104, 208, 416), "ours: doubling from R log2 N / 2"),
    ),
}
