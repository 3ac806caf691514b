"""The run's arithmetic precision for no-gradient passes: ``fp32`` (default) or ``bf16`` autocast.

Why: a study's cost is often dominated by passes that need no gradient and tolerate rounding (the transport of a
self-consistent interpolant inside every training step, the denoiser calls of a corrected rollout). Under
``torch.autocast(..., dtype=torch.bfloat16)`` their matmuls and convolutions run in bfloat16 (norms, softmax and
reductions stay in fp32, torch's autocast policy), which is several times faster where the hardware has bf16 units
(GPUs; CPUs with AMX or AVX512-BF16: measured 2.3x on the SCSI transport on an AMX Xeon). On a CPU without them it is
much slower (measured ~20x on the AVX2 development box), so every preset defaults to ``fp32``.

A study opts in with a ``precision`` config field (:data:`theorylab.core.fields.Precision`) and wraps those passes in
``with ctx.autocast(cfg.precision):``; the field is part of the config, so fp32 and bf16 runs are different runs in
the store. A study whose claims need fp32 or float64 (exact identities, closed forms) has no such field, and
``theorylab run --precision bf16`` says so and runs it in full precision.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import torch

PRECISIONS = ("fp32", "bf16")


def autocast(precision: str, device: torch.device | str = "cpu") -> AbstractContextManager:
    """A context in which ``precision`` applies on ``device``: nothing for ``fp32``, bf16 autocast for ``bf16``."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "fp32":
        return nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
