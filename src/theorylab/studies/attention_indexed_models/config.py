"""attention-indexed-models: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

import math
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Dim, Every, SampleSize, Seeds

_LINK = Literal["h1", "h2", "h3"]


class AttentionIndexedModelsConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "moment_samples": "moment_n",
        "test_samples": "test_n",
        "trunc_d": "trunc_dim",
    }
    moment_dims: tuple[Dim, ...] = Field(
        (64, 256),
        min_length=2,
        description="d of the Monte Carlo moment, kurtosis and landscape checks (card: 64, 256)",
    )
    moment_n: SampleSize = Field(200_000, description="Monte Carlo token draws per d (card: 2e5)")
    token_correlation: float = Field(
        0.5,
        gt=-1,
        lt=1,
        description="off-diagonal C_12 of the L = 2 token covariance of the exact-moment check (card: 0.5)",
    )
    kappa: float = Field(
        0.5,
        gt=0,
        le=10,
        description="tied scale S = kappa W W^T, W_ab ~ N(0, 1/d) (ours: 1/2 "
        "gives Var G = 1 at init, like the teacher)",
    )
    sgd_dims: tuple[Dim, ...] = Field((48, 64, 96), description="d of the tied SGD runs (card: 48, 64, 96)")
    sgd_links: tuple[_LINK, ...] = Field(("h1", "h2"), min_length=1, description="links of the tied SGD runs")
    batch: Batch = Field(256, description="fresh samples per SGD step (card: 256)")
    lr_constant: float = Field(
        0.1,
        gt=0,
        le=2,
        description="step = lr_constant * batch / (d ln d) on the batch-mean "
        "loss (card 0.5 diverges for h2 at d <= 64; ours 0.1)",
    )
    horizon: float = Field(12.0, gt=0, le=1e4, description="SGD samples n_max = horizon * d^2 ln d (card: 12)")
    evaluate_every: Every = Field(50, description="SGD steps between test-MSE evaluations and stored path points")
    test_n: SampleSize = Field(4096, description="fixed test-set size of the test MSE")
    compare_dims: tuple[Dim, ...] = Field((48,), description="d of the tied-vs-direct runs (card paper: 400)")
    compare_links: tuple[_LINK, ...] = Field(
        ("h1", "h2", "h3"), min_length=1, description="links of the tied-vs-direct runs"
    )
    compare_batch: Batch = Field(256, description="batch of the tied-vs-direct runs (card paper: 512)")
    compare_lr_constant: float = Field(
        0.05, gt=0, le=2, description="lr constant of the tied-vs-direct runs (h3 needs a smaller step than h1, h2)"
    )
    compare_horizon: float = Field(
        12.0, gt=0, le=1e4, description="tied-vs-direct samples n_max = compare_horizon * d^2 ln d"
    )
    compare_seeds: Seeds = Field(1, description="seeds per tied-vs-direct d (card paper: 3)")
    direct_init: Literal["traceless", "psd", "zero"] = Field(
        "traceless", description="initial direct S: symmetric Gaussian with its trace removed, a PSD tied draw, or 0"
    )
    direct_control: bool = Field(
        True,
        description="also run a direct S from a PSD start (t1 = 1/2): the control "
        "showing that the initial trace, not the parametrisation, decides",
    )
    untied_dims: tuple[Dim, ...] = Field(
        (), description="d of the untied runs (card paper: 200, 400, 800; empty: none)"
    )
    untied_links: tuple[_LINK, ...] = Field(("h1", "h2", "h3"), min_length=1, description="links of the untied runs")
    untied_batch: Batch = Field(4096, description="batch of the untied runs (card paper: 4096)")
    untied_lr_constant: float = Field(
        0.0131, gt=0, le=2, description="lr constant of the untied runs (card Fig. 3: lr 0.01, B = 4096, d = 800)"
    )
    untied_horizon: float = Field(
        60.0, gt=0, le=1e4, description="untied samples n_max = untied_horizon * d^2 ln d (slow time τ = horizon * lr)"
    )
    untied_mean0: float | None = Field(
        1.0,
        ge=-10,
        le=10,
        description="initial mean m = Tr S/sqrt(d) of the untied students, set by shifting V along U (None: as "
        "drawn, O(d^-1/2), the paper's init, which leaves m no O(1) move)",
    )

    trunc_dim: Dim = Field(100, description="d of the moment-truncation SGD runs (card paper: 400)")
    trunc_seeds: Seeds = Field(
        8,
        description="independent SGD data streams (same init, same teacher) of the "
        "moment-truncation check; their spread is the tolerance",
    )
    trunc_batch: Batch = Field(256, description="batch of the moment-truncation SGD (card paper: 512)")
    trunc_lr_constant: float = Field(
        0.05,
        gt=0,
        le=2,
        description="step = constant * B/(d ln d) on the batch mean (paper Fig. 1: lr 0.01, B = 512, d = 400 is 0.047)",
    )
    trunc_time: float = Field(0.6, gt=0, le=10, description="horizon in the paper's time t = n 4α_d/d (see the claim)")
    trunc_orders: tuple[int, ...] = Field(
        (2, 4, 6, 8), min_length=2, description="truncation degrees M of eq. 13 (card: 2, 4, 6, 8)"
    )

    @model_validator(mode="after")
    def _checks(self) -> "AttentionIndexedModelsConfig":
        if list(self.moment_dims) != sorted(set(self.moment_dims)) or self.moment_dims[0] < 8:
            raise ValueError(f"'moment_dims' must increase strictly from >= 8; got {self.moment_dims}")
        if self.moment_n < 1000:
            raise ValueError(f"'moment_n' must be >= 1000 (standard errors); got {self.moment_n}")
        for name in ("sgd_dims", "compare_dims", "untied_dims"):
            dims = getattr(self, name)
            if any(d < 8 for d in dims) or len(set(dims)) != len(dims):
                raise ValueError(f"'{name}' must hold distinct d >= 8 (ln d > 2); got {dims}")
        if (
            self.trunc_seeds < 2
            or list(self.trunc_orders) != sorted(set(self.trunc_orders))
            or self.trunc_orders[0] < 2
            or self.trunc_orders[-1] > 9
        ):
            raise ValueError(
                f"'trunc_seeds' must be >= 2 (a spread) and 'trunc_orders' increase within 2..9; got "
                f"{self.trunc_seeds}, {self.trunc_orders}"
            )
        if len(self.sgd_dims) < 2:
            raise ValueError(f"'sgd_dims' needs at least two d for the scaling claim; got {self.sgd_dims}")
        for dims, hor, b, name in (
            (self.sgd_dims, self.horizon, self.batch, "horizon"),
            (self.compare_dims, self.compare_horizon, self.compare_batch, "compare_horizon"),
            (self.untied_dims, self.untied_horizon, self.untied_batch, "untied_horizon"),
        ):
            short = [d for d in dims if hor * d * d * math.log(d) < b]
            if short:
                raise ValueError(f"'{name}' = {hor:g} gives fewer than one batch of samples at d = {short}")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~20 s: exact moments, kurtosis and landscape by 2e5 Monte Carlo draws "
        "at d = 64, 256; tied SGD (h1, h2) at d = 48, 64, 96 to n = 12 d^2 ln d; a reduced "
        "tied-vs-direct run at d = 48",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, 289-361 s CPU at one thread (measured, seeds 1 and 0 on a loaded box; 0.58 GB peak; 274-284 s "
        "before the untied runs): "
        "quick plus tied vs direct at d = 96 with the paper's "
        "Fig.-2 step (B = 512, lr constant 0.0234) to n = 50 d^2 ln d, 3 seeds (9 runs of ~4100 steps, ~25 s each at "
        "one thread), and untied S = UVᵀ (h1-h3 in lockstep) at d = 32, 64, 128 with the paper's Fig.-3 step to "
        "n = 60 d² ln d (slow time τ = 0.79; ~80 s in all, most at d = 128). Decides direct-vs-tied and "
        "untied-timescales at "
        "reduced d (declared departures)",
        compare_dims=(
            (96,),
            "card Fig. 2: d = 400; a run costs ~d^4 ln d (d^2 a sample over 50 d^2 ln d samples), "
            "so d = 400 is ~400x d = 96 (~2 h a run on one core); 96 is quick's largest SGD d",
        ),
        compare_batch=(512, "card Fig. 2"),
        compare_lr_constant=(
            0.0234,
            "card Fig. 2: lr 0.005 at B = 512, d = 400, read as a batch-mean step (the "
            "paper preset's); quick's 0.05 diverges for tied h3 at d = 96 before ρ = 0.5",
        ),
        compare_seeds=(3, "card"),
        compare_horizon=(50.0, "the paper preset's: n = 50 d^2 ln d, ~5x the tied model's latest n_0.5"),
        untied_dims=(
            (32, 64, 128),
            "card: 200, 400, 800; an untied run costs ~d^4 ln d (d = 128: ~65 s at one thread, d = 200 ~6x "
            "that); three d spanning 4x, like the card's",
        ),
        untied_batch=(
            256,
            "card Fig. 3: 4096; the claim is in samples (per-sample rate α_d fixed), B only sets the "
            "resolution: m's half-way time is 4-12 steps of 256 at d = 32 and would fall inside the first of 4096",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: tied vs direct at d = 400 (B = 512), 3 seeds; untied at d = 200, 400, 800 (B = 4096) to n = 60 d² ln d. "
        "Est. 40 min on one H100. Untied: 3.1k, 14k and 63k steps of B = 4096; a step at d = 800 is ~42 GFLOP (3 "
        "students, ~B d² each way plus ~d³), ~2.6 PFLOP in all, a few minutes at fp32 (a CPU slice: a step at d = 200, "
        "B = 4096 took ~0.15 s on one core). The 27 tied-vs-direct runs are 94k steps of B = 512 at d = 400 each "
        "(~53 core-hours; launch-bound on a GPU at ~0.5 ms a step, ~21 min)",
        gpu_minutes=40,
        compare_dims=((400,), "card Fig. 2"),
        compare_batch=(512, "card Fig. 2"),
        compare_lr_constant=(0.0234, "card Fig. 2: lr 0.005 at B = 512, d = 400, read as a batch-mean step"),
        compare_seeds=(3, "card"),
        compare_horizon=(50.0, "ours: the paper-size step is ~4x smaller than quick's, so the horizon is ~4x longer"),
        untied_dims=((200, 400, 800), "card claim 8"),
        untied_lr_constant=(0.0131, "card Fig. 3: lr 0.01 at B = 4096, d = 800, read as a batch-mean step"),
    ),
}
