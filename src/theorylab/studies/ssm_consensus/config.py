"""ssm-consensus: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Corpus, Dim, DModel, Every, LearningRate, Length, NLayers, Seeds, Steps
from theorylab.data.text import check_corpus


class SSMConsensusConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {
        "n": "d",
        "m": "state_dim",
        "isotropic_n": "isotropic_dim",
        "mamba_hidden": "mamba_d_model",
        "mamba_state": "mamba_state_dim",
    }
    d: Dim = Field(64, description="token dimension (the paper's n: tokens live on S^(n-1); card: 64 quick, 768 paper)")
    state_dim: Dim = Field(16, description="state size m of S_B, S_C (card: 16 quick, 64 paper)")
    length: Length = Field(50, description="tokens per sequence ℓ (card: 50)")
    runs: Seeds = Field(20, description="independent runs (initial tokens and weights) per configuration (card: 20)")
    n_layers: NLayers = Field(200, description="layers of the random-weight configurations (card: 200)")
    isotropic_dim: Dim = Field(
        32, description="n = m of the isotropic case (the card's 64 costs ~30 s alone on 2 cores)"
    )
    isotropic_n_layers: Annotated[NLayers, Field(le=100_000)] = Field(
        1000, description="layers of the isotropic case (card: 1000)"
    )
    tau: float = Field(1.0, gt=0, le=10, description="step τ of z <- π(z + τ g ⊙ r) (card: 1)")
    pe_max: NLayers = Field(100, description="persistence-of-excitation windows up to this many layers count as found")
    record_every: Every = Field(5, description="layers between two recorded Gram spectra (figures only)")
    hf: bool = Field(True, description="run the Hugging Face Mamba-2 parts (claims 7-8; needs the hf extra)")
    hf_runs: Seeds = Field(4, description="runs of the HF-vs-idealisation equivalence check, per configuration")
    hf_weight_sets: NLayers = Field(4, description="distinct layers (weights) of the equivalence check")
    hf_n_layers: NLayers = Field(8, description="layers run in the equivalence check (cycling the distinct ones)")
    gate_runs: Seeds = Field(
        20, description="token sequences of the gate on/off measurement (card: 20 quick, 50 paper)"
    )
    gate_n_layers: NLayers = Field(
        200, description="depth of the gate on/off measurement, cycling the blocks (card: 200)"
    )
    mamba_d_model: DModel = Field(
        64, description="hidden size (residual width) of the HF Mamba-2 (card: 64 random-init, 768 trained)"
    )
    mamba_n_layers: NLayers = Field(4, description="blocks of the HF Mamba-2 (card: 4 random-init, 24 trained)")
    mamba_state_dim: Dim = Field(16, description="state size (card: 16 random-init; mamba2-130m: 128)")
    mamba_head_dim: Dim = Field(16, description="head_dim (card: 16 random-init, 64 trained)")
    mamba_train: bool = Field(False, description="train the HF Mamba-2 on text first (claim 8; GPU advised)")
    train_steps: Steps = Field(2000, description="AdamW steps of the self-trained Mamba-2")
    train_lr: LearningRate = Field(1e-3, description="AdamW learning rate of the self-trained Mamba-2")
    train_batch: Batch = Field(16, description="windows per step")
    train_length: Length = Field(256, description="characters per window")
    train_corpus: Corpus = Field("stdlib", description="'stdlib', 'kjv' or a local text file")
    mamba_local: str | None = Field(
        None,
        description="a local directory with Mamba-2 weights (e.g. mamba2-130m, "
        "save_pretrained format) used instead of training; nothing is "
        "downloaded",
    )

    @model_validator(mode="after")
    def _checks(self) -> "SSMConsensusConfig":
        if self.mamba_train:
            check_corpus("train_corpus", self.train_corpus)
        if self.mamba_local is not None and not Path(self.mamba_local).expanduser().is_dir():
            raise ValueError(
                f"'mamba_local' must be an existing directory of Mamba-2 weights; {self.mamba_local!r} is not"
            )
        if self.mamba_d_model * 2 % self.mamba_head_dim:
            raise ValueError(
                f"'mamba_head_dim' ({self.mamba_head_dim}) must divide 2 x 'mamba_d_model' ({2 * self.mamba_d_model})"
            )
        if self.pe_max > self.n_layers:
            raise ValueError(f"'pe_max' ({self.pe_max}) must be at most 'n_layers' ({self.n_layers})")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~30 s: the idealised model at n = 64, m = 16, ℓ = 50, 20 runs, depth "
        "200; the isotropic case at n = 32, depth 1000",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~2 min at one thread (130 s measured): quick plus claim 8 on a self-trained Mamba-2 of the "
        "card's random-init shape (hidden 64, 4 blocks, state 16, head_dim 16), 50 AdamW steps of 16 x 256 "
        "characters of the stdlib corpus, then its gate toggled at depth 200 (20 token sequences)",
        mamba_train=(
            True,
            "card claim 8: a self-trained Mamba-2 (the card's random-init shape, a declared departure "
            "from its 130m shape)",
        ),
        train_steps=(
            50,
            "2-3.5 s of one core a step (16 x 256 characters; HF's reference scan, no mamba_ssm kernels "
            "on a CPU): 50 steps ~2 min",
        ),
    ),
    "paper": Preset.of(
        "paper",
        "the card's paper sizes for the idealised model (n = 768, m = 64, 50 runs) and a self-trained 130m-shape "
        "Mamba-2 (claim 8). GPU: est. 20 min on one H100, from FLOPs (a training step of 16 x 256 characters through "
        "~130M parameters is ~3e12 FLOP: ~1 min on one CPU core, ~36 h for the 2000 steps; on an H100 ~0.3 s a step "
        "with the torch scan path, ~10 min, plus the idealised model at n = 768)",
        gpu_minutes=20,
        d=(768, "card: Mamba-2 130m width"),
        state_dim=(64, "card"),
        runs=(50, "card"),
        isotropic_dim=(64, "card's isotropic size at quick; n = 768 would hold a 768 x 768 state per token"),
        gate_runs=(50, "card"),
        mamba_d_model=(768, "card: mamba2-130m shape"),
        mamba_n_layers=(24, "card"),
        mamba_state_dim=(128, "mamba2-130m"),
        mamba_head_dim=(64, "card"),
        mamba_train=(True, "card claim 8: a self-trained 130m-shape Mamba-2"),
    ),
}
