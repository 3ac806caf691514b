"""truth-subspaces: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, DModel, LearningRate, NLayers, SampleSize, Seeds, Steps

QUICK_STEPS = (50, 100, 200, 300, 500, 700, 1000, 1500, 2000, 2500, 3000, 4000)  # card
# Paper: a roughly log-spaced grid to 1e5 steps (the card's quick grid, continued).
PAPER_STEPS = (
    50,
    100,
    200,
    300,
    500,
    700,
    1000,
    1500,
    2000,
    3000,
    4000,
    6000,
    8000,
    10_000,
    15_000,
    20_000,
    30_000,
    40_000,
    60_000,
    80_000,
    100_000,
)


class TruthSubspacesConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "test_size": "test_n",
        "bayes_samples": "bayes_n",
        "histogram_size": "histogram_n",
        "lm_test_size": "lm_test_n",
    }
    n_entities: tuple[Annotated[int, Field(ge=2, le=1 << 16)], ...] = Field(
        (64,), min_length=1, description="|X| = |Y| = N of the toy runs (card quick: 64; paper: 64, 256)"
    )
    d_model: DModel = Field(64, description="width d of the one-layer toy transformer (card quick: 64; paper: 128)")
    n_layers: tuple[NLayers, ...] = Field(
        (1,), min_length=1, description="attention-only layers of the toy runs (paper: 1, 2, 3)"
    )
    rhos: tuple[Annotated[float, Field(gt=0, lt=1)], ...] = Field(
        (0.9,),
        min_length=1,
        description="truth rates ρ; the first is the base, the others form the ρ sweep "
        "(paper: 0.9, then 0.5, 0.99, 0.999)",
    )
    final_norms: tuple[Literal["layer", "none"], ...] = Field(
        ("layer",),
        min_length=1,
        description="final norm before the unembedding; 'none' is the no-LayerNorm "
        "ablation, run at the base N, layers and ρ (claim 7)",
    )
    seeds: Seeds = Field(1, description="training seeds per configuration (paper: 5)")
    steps: Steps = Field(4000, description="Adam steps of each toy run (card quick: 4000)")
    lr: LearningRate = Field(
        2e-3,
        description="Adam learning rate (ours for quick: 2e-3, since at the card's 1e-3 the "
        "truth phase has not finished by step 4000)",
    )
    weight_decay: float = Field(
        0.3,
        ge=0,
        le=1.0,
        description="AdamW decoupled weight decay on the token embeddings and positions only "
        "(ours: it bounds the attention logits, which are linear in them; without it "
        "2 of 10 seeds collapse attention onto the current token and never leave the "
        "memorise-only plateau). 0: plain Adam, as the card",
    )
    batch: Batch = Field(256, description="fresh sequences per step (card: 256)")
    evaluate_at: tuple[int, ...] = Field(QUICK_STEPS, min_length=2, description="logged evaluation steps")
    test_n: SampleSize = Field(
        4000, description="fixed test sequences (card: 4000); the probes fit on the first half and score on the second"
    )
    probe_every_site: bool = Field(
        False,
        description="probe every layer's residual at the y and x' positions "
        "before and after the final norm (paper); quick: the two "
        "post-norm sites and the pre-norm y site (card)",
    )
    bayes_n: SampleSize = Field(
        1_000_000,
        description="generated sequences for the Bayes check (card: 2e5, "
        "where the memorise-only loss's standard error is 0.0042 and the 0.01 tolerance only 2.4 of them: seed 47 "
        "failed at 0.0105; 1e6 takes 0.1 s and puts the tolerance at 5 standard errors)",
    )
    histogram_n: SampleSize = Field(
        2000, description="test sequences whose x' residual norms are kept for the norm-by-context figure"
    )
    lm_steps: Annotated[int, Field(ge=0, le=10_000_000)] = Field(
        0, description="Adam steps of our own LM on synthetic documents (claim 9); 0: no own-LM run"
    )
    lm_d_model: DModel = Field(256, description="width of our own LM (card: 256)")
    lm_n_layers: NLayers = Field(4, description="blocks of our own LM (card: 4)")
    lm_n_heads: Annotated[int, Field(ge=1, le=64)] = Field(4, description="heads per block of our own LM (ours)")
    lm_n_subjects: Annotated[int, Field(ge=2, le=1 << 16)] = Field(256, description="subjects of the fact table (ours)")
    lm_n_relations: Annotated[int, Field(ge=1, le=256)] = Field(4, description="relations R (card: 4)")
    lm_n_attributes: Annotated[int, Field(ge=2, le=1 << 16)] = Field(256, description="attributes (ours)")
    lm_n_facts: Annotated[int, Field(ge=2, le=64)] = Field(8, description="facts per document (card: 8)")
    lm_rho: Annotated[float, Field(gt=0, lt=1)] = Field(0.5, description="share of all-true documents (ours)")
    lm_lr: LearningRate = Field(1e-3, description="Adam learning rate of our own LM (ours)")
    lm_batch: Batch = Field(128, description="documents per step of our own LM (ours)")
    lm_test_n: SampleSize = Field(2000, description="test documents of the own-LM measurements")
    local_model_path: Path | None = Field(
        None,
        description="optional: a local Hugging Face causal-LM folder for the pretrained-LM check (never downloaded)",
    )
    counterfact_path: Path | None = Field(
        None, description="optional: a local CounterFact-format JSON file (the paper used 128 prompts with LLaMA3-8B)"
    )
    counterfact_prompts: Annotated[int, Field(ge=2, le=100_000)] = Field(
        128, description="CounterFact prompts used (paper: 128)"
    )

    @model_validator(mode="after")
    def _checks(self) -> "TruthSubspacesConfig":
        ev = self.evaluate_at
        if list(ev) != sorted(set(ev)) or ev[0] < 1 or ev[-1] != self.steps:
            raise ValueError(
                f"'evaluate_at' must increase strictly from >= 1 and end at steps = {self.steps}; got {ev}"
            )
        if self.test_n < 200 or self.test_n % 2:
            raise ValueError(f"'test_n' must be even and >= 200 (half fits the probes); got {self.test_n}")
        if self.histogram_n > self.test_n:
            raise ValueError(f"'histogram_n' ({self.histogram_n}) must not exceed test_n ({self.test_n})")
        if self.final_norms[0] != "layer" or len(set(self.final_norms)) != len(self.final_norms):
            raise ValueError(
                f"'final_norms' must start with 'layer' (the model of the card) without repeats; got {self.final_norms}"
            )
        if self.lm_steps and self.lm_d_model % self.lm_n_heads:
            raise ValueError(f"'lm_n_heads' ({self.lm_n_heads}) must divide lm_d_model ({self.lm_d_model})")
        if (self.local_model_path is None) != (self.counterfact_path is None):
            raise ValueError("'local_model_path' and 'counterfact_path' go together: give both or neither")
        for name in ("local_model_path", "counterfact_path"):
            path = getattr(self, name)
            if path is not None and not Path(path).expanduser().exists():
                raise ValueError(
                    f"'{name}': {path} does not exist. The pretrained-LM check needs local files only: "
                    "a Hugging Face causal-LM folder (config.json + weights, e.g. saved with "
                    "save_pretrained) and a CounterFact JSON (a list of records with "
                    "requested_rewrite.prompt/subject/target_true/target_new); theorylab never "
                    "downloads them"
                )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~30 s on one thread: N = 64, d = 64, ρ = 0.9, one 1-layer run of 4000 "
        "AdamW steps (lr 2e-3, decay 0.3 on the embeddings only, batch 256) with probes at "
        "the two post-norm sites and the pre-norm y site, and the 1e6-sequence Bayes check",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~296 s CPU at one thread (measured, seed 0: user 294.2 + sys 1.9 s, peak RSS 1.0 GB; 14.5 min "
        "wall at load ~8.5 on a shared box): the quick preset plus the no-LayerNorm "
        "ablation (a second 4000-step run of the quick model without its final norm), which decides no-layernorm, "
        "and our own 4-layer LM at width 64 (card: 256) on the synthetic 8-fact documents (256 subjects x 4 "
        "relations -> 256 attributes), 1000 Adam steps at lr 3e-3, which decides own-lm-cooccurrence (seed 0: log P "
        "drop 2.00 nats, probe 0.973; seed 1: 265 s CPU, drop 2.48, probe 0.993). Own-LM pilot (our own "
        "draws, one thread): the facts are memorised by "
        "step 400 (first-fact accuracy 1.00) and "
        "the truth effect follows (log P drop 0.00 at 400, 0.37 at 600, 1.22 at 800, 2.33 at 1000; "
        "mean-residual probe 0.53, 0.75, 0.95, 0.98), ~0.2 s of CPU a step; the card's width 256 costs ~2-5 s a step",
        final_norms=(("layer", "none"), "card: the no-LayerNorm ablation"),
        lm_steps=(
            1000,
            "ours (paper preset: 20000): at width 64 the facts are memorised by step 400 and the "
            "truth effect is in place by step 800-1000 (pilot); 20000 steps at width 256 are ~1e5 s of CPU",
        ),
        lm_d_model=(
            64,
            "card: 256, ~2-5 s of CPU a step at one thread (10-25x the width-64 step): 1000 steps "
            "would take 0.5-1.5 h; width 64 keeps the card's 4 layers, 8-fact documents and R = 4",
        ),
        lm_lr=(
            3e-3,
            "ours (paper preset: 1e-3): with 1000 steps at width 64, 3e-3 memorises the 1024 facts "
            "by step 400 and leaves the truth effect time to form",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 150 min on one H100: the quick model's 4000 steps take ~25 s on one CPU core, ~6 ms a step of a "
        "4-token model, so on a GPU it is launch-bound at ~1.5 ms a step: 50 toy runs x 1e5 steps ~ 125 min, plus "
        "the 20k-step own LM ~ 10 min and probes): N in {64, 256}, d = 128, 1-3 layers, ρ in {0.5, 0.9, 0.99, "
        "0.999}, 1e5 steps, 5 seeds, the no-LayerNorm ablation, probes at every site, and our own 4-layer LM on "
        "synthetic documents. Not on a CPU: the quick model at ρ = 0.99 shows no truth phase within 8000 steps "
        "(post-norm probe 0.508 at step 8000; 95 s of CPU at one thread, seed 0), nor at lr 6e-3 within 6000 steps "
        "(probe 0.80 at step 200 before memorisation settles, then 0.46-0.50 from step 700 to 6000, 0.495 at "
        "6000; 102 s of CPU, seed 0), while L_mem - L_Bayes is 0.053 nats at 0.99 and 0.0075 at 0.999 (0.30 at "
        "0.9; N = 16 barely changes them: 0.046, 0.0066), so the ρ sweep to 0.999 needs far more than 1e4 steps a "
        "run and does not fit a 10-minute CPU preset, not even as a reduced set {0.5, 0.9, 0.99}",
        gpu_minutes=150,
        n_entities=((64, 256), "card"),
        d_model=(128, "card"),
        n_layers=((1, 2, 3), "card"),
        rhos=((0.9, 0.5, 0.99, 0.999), "card"),
        final_norms=(("layer", "none"), "card: the no-LayerNorm ablation"),
        seeds=(5, "card"),
        steps=(100_000, "card"),
        lr=(1e-3, "card: 1e5 steps leave ample time for the truth phase"),
        evaluate_at=(PAPER_STEPS, "ours: the card's grid continued log-spaced to 1e5"),
        probe_every_site=(True, "card: position x pre/post norm x layer"),
        lm_steps=(20_000, "ours: long enough for the 8-fact documents to be memorised"),
    ),
}
