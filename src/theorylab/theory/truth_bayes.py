"""Bayes-optimal y'-loss of the truth co-occurrence generator (Ravfogel, Yehudai, Linzen, Bruna & Bietti,
arXiv 2510.15804, Sec. 3; closed forms derived for the study card's generator, see
``theorylab.data.truth_cooccurrence``).

A sequence is ``(x, y, x', y')``; with probability ρ the context is true (``y = g(x)``, ``y' = g(x')``), otherwise
``y, y'`` are independent uniform attributes. With N attributes:

- posterior of truth after a matching pair ``y = g(x)``: ``π = ρ / (ρ + (1-ρ)/N)`` (0 after a non-matching pair);
- Bayes probability of ``g(x')`` after a matching pair: ``q_T = π + (1-π)/N``; after a non-matching pair ``y'`` is
  uniform;
- share of matching pairs: ``f_T = ρ + (1-ρ)/N``;
- ``h_N(q) = -q ln q - (1-q) ln((1-q)/(N-1))``: the cross-entropy of a predictor that puts ``q`` on the right answer
  and spreads the rest uniformly over the other N-1 attributes, when the right answer has probability ``q``;
- truth-aware Bayes loss ``L_Bayes = f_T h_N(q_T) + (1-f_T) ln N``;
- memorise-only loss (knows g, ignores the context) ``L_mem = h_N(f_T)``, since ``P(y' = g(x')) = f_T`` marginally.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


def h_n(q: float, n: int) -> float:
    """``h_N(q) = -q ln q - (1-q) ln((1-q)/(N-1))`` (0 ln 0 = 0)."""
    if not 0.0 <= q <= 1.0 or n < 2:
        raise ValueError(f"h_N needs q in [0, 1] and N >= 2; got q = {q}, N = {n}")
    a = -q * math.log(q) if q > 0 else 0.0
    b = -(1 - q) * math.log((1 - q) / (n - 1)) if q < 1 else 0.0
    return a + b


@dataclass(frozen=True)
class TruthBayes:
    """The closed forms at ``(N, ρ)``; ``gap = L_mem - L_Bayes`` is what a truth feature can remove."""

    n: int
    rho: float
    pi: float
    q_true: float
    f_true: float
    loss_bayes: float
    loss_mem: float

    @property
    def gap(self) -> float:
        return self.loss_mem - self.loss_bayes


def truth_bayes(n: int, rho: float) -> TruthBayes:
    """π, q_T, f_T, L_Bayes and L_mem for N attributes and truth rate ρ (module docstring)."""
    if n < 2:
        raise ValueError(f"'n' must be >= 2; got {n}")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"'rho' must lie in [0, 1]; got {rho}")
    f_true = rho + (1 - rho) / n
    pi = rho / f_true
    q_true = pi + (1 - pi) / n
    loss_bayes = f_true * h_n(q_true, n) + (1 - f_true) * math.log(n)
    return TruthBayes(n=n, rho=rho, pi=pi, q_true=q_true, f_true=f_true, loss_bayes=loss_bayes, loss_mem=h_n(f_true, n))


def bayes_y2_logprob(tokens: Tensor, g: Tensor, rho: float, truth_aware: bool = True) -> Tensor:
    """``log P(y' | x, y, x')`` under the Bayes predictor (``truth_aware``) or the memorise-only predictor, for
    token sequences ``(B, 4)`` laid out as in ``data.truth_cooccurrence`` (attributes are tokens N..2N-1): (B,).

    Computed from the generator's mixture directly, P(y' | ...) = P(true | x, y) [y' = g(x')] + ... , not from the
    closed forms, so it checks them by Monte Carlo."""
    n = g.shape[0]
    x, y, x2, y2 = tokens.unbind(1)
    match = (y - n) == g[x]
    # posterior of a true context: P(true) P(y | x, true) / P(y | x) with P(y | x, true) = [y = g(x)], 1/N if false
    like_true = match.double()
    post = rho * like_true / (rho * like_true + (1 - rho) / n) if truth_aware else torch.full_like(like_true, rho)
    hit = ((y2 - n) == g[x2]).double()
    prob = post * hit + (1 - post) / n
    return prob.log()
