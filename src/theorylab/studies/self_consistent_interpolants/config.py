"""self-consistent-interpolants: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Every, LearningRate, NLayers, Precision, Probability, SampleSize, Steps, Width
from theorylab.data.toy2d import ToyChannel as MoonsChannel


class SCSIConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "eval_samples": "eval_n",
        "oracle_samples": "oracle_n",
    }
    # --- shared training --------------------------------------------------------------------------
    width: Annotated[Width, Field(ge=8)] = Field(
        128, description="hidden width of the 2-D velocity MLP (quick 128, paper 256)"
    )
    n_layers: NLayers = Field(3, description="hidden layers of the velocity MLP")
    time_dim: int = Field(
        16, ge=2, le=1024, multiple_of=2, description="sinusoidal time-embedding size (even; quick 16, paper 32)"
    )
    transport_steps: Steps = Field(20, description="Euler steps K of the backward transport (quick 20, paper 40)")
    method: Literal["euler", "heun"] = Field("euler", description="ODE integrator of the transport")
    batch: Annotated[Batch, Field(ge=8)] = Field(
        512, description="batch of observed samples per step (quick 512, paper 2000)"
    )
    lr: LearningRate = Field(3e-3, description="Adam learning rate")
    p_recorrupt: Probability = Field(
        0.9, description="probability of re-corrupting x0 (else the observed y is kept as x1)"
    )
    resamples: int = Field(1, ge=1, le=64, description="channel draws per step")
    gamma: float = Field(
        0.0, ge=0.0, le=10.0, description="stochastic interpolant: I_t += gamma t (1 - t) z (0: linear interpolant)"
    )
    schedule: Literal["constant", "cosine"] = Field(
        "cosine",
        description="learning-rate schedule of the 2-D parts "
        "(ours): cosine decay, so the judged last snapshot of the raw weights is not one draw of SGD noise",
    )
    ema_decay: float = Field(
        0.995, ge=0.0, lt=1.0, description="EMA decay, applied every 10 steps (reported; quick claims use raw weights)"
    )
    evaluate_every: Every = Field(100, description="steps between evaluations")
    precision: Precision = Field(
        "auto",
        description="arithmetic of the per-step transport inside training (no gradient): fp32, bf16 autocast, or "
        "auto (bf16 on GPUs and AMX/AVX512-BF16 CPUs, fp32 elsewhere; the config records which); evaluations stay fp32",
    )
    eval_n: Annotated[SampleSize, Field(ge=100)] = Field(
        4000, description="observed samples transported per evaluation"
    )
    # --- linear-Gaussian ----------------------------------------------------------------------------
    gauss_n: Annotated[SampleSize, Field(ge=100)] = Field(
        4000, description="observed samples of the linear-Gaussian case"
    )
    gauss_sigma: float = Field(0.6, gt=0, le=10, description="channel noise sigma of the linear-Gaussian case")
    gauss_steps: Steps = Field(
        400, description="training steps, linear-Gaussian (converged by ~100 steps at the quick width)"
    )
    oracle_n: Annotated[SampleSize, Field(ge=1000)] = Field(
        20_000, description="samples for the oracle (training-free) checks"
    )
    # --- two moons ----------------------------------------------------------------------------------
    toy_data: Literal["moons", "mixture"] = Field(
        "moons", description="2-D toy law: two moons, or 8 Gaussians on a circle"
    )
    moons_n: Annotated[SampleSize, Field(ge=100)] = Field(6000, description="observed two-moons samples")
    moons_channels: tuple[MoonsChannel, ...] = Field(
        ("noise",), description="channels the moons are observed through (noise, mask, saturate, quantise)"
    )
    moons_sigma: float = Field(0.5, gt=0, le=10, description="noise sigma of the moons 'noise' channel")
    moons_steps: Steps = Field(1000, description="training steps, two moons")
    # --- 2-D masking (paper) -------------------------------------------------------------------------
    mask2d: bool = Field(False, description="Gaussian data under independent 50% coordinate masking (claim mask-2d)")
    mask_ratio: Annotated[Probability, Field(gt=0, lt=1)] = Field(0.5, description="masking probability per coordinate")
    mask2d_steps: Steps = Field(3000, description="training steps, 2-D masking")
    mask2d_batch: Annotated[Batch, Field(ge=8)] = Field(
        512, description="batch of observed samples per step, 2-D masking"
    )
    # --- digits (paper) -------------------------------------------------------------------------------
    digits: bool = Field(False, description="8x8 digits under random masking with a small U-Net (claims digits-*)")
    digits_steps: Steps = Field(20_000, description="training steps, digits")
    digits_batch: Annotated[Batch, Field(ge=8)] = Field(128, description="batch, digits")
    digits_lr: LearningRate = Field(5e-4, description="learning rate, digits (cosine schedule)")
    digits_transport_steps: Steps = Field(64, description="Euler steps, digits")
    digits_width: Annotated[Width, Field(ge=8)] = Field(64, description="U-Net width, digits")
    digits_channel: Literal["mask", "blur"] = Field(
        "mask", description="digits channel: random mask (noise fill) or Gaussian blur (sigma 1) + noise 0.1"
    )
    image_path: str | None = Field(
        None,
        description="local images (.npz or a folder of PNG/JPEG) instead of the 8x8 "
        "digits: MNIST/CIFAR-size, never downloaded",
    )
    digits_held_out: Annotated[SampleSize, Field(ge=10)] = Field(
        297, description="digits held out for evaluation (the rest is observed, masked once)"
    )


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: linear-Gaussian (n = 4000, 400 steps), two moons under noise (1000 steps) and Gaussian "
        "data under 50% "
        "coordinate masking (500 steps, batch 256); cosine rate decay; evaluations every 200 steps; oracle checks on "
        "2e4 samples",
        mask2d=(True, "claim mask-2d: a 2-D MLP, cheap enough at quick"),
        mask2d_steps=(500, "CPU budget: the masked law's moments settle within ~300 steps under cosine decay"),
        mask2d_batch=(256, "CPU budget"),
        evaluate_every=(200, "CPU budget: each evaluation transports 4000 samples twice (raw and EMA weights)"),
    ),
    "digits-cpu": Preset.of(
        "digits-cpu",
        "CPU, ~80 s: the quick Gaussian checks plus masked digits at reduced sizes (800 steps, K = 8, U-Net width 32)",
        moons_channels=((), "digits only"),
        digits=(True, "claims digits-restoration and channel-consistency"),
        digits_steps=(800, "CPU budget"),
        digits_batch=(64, "CPU budget"),
        digits_transport_steps=(8, "CPU budget: each step transports the batch"),
        digits_width=(32, "CPU budget"),
        digits_lr=(2e-3, "fewer steps, larger rate"),
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~80 s: decides digits-restoration and channel-consistency at reduced sizes (the digits-cpu "
        "preset's values: 800 steps, K = 8, U-Net width 32; card: 20k steps, K = 64); plus the quick Gaussian checks",
        moons_channels=((), "digits only"),
        digits=(True, "claims digits-restoration and channel-consistency"),
        digits_steps=(800, "CPU budget: 800 of the card's 20k steps already restore past the thresholds"),
        digits_batch=(64, "CPU budget"),
        digits_transport_steps=(8, "CPU budget: each step transports the batch"),
        digits_width=(32, "CPU budget"),
        digits_lr=(2e-3, "fewer steps, larger rate"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 30 min on one H100: rough; the cpu preset's masked digits (800 steps, K = 8, width 32, batch 64) "
        "took ~200 s on 2 cores; the paper's 20k steps each transport 2 resamples x K = 64 Euler steps of a width-64 "
        "U-Net at batch 128 (~6 GFLOP a forward: ~0.8 TFLOP a step), ~15-20 min at ~15 TFLOP/s or launch-bound at "
        "~0.3 ms a forward, plus the four 2-D runs (5000 steps, K = 40, width 256, batch 2000: ~3 min) and "
        "evaluations): "
        "2-D settings of the authors' README (width 256, t-embedding 32, batch 2000, 5000 steps, K = 40), moons "
        "under noise and masking, "
        "2-D masking, and masked digits (U-Net, K = 64, resamples 2, lr 5e-4 cosine, batch 128, 20k steps); the 2-D "
        "cosine rate decay is ours",
        gpu_minutes=30,
        width=(256, "paper 2-D width"),
        time_dim=(32, "paper 2-D t-embedding"),
        transport_steps=(40, "paper K = 40"),
        batch=(2000, "paper 2-D batch"),
        gauss_steps=(5000, "paper 2-D steps"),
        moons_steps=(5000, "paper 2-D steps"),
        moons_channels=(("noise", "mask"), "the issue's two moons channels"),
        mask2d=(True, "claim mask-2d"),
        mask2d_steps=(5000, "paper 2-D steps"),
        mask2d_batch=(2000, "paper 2-D batch"),
        digits=(True, "claims digits-restoration and channel-consistency"),
        resamples=(2, "paper digits: 2 channel draws per step"),
    ),
}
