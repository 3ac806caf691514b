"""propagation-of-chaos: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Dim, Fraction, InformationExponent, LearningRate, SampleSize, Seeds, Steps, Width


class PropagationOfChaosConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {"sample_sizes": "sample_ns"}
    dims: tuple[Annotated[Dim, Field(ge=3)], ...] = Field(
        (16,), min_length=1, description="input dimensions d (quick 16; paper 16..128)"
    )
    fast_k: InformationExponent = Field(2, description="fast setting: link He_k/sqrt(k!) (card: 2, K(t) = t^2)")
    widths: tuple[Width, ...] = Field((32, 64, 128, 256), min_length=2, description="widths of the fast setting")
    seeds: Seeds = Field(4, description="networks per width, fast setting")
    steps: Annotated[Steps, Field(ge=2)] = Field(400, description="steps of the fast setting (T = eta * steps)")
    m_ref: Annotated[Width, Field(ge=16)] = Field(1024, description="reference particles")
    lr: LearningRate = Field(0.1, description="step size (mean-field time per step)")
    checkpoints: tuple[Fraction, ...] = Field(
        (0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0), min_length=3, description="checkpoint times as fractions of T"
    )
    rate_window: tuple[float, float] = Field(
        (1e-3, 1e-1), description="window of L_MF/L_MF(0) where the decay exponent c is fitted"
    )
    slow_k: InformationExponent | None = Field(4, description="slow contrast link He_k (report only; None: skip)")
    slow_widths: tuple[Width, ...] = Field((32, 64, 128), min_length=2, description="widths of the slow setting")
    slow_seeds: Seeds = Field(3, description="networks per width, slow setting")
    slow_steps: Annotated[Steps, Field(ge=2)] = Field(200, description="steps of the slow setting")
    lrs: tuple[LearningRate, ...] = Field(
        (),
        description="discretisation check: step sizes at equal T, eta always "
        "added (quick 0.2, 0.1, 0.05; paper also 0.025; empty: skip)",
    )
    sample_ns: tuple[Annotated[SampleSize, Field(ge=16)], ...] = Field(
        (), description="finite-sample check: n fixed samples per network (paper: 2^12 .. 2^18; empty: skip)"
    )
    sample_width: Width = Field(
        256, description="width of the finite-sample networks (paper: 2^12; must be one of 'widths')"
    )
    sample_seeds: Seeds = Field(4, description="networks per sample size")
    block_mib: float = Field(
        16.0,
        gt=0,
        le=1 << 20,
        description="largest pairwise block formed at once, MiB (16: "
        "peak memory bounded, fits 24 GB; a large GPU may raise it to ~1000)",
    )


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: fast He_2 at d = 16 (m up to 256, 4 seeds, T = 40) at eta = 0.2, 0.1, 0.05, and the slow "
        "He_4 contrast",
        lrs=((0.2, 0.1, 0.05), "the discretisation check costs seconds at d = 16: the same T at three step sizes"),
    ),
    "cpu": Preset.of(
        "cpu",
        "1 CPU core, < 9 min: poly-d over the card's d = 16, 32, 64, 128 at m <= 256 (m_ref 1024, quick's fast "
        "setting), and finite-samples on n = 2^10, 2^12, 2^14 fixed samples at m = 256",
        dims=((16, 32, 64, 128), "the card's dimensions: the poly(d) fit"),
        lrs=((), "the step-size check is decided at quick; here it would repeat the eta grid at every d"),
        sample_ns=(
            (1024, 4096, 16384),
            "n = 2^10 .. 2^14: the empirical-loss networks cost ~0.2 s of CPU per "
            "step at n = 2^14 (card: to 2^18, ~16x that, past the CPU tier)",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: d in {16, ..., 128}, m up to 2^14, m_ref = 2^17, 8 seeds, and the discretisation check. Est. 60 min "
        "on one H100: the m_ref = 2^17 reference's Gram products (2 m_ref^2 d flop per step, 2000 steps at each d, "
        "and 15000 steps of the eta grid at d = 16), the networks and the finite-sample runs come to ~3e16 flop, "
        "~15 min at 35 TFLOP/s, times ~4 for the elementwise kernels",
        gpu_minutes=60,
        dims=((16, 32, 64, 128), "the card's dimensions"),
        widths=((64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384), "2^6 .. 2^14"),
        seeds=(8, "S = 8"),
        m_ref=(131072, "2^17"),
        steps=(2000, "T = 200 time units, far into the t^-c tail"),
        lrs=((0.2, 0.1, 0.05, 0.025), "the card's step sizes"),
        sample_ns=((4096, 16384, 65536, 262144), "n = 2^12 .. 2^18"),
        sample_width=(4096, "m = 2^12"),
    ),
}
