"""compositional-reasoning: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    DModel,
    LearningRate,
    NHeads,
    NLayers,
    SampleSize,
    Seeds,
    Steps,
    TreeLeaves,
    Width,
)

Order = Literal["heavy_first", "light_first", "random"]


class CompositionalReasoningConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {"tf_tree_levels": "tf_tree_depths"}
    # --- exact checks (claims 1-4) ---
    exact_trees: SampleSize = Field(
        10_000,
        description="random formulas / real-label CRQs of claims 1 and 2 (card: "
        "10^4), spread evenly over the families and n",
    )
    exact_max_leaves: TreeLeaves = Field(64, description="largest n of claims 1 and 2 (card: n <= 64)")
    label_dim: int = Field(8, ge=1, le=1024, description="m of the real labels, z_v uniform on S^{m-1} (card: 8)")
    stack_leaves: tuple[TreeLeaves, ...] = Field(
        (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
        min_length=1,
        description="n of the pending-partials meter (claims 3-4); powers of 2 "
        "so complete binary trees exist (card: D <= 10)",
    )
    stack_trees: SampleSize = Field(
        100, description="trees per (family, n, order) of the meter (card: 1000 per family over the n grid)"
    )
    # --- GRU (claims 5-6) ---
    gru_leaves: tuple[TreeLeaves, ...] = Field((16,), min_length=1, description="caterpillar n of the GRU runs (card)")
    gru_hidden: tuple[Width, ...] = Field((16,), min_length=1, description="GRU state sizes h (card: 16)")
    gru_orders: tuple[Order, ...] = Field(
        ("heavy_first", "light_first"), min_length=1, description="postfix child orders the GRU reads (card)"
    )
    gru_embedding: int = Field(8, ge=1, le=1024, description="token embedding size of the GRU (card: 8)")
    gru_steps: Steps = Field(1000, description="Adam steps, fresh formulas every step (card: 1000 quick)")
    gru_batch: Batch = Field(64, description="formulas per step (card)")
    gru_lr: LearningRate = Field(3e-3, description="Adam learning rate of the GRU (card)")
    gru_seeds: Seeds = Field(1, description="GRU models per (h, n, order)")
    gru_stack_hidden: int = Field(
        64,
        ge=1,
        le=4096,
        description="GRU runs of one n are trained together as one "
        "block-diagonal GRU while their summed state stays <= this (speed only: small GRUs "
        "on a CPU are bound by per-token overhead)",
    )
    eval_formulas: SampleSize = Field(2000, description="fresh formulas of every accuracy (card: 2000)")
    # --- transformer (claims 7-8) ---
    tf_tree_depths: tuple[Annotated[int, Field(ge=1, le=10)], ...] = Field(
        (), description="D = log2 n of the complete binary formulas (card: 3-6); empty: no transformer training"
    )
    tf_n_layers: tuple[NLayers, ...] = Field(
        (1, 2, 4, 6, 8), min_length=1, description="transformer depths L without CoT (card)"
    )
    tf_cot_n_layers: NLayers = Field(2, description="depth of the CoT transformer (card: 2)")
    tf_d_model: DModel = Field(64, description="transformer width (card: 64)")
    tf_n_heads: NHeads = Field(4, description="attention heads (card: 4)")
    tf_steps: Steps = Field(30_000, description="Adam steps of each transformer (card: 30k)")
    tf_batch: Batch = Field(64, description="formulas per step (card)")
    tf_lr: LearningRate = Field(1e-3, description="Adam learning rate of the transformer (card)")
    tf_seeds: Seeds = Field(1, description="transformers per (D, L) (card: 3)")
    chunk: int = Field(512, ge=1, le=1_000_000, description="formulas per forward pass at evaluation (speed only)")

    @model_validator(mode="after")
    def _check(self) -> "CompositionalReasoningConfig":
        bad = [n for n in self.stack_leaves if n & (n - 1)]
        if bad:
            raise ValueError(f"'stack_leaves' must be powers of 2 (complete binary trees); got {bad}")
        for name in ("stack_leaves", "gru_leaves", "gru_hidden", "tf_tree_depths", "tf_n_layers"):
            vals = getattr(self, name)
            if list(vals) != sorted(set(vals)):
                raise ValueError(f"'{name}' must be strictly ascending; got {vals}")
        if len(set(self.gru_orders)) != len(self.gru_orders):
            raise ValueError(f"'gru_orders' has repeats: {self.gru_orders}")
        if self.eval_formulas % 2:
            raise ValueError(f"'eval_formulas' must be even (balanced evaluation sets); got {self.eval_formulas}")
        if self.tf_d_model % self.tf_n_heads:
            raise ValueError(f"'tf_n_heads' ({self.tf_n_heads}) must divide 'tf_d_model' ({self.tf_d_model})")
        if self.tf_batch % 2:
            raise ValueError(f"'tf_batch' must be even (balanced batches); got {self.tf_batch}")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~40 s: exact checks (10^4 Boolean formulas and 10^4 real CRQs with "
        "n <= 64; the pending-partials meter on 100 trees per family, order and n = 2..1024); "
        "two GRUs (h = 16) on n = 16 caterpillars, heavy-first vs light-first, 1000 steps; no "
        "transformer (claim 6 needs the cpu preset, claims 7-8 the cpu-transformer preset)",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~6 min at 1 thread: the quick preset plus claim 6 (rnn-state-scaling) at a reduced, declared "
        "sweep: GRUs h in {4, 8, 16, 32} x n in {16, 64} x heavy-first / light-first, 1000 steps (the quick recipe), "
        "one seed, trained as block-diagonal stacks; no transformer (claims 7-8 are GPU work)",
        gru_leaves=((16, 64), "the two n the light-first doubling compares (card: 16..128)"),
        gru_hidden=(
            (4, 8, 16, 32),
            "h <= 32 (card: up to 128): on this power-of-2 grid an h_min above 32 at n = 64 "
            "is at least double an h_min(16) <= 32; h = 64, 128 at n = 64 cost ~4 min more",
        ),
    ),
    "cpu-transformer": Preset.of(
        "cpu-transformer",
        "2 CPU cores, ~370 s CPU at one thread (measured, seed 0, on a box at load ~10: 25 min wall; peak RSS 1.1 GB): "
        "the quick preset plus claims 7-8 (transformer-depth, "
        "cot-fixed-depth) at reduced, declared sizes: transformers L in {1, 2} and a 2-layer CoT transformer on "
        "complete binary formulas D in {2, 3}, 1000 Adam steps each, one seed (the GRU sweep of claim 6 is the cpu "
        "preset's: both together exceed 540 s)",
        tf_tree_depths=((2, 3), "D = 2, 3 (card: 3..6): a step costs 0.02-0.12 s at D <= 3, ~0.2-0.35 s at D = 4"),
        tf_n_layers=((1, 2), "L <= 2 (card: up to 8): L = 1 vs 2 places L_min(2); L = 4 at D = 3 adds 0.12 s a step"),
        tf_steps=(1000, "card: 30k; in a probe the L = 2 and CoT models reached 1.000 within 500 steps at D = 2"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU: GRU h in {4..128} x n in {16..128} x 3 orders, 20k steps, 3 seeds; transformers L in {1, 2, 4, 6, 8} "
        "on complete binary formulas D in {3..6}, 30k steps, 3 seeds; 2-layer CoT transformer on the same D. Est. "
        "120 min on one H100, from a measured CPU slice: one training step at 1 thread took 0.05 s (D = 3, L = 1) "
        "to 13.2 s (D = 6, L = 8; CoT L = 2 at D = 6: 1.6 s), so the 72 transformers x 30k steps are ~4.7M "
        "core-s, ~42 PFLOP at the ~9 GFLOP/s one core sustained: ~35-70 min at 10-20 TFLOP/s; the 216 GRUs, "
        "stacked block-diagonally (<= 512 state per stack), are ~6 stacks x 20k steps of 31..255 recurrent steps, "
        "latency-bound at ~40 us a recurrent step forward and backward: ~40 min",
        gpu_minutes=120,
        gru_leaves=((16, 32, 64, 128), "card"),
        gru_hidden=((4, 8, 16, 32, 64, 128), "card"),
        gru_orders=(("heavy_first", "light_first", "random"), "card"),
        gru_steps=(20_000, "card"),
        gru_seeds=(3, "card"),
        gru_stack_hidden=(512, "speed on a GPU: fewer, wider block-diagonal stacks"),
        tf_tree_depths=((3, 4, 5, 6), "card"),
        tf_steps=(30_000, "card"),
        tf_seeds=(3, "card"),
    ),
}
