"""Function-space distance between a finite network and a (finite) mean-field reference.

``gap(rho, rho') = |f_rho - f_rho'|^2_{L^2(gamma)}``, exact through the kernel of overlaps
(:func:`theorylab.theory.mean_field.function_gap`). A reference with ``m_ref`` particles has its
own error ``~ C / m_ref``; splitting it into halves gives ``gap(half_1, half_2) ~ 4 C / m_ref``, so
``gap(rho_m, rho_ref) - gap(half_1, half_2) / 4`` estimates the gap to the true mean-field limit
(first order in 1/m_ref; keep m <= m_ref / 8).
"""

from __future__ import annotations

import torch
from torch import Tensor

from theorylab.nn.activations import HermiteActivation
from theorylab.theory.mean_field import function_gap, kernel_mean


def split_half_error(act: HermiteActivation, ref: Tensor) -> float:
    """``gap(half_1, half_2) / 4 ~`` the reference's own squared error. ``ref``: (m_ref, d)."""
    half = ref.shape[0] // 2
    a, b = ref[:half], ref[half : 2 * half]
    w = torch.full((half,), 1.0 / half, dtype=ref.dtype, device=ref.device)
    return float(function_gap(act, a, w, b, w)) / 4


def gap_to_reference(act: HermiteActivation, nets: Tensor, weights: Tensor, ref: Tensor) -> tuple[Tensor, float]:
    """Corrected gaps of a batch of networks ``nets (B, M, d)`` with ``weights (B, M)`` (0 on padding)
    to the reference ``ref (m_ref, d)``: ``(gap_raw - split_half_error, split_half_error)``."""
    r = ref.shape[0]
    ref_w = torch.full((r,), 1.0 / r, dtype=ref.dtype, device=ref.device)
    ref_self = kernel_mean(act, ref, ref_w, ref, ref_w)  # shared by every network: computed once
    # ref (m_ref, d) broadcasts against the batch as one matrix: an expanded (B, m_ref, d) view would be copied
    # block by block by the batched matmul (B x cols x d entries: 2 GiB at d = 128)
    cross = kernel_mean(act, nets, weights, ref, ref_w)
    raw = kernel_mean(act, nets, weights, nets, weights) - 2 * cross + ref_self
    own = split_half_error(act, ref)
    return raw - own, own
