"""How much one optimiser step moves a deep transformer, and where its gradient sits (DeepNet).

Wang et al., "DeepNet: Scaling Transformers to 1,000 Layers" (arXiv 2203.00555, Sec. 4) bound the
"model update" ‖F(θ') − F(θ)‖ after one step: with post-LN, residual weight α = (2N)^(1/4) and
V/O/FFN init gain β = (8N)^(−1/4) (:func:`~theorylab.nn.toy_transformer.deepnorm`) it stays flat in
depth N, while plain post-LN's grows with N.

- :func:`relative_update`: ‖F(θ') − F(θ)‖/‖F(θ)‖ for F the last block's output, after one gradient
  step and after one sign step (Adam-like), from one backward pass.
- :func:`deepnorm_update_sweep`: that measurement over depths N and exponents p of β = (8N)^(−p),
  with plain post-LN as the control.
- :func:`block_gradient_norms`, :func:`depth_gradient_profile`: the per-block gradient norm at init,
  pre- vs post-LN, over depths.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.nn.toy_transformer import ToyTransformer, deepnorm


def causal_lm(d_model: int, n_heads: int, vocab_size: int, length: int, seed: int, **arch) -> ToyTransformer:
    """A float64 causal decoder with learned positions and a 4d MLP; ``arch`` sets depth and norms."""
    return ToyTransformer(
        d_model=d_model,
        n_heads=n_heads,
        mlp_width=4 * d_model,
        vocab_size=vocab_size,
        causal=True,
        positional="learned",
        max_len=length,
        seed=seed,
        **arch,
    ).double()


def relative_update(model: nn.Module, tokens: Tensor, lr: float) -> dict[str, float]:
    """``{"sgd": .., "sign": ..}``: ‖F(θ') − F(θ)‖/‖F(θ)‖ for F the last block's output of ``model`` (a
    :class:`ToyTransformer`) on ``tokens[:, :-1]`` and θ' one step of size ``lr`` on every matrix (DeepNet's
    "model update"): a gradient step and a sign step, both from one backward pass of the next-token loss.
    The model is left at the sign step's weights."""
    inp, target = tokens[:, :-1], tokens[:, 1:]
    out = {}
    handle = model.blocks[-1].register_forward_hook(lambda m, a, o: out.__setitem__("h", o))
    matrices = [p for p in model.parameters() if p.ndim >= 2]
    try:
        logits = model(inp)
        before = out["h"].detach()
        F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1)).backward()
        start = [p.detach().clone() for p in matrices]
        result = {}
        with torch.no_grad():
            for update in ("sgd", "sign"):
                for p, p0 in zip(matrices, start):
                    p.copy_(p0 - lr * (p.grad.sign() if update == "sign" else p.grad))
                model(inp)
                result[update] = float((out["h"] - before).norm() / before.norm())
    finally:
        handle.remove()
    return result


def deepnorm_update_sweep(
    *,
    d_model: int,
    n_heads: int,
    vocab_size: int,
    batch: int,
    length: int,
    depths: Sequence[int],
    exponents: Sequence[float],
    n_seeds: int,
    lr: float,
    init_seed: Callable[[int, int], int],
    data_generator: Callable[[int], torch.Generator],
    progress: Callable | None = None,
) -> pd.DataFrame:
    """:func:`relative_update` of :func:`causal_lm` decoders for every (variant, depth N, seed s): DeepNorm
    with β = (8N)^(−p) for each p in ``exponents``, then plain post-LN. ``init_seed(N, s)`` seeds the
    weights (the same draw for every p: only β changes); seed s's batch is ``batch`` uniform random
    sequences of ``length + 1`` tokens from ``data_generator(s)``.
    Columns ``variant, p`` (NaN for post-LN), ``N, seed, update_sgd, update_sign``."""
    tokens = [torch.randint(0, vocab_size, (batch, length + 1), generator=data_generator(s)) for s in range(n_seeds)]
    rows = []
    variants = [("deepnorm", p) for p in exponents] + [("post-LN", None)]
    jobs = [(v, N, s) for v in variants for N in depths for s in range(n_seeds)]
    for (kind, p), N, s in jobs if progress is None else progress(jobs, "DeepNorm sweep"):
        arch = deepnorm(N, p) if kind == "deepnorm" else dict(n_layers=N, norm_position="post")
        model = causal_lm(d_model, n_heads, vocab_size, length, init_seed(N, s), **arch)
        updates = relative_update(model, tokens[s], lr)
        rows.append(
            dict(
                variant=kind,
                p=p if p is not None else np.nan,
                N=N,
                seed=s,
                **{f"update_{k}": v for k, v in updates.items()},
            )
        )
    return pd.DataFrame(rows)


def block_gradient_norms(model: nn.Module, tokens: Tensor) -> list[float]:
    """The ℓ2 norm of the next-token loss's gradient over each block's parameters, first block first."""
    logits = model(tokens[:, :-1])
    F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1)).backward()
    return [
        math.sqrt(sum(float(p.grad.pow(2).sum()) for p in block.parameters() if p.grad is not None))
        for block in model.blocks
    ]


def depth_gradient_profile(
    *,
    d_model: int,
    n_heads: int,
    vocab_size: int,
    batch: int,
    length: int,
    depths: Sequence[int],
    init_seed: Callable[[int], int],
    generator: torch.Generator,
) -> pd.DataFrame:
    """:func:`block_gradient_norms` at init of pre-LN (with a final norm) and post-LN :func:`causal_lm`
    decoders of every depth N (weights seeded by ``init_seed(N)``, the same for both), on one batch of
    ``batch`` uniform random sequences of ``length + 1`` tokens from ``generator``.
    Columns ``norm_position, N, layer, grad_norm``."""
    tokens = torch.randint(0, vocab_size, (batch, length + 1), generator=generator)
    rows = []
    for position in ("pre", "post"):
        for N in depths:
            model = causal_lm(
                d_model,
                n_heads,
                vocab_size,
                length,
                init_seed(N),
                n_layers=N,
                norm_position=position,
                final_norm=position == "pre",
            )
            for i, norm in enumerate(block_gradient_norms(model, tokens)):
                rows.append(dict(norm_position=position, N=N, layer=i, grad_norm=norm))
    return pd.DataFrame(rows)
