"""graph-tokenization: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    DModel,
    Fraction,
    GraphNodes,
    LearningRate,
    MLPMult,
    NHeads,
    NLayers,
    SampleSize,
    Seeds,
    Steps,
)

Task = Literal["degree", "components", "edge_query", "in_K4", "lambda2_threshold"]
Tokenization = Literal["adjacency", "spectral", "random_walk", "concat"]


class GraphTokenizationConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {"cycle_n": "cycle_nodes"}
    # --- exact checks (claims 1-4, 8) ---
    rw_horizon: int = Field(
        32, ge=1, le=256, description="walk lengths t = 1..rw_horizon compared on the srg pair (card: 32)"
    )
    exact_er_graphs: Annotated[SampleSize, Field(le=100_000)] = Field(
        100, description="random G(16, p) graphs whose Laplacian is rebuilt from spectral tokens (card: 100)"
    )
    exact_er_p: float = Field(0.3, gt=0, lt=1, description="edge probability of those graphs (card: 0.3)")
    cycle_nodes: int = Field(
        12, ge=5, le=256, description="nodes n of the cycle C_n of the basis-ambiguity check (card: 12)"
    )
    trace_steps: int = Field(16, ge=1, le=64, description="t <= trace_steps in tr(P^t) = Σ μ^t (card: 16)")
    # --- tokenization ---
    rw_steps: int = Field(16, ge=1, le=64, description="K of the random-walk tokens (card: 16, as RWSE)")
    spectral_sign: Literal["random", "none"] = Field(
        "random", description="eigenvector signs: flipped at random per sample (card) or eigh's"
    )
    spectral_basis: Literal["eigh", "random_rotation"] = Field(
        "eigh", description="basis inside degenerate eigenspaces (card: eigh)"
    )
    # --- graph banks ---
    n_nodes: tuple[GraphNodes, ...] = Field(
        (16,), min_length=1, description="graph sizes n of the trained models (card: 16; paper 16, 32, 64)"
    )
    train_graphs: Annotated[SampleSize, Field(le=1_000_000)] = Field(
        3000, description="training bank per (task, n, seed) (card)"
    )
    test_graphs: Annotated[SampleSize, Field(le=1_000_000)] = Field(
        500, description="test bank per (task, n, seed) (card)"
    )
    max_components: int = Field(4, ge=1, le=8, description="c in 1..max_components for 'components' (card: 4)")
    p_extra: float = Field(0.2, ge=0, le=1, description="extra-edge probability inside each connected piece (card)")
    p_low: float = Field(
        0.1, ge=0, le=1, description="lowest G(n, p) edge probability of the other tasks' banks (ours)"
    )
    p_high: float = Field(0.6, ge=0, le=1, description="highest G(n, p) edge probability (ours; p uniform per graph)")
    lambda2_threshold: float = Field(0.5, gt=0, le=100, description="label of 'lambda2_threshold': λ₂(L) > this (card)")
    # --- models and training ---
    tasks: tuple[Task, ...] = Field(("components", "degree"), min_length=1, description="tasks trained (card quick)")
    tokenizations: tuple[Tokenization, ...] = Field(
        ("adjacency", "spectral", "random_walk", "concat"), min_length=1, description="tokenizations trained per task"
    )
    n_layers: tuple[NLayers, ...] = Field(
        (1,), min_length=1, description="transformer depths L (card quick: 1; paper 1, 2, 4, 8)"
    )
    seeds: Annotated[Seeds, Field(le=100)] = Field(
        1, description="replicas per (task, tokenization, n, L), each with its own banks"
    )
    d_model: DModel = Field(64, description="residual width d (card)")
    n_heads: NHeads = Field(4, description="attention heads per layer (card)")
    mlp_mult: MLPMult = Field(4, description="FF width = mlp_mult x d (card: 4d)")
    steps: Steps = Field(600, description="AdamW steps per model (card quick: 600; paper 20k)")
    lr: LearningRate = Field(1e-3, description="AdamW learning rate (card)")
    batch: Annotated[Batch, Field(le=4096)] = Field(32, description="graphs per step (card)")
    lr_decay_frac: Fraction = Field(
        0.2,
        description="last share of the steps over which lr decays linearly to 0 "
        "(ours: settles Adam's late loss spikes; 0 = constant lr)",
    )
    stacked: bool = Field(
        True,
        description="train models of one architecture as one vmapped computation (same numbers as one by one, faster)",
    )
    # --- srg pair (claims 5, 10) ---
    pair_steps: Steps = Field(
        200,
        description="steps of the RW and adjacency models trained to tell relabelled Shrikhande from rook (card: 200)",
    )
    pair_n_layers: NLayers = Field(1, description="depth of those two models (ours)")
    pair_train_copies: Annotated[SampleSize, Field(le=100_000)] = Field(
        256, description="relabelled copies of each graph to train on"
    )
    pair_test_copies: Annotated[SampleSize, Field(le=100_000)] = Field(
        64, description="fresh relabelled copies of each graph tested"
    )
    srg_n_layers: tuple[NLayers, ...] = Field(
        (), description="depths of the in_K4 srg-discrimination models (claim 10; empty: skipped, paper 1, 2, 4)"
    )
    srg_steps: Steps = Field(2000, description="steps of each srg-discrimination model")

    @model_validator(mode="after")
    def _check(self) -> "GraphTokenizationConfig":
        if self.p_low > self.p_high:
            raise ValueError(f"'p_low' ({self.p_low}) must be <= 'p_high' ({self.p_high})")
        for name in ("n_nodes", "n_layers", "tasks", "tokenizations", "srg_n_layers"):
            vals = getattr(self, name)
            if len(set(vals)) != len(vals):
                raise ValueError(f"'{name}' has repeated entries: {vals}")
        small = [n for n in self.n_nodes if n < 2 * self.max_components]
        if "components" in self.tasks and small:
            raise ValueError(
                f"'n_nodes' {small} cannot hold {self.max_components} pieces of size >= 2 "
                f"(need n >= {2 * self.max_components}; lower 'max_components')"
            )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 60 s: the exact checks (srg pair, spectral reconstruction, basis "
        "ambiguity, eigenvalue 1 of P), 8 models (components and degree x 4 tokenizations, "
        "L = 1, d = 64, n = 16, 600 steps) and the srg-pair RW/adjacency models (200 steps)",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores: the quick preset plus the in_K4 srg-discrimination models (adjacency, RW, eigenvalue-only) at "
        "L = 2, 2000 steps each, which decide srg-discrimination",
        srg_n_layers=((2,), "card: adjacency at L >= 2; L = 2 alone fits 2 CPU cores (paper preset: 1, 2, 4)"),
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 450 min on one H100: the quick models train at ~5 ms per layer-step on one CPU core at n = 16; "
        "the paper's 20 models x 5 seeds x L in {1, 2, 4, 8} x 20k steps at n = 16, 32, 64 are ~1.2e6 core-seconds, "
        "at ~45x a core): n in {16, 32, 64}, L in {1, 2, 4, 8}, all tasks, 20k steps, 5 seeds; srg-pair "
        "discrimination on in_K4. depth-regimes stays here: measured slice (seed 0, quick's recipe, n = 16, 600 "
        "steps, L = 1, 2, 4; 217 s CPU for these 12 models at load ~17 on 2 cores): edge_query adjacency 0.682, "
        "0.516, 0.604 and spectral 0.514, 0.486, 0.514 (final losses 0.51-0.70, near chance's 0.693: 600 steps do "
        "not train edge_query at any depth, so the depths cannot be told apart there); components adjacency 0.766, "
        "0.732, 0.750, spectral 1.000, 0.996, 0.998. A cpu preset was piloted and does not fit: edge_query only, "
        "adjacency and spectral, L = 1, 2, 3000 steps, lr 1e-3 (quick's recipe otherwise; seed 0, one thread) took "
        "210 s CPU for these 4 models (~11 ms per layer-step at load ~8 on 2 cores); adjacency reached 0.814, 0.622 "
        "with 3000 training graphs (L = 1 memorised: final loss 0.002) and 0.876, 0.774 with 30000 (losses 0.22, "
        "0.38, still falling), spectral 0.566, 0.516 and 0.484, 0.502 (loss ~0.69, chance): adjacency is short of "
        "0.95 at 3000 steps, and the grid the claim needs (2 tasks x 2 tokenizations x L = 1, 2, 4: 28 "
        "layer-models) would cost ~900 s CPU at 3000 steps, over the 540 s of a cpu preset",
        gpu_minutes=450,
        n_nodes=((16, 32, 64), "card"),
        n_layers=((1, 2, 4, 8), "card"),
        tasks=(("degree", "components", "edge_query", "in_K4", "lambda2_threshold"), "card: all tasks"),
        steps=(20_000, "card"),
        seeds=(5, "card"),
        srg_n_layers=((1, 2, 4), "card: adjacency L >= 2 vs RW / eigenvalues; L = 1 for contrast (ours)"),
    ),
}
