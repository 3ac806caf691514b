"""One module per paper. Importing this package registers every built-in study."""

from theorylab.studies import attention_rank, generative_leap, multi_index_estimators, rmt_diffusion  # noqa: F401
