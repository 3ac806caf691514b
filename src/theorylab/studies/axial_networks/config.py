"""axial-networks: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    Dim,
    DModel,
    Every,
    LearningRate,
    NHeads,
    NLayers,
    SampleSize,
    Seeds,
    Steps,
    Width,
)

Grids = tuple[
    Annotated[int, Field(ge=4, le=4096)], Annotated[int, Field(ge=4, le=4096)], Annotated[int, Field(ge=4, le=512)]
]

# The kit-generated PDE tasks of claims 9-11 (solvers and parameters: studies/axial_networks/pde.py).
TASKS = ("AdvDiff1D", "AdvDiff2D", "AdvDiff3D", "AdvDiff3D-pre", "NS2D", "DiffReact2D", "KS1D", "Burgers1D")


class AxialNetworksConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "ls_n2": "ls_grid_2d",
        "ls_n3": "ls_grid_3d",
    }
    equivariance_dims: tuple[Dim, ...] = Field(
        (2, 3, 4), min_length=1, description="dimensions d of the equivariance test (card: 2, 3, 4)"
    )
    ls_fields: SampleSize = Field(16, description="white-noise fields of the least-squares fits (card: 16)")
    ls_grid_2d: Annotated[int, Field(ge=4, le=1024)] = Field(32, description="points per axis, 2-D fits (32)")
    ls_grid_3d: Annotated[int, Field(ge=4, le=128)] = Field(16, description="points per axis, 3-D fit (16)")
    cost_shapes: SampleSize = Field(5, description="random shapes of the score-count check (card: 5)")
    gp_per_class: SampleSize = Field(400, description="GP fields per class and dimension (card: 400)")
    gp_train_dim: Dim = Field(2, description="the dimension the XCNN trains on (card quick: 2)")
    gp_eval_dims: tuple[Dim, ...] = Field(
        (2, 3, 4),
        min_length=1,
        description="dimensions the trained XCNN is read on (2-D held out; others zero-shot on every field)",
    )
    xcnn_width: Width = Field(16, description="XCNN channels (card quick: 16)")
    xcnn_n_layers: NLayers = Field(3, description="SXConv layers (card quick: 3)")
    epochs: Steps = Field(8, description="training epochs (card quick: 8, paper: 10)")
    batch: Batch = Field(32, description="mini-batch (card quick: 32, paper: 64)")
    lr: LearningRate = Field(1e-3, description="Adam learning rate (card: 1e-3)")
    all_dims: bool = Field(False, description="paper toy (claim 8): per-d SXCNN, GXCNN and 3D-CNN at every gp_all_dims")
    gp_all_dims: tuple[Dim, ...] = Field((2, 3, 4, 5), min_length=1, description="dimensions of the paper toy")
    all_dims_seeds: Seeds = Field(3, description="seeds of the paper toy (card: 3)")
    sx_width: Width = Field(64, description="paper SXCNN hidden width (card: 64)")
    sx_n_layers: NLayers = Field(5, description="paper SXCNN layers (card: 5)")
    gx_width: Width = Field(32, description="paper GXCNN hidden width (card: 32)")
    gx_n_layers: NLayers = Field(5, description="paper GXCNN layers: 1 lift + 4 message rounds (card)")
    cnn_width: Width = Field(32, description="paper 3D-CNN filters (card: 32)")
    cnn_n_layers: NLayers = Field(3, description="paper 3D-CNN conv layers (card: 3)")
    # Claim 11, the mini-foundation test (reconstructed; CPU minutes): preset 'mini-foundation' or 'paper'.
    mini_foundation: bool = Field(
        False, description="claim 11: XFieldCNN pretrained on AdvDiff1D+2D, fine-tuned on AdvDiff3D, against scratch"
    )
    mini_grids: Grids = Field((64, 32, 16), description="points per axis of the 1-D, 2-D, 3-D tasks (card: 64, 32, 16)")
    mini_seeds: Seeds = Field(5, description="seeds of claim 11 (card: 5, median)")
    mini_traj: SampleSize = Field(16, description="trajectories per task (25 % held out)")
    mini_frames: Annotated[int, Field(ge=3, le=100_000)] = Field(16, description="frames per trajectory")
    mini_pretrain_steps: Steps = Field(400, description="pretraining steps on AdvDiff1D+2D (round robin)")
    mini_finetune_steps: Steps = Field(200, description="fine-tuning / from-scratch steps on AdvDiff3D (card: 200)")
    mini_width: Width = Field(16, description="XFieldCNN channels")
    mini_n_layers: NLayers = Field(2, description="XFieldCNN hidden SXConv layers")
    # Claims 9-10: axial (XViT) against full-attention (FieldViT) transformers; paper preset (GPU).
    pde_transformers: bool = Field(False, description="claims 9-10: XViT vs FieldViT on the kit's PDE tasks")
    pde_grids: Grids = Field(
        (128, 128, 32), description="points per axis of the 1-D, 2-D, 3-D tasks (card: 2-D at 128², 3-D at 32³)"
    )
    pde_tasks_2d: tuple[str, ...] = Field(
        ("NS2D", "DiffReact2D", "AdvDiff2D"),
        min_length=1,
        description="2-D tasks of claim 9 (card: NS2D, DiffReact2D, AdvDiff2D)",
    )
    pde_traj: SampleSize = Field(64, description="trajectories per task (25 % held out)")
    pde_frames: Annotated[int, Field(ge=3, le=100_000)] = Field(21, description="frames per trajectory")
    pde_history: Annotated[int, Field(ge=1, le=64)] = Field(2, description="input frames (card: CViT history 2)")
    pde_seeds: Seeds = Field(3, description="seeds (card: 3, median)")
    pde_pretrain_steps: Steps = Field(5000, description="training steps from scratch / pretraining")
    pde_finetune_steps: Steps = Field(1000, description="fine-tuning steps on each unseen-dimension target")
    pde_evaluate_every: Every = Field(100, description="fine-tuning curve: steps between test evaluations")
    pde_batch: Batch = Field(32, description="mini-batch of the PDE trainings")
    pde_lr: LearningRate = Field(1e-3, description="Adam learning rate of the PDE trainings")
    vit_d_model: DModel = Field(192, description="XViT / FieldViT width (MPP-Ti: 192)")
    vit_n_layers: NLayers = Field(12, description="transformer blocks (MPP-Ti: 12)")
    vit_n_heads: NHeads = Field(3, description="attention heads (MPP-Ti: 3)")
    vit_patch: Annotated[int, Field(ge=1, le=256)] = Field(16, description="patch size per axis (MPP: 16)")

    @model_validator(mode="after")
    def _checks(self) -> "AxialNetworksConfig":
        for name in ("equivariance_dims", "gp_eval_dims", "gp_all_dims"):
            values = getattr(self, name)
            if list(values) != sorted(set(values)) or max(values) > 6:
                raise ValueError(f"'{name}' must be strictly increasing dimensions <= 6; got {values}")
        if max(self.equivariance_dims) > 4:
            raise ValueError(
                f"'equivariance_dims' must be <= 4 (d! permutations, max_dims of the PE); got {self.equivariance_dims}"
            )
        if self.gp_train_dim not in self.gp_eval_dims:
            raise ValueError(f"'gp_eval_dims' {self.gp_eval_dims} must contain 'gp_train_dim' ({self.gp_train_dim})")
        unknown = [t for t in self.pde_tasks_2d if t not in TASKS or not t.endswith("2D")]
        if unknown:
            raise ValueError(
                f"'pde_tasks_2d' has unknown 2-D tasks {unknown}; known: {[t for t in TASKS if t.endswith('2D')]}"
            )
        for name in ("pde_grids", "mini_grids"):
            bad = [n for n in getattr(self, name) if n % 2]
            if bad:
                raise ValueError(f"'{name}' must be even point counts; got {getattr(self, name)}")
        if self.pde_transformers and any(n % self.vit_patch for n in self.pde_grids):
            raise ValueError(f"'pde_grids' {self.pde_grids} must be divisible by 'vit_patch' ({self.vit_patch})")
        if self.vit_d_model % self.vit_n_heads:
            raise ValueError(f"'vit_n_heads' ({self.vit_n_heads}) must divide 'vit_d_model' ({self.vit_d_model})")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~25 s: exact property tests (d = 2, 3, 4), least-squares fits on 16 "
        "white-noise fields, an XCNN (3 SXConv, 16 channels) trained 8 epochs on 2-D GP fields "
        "and read zero-shot on 3-D and 4-D",
    ),
    "paper": Preset.of(
        "paper",
        "GPU: the cpu preset plus claim 8 (the paper toy: SXCNN, GXCNN and a 3D-CNN per d = 2..5, 10 epochs, batch "
        "64, 3 seeds: CPU ms per sample and training step at batch 8 on one core (SXConv's input-side first layer; "
        "load ~19, so upper), SXCNN / GXCNN / 3D-CNN: d = 2: 26 / 36 / 23, d = 3: 96 / 321 / 40, d = 4: "
        "80 / 1346 / 41, d = 5: 18 / 421 / 11; x 6,400 sample-steps (640 fields x 10 epochs) is ~15.7k core-s a "
        "seed, ~47k for 3: it does not fit a 10-min CPU preset at any size that keeps the paper's models and "
        "fields) and claims 9-10, XViT vs FieldViT (MPP-Ti "
        "sizes: width 192, 12 blocks, 3 heads, patch 16) on the kit's PDE tasks at 128² / 32³. Estimate (upper: "
        "~85 min on one H100): a training step at batch 8 on 128² measured 0.43 s (XViT) and 0.34 s (FieldViT) "
        "on one CPU core, so ~1.5 s at batch 32 (re-measured at batch 32: 1.44 s and 1.37 s); "
        "claim 9 is 3 tasks x 3 seeds x 2 models x 5000 steps (~140k core-s), claim 10 four pretraining arms x 3 "
        "seeds x 5000 steps plus 3 targets x 2 arms x 3 seeds x 1000 fine-tuning steps (~110k core-s): ~255k "
        "core-s, plus ~47k for claim 8, divided by 60 (an H100 taken as 60 CPU cores: ~84 min; short token "
        "sequences likely run faster)",
        gpu_minutes=85,
        all_dims=(True, "card: claim 8, the paper's GP toy protocol"),
        epochs=(10, "paper toy: 10 epochs"),
        batch=(64, "paper toy: batch 64"),
        gp_eval_dims=((2, 3, 4, 5), "card: accuracy against d, 2D..5D"),
        mini_foundation=(True, "card: claim 11 (CPU-feasible, 5 seeds)"),
        pde_transformers=(True, "card: claims 9-10, XViT vs FieldViT on the kit's PDE tasks"),
    ),
    "cpu": Preset.of(
        "cpu",
        "1 CPU thread, a few minutes: the quick preset plus claim 11 (the mini-foundation test: an axial CNN "
        "pretrained on AdvDiff1D 64 + AdvDiff2D 32², fine-tuned 200 steps on AdvDiff3D 16³, against scratch; 5 "
        "seeds), the values of the older 'mini-foundation' preset (kept). Measured 560 s CPU (550 user + 10 sys, "
        "one thread, 59 min wall at load 6-20; mini-foundation ~100 s a seed) with SXConv's input-side first "
        "layer (a training step's CPU, A/B at load ~19: 0.64 to 0.41 s on 16³, 0.075 to 0.046 s on 32²); 617 s "
        "before (load 15-25)",
        mini_foundation=(True, "card: claim 11, CPU-feasible"),
    ),
    "mini-foundation": Preset.of(
        "mini-foundation",
        "CPU, a few minutes: the quick preset plus claim 11 (an axial CNN pretrained on AdvDiff1D 64 + AdvDiff2D "
        "32², fine-tuned 200 steps on AdvDiff3D 16³, against scratch; 5 seeds)",
        mini_foundation=(True, "card: claim 11, CPU-feasible"),
    ),
}
