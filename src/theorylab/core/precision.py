"""The run's arithmetic precision for the passes a study names: ``fp32`` or ``bf16`` autocast.

Why: a study's cost is often dominated by passes that tolerate rounding: passes that need no gradient (the transport
of a self-consistent interpolant inside every training step, the denoiser calls of a corrected rollout) and the
training steps of small transformers whose claims read accuracies and probabilities (ff-vs-attention). Under
``torch.autocast(..., dtype=torch.bfloat16)`` their matmuls and convolutions run in bfloat16 (norms, softmax and
reductions stay in fp32, torch's autocast policy), which is several times faster where the hardware has bf16 units
(GPUs; CPUs with AMX or AVX512-BF16: measured 2.3x on the SCSI transport on an AMX Xeon, 2x on ff-vs-attention's quick
training on an AVX512-BF16 EPYC). On a CPU without them it is much slower (measured ~20x on an AVX2-only EPYC), so
``fp32`` is the default there: a study that defaults to ``auto`` gets fp32 on such a CPU.

A study opts in with a ``precision`` config field (:data:`theorylab.core.fields.Precision`) and wraps those passes in
``with ctx.autocast(cfg.precision):`` (a training loop: ``train_stacked(precision=)``, where the weights, gradients
and optimiser stay fp32); the field is part of the config, so fp32 and bf16 runs are different runs in
the store. A study whose claims need fp32 or float64 (exact identities, closed forms) has no such field, and
``theorylab run --precision bf16`` says so and runs it in full precision.

``auto`` (the field's value, or ``--precision auto``) picks by hardware when the config is built: ``bf16`` on a CUDA
GPU with bf16 support and on a CPU that reports AMX-BF16 or AVX512-BF16, ``fp32`` elsewhere (AVX2-only CPUs, where
bf16 is slower). The config records the choice made, never ``auto``, so the run's identity and its verdicts say which
arithmetic ran; a bf16 run's verdicts carry the departure :data:`BF16_DEPARTURE`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import torch

from theorylab.core.declared import BF16_DEPARTURE  # noqa: F401 - re-exported: the departure a bf16 run carries

PRECISIONS = ("fp32", "bf16")
CHOICES = ("auto", *PRECISIONS)
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def cpu_flags(path: str = "/proc/cpuinfo") -> set[str]:
    """The CPU's feature flags as the OS reports them (Linux ``/proc/cpuinfo``; empty elsewhere)."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def hardware_bf16(device: str | None = None, flags: set[str] | None = None) -> tuple[bool, str]:
    """Whether bf16 arithmetic is fast on ``device`` (None: CUDA when available, else the CPU), and why in words."""
    kind = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if kind.startswith("cuda"):
        ok = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return ok, "CUDA GPU with bf16" if ok else "CUDA GPU without bf16 support"
    found = sorted((cpu_flags() if flags is None else flags) & set(CPU_BF16_FLAGS))
    if found:
        return True, f"CPU with {', '.join(found)}"
    return False, "CPU without AMX-BF16 or AVX512-BF16 (bf16 would be slower than fp32)"


def resolve(precision: str, device: str | None = None, flags: set[str] | None = None) -> str:
    """``precision`` with ``auto`` replaced by the hardware's choice (:func:`hardware_bf16`)."""
    if precision not in CHOICES:
        raise ValueError(f"precision must be one of {', '.join(CHOICES)}, got {precision!r}")
    if precision != "auto":
        return precision
    return "bf16" if hardware_bf16(device, flags)[0] else "fp32"


def autocast(precision: str, device: torch.device | str = "cpu") -> AbstractContextManager:
    """A context in which ``precision`` applies on ``device``: nothing for ``fp32``, bf16 autocast for ``bf16``."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "fp32":
        return nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
