"""ssm-consensus: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Dim, Every, Length, NLayers, Seeds


class SSMConsensusConfig(StudyConfig):
    n: Dim = Field(64, description="token dimension n (tokens live on S^(n-1); card: 64 quick, 768 paper)")
    m: Dim = Field(16, description="state size m of S_B, S_C (card: 16 quick, 64 paper)")
    length: Length = Field(50, description="tokens per sequence ℓ (card: 50)")
    runs: Seeds = Field(20, description="independent runs (initial tokens and weights) per configuration (card: 20)")
    n_layers: NLayers = Field(200, description="layers of the random-weight configurations (card: 200)")
    isotropic_n: Dim = Field(32, description="n = m of the isotropic case (the card's 64 costs ~30 s alone on 2 cores)")
    isotropic_n_layers: Annotated[NLayers, Field(le=100_000)] = Field(1000, description="layers of the isotropic "
        "case (card: 1000)")
    tau: float = Field(1.0, gt=0, le=10, description="step τ of z <- π(z + τ g ⊙ r) (card: 1)")
    pe_max: NLayers = Field(100, description="persistence-of-excitation windows up to this many layers count as found")
    record_every: Every = Field(5, description="layers between two recorded Gram spectra (figures only)")

    @model_validator(mode="after")
    def _checks(self) -> "SSMConsensusConfig":
        if self.pe_max > self.n_layers:
            raise ValueError(f"'pe_max' ({self.pe_max}) must be at most 'n_layers' ({self.n_layers})")
        return self


PRESETS = {
    "quick": Preset.of("quick", "2 CPU cores, ~30 s: the idealised model at n = 64, m = 16, ℓ = 50, 20 runs, depth "
                                "200; the isotropic case at n = 32, depth 1000"),
    "paper": Preset.of(
        "paper",
        "the card's paper sizes for the idealised model (n = 768, m = 64, 50 runs); CPU-feasible but slow, GPU advised",
        n=(768, "card: Mamba-2 130m width"),
        m=(64, "card"),
        runs=(50, "card"),
        isotropic_n=(64, "card's isotropic size at quick; n = 768 would hold a 768 x 768 state per token"),
    ),
}
