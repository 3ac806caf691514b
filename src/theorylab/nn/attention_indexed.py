"""Attention-indexed students: ``K`` independent copies of one parametrisation of ``S``, batched.

Xu, Sagitova, Zdeborová & Krzakala, arXiv 2609.03858: the student sees the tokens only through
``G_ij(S) = x_i^T S x_j / sqrt(d)``, with
- ``tied``: ``S = κ W W^T``, ``W_ab ~ N(0, 1/d)`` (PSD; κ = 1/2 gives Var G = 1 at init, like the teacher);
- ``direct``: S symmetric, trained entry-wise; initialised trace-free (symmetric Gaussian minus its trace),
  PSD (a tied draw) or zero;
- ``untied``: ``S = κ U V^T``, ``U, V ~ N(0, 1/d)`` (the paper's Assumption 4.2: ``‖U‖_F = Θ(√d)``, ``‖U‖_op = O(1)``);
  ``mean0`` shifts ``V`` along ``U`` so that ``m(0) = Tr S/√d`` is exactly ``mean0``.
Single token: tied and direct use the centred ``G = (x^T S x - Tr S)/sqrt(d)`` (paper Sec. 3); untied the uncentred
``G = x^T S x / sqrt(d)`` of eq. 24, whose mean ``m = Tr S/√d`` is the fast variable of Sec. 4 (:attr:`centred`).
The K copies live in one (K, d, d) tensor so a trainer advances them with batched matmuls. :meth:`param_grads`
turns ``∂L/∂S`` into parameter gradients by the chain rule (tested against autograd).
"""

from __future__ import annotations

import math

import torch
from torch import nn

PARAMETRISATIONS = ("tied", "direct", "untied")
DIRECT_INITS = ("traceless", "psd", "zero")


class AttentionIndexed(nn.Module):
    """K attention-indexed students of one parametrisation (tied / direct / untied), each d x d."""

    def __init__(
        self,
        d: int,
        parametrisation: str = "tied",
        n_students: int = 1,
        kappa: float = 0.5,
        direct_init: str = "traceless",
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
        mean0: float | None = None,
    ):
        super().__init__()
        if parametrisation not in PARAMETRISATIONS:
            raise ValueError(f"parametrisation must be one of {PARAMETRISATIONS}; got '{parametrisation}'")
        if direct_init not in DIRECT_INITS:
            raise ValueError(f"direct_init must be one of {DIRECT_INITS}; got '{direct_init}'")
        if d < 2 or n_students < 1 or kappa <= 0:
            raise ValueError(f"need d >= 2, n_students >= 1, kappa > 0; got {d}, {n_students}, {kappa}")
        if mean0 is not None and parametrisation != "untied":
            raise ValueError(f"mean0 sets the initial mean of an untied student only; got '{parametrisation}'")
        self.d, self.parametrisation, self.kappa = d, parametrisation, kappa
        self.centred = parametrisation != "untied"
        K = n_students

        def gauss(scale: float) -> torch.Tensor:
            return torch.randn(K, d, d, generator=generator, dtype=torch.float64).mul(scale).to(dtype)

        if parametrisation == "tied":
            self.W = nn.Parameter(gauss(d**-0.5))
        elif parametrisation == "untied":
            U, V = gauss(d**-0.5), gauss(d**-0.5)
            if mean0 is not None:  # V += c U with c such that kappa Tr(U V^T)/sqrt(d) = mean0 exactly
                uu, uv = (U * U).sum((1, 2)), (U * V).sum((1, 2))
                c = (mean0 * math.sqrt(d) / kappa - uv) / uu
                V = V + c[:, None, None] * U
            self.U = nn.Parameter(U)
            self.V = nn.Parameter(V)
        elif direct_init == "psd":
            W = gauss(d**-0.5)
            self.S_param = nn.Parameter(kappa * W @ W.transpose(1, 2))
        elif direct_init == "zero":
            self.S_param = nn.Parameter(torch.zeros(K, d, d, dtype=dtype))
        else:  # symmetric Gaussian with off-diagonal variance 1/(2d) (Tr S² ≈ d/2: Var G = 1), trace removed
            Z = gauss((4 * d) ** -0.5)
            S = Z + Z.transpose(1, 2)
            S = S - torch.diagonal(S, dim1=1, dim2=2).mean(1)[:, None, None] * torch.eye(d, dtype=dtype)
            self.S_param = nn.Parameter(S)

    def S(self) -> torch.Tensor:
        """The K matrices S, (K, d, d)."""
        if self.parametrisation == "tied":
            return self.kappa * self.W @ self.W.transpose(1, 2)
        if self.parametrisation == "untied":
            return self.kappa * self.U @ self.V.transpose(1, 2)
        return self.S_param

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Single token x (B, d): ``G`` (K, B), centred unless untied. Tokens x (B, L, d): uncentred ``G_ij``."""
        S = self.S()
        if x.ndim == 2:
            G = (torch.einsum("bi,kij->kbj", x, S) * x).sum(2)
            if self.centred:
                G = G - torch.diagonal(S, dim1=1, dim2=2).sum(1)[:, None]
            return G / math.sqrt(self.d)
        return torch.einsum("bid,kde,bje->kbij", x, S, x) / math.sqrt(self.d)

    @torch.no_grad()
    def param_grads(self, grad_S: torch.Tensor, S_sym: bool = True) -> dict[str, torch.Tensor]:
        """Parameter gradients from ``∂L/∂S`` (K, d, d) by the chain rule (``grad_S`` symmetric when ``S_sym``)."""
        if self.parametrisation == "tied":
            g = grad_S if S_sym else grad_S + grad_S.transpose(1, 2)
            return {"W": (2 if S_sym else 1) * self.kappa * g @ self.W}
        if self.parametrisation == "untied":
            return {"U": self.kappa * grad_S @ self.V, "V": self.kappa * grad_S.transpose(1, 2) @ self.U}
        return {"S_param": grad_S}

    @torch.no_grad()
    def sgd_step(self, grad_S: torch.Tensor, lr: float | torch.Tensor) -> None:
        """One plain SGD step ``θ -= lr ∂L/∂θ`` given a symmetric ``∂L/∂S``; ``lr`` scalar or (K,) per student."""
        lr = torch.as_tensor(lr, dtype=grad_S.dtype).reshape(-1, 1, 1)
        for name, g in self.param_grads(grad_S).items():
            getattr(self, name).sub_(lr * g)
