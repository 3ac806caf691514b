"""multiscale-single-index: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    Every,
    Fraction,
    LearningRate,
    NScales,
    NumberChunk,
    SampleRatio,
    SampleSize,
    Seeds,
)


class MultiscaleSingleIndexConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "edge_samples": "edge_n",
        "sgd_grid": "sgd_cases",
        "hosvd_levels": "hosvd_n_scales",
        "unfold_levels": "unfold_n_scales",
    }
    edge_dims: tuple[int, ...] = Field(
        (16, 64, 256), min_length=2, description="d of the K = 2 Edgeworth check, flat w (card)"
    )
    edge_n: SampleSize = Field(
        1_000_000, description="Monte Carlo samples per d of E[y z], shortcut sampler (card: 10^6)"
    )
    hosvd_n_scales: NScales = Field(3, description="K of the HOSVD check (card: 3)")
    hosvd_dims: tuple[int, ...] = Field((8, 12, 16), min_length=1, description="d of the HOSVD check (card)")
    hosvd_features: Literal["sign", "random", "flat"] = Field(
        "sign",
        description="feature ensemble of the judged HOSVD check (card: random on the sphere; sign: random "
        "signs/sqrt(d), |w|_inf = d^-1/2 at every d; a declared departure unless 'random')",
    )
    hosvd_report_features: tuple[Literal["sign", "random", "flat"], ...] = Field(
        ("random",), description="further ensembles run beside it with the same judge's thresholds, reported only"
    )
    hosvd_sample_ratio: SampleRatio = Field(100.0, description="n = ratio * d^(K-1) samples of T_hat (card: 100)")
    sgd_cases: tuple[tuple[int, tuple[int, ...]], ...] = Field(
        ((2, (16, 32, 64)),),
        min_length=1,
        description="(K, dims) pairs of the spherical-SGD runs (card quick: K = 2, d = 16..64)",
    )
    sgd_seeds: Seeds = Field(3, description="seeds per (K, d) (card: 3 quick, 5 paper)")
    sgd_sample_ratio: SampleRatio = Field(
        200.0, description="n = ratio * d^(K-1) log d fresh samples per run (card: 200 quick, 400 paper)"
    )
    sgd_batch: Batch = Field(32, description="fresh samples per step B (card: 32)")
    sgd_lr: LearningRate = Field(0.1, description="c in the step eta = c B / d^(K-1) (card: 0.1)")
    sgd_decay_fraction: Fraction = Field(0.3, description="last share of the samples run at eta / sgd_decay (card)")
    sgd_decay: float = Field(10.0, ge=1, le=1000, description="step divisor of the final phase (card: 10)")
    sgd_sampler: Literal["projected", "full"] = Field(
        "projected",
        description="'projected' (exact-in-law shortcut, cost B d^(K-1) per step) or 'full' "
        "(x ~ N(0, I_{d^K}) through MSIMNet)",
    )
    sgd_log_every: Every = Field(2, description="steps between two logged overlaps")
    unfold_n_scales: NScales = Field(4, description="K of the unfolding-vs-SGD comparison (card: 4)")
    unfold_dims: tuple[int, ...] = Field((), description="d of the unfolding baselines (empty: none; paper: 8, 12, 16)")
    unfold_points: Annotated[int, Field(ge=2, le=400)] = Field(
        40, description="points of the log-spaced n grid from d^ceil(K/2)/4 to 16 d^(K-1)"
    )
    chaos2_dims: tuple[int, ...] = Field(
        (), description="d of the K = 3 second-chaos spectrum (empty: none; paper: 12, 16, 24)"
    )
    chaos2_sample_ratio: SampleRatio = Field(200.0, description="n = ratio * d^3 samples of E[y (x x^T - I)]")
    chunk: NumberChunk = Field(1 << 21, description="Gaussian numbers drawn at once per model (memory knob)")

    @model_validator(mode="after")
    def _checks(self) -> "MultiscaleSingleIndexConfig":
        for name in ("edge_dims", "hosvd_dims", "unfold_dims", "chaos2_dims"):
            v = getattr(self, name)
            if list(v) != sorted(set(v)) or any(d < 4 for d in v):
                raise ValueError(f"'{name}' must increase strictly and be >= 4; got {v}")
        for K, dims in self.sgd_cases:
            if list(dims) != sorted(set(dims)) or not dims or any(d < 4 for d in dims):
                raise ValueError(
                    f"'sgd_cases': the dims of K = {K} must be non-empty, increase strictly and be >= 4; got {dims}"
                )
            if not 2 <= K <= 8:
                raise ValueError(f"'sgd_cases': K must lie in 2..8; got {K}")
        if len({K for K, _ in self.sgd_cases}) != len(self.sgd_cases):
            raise ValueError(f"'sgd_cases': one entry per K; got {self.sgd_cases}")
        if any(d**3 > 32768 for d in self.chaos2_dims):
            raise ValueError(f"'chaos2_dims': d^3 must be <= 32768 (a D x D matrix); got {self.chaos2_dims}")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~30 s: Edgeworth check (K = 2, flat w, d = 16, 64, 256, 10^6 samples "
        "each, shortcut sampler), HOSVD at K = 3 (d = 8, 12, 16, n = 100 d^2) with an "
        "independent-y control, spherical SGD at K = 2 (d = 16, 32, 64, n = 200 d log d, "
        "3 seeds)",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~6 min at one thread: quick plus spherical SGD at K = 3 (d = 12, 16, 24) and K = 4 (d = 6, 8, "
        "10), n = 200 d^(K-1) log d, 5 seeds batched; mode-wise and balanced unfoldings at K = 4 (d = 6, 8, 10) over "
        "the 40-point n grid; the K = 3 second-chaos spectrum at d = 8, 10, 12 (n = 200 d^3). Decides "
        "sgd-sample-complexity and same-timescale (K = 3 and 4), unfolding-vs-sgd and higher-chaos-plateaus at "
        "reduced d (declared departures)",
        sgd_cases=(
            ((2, (16, 32, 64)), (3, (12, 16, 24)), (4, (6, 8, 10))),
            "quick's K = 2 grid, K = 3 up to d = 24 (~18k steps of 5 batched seeds, ~90 s on one core) and "
            "K = 4 at d = 6, 8, 10 (~25k steps, ~3 min; the card's d = 12, 16 take 54k and 142k steps)",
        ),
        sgd_seeds=(5, "card: 5 seeds at paper size"),
        unfold_dims=((6, 8, 10), "the K = 4 SGD grid of this preset, so the exponents compare on one d range"),
        chaos2_dims=((8, 10, 12), "n D^2 flop: d = 12 is 1e12 (~40 s on one core), d = 16 1.4e13 and d = 24 5e14"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: spherical SGD at K = 2 (d = 16..64), K = 3 (d = 12..32) and K = 4 (d = 8..16), n = 400 d^(K-1) log d, "
        "5 seeds; mode-wise and balanced unfoldings at K = 4 over an n grid; the K = 3 second-chaos spectrum at "
        "d = 12, 16, 24. Est. 20 min on one H100: ~3e5 sequential SGD steps (K = 4, d = 16 alone 1.4e5; 27 ms each "
        "on one CPU core, about 1 ms launch-bound on a GPU) and 1e15 flop for the d = 24 second-chaos matrix "
        "(D = 13824; 2.7e13 at d = 16 already takes hours on one core)",
        gpu_minutes=20,
        sgd_cases=(((2, (16, 32, 64)), (3, (12, 16, 24, 32)), (4, (8, 12, 16))), "card"),
        sgd_seeds=(5, "card"),
        sgd_sample_ratio=(400.0, "card: n up to 400 d^(K-1) log d"),
        sgd_log_every=(16, "ours: enough points for n_0.5 to 0.1% of the run"),
        unfold_dims=((8, 12, 16), "card: the K = 4 grid"),
        chaos2_dims=((12, 16, 24), "card: d = 12 to 24"),
        chunk=(1 << 25, "ours: GPU memory"),
    ),
}
