"""Softmax sensitivity: the Jacobian and its ∞→1 norm through the balanced-mass factor θ(p).

Emadi, arXiv 2602.18849 (attention sensitivity), our derivation (reconstructed from the abstract):
for p = softmax(u/τ), J = (diag p − p pᵀ)/τ. The ∞→1 norm max_{‖x‖∞ ≤ 1} ‖J x‖₁ is attained at a
sign vector x = 1_S − 1_{S^c}; with m = p(S), ‖J x‖₁ = 4 m (1 − m)/τ. Hence

    θ(p) = max_S 4 p(S)(1 − p(S)) = 1 − min_S (2 p(S) − 1)²,

a balanced-partition (subset-sum) problem: θ = 1 when the mass splits evenly, θ = 0 for one-hot p.

- :func:`theta_exact`: every subset for n <= 12; meet-in-the-middle (sorted half sums) up to 44.
- :func:`theta_dp`: subset-sum DP on masses quantised to ``step``; returns a value and a rigorous
  upper bound (the quantisation moves any subset's mass by at most n·step/2).
- :func:`theta_greedy`: largest-first balancing, a lower bound, vectorised over rows.
- :func:`random_theta_rows`, :func:`theta_closed_form_cases`: every method beside the definition and
  the closed forms, as tables (the attention-sensitivity study's checks).
- Facts used as tests: θ(uniform, n even) = 1, θ(uniform, n odd) = 1 − 1/n², θ = 4 p_max (1 − p_max)
  when p_max >= ½, and 1 − p_max² <= θ <= 1.

Softmax dilution (studies/representation-collapse.md; after Barbero et al. 2024, "Transformers need glasses!",
our reconstruction):

- :func:`dilution_bound`: if every score of the last query obeys |s_j| <= c, each of its L weights is
  p_j <= e^{2c}/L, so editing position 1 (its key, value and score) moves the attention output by at most
  B(L) = (e^{2c}/L)(2 max_j ‖v_j‖ + ‖Δv₁‖): sensitivity O(1/L).
- :func:`count_construction_output`: the last-token output on [a]^L b, (L v_a w_a + v_b w_b)/(L w_a + w_b),
  whose change from L to L + 1 is O(1/L²).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import torch
from torch import Tensor


def jacobian(p: Tensor, tau: float = 1.0) -> Tensor:
    """``(diag p − p pᵀ)/τ`` for a probability vector (or a batch ``(..., n)`` -> ``(..., n, n)``)."""
    return (torch.diag_embed(p) - p[..., :, None] * p[..., None, :]) / tau


def inf_to_one_norm_bruteforce(J: Tensor) -> float:
    """``max over sign vectors x of ‖J x‖₁`` by enumeration (n <= 20): the definition, for checking."""
    n = J.shape[-1]
    if n > 20:
        raise ValueError(f"enumeration over 2^{n} sign vectors is too large")
    signs = torch.tensor(list(itertools.product((-1.0, 1.0), repeat=n)), dtype=J.dtype)
    return float((signs @ J.T).abs().sum(-1).max())


def _value(m: float) -> float:
    return 4.0 * m * (1.0 - m)


def _all_subset_sums(values: np.ndarray) -> np.ndarray:
    """Sums of all 2^k subsets of ``values`` (k <= 22), vectorised with bit masks."""
    k = len(values)
    bits = (np.arange(2**k)[:, None] >> np.arange(k)) & 1
    return bits @ values


def theta_exact(p) -> float:
    """θ(p) exactly: all subsets for n <= 12, meet-in-the-middle (sorted half sums) up to n = 44."""
    p = np.asarray(p, dtype=np.float64).ravel()
    n = len(p)
    if n <= 12:
        sums = _all_subset_sums(p)
        return float(np.max(4 * sums * (1 - sums)))
    if n > 44:
        raise ValueError(f"theta_exact: n = {n} is too long for meet-in-the-middle; use theta_dp")
    half = n // 2
    a = _all_subset_sums(p[:half])
    b = np.sort(_all_subset_sums(p[half:]))
    i = np.clip(np.searchsorted(b, 0.5 - a), 1, len(b) - 1)
    best = np.maximum(_value_array(a + b[i - 1]), _value_array(a + b[i]))  # the complement sums nearest ½ − a
    return float(best.max())


def _value_array(m: np.ndarray) -> np.ndarray:
    return 4.0 * m * (1.0 - m)


def theta_dp(p, step: float = 1e-4) -> tuple[float, float]:
    """``(θ of the best subset found, an upper bound on θ)`` by subset-sum DP on masses quantised to ``step``.

    The found value is attained by a real subset (its true mass is used); every subset's quantised
    mass is within n·step/2 of its true mass, so no subset can be closer to ½ than the best
    quantised one minus that: the bound is 4 m'(1 − m') at the distance reduced by n·step/2.
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    units = np.rint(p / step).astype(np.int64)
    total = int(units.sum())
    reach = np.zeros(total + 1, dtype=bool)
    reach[0] = True
    parent = np.full(total + 1, -1, dtype=np.int64)
    for i, u in enumerate(units):
        if u == 0:
            continue
        new = np.zeros_like(reach)
        new[u:] = reach[:-u] & ~reach[u:]
        idx = np.nonzero(new)[0]
        parent[idx] = i
        reach |= new
    sums = np.nonzero(reach)[0]
    target = 0.5 / step
    best_q = int(sums[np.argmin(np.abs(sums - target))])
    # recover the subset to report its true mass
    chosen, s = [], best_q
    while s > 0:
        i = int(parent[s])
        chosen.append(i)
        s -= int(units[i])
    m = float(p[chosen].sum()) if chosen else 0.0
    gap = max(0.0, abs(best_q * step - 0.5) - len(p) * step / 2)
    return _value(m), 1.0 - (2 * gap) ** 2


def theta_greedy(p: Tensor) -> Tensor:
    """Largest-first balancing (each mass to the lighter side): a lower bound on θ, rows ``(..., n)`` at once."""
    sorted_p = torch.sort(p, dim=-1, descending=True).values
    side = torch.zeros(p.shape[:-1], dtype=p.dtype, device=p.device)
    other = torch.zeros_like(side)
    for k in range(p.shape[-1]):
        x = sorted_p[..., k]
        to_side = side <= other
        side = torch.where(to_side, side + x, side)
        other = torch.where(to_side, other, other + x)
    return 4 * side * (1 - side)


def block_inf_rms_norm(X: Tensor) -> Tensor:
    """``max_t ‖x_t‖₂ / √d`` over the token axis (-2) of ``(..., T, d)``."""
    return X.norm(dim=-1).amax(-1) / math.sqrt(X.shape[-1])


def theta_upper(p: Tensor) -> Tensor:
    """A cheap rigorous upper bound on θ per row: ``4 p_max (1 − p_max)`` (exact) when p_max >= ½, else 1."""
    pmax = p.amax(-1)
    return torch.where(pmax >= 0.5, 4 * pmax * (1 - pmax), torch.ones_like(pmax))


def attention_gain_bound(value_norms: Tensor, score_norms: Tensor, radius: float, theta_max: Tensor | float) -> Tensor:
    """First-order local gain bound of multi-head attention in the block-∞/RMS geometry (ours, after
    Emadi, arXiv 2602.18849; the paper's own constants may differ):

        Σ_h ‖W_h‖₂ (1 + 2 θ_max,h R² ‖M_h‖₂),

    with W_h = W_V,h W_O,h the value-output map, M_h the score operator (s_ij = x_i M_h x_jᵀ, the
    1/τ scale included) and R the largest token ℓ2 norm. Why: a perturbation of per-token size ε
    moves the value path by ‖W_h‖ε and the scores by ≤ 2R‖M_h‖ε (∞-norm), which the softmax turns
    into ≤ θ·2R‖M_h‖ε of ℓ1 mass on values of norm ≤ R‖W_h‖. No T appears.
    """
    return (value_norms * (1 + 2 * torch.as_tensor(theta_max, dtype=value_norms.dtype) * radius**2 * score_norms)).sum()


def random_theta_rows(
    rng: np.random.Generator, count: int, n_max: int, alphas: tuple[float, ...], taus: tuple[float, ...]
) -> pd.DataFrame:
    """θ(p) by every method on ``count`` random attention rows, beside the definition (Emadi, arXiv 2602.18849).

    Row i has n ~ U{2..n_max} entries drawn from a symmetric Dirichlet(α) with α cycling through
    ``alphas`` and τ through ``taus`` (every α at each τ); entries are floored at 1e-300 and renormalised.
    Columns: ``row, n, alpha, tau, p_max, theta_exact, brute_norm`` (‖J‖_{∞→1} by enumeration of sign
    vectors), ``theta_dp, theta_dp_bound, theta_greedy`` and ``rel_error = |θ_exact/τ − brute| / brute``.
    """
    rows = []
    for i in range(count):
        n = int(rng.integers(2, n_max + 1))
        alpha = alphas[i % len(alphas)]
        tau = taus[(i // len(alphas)) % len(taus)]
        p = rng.dirichlet([alpha] * n)
        p = np.maximum(p, 1e-300)
        p = p / p.sum()
        exact = theta_exact(p)
        brute = inf_to_one_norm_bruteforce(jacobian(torch.as_tensor(p), tau))
        dp_value, dp_bound = theta_dp(p)
        greedy = float(theta_greedy(torch.as_tensor(p)[None])[0])
        rows.append(
            dict(
                row=i,
                n=n,
                alpha=alpha,
                tau=tau,
                p_max=float(p.max()),
                theta_exact=exact,
                brute_norm=brute,
                theta_dp=dp_value,
                theta_dp_bound=dp_bound,
                theta_greedy=greedy,
                rel_error=abs(exact / tau - brute) / max(brute, 1e-300),
            )
        )
    return pd.DataFrame(rows)


def theta_closed_form_cases(n_max: int = 12, p_maxes: tuple[float, ...] = (0.5, 0.6, 0.75, 0.9, 0.99)) -> pd.DataFrame:
    """:func:`theta_exact` against its closed forms for n = 2..n_max: θ(one-hot) = 0, θ(uniform) = 1 (n even)
    or 1 − 1/n² (n odd), and θ = 4 p_max (1 − p_max) for a row with p_max >= ½ and the rest spread evenly.
    Columns ``case, n, theta, expected, error``."""
    rows = []
    for n in range(2, n_max + 1):
        one_hot = np.zeros(n)
        one_hot[0] = 1.0
        rows.append(dict(case="one-hot", n=n, theta=theta_exact(one_hot), expected=0.0))
        rows.append(
            dict(
                case="uniform", n=n, theta=theta_exact(np.full(n, 1 / n)), expected=1.0 if n % 2 == 0 else 1 - 1 / n**2
            )
        )
        for pmax in p_maxes:
            rest = np.full(n - 1, (1 - pmax) / (n - 1))
            rows.append(
                dict(
                    case=f"p_max = {pmax}",
                    n=n,
                    theta=theta_exact(np.concatenate([[pmax], rest])),
                    expected=4 * pmax * (1 - pmax),
                )
            )
    return pd.DataFrame(rows).assign(error=lambda t: (t["theta"] - t["expected"]).abs())


# --- softmax dilution (representation collapse) -------------------------------------------------------------------


def max_score(scores: Tensor) -> float:
    """``c = max_j |s_j|`` over all entries of ``scores``: the score radius that :func:`dilution_bound` needs."""
    return float(scores.detach().abs().max())


def dilution_bound(L: int, c: float, v_max: float, dv1: float) -> float:
    """``B(L) = (e^{2c}/L)(2 v_max + ‖Δv₁‖)``: the most an edit of position 1 can move one softmax-attention output.

    After Barbero et al. 2024 ("Transformers need glasses!"), our derivation (studies/representation-collapse.md).
    With L keys and every score of the query in [−c, c] (before and after the edit),
    p_j = e^{s_j}/Σ_k e^{s_k} <= e^{c}/(e^{c} + (L − 1)e^{−c}) <= e^{2c}/L. The edit changes only s₁ and v₁, so
    the other weights share one rescaling and ‖Δp‖₁ = 2|Δp₁|; then
    ‖Δo‖ <= ‖Δp‖₁ max_j ‖v_j‖ + p₁′‖Δv₁‖ <= (e^{2c}/L)(2 v_max + ‖Δv₁‖). ``v_max`` must cover the values of both
    inputs (v₁ and v₁′ included); ``L`` counts every key the query sees (itself included, when causal).
    """
    if L < 1 or c < 0 or v_max < 0 or dv1 < 0:
        raise ValueError(f"need L >= 1 and c, v_max, dv1 >= 0; got {L}, {c}, {v_max}, {dv1}")
    return math.exp(2.0 * c) / L * (2.0 * v_max + dv1)


def count_construction_output(L, va, vb, wa, wb) -> np.ndarray:
    """The exact last-token attention output on the count sequence [a]^L b: ``(L v_a w_a + v_b w_b)/(L w_a + w_b)``.

    Barbero et al. 2024, the counting example: the query of b sees L identical keys of a (weight
    ``w_a = e^{s_a}`` each, value ``v_a``) and its own key (``w_b = e^{s_b}``, ``v_b``). Its change from L to
    L + 1 is ``w_a w_b (v_a − v_b)/((L w_a + w_b)((L + 1) w_a + w_b)) = O(1/L²)``. Arguments broadcast (NumPy,
    float64): ``L`` may be an array of lengths and ``va``, ``vb`` vectors on a trailing axis of the same shape.
    """
    L, va, vb = (np.asarray(t, dtype=np.float64) for t in (L, va, vb))
    wa, wb = float(wa), float(wb)
    if wa <= 0 or wb <= 0:
        raise ValueError(f"softmax weights are positive; got w_a = {wa}, w_b = {wb}")
    if va.ndim and L.ndim:  # lengths on their own leading axis, vectors on the trailing one
        L = L[..., None]
    return (L * va * wa + vb * wb) / (L * wa + wb)
