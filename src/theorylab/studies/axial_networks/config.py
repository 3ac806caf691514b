"""axial-networks: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from theorylab.core import Preset, StudyConfig
from theorylab.core.fields import Batch, Dim, LearningRate, NLayers, SampleSize, Seeds, Steps, Width


class AxialNetworksConfig(StudyConfig):
    equivariance_dims: tuple[Dim, ...] = Field((2, 3, 4), min_length=1,
                                               description="dimensions d of the equivariance test (card: 2, 3, 4)")
    ls_fields: SampleSize = Field(16, description="white-noise fields of the least-squares fits (card: 16)")
    ls_n2: Annotated[SampleSize, Field(ge=4, le=1024)] = Field(32, description="points per axis, 2-D fits (32)")
    ls_n3: Annotated[SampleSize, Field(ge=4, le=128)] = Field(16, description="points per axis, 3-D fit (16)")
    cost_shapes: SampleSize = Field(5, description="random shapes of the score-count check (card: 5)")
    gp_per_class: SampleSize = Field(400, description="GP fields per class and dimension (card: 400)")
    gp_train_dim: Dim = Field(2, description="the dimension the XCNN trains on (card quick: 2)")
    gp_eval_dims: tuple[Dim, ...] = Field((2, 3, 4), min_length=1,
                                          description="dimensions the trained XCNN is read on (2-D held out; others "
                                                      "zero-shot on every field)")
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

    @model_validator(mode="after")
    def _checks(self) -> "AxialNetworksConfig":
        for name in ("equivariance_dims", "gp_eval_dims", "gp_all_dims"):
            values = getattr(self, name)
            if list(values) != sorted(set(values)) or max(values) > 6:
                raise ValueError(f"'{name}' must be strictly increasing dimensions <= 6; got {values}")
        if max(self.equivariance_dims) > 4:
            raise ValueError(f"'equivariance_dims' must be <= 4 (d! permutations, max_dims of the PE); "
                             f"got {self.equivariance_dims}")
        if self.gp_train_dim not in self.gp_eval_dims:
            raise ValueError(f"'gp_eval_dims' {self.gp_eval_dims} must contain 'gp_train_dim' ({self.gp_train_dim})")
        return self


PRESETS = {
    "quick": Preset.of("quick", "2 CPU cores, ~25 s: exact property tests (d = 2, 3, 4), least-squares fits on 16 "
                                "white-noise fields, an XCNN (3 SXConv, 16 channels) trained 8 epochs on 2-D GP fields "
                                "and read zero-shot on 3-D and 4-D"),
    "paper": Preset.of(
        "paper",
        "GPU advised: adds the paper toy (claim 8): SXCNN, GXCNN and a 3D-CNN trained per d = 2..5, 10 epochs, "
        "batch 64, 3 seeds",
        all_dims=(True, "card: claim 8, the paper's GP toy protocol"),
        epochs=(10, "paper toy: 10 epochs"),
        batch=(64, "paper toy: batch 64"),
        gp_eval_dims=((2, 3, 4, 5), "card: accuracy against d, 2D..5D"),
    ),
}
