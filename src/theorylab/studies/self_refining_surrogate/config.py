"""self-refining-surrogate: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Horizon, LearningRate, Precision, SampleSize, Steps, Width


class SelfRefiningSurrogateConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "kolmogorov_solve_n": "kolmogorov_solve_grid",
        "kolmogorov_store_n": "kolmogorov_store_grid",
        "qg_solve_n": "qg_solve_grid",
        "qg_store_n": "qg_store_grid",
        "levels": "noise_levels",
        "low_levels": "low_noise_levels",
        "refine_levels": "refine_noise_levels",
        "kolmogorov_levels": "kolmogorov_n_downsamplings",
    }
    gauss_chains: Annotated[SampleSize, Field(ge=100)] = Field(
        4000, description="Monte Carlo chains of the AR(1) surrogate (card: 4000)"
    )
    gauss_steps: Annotated[Steps, Field(ge=100)] = Field(
        3000, description="steps of each Monte Carlo chain (card: 3000)"
    )
    train_trajectories: SampleSize = Field(48, description="KS22 training trajectories (card: 48)")
    train_horizon: Horizon = Field(800, description="stored steps per training trajectory (card: 800)")
    test_trajectories: SampleSize = Field(16, description="test trajectories (card: 16)")
    horizon: Annotated[Horizon, Field(ge=10)] = Field(
        600, description="steps of the SNS and plain rollouts (card: 600)"
    )
    baseline_horizon: Annotated[Horizon, Field(ge=10)] = Field(
        200, description="steps of the acdm and thermo rollouts (card: 200)"
    )
    spectrum_window: Annotated[Horizon, Field(ge=10)] = Field(
        300, description="last steps of the SNS rollout in the spectrum (card: 300)"
    )
    pairs: Annotated[SampleSize, Field(ge=10)] = Field(
        320, description="held-out pairs of the one-step tests (card: 320)"
    )
    calibration_pairs: Annotated[SampleSize, Field(ge=100)] = Field(
        4000, description="held-out noised pairs of the classifier calibration"
    )
    noise_levels: int = Field(
        1000, ge=10, le=4000, description="diffusion levels T and classes per level head (card: 1000)"
    )
    low_noise_levels: int = Field(
        200, ge=1, le=4000, description="upper end of the low component of the training level mixture (card: 200)"
    )
    low_share: float = Field(
        0.5, ge=0, le=1, description="weight of the low component U{0..low_noise_levels-1} (card: 0.5)"
    )
    ce_weight: float = Field(
        0.1, ge=0, le=100, description="λ, the weight of the two level cross-entropies (card: 0.1)"
    )
    width: Annotated[Width, Field(ge=8)] = Field(256, description="residual-MLP width (card: 256)")
    blocks: int = Field(3, ge=1, le=64, description="residual blocks (card: 3)")
    steps: Steps = Field(2000, description="Adam steps (one-cycle; card: 2000)")
    batch: Batch = Field(128, description="batch of pairs (card: 128)")
    lr: LearningRate = Field(2e-3, description="one-cycle peak learning rate (card: 2e-3)")
    precision: Precision = Field(
        "fp32",
        description="arithmetic of the corrected rollouts' denoiser calls (no "
        "gradient): fp32, or bf16 autocast (GPUs, AMX CPUs)",
    )
    leak: float = Field(0.1, ge=0, le=10, description="leak η of the proposal emulator KSLeaky (card: 0.1)")
    variant: str = Field("fix_short", description="SNS schedule: 'fix_short' (card default) or 'joint'")
    refine_noise_levels: tuple[int, ...] = Field(
        (100, 200, 300), description="levels s* the one-step proposals are noised to (card: 100, 200, 300)"
    )
    kolmogorov: bool = Field(False, description="run the Kolmogorov-flow part (paper preset: claim 9)")
    kolmogorov_solve_grid: int = Field(256, ge=16, le=4096, description="grid of the Kolmogorov truth solver")
    kolmogorov_store_grid: int = Field(
        64, ge=8, le=1024, description="grid the fields are stored and emulated at (card: 64)"
    )
    kolmogorov_nu: float = Field(1e-4, gt=0, le=1, description="viscosity ν (Re = 10k: 1e-4)")
    kolmogorov_dt: float = Field(1e-3, gt=0, le=1, description="solver step (card: 1e-3)")
    kolmogorov_substeps: int = Field(
        2, ge=1, le=10_000, description="solver steps per stored step (card: 2, Dt = 0.002)"
    )
    kolmogorov_spinup: int = Field(10_000, ge=0, le=10_000_000, description="solver spin-up steps (card: 10k)")
    kolmogorov_train_trajectories: Annotated[SampleSize, Field(ge=2)] = Field(8, description="training trajectories")
    kolmogorov_train_horizon: Horizon = Field(2000, description="stored steps per training trajectory")
    kolmogorov_test_trajectories: SampleSize = Field(8, description="test trajectories (card: 8-40)")
    kolmogorov_horizon: Horizon = Field(10_000, description="rollout steps (card: 1e4-1e5)")
    kolmogorov_width: Annotated[Width, Field(ge=4)] = Field(64, description="U-Net width (card: hidden 64)")
    kolmogorov_n_downsamplings: int = Field(
        3, ge=1, le=6, description="U-Net downsamplings (card: dim_mults [2, 2, 2])"
    )
    kolmogorov_emulator_steps: Steps = Field(20_000, description="AdamW steps of the residual U-Net emulator")
    kolmogorov_steps: Steps = Field(20_000, description="AdamW steps of the SNS U-Net (card)")
    kolmogorov_clip: float = Field(
        1.0, gt=0, le=1e6, description="gradient-norm clip of the Kolmogorov SNS U-Net's training (card: 1)"
    )
    kolmogorov_batch: Batch = Field(64, description="batch of the Kolmogorov trainings (card: 64)")
    surrogate_emulator_lr: LearningRate = Field(
        5e-4, description="AdamW learning rate of the Kolmogorov and QG residual U-Net emulators"
    )
    surrogate_sns_lr: LearningRate = Field(
        5e-5, description="AdamW learning rate of the Kolmogorov and QG SNS U-Nets (card: 5e-5)"
    )
    surrogate_weight_decay: float = Field(
        0.05, ge=0, le=1, description="AdamW weight decay of the Kolmogorov and QG trainings (card: 0.05)"
    )
    surrogate_ema_decay: float = Field(
        0.999,
        ge=0,
        lt=1,
        description="EMA decay of the Kolmogorov and QG SNS U-Nets' weights, the ones rolled out (card: 0.999)",
    )
    kolmogorov_noise: float = Field(1e-4, ge=0, le=1, description="rollout noise σ of the learned emulator")
    qg: bool = Field(False, description="run the QG-jet part (paper preset: claim 10)")
    qg_solve_grid: int = Field(256, ge=16, le=2048, description="grid of the QG truth solver (card: 256)")
    qg_store_grid: int = Field(
        64, ge=8, le=1024, description="grid the QG fields are stored and emulated at (card: 64)"
    )
    qg_dt: float = Field(3600.0, gt=0, le=86_400, description="QG solver step in seconds (card: 3600)")
    qg_substeps: int = Field(
        10, ge=1, le=10_000, description="solver steps per stored QG step (card: 10, Δt = 36,000 s)"
    )
    qg_spinup: int = Field(
        43_800,
        ge=0,
        le=10_000_000,
        description="QG solver spin-up steps (5 years at dt = 3600 s, the start of Ross et al.'s averaging window)",
    )
    qg_train_trajectories: Annotated[SampleSize, Field(ge=2)] = Field(8, description="QG training trajectories")
    qg_train_horizon: Horizon = Field(2000, description="stored steps per QG training trajectory")
    qg_test_trajectories: SampleSize = Field(10, description="QG test trajectories (claim 10's >= 90% share)")
    qg_horizon: Horizon = Field(50_000, description="QG rollout steps (card: 50,000)")
    qg_width: Annotated[Width, Field(ge=4)] = Field(128, description="QG U-Net width (card: hidden 128)")
    qg_emulator_steps: Steps = Field(20_000, description="AdamW steps of the QG residual U-Net emulator")
    qg_steps: Steps = Field(20_000, description="AdamW steps of the QG SNS U-Net")
    qg_clip: float = Field(
        0.5, gt=0, le=1e6, description="gradient-norm clip of the QG SNS U-Net's training (card: 0.5)"
    )

    @model_validator(mode="after")
    def _check(self):
        if self.variant not in ("fix_short", "joint"):
            raise ValueError(f"variant must be 'fix_short' or 'joint', got {self.variant!r}")
        if self.low_noise_levels > self.noise_levels:
            raise ValueError(
                f"low_noise_levels ({self.low_noise_levels}) must be <= noise_levels ({self.noise_levels})"
            )
        if any(not 0 < s < self.noise_levels for s in self.refine_noise_levels) or not self.refine_noise_levels:
            raise ValueError(
                f"refine_noise_levels must be non-empty and in (0, noise_levels); got {self.refine_noise_levels}"
            )
        if self.spectrum_window > self.horizon:
            raise ValueError(f"spectrum_window ({self.spectrum_window}) must be <= horizon ({self.horizon})")
        if self.baseline_horizon > self.horizon:
            raise ValueError(f"baseline_horizon ({self.baseline_horizon}) must be <= horizon ({self.horizon})")
        if self.qg_store_grid % 2**self.kolmogorov_n_downsamplings:
            raise ValueError(f"qg_store_grid ({self.qg_store_grid}) must be divisible by 2^kolmogorov_n_downsamplings")
        if self.kolmogorov_store_grid % 2**self.kolmogorov_n_downsamplings:
            raise ValueError(
                f"kolmogorov_store_grid ({self.kolmogorov_store_grid}) must be divisible by "
                "2^kolmogorov_n_downsamplings"
            )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, <= 60 s: the exact AR(1) model, KS22 with a 1M-parameter residual-MLP "
        "SNS model (1600 steps), KSLeaky(η = 0.1) proposals; SNS over 16 x 600 steps, "
        "acdm/thermo over 16 x 50",
        steps=(
            1600,
            "CPU budget: the card's 2000 steps take 25-28 s of a ~65 s run on a 2-core AVX2 "
            "box (the card measured 23 s on AVX-512); at 1600 every quick claim passes on "
            "seeds 0-9 (docs/seed-robustness.md), at 1200 the clean-pair ŝ misses on seed 0",
        ),
        baseline_horizon=(
            50,
            "CPU budget: thermo costs ~70 denoiser calls per step, the run's largest "
            "item after training and the SNS rollout; its median corr_time(0.8) is "
            "13.5-19.5 steps on seeds 0-9, and a thermo time that reaches step 50 "
            "is censored (only a lower bound): claim 7 is compared on bounds and "
            "left not decided where the cut leaves it open",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: adds Kolmogorov flow Re = 10k at 64² and the two-layer QG jet (256² stored "
        "at 64²) with U-Net SNS models (anchor = the initial condition) correcting learned "
        "residual U-Net emulators. Estimate (upper: ~3900 min on one H100): a width-64 U-Net "
        "at 64² measured 0.32 s per sample of a training step and 0.1 s per sample forward on "
        "one CPU core (width 128: ~4x); KF ~2.3M core-s (20k + 20k steps at batch 64, then "
        "8 x 1e4-step rollouts at the KS22 run's calls per step: SNS 14, acdm 14, thermo 71), "
        "QG ~11.9M core-s (width 128, 20k + 20k steps, 10 x 5e4-step rollouts of SNS and "
        "acdm); ~14M core-s divided by 60 (an H100 taken as 60 CPU cores; TF32 convolutions "
        "likely run faster)",
        gpu_minutes=3900,
        kolmogorov=(True, "card: claim 9"),
        qg=(True, "card: claim 10"),
    ),
}
