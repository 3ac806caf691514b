"""monomial-networks: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Dim, Draws, LearningRate, Rank, SampleSize, Seeds, Steps

Case = tuple[Annotated[int, Field(ge=1, le=50)], Annotated[int, Field(ge=1, le=8)], Annotated[int, Field(ge=1, le=400)]]

AH_CASES: tuple[tuple[int, int, int], ...] = (
    (3, 4, 5),
    (4, 4, 9),
    (5, 4, 14),
    (5, 3, 7),  # the AH exceptions (one below expected)
    (5, 3, 6),
    (5, 3, 8),
    (3, 3, 3),
    (4, 3, 5),  # non-defective neighbours
    (4, 2, 2),
    (4, 2, 3),
    (6, 2, 3),  # k = 2: r d - r(r - 1)/2
)


class MonomialNetworksConfig(StudyConfig):
    # --- the k = 2 Gaussian landscape (claims 2-5) ---
    d: Annotated[Dim, Field(ge=2, le=12)] = Field(6, description="input dimension d of the k = 2 teacher (card: 6)")
    r: Annotated[Rank, Field(le=12)] = Field(2, description="student width r, = the rank bound (card: 2); r < d")
    teacher_scale: float = Field(
        2.0, gt=0, le=100, description="teacher eigenvalues uniform in [-scale, scale] (ours; distinct a.s.)"
    )
    # --- Monte Carlo identity (claim 1) ---
    mc_n: SampleSize = Field(1_000_000, description="Gaussian samples of the E[(x^T B x)^2] check (card: 10^6)")
    mc_matrices: Draws = Field(20, description="random symmetric B of the check (card: 20)")
    # --- gradient descent (claim 4, figures) ---
    gd_runs: Seeds = Field(20, description="GD runs from random starts per teacher and metric (card: 20)")
    gd_steps: Steps = Field(6000, description="Adam steps per run (card: 6000)")
    gd_lr: LearningRate = Field(1e-2, description="Adam learning rate (card: 1e-2)")
    polish_steps: Annotated[Steps, Field(le=200)] = Field(
        30, description="max Newton (pseudo-inverse) polish steps after Adam, float64"
    )
    gd_tol: float = Field(1e-8, gt=0, le=1e-3, description="gradient norm that counts as converged (card: 1e-8)")
    # --- Hessian signatures (global-minimum; the derived-index survey, ours) ---
    hessian_tol: float = Field(1e-8, gt=0, le=1e-2, description="|eigenvalue| <= tol counts as zero (card: 1e-8)")
    signature_dims: tuple[Annotated[Dim, Field(ge=2, le=12)], ...] = Field(
        (6,), min_length=1, description="d of the signature survey (card paper: 6, 10)"
    )
    signature_ranks: tuple[Annotated[Rank, Field(le=11)], ...] = Field(
        (2,), min_length=1, description="r of the signature survey, every |S| = r point"
    )
    signature_teachers: Seeds = Field(2, description="random teachers per (d, r) of the survey (card paper: 50)")
    # --- metrics (claim 8, 9, figure) ---
    mixture_shift: float = Field(1.5, ge=0, le=10, description="mixture means +-shift u, u = 1/sqrt(d) (ours)")
    mixture_scale: float = Field(0.5, gt=0, le=10, description="mixture component std (ours)")
    metric_teachers: Seeds = Field(2, description="random teachers of the Gaussian-vs-mixture count (card paper: 50)")
    metric_runs: Seeds = Field(20, description="GD runs per teacher and metric of that count (card paper: 200)")
    value_separation: float = Field(
        1e-4, gt=0, le=1, description="relative gap between distinct critical values (card: 1e-4)"
    )
    # --- dimension counts (claim 7) ---
    ah_cases: tuple[Case, ...] = Field(AH_CASES, min_length=1, description="(d, k, r) of the Jacobian ranks (card)")
    jacobian_extra: Annotated[SampleSize, Field(le=1000)] = Field(
        40, description="evaluation points beyond binom(d + k - 1, k) (card: 40)"
    )
    jacobian_rtol: float = Field(1e-9, gt=0, le=1e-3, description="relative SVD threshold of the rank (card: 1e-9)")

    @model_validator(mode="after")
    def _check(self) -> "MonomialNetworksConfig":
        if self.r >= self.d:
            raise ValueError(
                f"'r' must be < 'd' (r >= d gives positive-dimensional critical sets); got r={self.r}, d={self.d}"
            )
        for d in self.signature_dims:
            bad = [r for r in self.signature_ranks if r >= d]
            if bad:
                raise ValueError(f"'signature_ranks' must be < every 'signature_dims' entry; got r {bad} at d = {d}")
        for name in ("signature_dims", "signature_ranks"):
            vals = getattr(self, name)
            if list(vals) != sorted(set(vals)):
                raise ValueError(f"'{name}' must be strictly ascending; got {vals}")
        for d, k, r in self.ah_cases:
            if (d + k) > 30:
                raise ValueError(f"'ah_cases' entry {(d, k, r)} is too large for a dense Jacobian (d + k <= 30)")
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, ~25 s: k = 2, d = 6, r = 2, one teacher: all 22 critical points with "
        "gradients and Hessians, 20 Adam runs (6000 steps) + Newton polish under the Gaussian, "
        "Rademacher and mixture metrics, the 10^6-sample Monte Carlo identity, 11 Jacobian "
        "ranks; signature survey and the Gaussian-vs-mixture count on 2 teachers (reduced)",
    ),
    "cpu": Preset.of(
        "cpu",
        "2 CPU cores, ~200 s CPU (measured: seed 0 177 s user + 21 s sys, 9.3 GB peak; seed 1 235 s, 7.9 GB): the "
        "quick preset plus the "
        "card's Gaussian-vs-mixture count at its own size, 50 "
        "teachers x 200 GD runs under each metric (all 10,000 runs of a metric trained and Newton-polished as one "
        "batch), which decides non-gaussian-critical-values",
        metric_teachers=(50, "card"),
        metric_runs=(200, "card"),
    ),
    "paper": Preset.of(
        "paper",
        "CPU, ~1 h: signature survey on 50 teachers at d in {6, 10}, r in {1, 2, 3}; Gaussian vs mixture critical "
        "values on 50 teachers x 200 GD runs (the cpu preset's size, ~3 min batched)",
        signature_dims=((6, 10), "card"),
        signature_ranks=((1, 2, 3), "ours: the card's r range cut to what the enumeration affords"),
        signature_teachers=(50, "card"),
        metric_teachers=(50, "card"),
        metric_runs=(200, "card"),
    ),
}
