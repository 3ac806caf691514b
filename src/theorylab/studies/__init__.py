"""One module per paper. Importing this package registers every built-in study."""

from theorylab.studies import rmt_diffusion  # noqa: F401
