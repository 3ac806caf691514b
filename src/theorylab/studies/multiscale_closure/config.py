"""multiscale-closure: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Fraction, LearningRate, NLayers, Probability, SampleSize, Seeds, Steps, Width

Size = Literal["small", "medium", "large"]
Operator = Literal["sharp", "gauss"]


def _increasing(name: str, scales: tuple[int, ...], top: int) -> None:
    if len(scales) < 2 or list(scales) != sorted(set(scales)) or scales[-1] != top or any(n % 2 for n in scales):
        raise ValueError(
            f"'{name}' must be >= 2 strictly increasing even grids ending at the coarse grid {top}; got {scales}"
        )


class MultiscaleClosureConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "truth_n": "truth_grid",
        "qg_truth_n": "qg_truth_grid",
        "kolmogorov_truth_n": "kolmogorov_truth_grid",
        "levels": "scales",
        "qg_levels": "qg_scales",
        "kolmogorov_levels": "kolmogorov_scales",
    }
    # --- quick: Kuramoto-Sivashinsky, ks32pi truth ------------------------------------------------------------
    truth_grid: Annotated[int, Field(ge=8, le=8192)] = Field(
        256, description="points of the KS truth grid (card: ks32pi, N = 256)"
    )
    domain_length: float = Field(32 * math.pi, gt=0, le=1e4, description="KS domain length L (card: 32π)")
    dt: float = Field(0.05, gt=0, le=1, description="solver step of the KS truth (card: 0.05)")
    coarse_dt: float = Field(
        0.25,
        gt=0,
        le=1,
        description="step of the coarse KS solver, alone or coupled (ours: "
        "0.25; the card's prototype 0.05, 5x the online cost)",
    )
    scales: tuple[Annotated[int, Field(ge=8, le=8192)], ...] = Field(
        (32, 64), description="multiscale grids n_0 < ... < N_c, the last the coarse grid (card: 32, 64)"
    )
    operator: Operator = Field(
        "sharp",
        description="coarsening C: 'sharp' (truncate at the coarse grid's 2/3 band) "
        "or 'gauss' (Gaussian filter of width 2Δx, then truncate)",
    )
    trajectories: SampleSize = Field(24, description="KS trajectories (card: 24)")
    snapshots: Annotated[int, Field(ge=10, le=1_000_000)] = Field(
        400, description="snapshots per trajectory, snapshot_every apart (card: 400)"
    )
    snapshot_every: float = Field(1.0, gt=0, le=1e3, description="time units between snapshots (card: 1)")
    spinup: float = Field(
        200.0, ge=0, le=1e6, description="KS spin-up in time units before the first snapshot (card: 200)"
    )
    train_fraction: Annotated[Fraction, Field(gt=0, lt=1)] = Field(
        0.8, description="leading share of each trajectory used for training"
    )
    n_layers: NLayers = Field(4, description="periodic conv layers of the 1-D GZ-FCNN (card: 4)")
    kernel: Annotated[int, Field(ge=1, le=63)] = Field(5, description="kernel of the 1-D GZ-FCNN (odd; card: 5)")
    direct_width: Width = Field(32, description="channels of the direct net (card: 32, 10,657 parameters)")
    multiscale_width: Width = Field(23, description="channels of each multiscale net (card: 23, 11,295 in total)")
    direct_steps: Steps = Field(1500, description="Adam steps of the direct net (card: 1500)")
    multiscale_steps: Steps = Field(750, description="Adam steps per multiscale level (card: 750 + 750)")
    batch: Batch = Field(64, description="training batch (card: 64)")
    lr: LearningRate = Field(3e-3, description="peak one-cycle Adam learning rate (card: 3e-3)")
    downscale_input: Literal["resampled", "full"] = Field(
        "resampled",
        description="net 0 sees ū resampled to n_0 (card) or ū at N_c with its output coarsened (paper code)",
    )
    training: Literal["sequential", "joint"] = Field(
        "sequential",
        description="multiscale training: level by level, lower nets frozen (paper), or all levels jointly",
    )
    germano_snapshots: SampleSize = Field(50, description="fine snapshots of the Germano identity check (card: 50)")
    corr_threshold: Annotated[Probability, Field(gt=0, lt=1)] = Field(0.8, description="ρ of the corr_time (card: 0.8)")
    # --- paper: QG eddy (GPU) -----------------------------------------------------------------------------------
    qg: bool = Field(False, description="run the QG part (paper claims 7-8)")
    qg_preset: Literal["eddy", "jet"] = Field("eddy", description="QG2L configuration (card: eddy)")
    qg_truth_grid: Annotated[int, Field(ge=8, le=8192)] = Field(256, description="QG truth grid (card: 256)")
    qg_scales: tuple[Annotated[int, Field(ge=8, le=8192)], ...] = Field(
        (16, 32, 64), description="QG multiscale grids, the last the coarse grid (card: 16, 32, 64)"
    )
    qg_operators: tuple[Operator, ...] = Field(
        ("sharp", "gauss"), min_length=1, description="QG coarsening operators (card: both)"
    )
    qg_sizes: tuple[Size, ...] = Field(("small", "medium", "large"), min_length=1, description="GZ-FCNN sizes")
    qg_seeds: Seeds = Field(5, description="training seeds per size (card: 5)")
    qg_dt: float = Field(3600.0, gt=0, le=1e6, description="QG solver step in seconds (card: 3600)")
    qg_spinup: float = Field(1.5552e8, ge=0, le=1e10, description="QG spin-up in seconds (ours: 5 years of 360 days)")
    qg_train_trajectories: SampleSize = Field(100, description="QG training trajectories (official code: 100)")
    qg_train_records: Annotated[int, Field(ge=2, le=10_000_000)] = Field(
        100, description="stored snapshots per training trajectory"
    )
    qg_record_every: Annotated[int, Field(ge=1, le=10_000_000)] = Field(
        864, description="solver steps between stored snapshots"
    )
    qg_online_trajectories: SampleSize = Field(16, description="online initial conditions (card: 16)")
    qg_online_time: float = Field(
        3.1104e8, gt=0, le=1e11, description="online run length in seconds (card: 10 years, 3.1104e8 s)"
    )
    paper_steps: Steps = Field(10_000, description="training steps per 2-D net (paper: 100 epochs x 100 batches)")
    paper_batch: Batch = Field(32, description="2-D training batch (paper: 32)")
    paper_lr: LearningRate = Field(1e-5, description="2-D Adam learning rate (paper: 1e-5, with AdaBelief)")
    paper_schedule: Literal["constant", "warmup-cosine", "one-cycle"] = Field(
        "constant", description="2-D learning-rate schedule (paper)"
    )
    # --- paper: Kolmogorov flow (GPU) ---------------------------------------------------------------------------
    kolmogorov: bool = Field(False, description="run the Kolmogorov-flow part (paper claims 8-9)")
    kolmogorov_truth_grid: Annotated[int, Field(ge=8, le=8192)] = Field(
        2048, description="KF truth grid (card: 2048; 1024 is a flagged fallback)"
    )
    kolmogorov_scales: tuple[Annotated[int, Field(ge=8, le=8192)], ...] = Field(
        (32, 64), description="KF multiscale grids (card: 32, 64)"
    )
    kolmogorov_nu: float = Field(1e-3, gt=0, le=1, description="viscosity (card: 1e-3)")
    kolmogorov_drag: float = Field(0.1, ge=0, le=10, description="linear drag α (ours: the kit's kolmo_re1k)")
    kolmogorov_dt: float = Field(0.006574 / 32, gt=0, le=1, description="truth solver step (32 per snapshot)")
    kolmogorov_coarse_dt: float = Field(0.006574 / 2, gt=0, le=1, description="coarse solver step (2 per snapshot)")
    kolmogorov_snapshot_every: float = Field(0.006574, gt=0, le=10, description="time between snapshots (card)")
    kolmogorov_warmup: float = Field(40.0, ge=0, le=1e4, description="warm-up time (card: 40)")
    kolmogorov_end: float = Field(
        70.0, gt=0, le=1e5, description="end of the kept window and of online runs (card: 70)"
    )
    kolmogorov_train_trajectories: SampleSize = Field(8, description="KF training trajectories (ours)")
    kolmogorov_online_trajectories: SampleSize = Field(16, description="KF online initial conditions (ours)")
    kolmogorov_size: Size = Field("small", description="GZ-FCNN size of the KF nets")
    kolmogorov_noise: Annotated[float, Field(ge=0, le=10)] = Field(
        0.05, description="noise-injection std in input std units (ours)"
    )
    kolmogorov_p_clean: Probability = Field(0.5, description="share of clean batches with noise injection (card)")

    @model_validator(mode="after")
    def _checks(self) -> "MultiscaleClosureConfig":
        _increasing("scales", self.scales, self.scales[-1])
        if self.scales[-1] >= self.truth_grid or self.truth_grid % 2:
            raise ValueError(
                f"the coarse grid scales[-1] ({self.scales[-1]}) must be below the even truth_grid ({self.truth_grid})"
            )
        if self.kernel % 2 == 0:
            raise ValueError(f"'kernel' must be odd (periodic convolutions keep the grid); got {self.kernel}")
        for name, step in (("snapshot_every", "dt"), ("spinup", "dt"), ("snapshot_every", "coarse_dt")):
            ratio = getattr(self, name) / getattr(self, step)
            if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < (1 if name == "snapshot_every" else 0):
                raise ValueError(
                    f"'{name}' ({getattr(self, name)}) must be a whole number of solver steps "
                    f"'{step}' ({getattr(self, step)})"
                )
        n_test = self.snapshots - int(self.train_fraction * self.snapshots)
        if n_test < 4 or int(self.train_fraction * self.snapshots) < 1:
            raise ValueError(
                f"'train_fraction' ({self.train_fraction}) of {self.snapshots} snapshots must leave >= 1 "
                f"training and >= 4 test snapshots per trajectory"
            )
        if self.germano_snapshots > self.trajectories * self.snapshots:
            raise ValueError(f"'germano_snapshots' ({self.germano_snapshots}) exceeds the data's snapshots")
        _increasing("qg_scales", self.qg_scales, self.qg_scales[-1])
        _increasing("kolmogorov_scales", self.kolmogorov_scales, self.kolmogorov_scales[-1])
        if self.qg_scales[-1] >= self.qg_truth_grid or self.kolmogorov_scales[-1] >= self.kolmogorov_truth_grid:
            raise ValueError("the QG and KF coarse grids must be below their truth grids")
        if self.kolmogorov_end <= self.kolmogorov_warmup:
            raise ValueError(
                f"'kolmogorov_end' ({self.kolmogorov_end}) must exceed 'kolmogorov_warmup' ({self.kolmogorov_warmup})"
            )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, <= 60 s: KS (ks32pi truth, 24 x 400 snapshots) coarsened to 64 with "
        "one extra level at 32; 1-D GZ-FCNN closures, direct (10,657 parameters) and "
        "multiscale (11,295), coupled to the coarse ETDRK4 solver for 79 time units",
    ),
    "paper": Preset.of(
        "paper",
        "GPU: adds QG eddy 256 -> 64 (scales 16/32/64, GZ-FCNN small/medium/large, both operators, 5 seeds, "
        "10-year online runs on 16 initial conditions) and Kolmogorov flow 2048 -> 64 (scales 32/64) with "
        "and without noise injection. Estimate (upper: ~5700 min on one H100): CPU slices at one core "
        "measured 16 ms per NS2D step at 256² (so ~1.4 s at 2048²: 341k truth steps x 24 trajectories ~ "
        "11.5M core-s), 42 ms per QG2L step at 256² (116 trajectories x 130k steps ~ 0.6M core-s) and 0.14 s "
        "per sample of a small GZ-FCNN training step (60 QG net pairs x 10k steps x batch 32 ~ 7M core-s "
        "with medium/large at 2x/4x; online runs ~1M core-s): ~20M core-s, divided by 60 (an H100 taken "
        "as 60 CPU cores; FFT-bound truth solves likely run faster, so this is an upper estimate). No CPU "
        "preset: a reduced stated form (QG 128 -> 32 or 64 -> 32, hidden channels 1/8, all three sizes, 5 "
        "seeds) was costed at one thread: QG2L eddy steps 2.6 ms at 64² and 8.3 ms at 128² (the 5-year spin-"
        "up, 43,200 steps, 112 s / 360 s per trajectory); batch-32 training steps at 32² of 0.10 / 0.71 / "
        "1.46 s for small / medium / large (5k / 16k / 25k parameters; the kernels, not the channels, set the"
        " cost), ~27 s per step for the 15 direct + multiscale pairs, so 1000 steps ~7.5 h; ten-year coupled "
        "runs are 86,400 coarse steps with 4 closure calls (small net 0.84 ms per sample at 32², 54 ms at 64²"
        " full width): >= 1.3e4 s for 16 runs x 2 closures at 32²; KF: NS2D 1.2 / 3.7 / 20 ms per step at 64²"
        " / 128² / 256², so the warm-up to t = 40 at the card's step (195k steps) is ~720 s per trajectory at"
        " 128². Claims 7-9 each need >> 540 s of one CPU core and stay GPU-only",
        gpu_minutes=5700,
        qg=(True, "card: claims 7-8 on QG eddy"),
        kolmogorov=(True, "card: claims 8-9 on Kolmogorov flow"),
        downscale_input=("full", "the paper's code: net 0 runs at N_c and its output is coarsened to n_0"),
    ),
}
