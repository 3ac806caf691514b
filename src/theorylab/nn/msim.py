"""MSIMNet: the multiscale single-index architecture with trainable unit features, batched over replicas.

Bruna, *The Multiscale Single-Index Model*, arXiv 2607.03347 (2026), student network: the target's architecture
(DeepTD, Oymak & Soltanolkotabi, arXiv 1805.06523) with trainable ``u_l in S^(d-1)``, ``l = 1..K``, initialised
uniformly on the sphere so each overlap ``<u_l, w_l>`` starts at ~d^(-1/2). ``S`` independent students (seeds) are
one parameter of shape (S, K, d) and one batched forward (``data.msim.msim_forward_torch``): the optimiser treats
each row ``u[s, l]`` as a point of its own sphere.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from theorylab.data.msim import msim_forward_torch, msim_link

__all__ = ["MSIMNet"]


class MSIMNet(nn.Module):
    """``f_u(x) = h^K`` with ``h^l_j = sigma_l(<u_l, block_j(h^(l-1))>)`` for ``S`` students at once.

    ``x``: (S, B, d^K) (or (S, B, d, ..., d)), one batch per student; returns (S, B).
    """

    def __init__(
        self,
        d: int,
        K: int,
        links: str | Sequence[str] = "quadratic",
        replicas: int = 1,
        generator: torch.Generator | None = None,
        device: torch.device | str = "cpu",
    ):
        super().__init__()
        if d < 2 or K < 1 or replicas < 1:
            raise ValueError(
                f"MSIMNet needs d >= 2, K >= 1, replicas >= 1; got d = {d}, K = {K}, replicas = {replicas}"
            )
        self.links = (links,) * K if isinstance(links, str) else tuple(links)
        if len(self.links) != K:
            raise ValueError(f"MSIMNet needs one link per layer ({K}); got {len(self.links)}")
        for name in self.links:
            msim_link(name)
        u = torch.randn(replicas, K, d, generator=generator, device=device)
        self.u = nn.Parameter(u / u.norm(dim=-1, keepdim=True))  # uniform on each sphere

    @property
    def d(self) -> int:
        return self.u.shape[-1]

    @property
    def K(self) -> int:
        return self.u.shape[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return msim_forward_torch(x, self.u, self.links)

    @torch.no_grad()
    def overlaps(self, features: torch.Tensor) -> torch.Tensor:
        """``|<u_l, w_l>|`` (S, K) against target features (S, K, d) (sign-blind)."""
        return (self.u * features).sum(-1).abs()

    @torch.no_grad()
    def signed_overlaps(self, features: torch.Tensor) -> torch.Tensor:
        """``<u_l, w_l>`` (S, K) with signs."""
        return (self.u * features).sum(-1)
