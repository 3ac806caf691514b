"""attention-rank: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    Chunk,
    Dim,
    Fraction,
    InverseTemperature,
    LearningRate,
    Length,
    NHeads,
    NLayers,
    Rank,
    SampleSize,
    Seeds,
    Steps,
    Width,
)

Multiplier = Annotated[int, Field(ge=1, le=65_536)]  # w independent multi-head modules summed


class AttentionRankConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {"construction_d": "construction_dim"}
    # --- task ---------------------------------------------------------------------------------
    d: Dim = Field(16, description="dimension d of the sphere S^{d-1} (quick 16, paper 64)")
    n_points: Length = Field(8, description="set size N of the heads grid (quick 8, paper 16)")
    # --- training-free constructions -----------------------------------------------------------
    construction_dim: Dim = Field(16, description="dimension of the construction checks (card: 16)")
    construction_n_points: Length = Field(8, description="set size of the softmax and rank-1 checks (card: 8)")
    construction_sets: SampleSize = Field(
        2000, description="sets per construction measurement (rank-1: as many again held out)"
    )
    hardmax_n_points: tuple[Length, ...] = Field(
        (2, 8, 64, 256), min_length=1, description="set sizes for the exact hard-max check"
    )
    betas: tuple[InverseTemperature, ...] = Field(
        (10.0, 30.0, 100.0, 300.0), min_length=2, description="inverse temperatures of the softmax full-rank head"
    )
    rank1_n_heads: tuple[NHeads, ...] = Field(
        (1, 4, 16, 64, 256), min_length=2, description="head counts of the random rank-1 construction"
    )
    # --- trained grid (Fig. 1): depth x heads x width multiplier, at n_points ----------------
    architecture: Literal["attention", "encoder"] = Field(
        "attention",
        description="'attention': one attention layer "
        "alone (V_h full rank); 'encoder': post-norm residual blocks with an FF block",
    )
    n_layers: tuple[NLayers, ...] = Field(
        (1,), min_length=1, description="numbers of layers L ('attention' allows only 1)"
    )
    n_heads: tuple[NHeads, ...] = Field(
        (1, 4, 16), min_length=1, description="heads H per multi-head module; rank r = d / H"
    )
    width_multipliers: tuple[Multiplier, ...] = Field(
        (1,), min_length=1, description="w independent multi-head modules summed (H*w heads of rank r)"
    )
    # --- trained grid (Fig. N): rank x sequence length ----------------------------------------
    length_n_points: tuple[Length, ...] = Field(
        (4, 8, 16), description="set sizes N of the length grid (empty: skip it)"
    )
    length_ranks: tuple[Rank, ...] = Field((16, 4, 1), description="head ranks r of the length grid (H = d / r)")
    length_n_layers: NLayers = Field(1, description="layers in the length grid (paper: 2)")
    length_width_multiplier: Multiplier = Field(1, description="width multiplier in the length grid (paper: 64)")
    # --- encoder (architecture='encoder') -------------------------------------------------------
    norm: Literal["sphere", "layer", "rms"] = Field(
        "sphere", description="post-norm of the encoder (paper code: learned-scale sphere norm)"
    )
    mlp_width: Annotated[Width, Field(ge=0, le=1_000_000)] = Field(
        2048, description="FF width of the encoder blocks (paper: 2048; 0 = none)"
    )
    # --- optimisation ----------------------------------------------------------------------------
    steps: Steps = Field(600, description="training steps (quick 600, paper 1e5)")
    batch: Batch = Field(128, description="sets per step (quick 128, paper 256)")
    lr: LearningRate = Field(1e-2, description="AdamW peak learning rate (paper 1e-2)")
    beta2: float = Field(0.95, gt=0, lt=1, description="AdamW beta2 (paper 0.95; beta1 = 0.9)")
    weight_decay: float = Field(0.0, ge=0, le=1.0, description="AdamW weight decay (paper 0)")
    warmup_frac: Annotated[Fraction, Field(le=0.5)] = Field(
        0.05, description="linear warm-up fraction, then cosine decay (paper 5%)"
    )
    seeds: Seeds = Field(
        1, description="seeds per configuration, trained as one batch (paper 5; min over seeds reported)"
    )
    eval_sets: SampleSize = Field(4096, description="fresh sets per evaluation (card: 4096)")
    eval_chunk: Chunk = Field(1024, description="sets evaluated at once (memory vs speed)")
    probe_sets: SampleSize = Field(512, description="sets for the attention-pattern statistics")

    @model_validator(mode="after")
    def _consistent(self) -> "AttentionRankConfig":
        for h in self.n_heads:
            if self.d % h:
                raise ValueError(f"'n_heads' = {h} must divide d = {self.d} (rank r = d / H)")
        for r in self.length_ranks:
            if r > self.d or self.d % r:
                raise ValueError(f"'length_ranks' = {r} must divide d = {self.d}")
        if self.architecture == "attention":
            if max(self.n_layers) > 1 or (self.length_n_points and self.length_n_layers > 1):
                raise ValueError(
                    "'n_layers' and 'length_n_layers' must be 1 when architecture='attention' (use 'encoder' for depth)"
                )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: the card's quick sizes (d = 16, N = 8, H in {1, 4, 16}, 600 steps, one seed) and a short "
        "length grid",
    ),
    "paper": Preset.of(
        "paper",
        "GPU: the paper's Fig. 1 grid at d = 64 and its Fig. N grid (1e5 steps, 5 seeds, min over seeds). Estimate: "
        "the Fig. 1 grid alone is 63 (depth, heads, width) jobs x 1e5 steps; one core trains the slice's job (1 layer, "
        "w = 1, 2 seeds, batch 256) at 0.45 s a step (measured), 5 seeds x up to 5 layers x up to ~5x the attention "
        "cost at w = 64 give ~5e7 core-seconds, ~2e4 min at 30-60 cores per H100 (Fig. N adds more)",
        gpu_minutes=20_000,
        d=(64, "Fig. 1 and Fig. N use d = 64"),
        n_points=(16, "Fig. 1 uses N = 16"),
        architecture=("encoder", "the paper's code trains post-norm encoder layers with an FF block at every depth"),
        n_layers=((1, 3, 5), "Fig. 1 rows"),
        n_heads=((1, 2, 4, 8, 16, 32, 64), "Fig. 1 x-axis: r = 64 / H"),
        width_multipliers=((1, 8, 64), "attention parameters d^2, d^2.5, d^3"),
        length_n_points=((4, 16, 64, 256), "Fig. N x-axis"),
        length_ranks=((1, 8, 16, 32, 64), "Fig. N lines"),
        length_n_layers=(2, "Fig. N uses 2 layers"),
        length_width_multiplier=(64, "Fig. N uses w = 64"),
        steps=(100_000, "1000 epochs x 100 batches"),
        batch=(256, "paper batch size"),
        seeds=(5, "paper: 5 seeds, minimum reported"),
        eval_chunk=(256, "bounds GPU memory at 4096 heads"),
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~3 min at one thread: the constructions at quick sizes and one attention layer at d = 64, "
        "N = 16, r in {64, 32, 16}, w = 1, 1500 steps of batch 256, one seed (decides fig1-one-layer at a "
        "CPU-feasible fraction of Fig. 1: one core trains these jobs at ~30 ms a step; H = 64 heads of rank 1 cost "
        "~0.4 s a step, so rank 1 stays at the paper and slice presets; the paper's 1e5 steps of 5 seeds need a GPU)",
        d=(64, "the paper's dimension"),
        n_points=(16, "Fig. 1 uses N = 16"),
        n_heads=((1, 2, 4), "r = 64, 32, 16: full rank, the claim's rank 32 and the top of its ranks 1-16"),
        length_n_points=((), "no length grid (Fig. N is GPU work)"),
        steps=(1500, "~30 ms of one core a step at d = 64, N = 16, batch 256, H <= 4: 3 jobs in ~2.5 min"),
        batch=(256, "paper batch size"),
    ),
    "cpu-depth": Preset.of(
        "cpu-depth",
        "2 CPU cores, ~350 s CPU at one thread, 1.6 GB (seeds 0, 1: fail, known, gain 0.159, 0.160 < 0.2): the "
        "constructions at quick sizes and post-norm encoders of 1 and 3 layers at d = 32, N = 16, r = d/4 = 8 "
        "(H = 4), w = 1, 1000 steps of batch 256 with a 500-step warm-up, one seed (decides depth-helps-short at "
        "half the paper's dimension: the 3-layer encoder at d = 64 costs ~1.07 s of one core a step, measured)",
        d=(32, "half the paper's d = 64: the 3-layer encoder at d = 64 costs ~1.07 s of one core a step"),
        n_points=(16, "the claim's N = 16"),
        architecture=("encoder", "the paper's layer: post-norm encoder blocks with an FF block"),
        n_layers=((1, 3), "the claim's depths"),
        n_heads=((4,), "r = d/4 = 8, the claim's rank"),
        length_n_points=((), "no length grid (Fig. N is GPU work)"),
        mlp_width=(1024, "FF width 32 d as the paper's 2048 at d = 64"),
        steps=(1000, "1% of the paper's 1e5 steps: a CPU budget"),
        warmup_frac=(
            0.5,
            "500 steps: the paper's 5% is 5000 steps, more than this whole run; 5% of 1000 (50 steps) left the "
            "post-norm 3-layer encoder at the zero predictor (d.MSE 1.000 at seed 0, measured)",
        ),
        batch=(256, "paper batch size"),
    ),
    "slice": Preset.of(
        "slice",
        "one GPU for ~15 minutes: 1 layer at d = 64, N = 16, r in {64, 16, 1}, 20k steps (decides fig1-one-layer; "
        "estimate: 3 jobs x 20k steps at 0.45 s of one core a step, measured, = 2.7e4 core-seconds, 8-15 min at 30-60 "
        "cores per H100; no CPU size reaches the claim's d.MSE <= 0.05 at full rank in 10 min)",
        gpu_minutes=15,
        d=(64, "the paper's dimension"),
        n_points=(16, "Fig. 1 uses N = 16"),
        architecture=("encoder", "the paper's layer"),
        n_heads=((1, 4, 64), "r = 64, 16, 1"),
        length_n_points=((), "no length grid in the slice"),
        steps=(20_000, "a fifth of the paper's steps"),
        batch=(256, "paper batch size"),
        seeds=(2, "two seeds, batched"),
    ),
}
