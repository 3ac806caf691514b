"""distributional-similarity: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Dim, LearningRate, SampleSize, Seeds, Steps, Width


class DistributionalSimilarityConfig(StudyConfig):
    dataset: Literal["digits", "shapes2d"] = Field(
        "digits", description="training images: the shipped 8x8 digits or procedural shapes2d (known factors)"
    )
    local_images: str | None = Field(
        None,
        description="a local .npy/.npz file of images in [0, 1] (N, H, W) used "
        "instead of 'dataset' (e.g. dSprites); nothing is downloaded",
    )
    shapes_size: Annotated[int, Field(ge=8, le=256)] = Field(32, description="shapes2d image side (card: 64 paper)")
    shapes_train: SampleSize = Field(20_000, description="shapes2d training images")
    probes: Annotated[int, Field(ge=20, le=5000)] = Field(300, description="held-out probe inputs N (card: 300)")
    runs: Annotated[Seeds, Field(ge=2)] = Field(
        4, description="VAEs trained with different seeds (card: 4 quick, 50 paper)"
    )
    latent_dim: Dim = Field(10, description="latent dimensions k (card: 10)")
    width: Width = Field(256, description="MLP width of encoder and decoder (card: 256)")
    beta: float = Field(
        1.0, gt=0, le=100, description="β of the β-VAE (card: 4; at 4 every 8x8-digit VAE collapses, see the docs page)"
    )
    lr: LearningRate = Field(1e-3, description="Adam learning rate (card: 1e-3)")
    batch: Batch = Field(128, description="minibatch (card: 128)")
    steps: Steps = Field(1500, description="Adam steps per VAE (card: 1500)")
    cell_repeats: Annotated[int, Field(ge=1, le=10_000)] = Field(
        20, description="synthetic probes per (a, b) cell (card: 20, N = 320)"
    )
    gap: float = Field(
        100.0, ge=50, le=1e4, description="spacing of the synthetic channels' means in units of σ (card: >= 50)"
    )
    noise_scales: tuple[float, ...] = Field(
        (1.0, 1.5, 2.0, 4.0), min_length=2, description="σ scale factors c of the noise sweep, starting at 1"
    )
    active_bits: float = Field(0.5, gt=0, le=20, description="a latent dimension is active when I >= this (bits)")
    shape_iters: Annotated[int, Field(ge=1, le=10_000)] = Field(
        20,
        description="alternating-Procrustes rounds of the "
        "stochastic shape distance (on the "
        "digits, 20 vs 100 rounds change d by "
        "~2e-5 relative)",
    )
    distance_runs: Annotated[int, Field(ge=3, le=1000)] | None = Field(
        None, description="runs whose every ordered pair gets the two shape distances (None: all runs)"
    )
    fragment_runs: Annotated[int, Field(ge=2, le=1000)] = Field(
        25, description="runs whose latent dimensions enter the fragment matching (card: 25)"
    )

    @model_validator(mode="after")
    def _checks(self) -> "DistributionalSimilarityConfig":
        c = self.noise_scales
        if c[0] != 1.0 or list(c) != sorted(set(c)):
            raise ValueError(f"'noise_scales' must start at 1.0 and increase strictly; got {c}")
        if self.local_images is not None and not Path(self.local_images).expanduser().is_file():
            raise ValueError(f"'local_images' must be an existing .npy/.npz file; {self.local_images!r} is not")
        if self.dataset == "digits" and self.local_images is None and self.probes > 897:
            raise ValueError(
                f"'probes' ({self.probes}) must be <= 897 with the digits (1797 images, half for training)"
            )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~40 s: synthetic channels (N = 320), 4 β-VAEs (k = 10, β = 1) on the "
        "8x8 digits in lockstep, 1500 steps, 300 held-out probes",
    ),
    "cpu": Preset.of(
        "cpu",
        "1 CPU core, 234 s CPU measured (seed 0, at load ~17 on 2 cores): quick's recipe (8x8 digits, β = 1, 1500 "
        "steps, 300 probes) with 25 β-VAEs, the 25 runs the card's paper preset matches fragment by fragment; "
        "decides fragments-recur (a known failure here: 23% recur)",
        runs=(
            25,
            "the card matches 25 models x 10 latents; runs 26-50 of its ensemble enter no fragment matching, "
            "and 50 runs' 2450 iterative shape distances alone take ~11 min of one core",
        ),
        fragment_runs=(25, "card: 25 models x 10 latents"),
        distance_runs=(
            4,
            "metric-axioms is decided at quick on 4 runs; its 600 iterative descents over 25 runs "
            "would take ~165 s of the core",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: 50 β-VAEs on shapes2d at 64x64 (or --set local_images=FILE for dSprites etc.), 300 probes, fragment "
        "matching over 25 runs x 10 latents. Est. 20 min on one H100 (from FLOPs, not a GPU slice: ~1e11 FLOP a "
        "step for the 50 VAEs, launch-bound at ~3 ms a step over 20k steps, plus 1225 shape distances and the "
        "fragment matching); the same 50 VAEs on the 8x8 digits used over 11 min of one CPU core without finishing",
        gpu_minutes=20,
        dataset=("shapes2d", "card: shapes2d when no local dataset is given"),
        shapes_size=(64, "card"),
        runs=(50, "card"),
        beta=(4.0, "card (64x64 images carry enough bits for β = 4)"),
        steps=(20_000, "ours: the card gives no step count for the paper ensembles"),
        width=(256, "card"),
        shape_iters=(100, "converged further (50 runs: 1225 pairs)"),
    ),
}
