"""Layer-by-layer spectra and drift of a residual stream, per position (studies/rg-order-parameter).

``layers`` is a list of block outputs, each (B, L, d): B held-out sequences, L positions, d features. At layer l
and position t the representation is ``H_{l,t}`` (B, d), centred over the batch. Measured:

- effective rank (Roy and Vetterli: ``exp`` of the entropy of ``σ_k / Σσ``, :func:`probes.spectra.effective_rank`)
  and participation ratio ``(Σσ²)² / Σσ⁴``, averaged over positions; the same on the position mean ``h̄_l``
  (the pooled control) and, where a mask is given, on the rows whose position t was masked (masked-only);
- per transition l -> l + 1: ``1 - linear CKA(H_{l,t}, H_{l+1,t})`` (:func:`probes.similarity.feature_kernel_drift`)
  and the relative kernel change ``‖K_{l+1} - K_l‖_F / ‖K_l‖_F`` of the centred linear kernels ``K = H̃ H̃ᵀ``,
  each averaged over positions.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor

from theorylab.probes.similarity import feature_kernel_drift
from theorylab.probes.spectra import effective_rank, participation_ratio


def _centred(h: Tensor) -> Tensor:
    """(..., B, d) centred over B, float64."""
    h = h.double()
    return h - h.mean(-2, keepdim=True)


def spectrum_measures(h: Tensor) -> tuple[Tensor, Tensor]:
    """Effective rank and participation ratio ``(Σσ²)²/Σσ⁴`` of each centred (B, d) matrix of ``h`` (..., B, d)."""
    hc = _centred(h)
    s2 = torch.linalg.svdvals(hc).pow(2)
    return effective_rank(hc), participation_ratio(s2 / s2.sum(-1, keepdim=True))


def layer_ranks(layers: list[Tensor], mask: Tensor | None = None, first: int = 1) -> pd.DataFrame:
    """One row per layer (numbered from ``first``): ``erank``/``pr`` (position level, mean over t), ``erank_pooled``/
    ``pr_pooled`` (position mean), and with ``mask`` (B, L) bool ``erank_masked`` (mean over the positions with at
    least 3 masked rows, each on its masked rows only)."""
    rows = []
    for i, h in enumerate(layers):
        per_pos = h.transpose(0, 1)  # (L, B, d)
        er, pr = spectrum_measures(per_pos)
        er_pool, pr_pool = spectrum_measures(h.mean(1))
        row = dict(
            layer=first + i,
            erank=float(er.mean()),
            pr=float(pr.mean()),
            erank_pooled=float(er_pool),
            pr_pooled=float(pr_pool),
            erank_min=float(er.min()),
            erank_max=float(er.max()),
        )
        if mask is not None:
            vals = [spectrum_measures(h[mask[:, t], t])[0] for t in range(h.shape[1]) if int(mask[:, t].sum()) >= 3]
            row["erank_masked"] = float(torch.stack(vals).mean()) if vals else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def relative_kernel_change(h0: Tensor, h1: Tensor) -> Tensor:
    """``‖K1 - K0‖_F / ‖K0‖_F`` for the centred linear kernels ``K = H̃ H̃ᵀ`` of each (B, d) pair in (..., B, d),
    through the d x d cross-products (the B x B kernels are never formed)."""
    a, b = _centred(h0), _centred(h1)
    aa = (a.transpose(-1, -2) @ a).pow(2).sum((-1, -2))  # ‖K0‖²
    bb = (b.transpose(-1, -2) @ b).pow(2).sum((-1, -2))  # ‖K1‖²
    ab = (b.transpose(-1, -2) @ a).pow(2).sum((-1, -2))  # <K0, K1>
    return (aa + bb - 2 * ab).clamp_min(0).sqrt() / aa.sqrt()


def layer_drift(layers: list[Tensor], first: int = 1) -> pd.DataFrame:
    """One row per transition ``layer -> layer + 1``: ``one_minus_cka`` and ``kernel_change``, means over positions."""
    rows = []
    for i in range(len(layers) - 1):
        h0, h1 = layers[i].transpose(0, 1), layers[i + 1].transpose(0, 1)  # (L, B, d)
        cka_drift = [feature_kernel_drift(h0[t], h1[t]) for t in range(h0.shape[0])]
        rows.append(
            dict(
                layer=first + i,
                one_minus_cka=float(sum(cka_drift) / len(cka_drift)),
                kernel_change=float(relative_kernel_change(h0, h1).mean()),
            )
        )
    return pd.DataFrame(rows)
