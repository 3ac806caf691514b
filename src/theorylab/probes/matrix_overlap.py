"""Overlaps between a learned matrix S and a target S* (Xu, Sagitova, Zdeborová & Krzakala, arXiv 2609.03858).

``ρ`` is the cosine between the traceless parts (the paper's normalised structural overlap ``p12 / sqrt(p11 p22)``,
batched over students); the spectral variants compare top-r eigenspaces through
:func:`theorylab.probes.subspace.principal_angles` (reused, not re-implemented).
"""

from __future__ import annotations

import numpy as np
import torch

from theorylab.probes.subspace import principal_angles


def _traceless(S: torch.Tensor) -> torch.Tensor:
    d = S.shape[-1]
    tr = torch.diagonal(S, dim1=-2, dim2=-1).sum(-1) / d
    return S - tr[..., None, None] * torch.eye(d, dtype=S.dtype, device=S.device)


def rho(S: torch.Tensor, S_star: torch.Tensor) -> torch.Tensor:
    """``ρ = <S̄, S̄*>_F / (|S̄|_F |S̄*|_F)`` with ``S̄ = S - (Tr S/d) I``; S (..., d, d) batched, S* (d, d)."""
    A, B = _traceless(S.double()), _traceless(S_star.double())
    return (A * B).sum((-2, -1)) / torch.sqrt((A * A).sum((-2, -1)) * (B * B).sum())


def trace_overlap(S: torch.Tensor) -> torch.Tensor:
    """``t = Tr S / d`` (batched)."""
    return torch.diagonal(S.double(), dim1=-2, dim2=-1).sum(-1) / S.shape[-1]


def top_eigenspace(S: np.ndarray, r: int) -> np.ndarray:
    """Orthonormal basis (d, r) of the eigenvectors of the symmetric part of S with the r largest |eigenvalues|."""
    S = np.asarray(S, dtype=np.float64)
    vals, vecs = np.linalg.eigh((S + S.T) / 2)
    return vecs[:, np.argsort(-np.abs(vals))[:r]]


def eigenspace_angles(S: np.ndarray, S_star: np.ndarray, r: int) -> np.ndarray:
    """Principal angles (radians, ascending) between the top-r eigenspaces of S and S*."""
    return principal_angles(top_eigenspace(S, r), top_eigenspace(S_star, r))


def eigenspace_overlap(S: np.ndarray, S_star: np.ndarray, r: int) -> float:
    """Mean ``cos²`` of the principal angles between top-r eigenspaces (1: same space; ~ r/d: chance)."""
    return float(np.mean(np.cos(eigenspace_angles(S, S_star, r)) ** 2))
