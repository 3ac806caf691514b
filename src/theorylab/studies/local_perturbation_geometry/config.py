"""local-perturbation-geometry: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    Chunk,
    DModel,
    Draws,
    Fraction,
    LearningRate,
    NHeads,
    NLayers,
    Rank,
    SampleSize,
    Seeds,
    Steps,
    Width,
)
from theorylab.data.modular_tasks import TASKS

TaskName = Literal["add", "sub", "copy_a", "max"]


class LocalPerturbationGeometryConfig(StudyConfig):
    # --- data and base checkpoint ---
    p: Annotated[int, Field(ge=2, le=1000)] = Field(
        11, description="modulus of the operands a, b in Z_p (card: 11 quick, 97 paper)"
    )
    tasks: tuple[TaskName, ...] = Field(TASKS, min_length=2, description="tasks of the multitask set (card: all four)")
    task_a: TaskName = Field("add", description="task A of the task vector delta_A and the CAA 'negative' prompts")
    task_b: TaskName = Field("sub", description="task B of delta_B and the CAA 'positive' prompts")
    d_model: DModel = Field(64, description="residual width (card: 64 quick, 256 paper)")
    n_layers: NLayers = Field(2, description="transformer blocks (card: 2 quick, 4 paper)")
    n_heads: NHeads = Field(4, description="attention heads (card: 4)")
    mlp_width: Width = Field(256, description="MLP hidden width (ours: the usual 4 d)")
    seeds: Seeds = Field(1, description="base checkpoints, each with its own init, data order and probes")
    base_max_steps: Steps = Field(
        3000,
        description="AdamW step cap of the base run; it stops once every task has "
        "accuracy >= base_target (card: about 800)",
    )
    base_min_steps: Annotated[int, Field(ge=0, le=1_000_000)] = Field(
        0, description="AdamW steps the base run takes at least, before the accuracy stop (card: about 800)"
    )
    base_lr: LearningRate = Field(1e-3, description="AdamW learning rate of the base run (card)")
    base_batch: Batch = Field(128, description="sequences per AdamW step")
    base_target: Fraction = Field(0.95, description="per-task accuracy that ends the base run (card: 0.95)")
    # --- task vectors and local geometry ---
    sgd_steps: Steps = Field(100, description="plain SGD steps on one task from theta_0 (card: 100)")
    sgd_lr: LearningRate = Field(0.05, description="SGD learning rate (card: 0.05)")
    sgd_batch: Batch = Field(64, description="sequences per SGD step, drawn from the task's p^2 prompts")
    probe_n: SampleSize = Field(256, description="fixed probe examples of f, L and the gradient matrix (card: 256)")
    ts: tuple[Annotated[Fraction, Field(gt=0)], ...] = Field(
        (1e-4, 10**-3.5, 1e-3, 10**-2.5, 1e-2, 10**-1.5, 1e-1),
        min_length=5,
        description="step sizes t of the Taylor and interference scans (card: 7 values 1e-4..1e-1); the fits use "
        "[1e-4, 1e-2] and [1e-3, 1e-1]",
    )
    drift_steps: tuple[Annotated[int, Field(ge=0, le=100_000)], ...] = Field(
        (0, 10, 30, 100), min_length=2, description="SGD steps s of the tangent-drift comparison (card)"
    )
    drift_rank: Rank = Field(8, description="k of the top-k gradient subspace (card: 8)")
    prefix_steps: Steps = Field(10, description="m: SGD updates in the trajectory-prefix basis (card: 10)")
    # --- the paper's own findings (turn-3 card): order defect, window, onset, rotation, additivity ---
    lrs: tuple[Annotated[float, Field(gt=0, le=100)], ...] = Field(
        tuple(round(10 ** (k / 4), 12) for k in range(-16, 5)),
        min_length=5,
        description="step sizes eta of the two-step order-defect scan (ours: 1e-4..10, 4 per decade; it must reach "
        "past the onset eta_dagger ~ 0.10/kappa, which was 1.07-1.2 for two pairs of seed 17)",
    )
    window_scales: tuple[Annotated[Fraction, Field(gt=0)], ...] = Field(
        (1e-5, 10**-4.5, 1e-4, 10**-3.5, 1e-3, 10**-2.5, 1e-2),
        min_length=4,
        description="perturbation sizes |delta| / |theta_0| of the one-direction window (the paper: up to 1e-2)",
    )
    rotation_control: Annotated[Fraction, Field(gt=0, lt=1)] = Field(
        1e-3,
        description="the rotation control's point theta_0 + c (theta_s - theta_0): same direction, c times "
        "the distance (ours)",
    )
    additivity_ts: tuple[Annotated[float, Field(gt=0, le=10)], ...] = Field(
        (1e-3, 1e-2, 1e-1, 1.0),
        min_length=3,
        description="scales t of t delta_A, t delta_B in the additivity probe (1 = the full task vectors)",
    )
    # --- best-of-N ---
    bestofn_ns: tuple[Annotated[SampleSize, Field(ge=2, le=4096)], ...] = Field(
        (4, 16), min_length=2, description="N of best-of-N random search (card: 4, 16); draws are nested"
    )
    bestofn_draws: Draws = Field(200, description="repeats averaged per N (card: 200)")
    bestofn_validity: Annotated[Fraction, Field(gt=0)] = Field(
        0.05, description="s |tr H| / (2 |g| e_N) at the smallest N sets s (card: 0.05)"
    )
    bestofn_params: Literal["readout", "all"] = Field(
        "readout",
        description="parameters the random search perturbs: the readout (its input cached; ours, for "
        "speed) or all of theta",
    )
    trace_probes: Annotated[Draws, Field(ge=2)] = Field(20, description="Rademacher probes of Hutchinson's tr H")
    # --- edit <-> representation ---
    caa_layer: Annotated[int, Field(ge=1, le=256)] = Field(
        1, description="layer l of the CAA claim: the residual stream after l blocks (card: 1)"
    )
    caa_controls: Annotated[Draws, Field(ge=2)] = Field(16, description="random edits of the same norm (control)")
    # --- LoRA recovery (claim 7, paper; needs peft) ---
    lora_steps: Annotated[Steps, Field(ge=0)] = Field(
        0, description="SGD steps of the LoRA recovery (0 = off; needs the optional package peft)"
    )
    lora_rank: Rank = Field(8, description="LoRA rank (card: 8)")
    lora_lr: LearningRate = Field(0.05, description="SGD learning rate of the LoRA adapters")
    lora_noise: Annotated[Fraction, Field(gt=0)] = Field(
        0.05,
        description="relative size of the weight noise the LoRA run recovers from (per adapted matrix, "
        "|noise| = lora_noise |W|)",
    )
    chunk: Chunk = Field(64, description="examples per vmap chunk of the per-example gradients (memory only)")

    @model_validator(mode="after")
    def _check(self) -> "LocalPerturbationGeometryConfig":
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"'tasks' has repeats: {self.tasks}")
        for name in ("task_a", "task_b"):
            if getattr(self, name) not in self.tasks:
                raise ValueError(f"'{name}' ({getattr(self, name)}) must be one of 'tasks' {self.tasks}")
        if self.task_a == self.task_b:
            raise ValueError(f"'task_a' and 'task_b' must differ; both are {self.task_a!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"'n_heads' ({self.n_heads}) must divide 'd_model' ({self.d_model})")
        for name in ("ts", "drift_steps", "bestofn_ns", "lrs", "window_scales", "additivity_ts"):
            vals = getattr(self, name)
            if list(vals) != sorted(set(vals)):
                raise ValueError(f"'{name}' must be strictly ascending; got {vals}")
        if self.drift_steps[0] != 0 or self.drift_steps[-1] > self.sgd_steps:
            raise ValueError(
                f"'drift_steps' must start at 0 and end <= sgd_steps ({self.sgd_steps}); got {self.drift_steps}"
            )
        if self.additivity_ts[-1] != 1.0:
            raise ValueError(f"'additivity_ts' must end at 1 (the full task vectors); got {self.additivity_ts}")
        if abs(self.window_scales[-1] / 1e-2 - 1) > 1e-9:
            raise ValueError(f"'window_scales' must end at the paper's window 1e-2; got {self.window_scales}")
        if self.base_min_steps > self.base_max_steps:
            raise ValueError(
                f"'base_min_steps' ({self.base_min_steps}) must be <= 'base_max_steps' ({self.base_max_steps})"
            )
        if self.prefix_steps >= self.sgd_steps:
            raise ValueError(f"'prefix_steps' ({self.prefix_steps}) must be < 'sgd_steps' ({self.sgd_steps})")
        if self.caa_layer > self.n_layers:
            raise ValueError(f"'caa_layer' ({self.caa_layer}) must be <= 'n_layers' ({self.n_layers})")
        if self.probe_n > len(self.tasks) * self.p**2:
            raise ValueError(f"'probe_n' ({self.probe_n}) exceeds the {len(self.tasks) * self.p**2} sequences")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~45 s: p = 11, d = 64, 2 layers, 4 heads; base AdamW until 95% per "
        "task; 100-step SGD task vectors; two-step order defect for the 6 task pairs at 21 "
        "step sizes; one-direction window to 1e-2; Taylor/interference scans t = 1e-4..1e-1; "
        "drift at s = 0, 10, 30, 100; prefix m = 10; best-of-N (N = 4, 16) x 200 on the "
        "readout; CAA at layer 1; no LoRA (claim 7 needs the cpu preset and peft)",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~3 min on one thread: the quick model (p = 11, d = 64, 2 layers) at the "
        "card's 3 seeds, with the LoRA (rank 8, 300 SGD steps, peft) recovery; decides "
        "additivity-at-full-scale and lora-recovery at the quick model's size (declared)",
        seeds=(3, "card (the paper preset's 3 seeds)"),
        lora_steps=(300, "card: LoRA recovery experiments as in the predecessor"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: p = 97, d = 256, 4 layers, 3 seeds; best-of-N on all parameters; LoRA (rank 8) recovery from weight "
        "noise, with peft (without it claim 7 is not decided and the rest runs)",
        gpu_minutes=45,
        p=(97, "card"),
        d_model=(256, "card"),
        n_layers=(4, "card"),
        mlp_width=(1024, "4 d, as at quick"),
        seeds=(3, "card (drift figure: mean +- SD over 3 seeds)"),
        base_max_steps=(50_000, "p = 97 needs many more steps to reach 95% on every task"),
        base_batch=(512, "larger set"),
        bestofn_params=("all", "the paper's random search perturbs the whole model (MeZO-style)"),
        lora_steps=(300, "card: LoRA recovery experiments as in the predecessor"),
    ),
}
