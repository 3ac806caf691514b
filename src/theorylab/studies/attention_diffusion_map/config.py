"""attention-diffusion-map: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Dim, Draws, InverseTemperature, SampleSize

Skew = Annotated[float, Field(ge=0, le=10)]  # strength of the skew part A0 in M = S + skew * A0


class AttentionDiffusionMapConfig(StudyConfig):
    d: Dim = Field(16, description="ambient dimension")
    n: SampleSize = Field(300, description="points of the random-operator checks")
    draws: Draws = Field(5, description="random M per check (card: 5)")
    beta: InverseTemperature = Field(1.0, description="tied-QK strength: M = βI")
    skews: tuple[Annotated[Skew, Field(gt=0)], ...] = Field(
        (1e-3, 3e-3, 1e-2, 3e-2, 1e-1), min_length=2, description="skew strengths η of the entropy-production fit"
    )
    circle_n: SampleSize = Field(400, description="points on the circle (radius 3, noise 0.01)")
    roll_n: SampleSize = Field(1000, description="points on the Swiss roll")
    control_factor: float = Field(16.0, gt=1, le=1e4, description="bandwidth multiple of the Swiss-roll control")
    magnetic_n: SampleSize = Field(60, description="points of the magnetic-Laplacian checks")
    magnetic_skew: Annotated[Skew, Field(gt=0)] = Field(0.1, description="η of the frustration check")


PRESETS = {
    "quick": Preset.of("quick", "1 CPU core, seconds: n <= 1000, d = 16, 5 random operators, η from 1e-3 to 1e-1"),
    "paper": Preset.of(
        "paper",
        "larger operators: n up to several thousand (dense float64 eigensolvers), more draws",
        n=(2000, "larger operators"),
        draws=(20, "more random operators"),
        circle_n=(2000, "denser circle"),
        roll_n=(4000, "denser Swiss roll"),
        magnetic_n=(400, "larger magnetic graphs"),
    ),
}
