"""One module per paper. Importing this package registers every built-in study."""

from theorylab.studies import attention_rank, rmt_diffusion  # noqa: F401
