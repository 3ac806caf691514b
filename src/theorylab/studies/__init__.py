"""One module per paper. Importing this package registers every built-in study."""

from theorylab.studies import (  # noqa: F401
    attention_diffusion_map,
    attention_rank,
    attention_sensitivity,
    bilinear_attention_operator,
    ff_vs_attention,
    generative_leap,
    implicit_patches,
    mean_field_width,
    mpnn_algorithms,
    multi_index_estimators,
    propagation_of_chaos,
    query_key_asymmetry,
    rmt_diffusion,
    self_consistent_interpolants,
    thermalizer,
)
