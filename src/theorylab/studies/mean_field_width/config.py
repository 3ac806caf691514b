"""mean-field-width: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Dim, Fraction, InformationExponent, LearningRate, SampleSize, Seeds, Steps, Width


class MeanFieldWidthConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "init_mc_samples": "init_mc_n",
        "reduction_n": "reduction_particles",
    }
    dims: tuple[Annotated[Dim, Field(ge=3)], ...] = Field(
        (16,), min_length=1, description="input dimensions d (quick 16; paper 16..128)"
    )
    ks: tuple[Annotated[InformationExponent, Field(ge=2)], ...] = Field(
        (4,), min_length=1, description="information exponents of the link (quick 4; paper 3, 4, 6)"
    )
    widths: tuple[Width, ...] = Field((32, 64, 128), min_length=2, description="network widths m")
    seeds: Seeds = Field(3, description="networks per width (S)")
    m_ref: Annotated[Width, Field(ge=16)] = Field(
        1024,
        description="particles of the mean-field reference (its "
        "split-half error correction is first order in 1/m_ref: the card asks m_ref >= 8 m)",
    )
    lr: LearningRate = Field(0.1, description="step size = mean-field time per step")
    steps: Steps = Field(200, description="steps (when stop_ratio is unset)")
    stop_ratio: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="if set, T = first time L_MF <= stop_ratio * L_MF(0) (paper 0.01), capped at max_steps",
    )
    max_steps: Steps = Field(10_000, description="cap on the adaptive number of steps")
    checkpoints: tuple[Fraction, ...] = Field(
        (0.0, 0.125, 0.25, 0.5, 0.75, 1.0), min_length=2, description="checkpoint times as fractions of T"
    )
    concordance_particles: SampleSize = Field(
        64, description="reference particles on which the self-concordance ratio is measured"
    )
    escape_threshold: float = Field(
        0.5, gt=0, lt=1, description="a particle has escaped the equator once |<w, w*>| >= this"
    )
    reduction_particles: Annotated[SampleSize, Field(ge=0)] = Field(
        128,
        description="particles of the 1-D overlap reduction (0: skip; checked against the reference at n/2 and eta/2)",
    )
    reduction_nodes: int = Field(12, ge=2, le=200, description="Gauss-Jacobi nodes of the reduction's angular integral")
    init_mc_n: Annotated[SampleSize, Field(ge=1024)] = Field(
        1 << 18, description="Monte Carlo draws (w, w', x) of the independent kernel check at initialisation"
    )
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
        "2 CPU cores, < 60 s: d = 16, k = 4, m in {32, 64, 128}, 6 seeds, m_ref = 2048, 200 steps (T = 20)",
        m_ref=(
            2048,
            "the card's 1024 = 8 x 128 left the late slopes biased upward (seeds 8 and "
            "31 failed inverse-width: pooled 1.33, 1.43); at 2048 they read 1.17, 1.19",
        ),
        seeds=(
            6,
            "3 networks per width left the reference-error estimate and the late slopes too noisy "
            "(seeds 0-9: reduced-dynamics "
            "failed seed 5, inverse-width seed 4); at 6 reduced-dynamics passes 10/10, "
            "inverse-width 9/10 (see docs/seed-robustness.md)",
        ),
    ),
    "cpu": Preset.of(
        "cpu",
        "1 CPU core, < 9 min: d = 16, 24, 32 at k = 4, quick's networks and 2048-particle reference, each run to T "
        "at 10% of L_MF(0): decides poly-width-over-d and the two self-concordance claims",
        dims=((16, 24, 32), "three dimensions, the fewest the d-exponents need (the card's 64 and 128 are a GPU's)"),
        stop_ratio=(
            0.1,
            "T at 10% of L_MF(0): the escape from the equator, which sets T ~ d^((k-2)/2), is over by "
            "then; the card's 1% adds the local convergence tail (d = 16: past 1200 steps, against ~220)",
        ),
        m_ref=(2048, "quick's reference (8 x the card's 1024 per width 128 left the late slopes biased)"),
        seeds=(6, "quick's networks per width"),
        reduction_particles=(0, "the 1-D reduction is decided at quick; here it would rerun each reference at eta/2"),
        block_mib=(2.0, "2 MiB pairwise blocks stay in a CPU core's cache"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: d in {16, ..., 128}, k in {3, 4, 6}, m up to 2^13, m_ref = 2^16, 8 seeds, T at L_MF <= 1% of L_MF(0). "
        "Est. 60 min on one H100: the m_ref = 2^16 reference's pairwise Gram products, 2 m_ref^2 d flop per step, "
        "summed over (d, k) with T(d) ~ d^((k-2)/2) (2x quick's 200 steps at d = 16, capped at max_steps) come to "
        "~2e16 flop, ~10 min at 35 TFLOP/s, times ~6 for the elementwise kernels and the networks; on a CPU core "
        "(quick: 2048^2 x 16 x 200 pair-dimensions in ~65 s on 2 cores) the same count is ~1.5 years",
        gpu_minutes=60,
        dims=((16, 32, 64, 128), "the card's dimensions"),
        ks=((3, 4, 6), "the card's information exponents"),
        widths=((64, 128, 256, 512, 1024, 2048, 4096, 8192), "2^6 .. 2^13"),
        seeds=(8, "S = 8"),
        m_ref=(65536, "2^16"),
        stop_ratio=(0.01, "T = time to reach 1% of the initial loss"),
    ),
}
