"""thermalizer: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Horizon, LearningRate, Precision, SampleSize, Steps, Width


class ThermalizerConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "gauss_samples": "gauss_n",
        "kolmogorov_solve_n": "kolmogorov_solve_grid",
        "kolmogorov_store_n": "kolmogorov_store_grid",
        "kolmogorov_levels": "kolmogorov_n_downsamplings",
    }
    train_trajectories: SampleSize = Field(48, description="KS22 training trajectories (card: 48)")
    train_horizon: Horizon = Field(800, description="emulator steps per training trajectory after spin-up (card: 800)")
    test_trajectories: SampleSize = Field(16, description="test trajectories (card: 16)")
    horizon: Annotated[Horizon, Field(ge=10)] = Field(
        1000, description="emulator steps of the test rollouts (card: 1000)"
    )
    noise_levels: int = Field(
        200,
        ge=10,
        le=1000,
        description="diffusion levels drawn in training and classifier classes (card: 200 of T = 1000)",
    )
    width: Annotated[Width, Field(ge=8)] = Field(256, description="DenoiserMLP width")
    blocks: int = Field(3, ge=1, le=64, description="DenoiserMLP residual blocks")
    denoiser_steps: Steps = Field(1500, description="Adam steps (one-cycle schedule; card)")
    denoiser_lr: LearningRate = Field(2e-3, description="peak one-cycle Adam learning rate of the denoiser (card)")
    batch: Batch = Field(256, description="denoiser batch size")
    s_init: int = Field(10, ge=0, le=999, description="thermalize when the classified level exceeds this")
    s_stop: int = Field(4, ge=0, le=999, description="denoise down to this level")
    s_abort: int = Field(100, ge=0, le=999, description="flag the trajectory diverged above this level")
    precision: Precision = Field(
        "fp32",
        description="arithmetic of the corrected rollouts' denoiser calls (no "
        "gradient): fp32, or bf16 autocast (GPUs, AMX CPUs)",
    )
    leak: float = Field(0.1, ge=0, le=10, description="leak η of the drifting emulator KSLeaky")
    gauss_n: Annotated[SampleSize, Field(ge=1000)] = Field(
        200_000, description="Monte Carlo samples of the Gaussian gain check (card: 2e5)"
    )
    learned_steps: Annotated[Steps, Field(ge=0)] = Field(
        300, description="Adam steps of the small learned CNN emulator (reported, not claimed; 0 skips it)"
    )
    learned_lr: LearningRate = Field(1e-3, description="Adam learning rate of the small learned CNN emulator")
    learned_horizon: Horizon = Field(60, description="rollout steps of the learned CNN emulator, plain and thermalized")
    kolmogorov: bool = Field(False, description="run the Kolmogorov-flow part (paper preset: claims 8-9)")
    kolmogorov_solve_grid: int = Field(
        256, ge=16, le=4096, description="grid of the Kolmogorov truth solver (paper: 512; ours 256 by default)"
    )
    kolmogorov_store_grid: int = Field(64, ge=8, le=1024, description="grid the fields are stored and emulated at")
    kolmogorov_nu: float = Field(1e-4, gt=0, le=1, description="viscosity ν (Re = 10k: 1e-4)")
    kolmogorov_dt: float = Field(1e-3, gt=0, le=1, description="solver step")
    kolmogorov_substeps: int = Field(5, ge=1, le=10_000, description="solver steps per emulator step (card: 5)")
    kolmogorov_spinup: int = Field(10_000, ge=0, le=10_000_000, description="solver spin-up steps (card: 10,000)")
    kolmogorov_train_trajectories: Annotated[SampleSize, Field(ge=2)] = Field(
        8, description="training trajectories of the Kolmogorov data"
    )
    kolmogorov_train_horizon: Horizon = Field(2000, description="stored emulator steps per training trajectory")
    kolmogorov_test_trajectories: SampleSize = Field(40, description="test trajectories (card: 40)")
    kolmogorov_horizon: Horizon = Field(100_000, description="emulator steps of the Kolmogorov rollouts (card: 1e5)")
    kolmogorov_width: Annotated[Width, Field(ge=4)] = Field(
        64, description="U-Net width of the emulator and the thermalizer (card: hidden 64)"
    )
    kolmogorov_n_downsamplings: int = Field(3, ge=1, le=6, description="U-Net downsamplings")
    kolmogorov_emulator_steps: Steps = Field(
        20_000, description="Adam steps of the residual emulator (unroll 1 -> kolmogorov_unroll)"
    )
    kolmogorov_unroll: int = Field(
        4, ge=1, le=16, description="largest unroll of the emulator's multi-step loss (card: 4 for Kolmogorov)"
    )
    kolmogorov_denoiser_steps: Steps = Field(20_000, description="Adam steps of the U-Net thermalizer")
    kolmogorov_batch: Batch = Field(32, description="batch of both Kolmogorov trainings")
    kolmogorov_emulator_lr: LearningRate = Field(5e-4, description="AdamW learning rate of the residual emulator")
    kolmogorov_denoiser_lr: LearningRate = Field(2e-4, description="AdamW learning rate of the U-Net thermalizer")
    kolmogorov_weight_decay: float = Field(
        0.05, ge=0, le=1, description="AdamW weight decay of both Kolmogorov trainings"
    )
    kolmogorov_noise: float = Field(
        1e-4, ge=0, le=1, description="rollout noise σ of the learned emulator (card: 1e-4)"
    )
    gauss_chains: Annotated[SampleSize, Field(ge=100)] = Field(
        2000, description="chains of the Gaussian stationarity check (card: 2e4)"
    )


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~60 s: KS22, a 0.5M-parameter MLP denoiser, 16 x 800-step rollouts plain "
        "and thermalized, the Gaussian model",
        horizon=(
            800,
            "CPU budget: ~11 sequential denoiser calls per step make the thermalized rollout "
            "the run's largest cost; "
            "800 steps are ~25x the plain rollout's median time on the attractor (31 steps), "
            "and the spectrum window "
            "(the last 500 steps) starts at step 300 (at 600 it started at step 100 and seed "
            "5 missed the mode-6 band: 0.834)",
        ),
        learned_steps=(
            0,
            "CPU budget: the learned CNN emulator is reported, not claimed (--set learned_steps=300 adds it, ~7 s)",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: the KS22 part, plus Kolmogorov flow Re = 10k (256² truth stored at 64²) with a "
        "learned residual U-Net emulator and a U-Net thermalizer, 40 x 1e5-step rollouts. "
        "Estimate (upper: ~1500 min on one H100): a width-64 U-Net at 64² measured 0.32 s per "
        "sample of a training step and 0.1 s per sample forward on one CPU core; training "
        "20k emulator steps (batch 32, unroll <= 4) + 20k thermalizer steps ~ 0.7M core-s, "
        "the rollouts 40 x 1e5 steps at ~11 U-Net calls per thermalized step (10.2 on KS22) "
        "~ 4.8M core-s, the 256² truth (16 ms a step) ~ 0.02M: ~5.5M core-s divided by 60 "
        "(an H100 taken as 60 CPU cores; TF32 convolutions likely run faster)",
        gpu_minutes=1500,
        gauss_chains=(20_000, "card"),
        kolmogorov=(True, "card: claims 8-9"),
    ),
}
