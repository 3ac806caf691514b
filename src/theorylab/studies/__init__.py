"""One module per paper. Importing this package registers every built-in study."""

from theorylab.studies import attention_rank, multi_index_estimators, rmt_diffusion  # noqa: F401
