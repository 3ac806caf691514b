"""focus-dilution: the paper's own setting for the focus markers (notes on arXiv 2605.01199, card update turn 3).

Model: embedding W_0 (V x d), attention W_Q, W_K (d x d), output W_1 (d x V); one layer, one head, **no W_V, no
LayerNorm**, no bias, no residual; every weight i.i.d. N(0, ε²). The last token x_T queries the whole sequence with
scores ``Φ[x_T, x_s]``, ``Φ = W_0 W_Q W_Kᵀ W_0ᵀ`` (no 1/√d: the notes define Φ without it); the output is
``o = Σ_s α_s W_0[x_s]`` and the logits ``W_1ᵀ o``. Cross-entropy on the last token only: the target is x_{T+1}.

Data: the Markov chain ``P = λI + (1 - λ) 1πᵀ`` (stationary law π), sequences of T states started from π. The
paper's synthetic π = (0.75, 0.19, 0.05, 0.01); following its Definition 2.1 (π_1 for the high-frequency token,
π_i = (1 - π_1)/(V - 1) + c_i δ, Σ c_i = 0 for the rest), ``asymmetry`` scales the low-frequency deviations: 1 is
the paper's π, 0 the perfectly symmetric low frequencies (0.75, 1/12, 1/12, 1/12) the paper says stall.

Population gradient flow: the model's last-token output depends on the sequence only through (x_T, the count of
each token in it), so the population loss is an exact finite sum over those states (their law from a dynamic
programme over the chain); full-batch GD with a small step on that exact loss approximates the flow. Members
(seeds) share the data and differ in their initialisation; they are trained in lockstep as stacked tensors.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
from torch import Tensor

PAPER_PI = (0.75, 0.19, 0.05, 0.01)  # the paper's synthetic stationary law (token 0 = the high-frequency token)


def stationary_law(asymmetry: float, pi: tuple[float, ...] = PAPER_PI) -> np.ndarray:
    """π with the low-frequency deviations from their mean scaled by ``asymmetry`` (Definition 2.1's δ)."""
    p = np.asarray(pi, dtype=np.float64)
    low = p[1:]
    out = p.copy()
    out[1:] = low.mean() + asymmetry * (low - low.mean())
    return out


def transition(pi: np.ndarray, lam: float) -> np.ndarray:
    """P = λI + (1 - λ) 1πᵀ: stay with probability λ, else draw from π (π is stationary)."""
    return lam * np.eye(len(pi)) + (1 - lam) * np.outer(np.ones(len(pi)), pi)


def count_states(pi: np.ndarray, P: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The law of (last token, token counts) over sequences of ``length`` states started from π: ``(last (M,),
    counts (M, V), probability (M,))``, exact (a dynamic programme over the chain)."""
    V = len(pi)
    cur: dict[tuple[int, tuple[int, ...]], float] = {}
    for i in range(V):
        n = [0] * V
        n[i] = 1
        cur[(i, tuple(n))] = float(pi[i])
    for _ in range(1, length):
        nxt: dict[tuple[int, tuple[int, ...]], float] = {}
        for (i, n), p in cur.items():
            for j in range(V):
                m = list(n)
                m[j] += 1
                key = (j, tuple(m))
                nxt[key] = nxt.get(key, 0.0) + p * float(P[i, j])
        cur = nxt
    keys = sorted(cur)
    return (
        np.array([k[0] for k in keys], dtype=np.int64),
        np.array([k[1] for k in keys], dtype=np.float64),
        np.array([cur[k] for k in keys], dtype=np.float64),
    )


class PaperModel:
    """S stacked members of the paper's model: ``W0`` (S, V, d), ``WQ``, ``WK`` (S, d, d), ``W1`` (S, d, V).
    There is no W_V and no LayerNorm by construction (:attr:`PARAMETERS`)."""

    PARAMETERS = ("W0", "WQ", "WK", "W1")

    def __init__(self, vocab_size: int, d_model: int, init_std: float, seeds: list[int]):
        shapes = dict(W0=(vocab_size, d_model), WQ=(d_model, d_model), WK=(d_model, d_model), W1=(d_model, vocab_size))
        draws: dict[str, list[Tensor]] = {k: [] for k in shapes}
        for s in seeds:
            g = torch.Generator().manual_seed(int(s))
            for k, sh in shapes.items():
                draws[k].append(init_std * torch.randn(*sh, generator=g, dtype=torch.float64))
        self.weights = {k: torch.stack(v) for k, v in draws.items()}

    @staticmethod
    def phi(w: dict[str, Tensor]) -> Tensor:
        """Φ = W_0 W_Q W_Kᵀ W_0ᵀ: (S, V, V), query token i, key token j."""
        return (w["W0"] @ w["WQ"]) @ (w["W0"] @ w["WK"]).transpose(-1, -2)

    @staticmethod
    def forward(w: dict[str, Tensor], last: Tensor, counts: Tensor) -> Tensor:
        """Last-token logits (S, M, V) for states (last token, counts): the attention on token j is
        n_j e^{Φ[x_T, j]} / Σ_k n_k e^{Φ[x_T, k]} (every position holding token j scores the same)."""
        scores = PaperModel.phi(w)[:, last, :] + torch.log(counts).clamp_min(-1e4)[None]
        mass = scores.softmax(-1)  # (S, M, V): attention mass per token id
        return (mass @ w["W0"]) @ w["W1"]


def token_attention(phi: Tensor) -> Tensor:
    """Per-token attention weights A_ij = softmax_j Φ_ij (query token i, each key token once): (S, V, V)."""
    return phi.softmax(-1)


def train_population(
    model: PaperModel,
    pi: np.ndarray,
    lam: float,
    length: int,
    *,
    lr: float,
    steps: int,
    evaluate_every: int,
    log: Callable[[int, dict[str, Tensor], Tensor, Tensor], None],
    progress: Callable = iter,
) -> dict[str, Tensor]:
    """Full-batch GD on the exact population last-token cross-entropy, every member at once.

    ``log(step, weights, losses (S,), in-context mass on each token from the last query (S, V), in-context entropy of
    the last query's attention over positions (S,))`` at step 0, every ``evaluate_every`` steps and at ``steps``, with
    the weights before that step's update (population averages)."""
    P = transition(pi, lam)
    last, counts, prob = count_states(pi, P, length)
    last_t, counts_t, prob_t = torch.from_numpy(last), torch.from_numpy(counts), torch.from_numpy(prob)
    target = torch.from_numpy(P)[last_t]  # (M, V): the law of x_{T+1} given x_T
    params = {k: t.clone().requires_grad_(True) for k, t in model.weights.items()}
    names = list(params)
    for step in progress(range(steps + 1)):
        logits = PaperModel.forward(params, last_t, counts_t)
        losses = (-(target[None] * logits.log_softmax(-1)).sum(-1) * prob_t[None]).sum(-1)
        if step % evaluate_every == 0 or step == steps:
            with torch.no_grad():
                scores = PaperModel.phi(params)[:, last_t, :] + torch.log(counts_t).clamp_min(-1e4)[None]
                mass = scores.softmax(-1)  # (S, M, V): each position holding token j gets mass_j / n_j
                in_context = (mass * prob_t[None, :, None]).sum(1)  # (S, V)
                per_position = mass / counts_t.clamp_min(1.0)[None]
                ent = -(mass * per_position.clamp_min(1e-300).log()).sum(-1)  # (S, M)
                position_entropy = (ent * prob_t[None]).sum(-1)
            log(step, {k: p.detach() for k, p in params.items()}, losses.detach(), in_context, position_entropy)
        if step == steps:
            break
        grads = torch.autograd.grad(losses.sum(), [params[k] for k in names])
        with torch.no_grad():
            for k, g in zip(names, grads):
                params[k] -= lr * g
    model.weights = {k: p.detach() for k, p in params.items()}
    return model.weights


def optimal_loss(pi: np.ndarray, lam: float) -> float:
    """The floor of the last-token loss: the entropy rate -Σ_i π_i Σ_j P_ij ln P_ij."""
    P = transition(pi, lam)
    return float(-(pi[:, None] * P * np.log(P)).sum())


def uniform_entropy(vocab_size: int) -> float:
    return math.log(vocab_size)
