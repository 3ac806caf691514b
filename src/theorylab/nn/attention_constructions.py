"""Training-free attention constructions for the nearest/farthest-point task.

Amsel, Yehudai, Bruna, *On the Benefits of Rank in Attention Layers*, arXiv 2407.16153:

- full-rank head (Sec. 3): ``Q^T K = -beta I``, ``V = O = I``. Its arg-max key for query ``x_i`` is
  ``argmin_j <x_i, x_j>``, so the hard-max head (``beta = inf``) computes the farthest-point
  target exactly at every sequence length, and the softmax head converges to it as ``beta`` grows;
- random rank-1 heads (Sec. 4): ``q_h = k_h = theta_h`` uniform on the sphere, ``V_h = I``,
  hard-max per head, and scalar output weights ``c_h`` fitted by least squares. A rank-1 head only
  sees the projections ``<theta_h, x>``, which is why many of them stay far from the target.

Each builder returns a one-layer, attention-only :class:`~theorylab.nn.ToyTransformer` whose weights
are set through :meth:`~theorylab.nn.ToyTransformer.set_head`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from theorylab.nn.toy_transformer import ToyTransformer, attention_only


def full_rank_head(d: int, beta: float = math.inf, *, dtype: torch.dtype = torch.float32) -> ToyTransformer:
    """The full-rank construction: scores ``-beta <x_i, x_j>``; hard-max when ``beta`` is infinite."""
    hard = math.isinf(beta)
    model = attention_only(d, 1, d, attention="hard" if hard else "softmax", qk_scale=1.0).to(dtype)
    eye = torch.eye(d, dtype=dtype)
    model.set_head(0, 0, q=-(1.0 if hard else beta) * eye, k=eye, v=eye, o=eye)
    return model.requires_grad_(False)  # a construction, not a starting point for training


def random_rank1_heads(
    d: int, n_heads: int, generator: torch.Generator, *, dtype: torch.dtype = torch.float32
) -> ToyTransformer:
    """``n_heads`` hard-max rank-1 heads with ``q_h = k_h = theta_h`` uniform on the sphere, ``V_h = O_h = I``.

    Fit the output weights with :func:`fit_head_weights` before use.
    """
    theta = torch.randn(n_heads, d, generator=generator, dtype=torch.float64)
    theta = (theta / theta.norm(dim=1, keepdim=True)).to(dtype)
    model = attention_only(d, n_heads, 1, attention="hard", qk="tied", qk_scale=1.0).to(dtype)
    eye = torch.eye(d, dtype=dtype)
    for h in range(n_heads):
        model.set_head(0, h, q=theta[h : h + 1], v=eye, o=eye)
    return model.requires_grad_(False)


@torch.no_grad()
def head_outputs(model: ToyTransformer, x: Tensor, chunk: int = 256) -> Tensor:
    """Each head's value output before ``W_O`` (the point it picked, for ``V = I``): (B, H, T, v)."""
    outs = []
    for i in range(0, x.shape[0], chunk):
        _, cache = model.run_with_cache(x[i : i + chunk], names=["blocks.0.attn.hook_z"])
        outs.append(cache["blocks.0.attn.hook_z"])
    return torch.cat(outs)


@torch.no_grad()
def fit_head_weights(
    model: ToyTransformer, x: Tensor, targets: Tensor, chunk: int = 256, ridge: float = 1e-10
) -> Tensor:
    """Least-squares scalar weights ``c_h`` for ``f(X)_i = sum_h c_h z^h_i``; sets ``O_h = c_h I``.

    Normal equations accumulated in float64 over chunks of sets: ``G = sum <z^h, z^g>``,
    ``b = sum <z^h, f>``. ``x``: (B, T, d) sets; ``targets``: (B, T, d). Returns ``c`` (H,).
    """
    attn = model.blocks[0].attn
    h = attn.cfg.n_heads
    gram = torch.zeros(h, h, dtype=torch.float64)
    rhs = torch.zeros(h, dtype=torch.float64)
    for i in range(0, x.shape[0], chunk):
        z = head_outputs(model, x[i : i + chunk], chunk).double()  # (b, H, T, d)
        t = targets[i : i + chunk].double()  # (b, T, d)
        flat = z.permute(1, 0, 2, 3).reshape(h, -1)  # (H, b*T*d): one matmul, not an einsum loop
        gram += flat @ flat.T
        rhs += flat @ t.reshape(-1)
    gram += ridge * gram.diagonal().mean() * torch.eye(h, dtype=torch.float64)
    c = torch.linalg.solve(gram, rhs)
    d = attn.cfg.d_model
    eye = torch.eye(d, dtype=torch.float64)
    for head in range(h):
        attn.set_head(head, o=(c[head] * eye).to(attn.W_O.dtype))
    return c
