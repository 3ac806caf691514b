"""multi-index-estimators: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Dim, Draws, LearningRate, SampleRatio, SampleSize, Seeds, Width


class MultiIndexEstimatorsConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "pop_d": "pop_dim",
        "statsmodels_d": "statsmodels_dim",
    }
    # --- battery ------------------------------------------------------------------------------------
    d: Annotated[Dim, Field(ge=5)] = Field(100, description="dimension of the battery (card: 100)")
    alphas: tuple[SampleRatio, ...] = Field(
        (20.0, 50.0), min_length=2, description="n/d of the battery; the last is the judged one (card: 20, 50)"
    )
    battery_seeds: Seeds = Field(
        24,
        description="seeds averaged per battery cell (card: seed 0; 24 put the gain of "
        "pHd on D, +0.09 per seed ± 0.10, 3 SE under 0.15)",
    )
    floor_draws: Annotated[Draws, Field(ge=10)] = Field(
        60, description="Gaussian-limit draws for pHd's noise floor on D at d (n -> infinity, fixed d)"
    )
    n_slices: int = Field(10, ge=2, le=1000, description="equal-count slices of SIR and SAVE (card: 10)")
    noise: float = Field(0.0, ge=0, le=100, description="label noise standard deviation")
    # --- proportional collapse: pHd on B and SIR on D ----------------------------------------------
    collapse_dims: tuple[Annotated[Dim, Field(ge=3)], ...] = Field(
        (50, 100, 200), min_length=2, description="dimensions of the collapse sweep"
    )
    collapse_alphas: tuple[SampleRatio, ...] = Field(
        (2.0, 5.0, 10.0, 20.0), min_length=1, description="n/d of the collapse sweep"
    )
    collapse_seeds: Seeds = Field(
        10,
        description="seeds per collapse point (card: 3; 3 leave ±0.05 on a mean at n/d "
        "= 5, so the spread of three means hits 0.12 on some seeds)",
    )
    clip: float = Field(
        3.0,
        gt=0,
        le=1000,
        description="upper clip of the label for the judged pHd on B (bounded "
        "preprocessing; 3 = the 92% quantile of z^2 - 1)",
    )
    # --- population matrices (Monte Carlo) ---------------------------------------------------------
    pop_dim: Annotated[Dim, Field(ge=3, le=50)] = Field(5, description="dimension of the population-matrix check")
    pop_n: Annotated[SampleSize, Field(ge=10_000)] = Field(
        1_000_000, description="samples of the population-matrix check (card: 1e6)"
    )
    pop_batches: int = Field(20, ge=5, le=1000, description="batches for the standard errors")
    # --- statsmodels cross-check ------------------------------------------------------------------
    statsmodels_dim: Annotated[Dim, Field(ge=3)] = Field(20, description="dimension of the statsmodels cross-check")
    statsmodels_n: Annotated[SampleSize, Field(ge=100)] = Field(
        2000, description="samples of the statsmodels cross-check"
    )
    # --- paper: information gap on D and the neural-network row -----------------------------------
    gap_dims: tuple[Annotated[Dim, Field(ge=3)], ...] = Field(
        (), description="dimensions of the information-gap sweep on D (paper: 50..400; empty: skip)"
    )
    gap_alphas: tuple[SampleRatio, ...] = Field(
        (), description="n/d grid of the information-gap sweep (paper: log grid 1..100)"
    )
    gap_seeds: Seeds = Field(5, description="seeds per information-gap point")
    nn_alphas: tuple[SampleRatio, ...] = Field(
        (25.0, 50.0, 100.0, 200.0),
        description="n/d checkpoints of the "
        "online-SGD two-layer net on B (card: up to 200; about 1 s on a CPU; empty: skip)",
    )
    nn_width: Width = Field(64, description="hidden width of the two-layer ReLU net (card: 64)")
    nn_lr: LearningRate = Field(0.05, description="online SGD step size of the two-layer net")
    nn_batch: Batch = Field(32, description="online SGD batch size")


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: the card's battery, collapse sweeps, population matrices, "
        "statsmodels check and the two-layer net",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, < 10 min: quick plus the information-gap sweep on D over the paper's n/d grid at d <= 200",
        gap_dims=((50, 100, 200), "card's dimensions up to 200: d = 400 alone took > 3 min more on one loaded core"),
        gap_alphas=((1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0), "log grid up to 100"),
    ),
    "paper": Preset.of(
        "paper",
        "CPU is enough: more dimensions and seeds, the information gap on D and the neural-network row",
        collapse_dims=((50, 100, 200, 400), "card's dimensions"),
        collapse_alphas=((1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0), "log grid up to 100"),
        collapse_seeds=(20, "card: 20 seeds"),
        battery_seeds=(40, "card: 20 seeds; 40 halve the standard error of the gains"),
        gap_dims=((50, 100, 200, 400), "card's dimensions"),
        gap_alphas=((1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0), "log grid up to 100"),
    ),
}
