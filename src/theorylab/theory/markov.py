"""Exact laws of finite Markov chains: stationary law, entropies, correlation length, indicator
autocorrelations and the Bayes-optimal masked-token posterior (forward-backward).

Numbers in, numbers out (numpy); the chains themselves are built in ``data.markov``. Used by
studies/focus-dilution (loss levels ln V, H(pi), H_cond) and studies/rg-order-parameter (xi, the
autocorrelation check and the Bayes loss floor of masked-token training).
"""

from __future__ import annotations

import numpy as np


def _check_chain(P: np.ndarray) -> np.ndarray:
    p = np.asarray(P, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != p.shape[1] or p.shape[0] < 1:
        raise ValueError(f"P must be a square matrix, got shape {p.shape}")
    if (p < -1e-15).any() or not np.allclose(p.sum(axis=1), 1.0, atol=1e-9):
        raise ValueError("P must be row-stochastic (non-negative rows summing to 1)")
    return p


def stationary(P: np.ndarray) -> np.ndarray:
    """The stationary law ``pi = pi P`` (unique for an irreducible chain), by the linear solve
    ``pi (I - P + 1 1^T) = 1^T``: (V,)."""
    p = _check_chain(P)
    v = p.shape[0]
    a = np.eye(v) - p + np.ones((v, v))
    pi = np.linalg.solve(a.T, np.ones(v))
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def unigram_entropy(pi: np.ndarray) -> float:
    """``H(pi) = -sum_i pi_i ln pi_i`` (nats): the best loss of a context-free predictor."""
    q = np.asarray(pi, dtype=np.float64)
    if q.ndim != 1 or (q < 0).any() or not np.isclose(q.sum(), 1.0):
        raise ValueError("pi must be a probability vector")
    q = q[q > 0]
    return float(-(q * np.log(q)).sum())


def entropy_rate(P: np.ndarray) -> float:
    """``H_cond = -sum_i pi_i sum_j P_ij ln P_ij`` (nats): the floor of next-token prediction."""
    p = _check_chain(P)
    pi = stationary(p)
    logp = np.log(np.where(p > 0, p, 1.0))
    return float(-(pi[:, None] * p * logp).sum())


def second_eigenvalue(P: np.ndarray) -> float:
    """``|lambda_2(P)|``: the second-largest eigenvalue modulus."""
    mods = np.sort(np.abs(np.linalg.eigvals(_check_chain(P))))[::-1]
    return float(mods[1]) if mods.size > 1 else 0.0


def correlation_length(P: np.ndarray) -> float:
    """``xi = -1 / ln|lambda_2(P)|`` (0 for ``lambda_2 = 0`` up to round-off 1e-12, inf for ``|lambda_2| = 1``)."""
    l2 = second_eigenvalue(P)
    if l2 <= 1e-12:
        return 0.0
    if l2 >= 1.0 - 1e-15:
        return float("inf")
    return float(-1.0 / np.log(l2))


def lazy_lambda(xi: float) -> float:
    """The lazy-chain holding weight with correlation length ``xi``: ``lam = exp(-1/xi)``."""
    if xi <= 0:
        raise ValueError(f"xi must be > 0, got {xi}")
    return float(np.exp(-1.0 / xi))


def indicator_autocorrelation(P: np.ndarray, lags) -> np.ndarray:
    """Stationary ``Corr(1[x_t = a], 1[x_{t+k} = a])`` averaged over the states ``a``, per lag ``k``.

    ``Corr = (pi_a (P^k)_aa - pi_a^2) / (pi_a (1 - pi_a))``; states with ``pi_a in {0, 1}`` (no
    variance) are left out of the mean. For the lazy chain it equals ``lam^k``."""
    p = _check_chain(P)
    pi = stationary(p)
    ks = np.atleast_1d(np.asarray(lags))
    if (ks < 0).any() or not np.issubdtype(ks.dtype, np.integer):
        raise ValueError("lags must be non-negative integers")
    var = pi * (1.0 - pi)
    keep = var > 1e-300
    out = np.empty(ks.shape, dtype=np.float64)
    for i, k in enumerate(ks):
        pk = np.linalg.matrix_power(p, int(k))
        corr = (pi * np.diag(pk) - pi**2)[keep] / var[keep]
        out[i] = corr.mean()
    return out


def masked_posterior(P: np.ndarray, tokens, mask, pi: np.ndarray | None = None) -> np.ndarray:
    """The posterior of every position given all unmasked tokens, by forward-backward: (n, L, V).

    ``tokens``: int (n, L) (values at masked positions are ignored); ``mask``: bool (n, L), True
    where the token is hidden. The first state has law ``pi`` (default: stationary). Unmasked
    positions get a one-hot row. Vectorised over sequences, one loop over positions; each message
    is normalised (scale-free)."""
    p = _check_chain(P)
    v = p.shape[0]
    x = np.asarray(tokens, dtype=np.int64)
    m = np.asarray(mask, dtype=bool)
    if x.ndim == 1:
        x, m = x[None], m[None]
    if x.shape != m.shape or x.ndim != 2:
        raise ValueError(f"tokens and mask must share a shape (n, L), got {x.shape} and {m.shape}")
    if ((x < 0) | (x >= v))[~m].any():
        raise ValueError(f"unmasked tokens must lie in [0, {v - 1}]")
    p0 = stationary(p) if pi is None else np.asarray(pi, dtype=np.float64)
    n, length = x.shape
    # evidence e_t(j): 1 at a masked position, the indicator of the observed token elsewhere
    ev = np.ones((n, length, v))
    obs = np.zeros((n, length, v))
    idx = np.clip(x, 0, v - 1)
    np.put_along_axis(obs, idx[..., None], 1.0, axis=2)
    ev = np.where(m[..., None], ev, obs)
    alpha = np.empty((n, length, v))
    a = p0[None, :] * ev[:, 0]
    alpha[:, 0] = a / a.sum(axis=1, keepdims=True)
    for t in range(1, length):
        a = (alpha[:, t - 1] @ p) * ev[:, t]
        s = a.sum(axis=1, keepdims=True)
        if (s <= 0).any():
            raise ValueError("the unmasked tokens have probability zero under P")
        alpha[:, t] = a / s
    beta = np.empty((n, length, v))
    beta[:, -1] = 1.0
    for t in range(length - 2, -1, -1):
        b = (ev[:, t + 1] * beta[:, t + 1]) @ p.T
        beta[:, t] = b / b.sum(axis=1, keepdims=True)
    post = alpha * beta
    return post / post.sum(axis=2, keepdims=True)


def bayes_masked_loss(P: np.ndarray, tokens, mask, pi: np.ndarray | None = None) -> float:
    """Mean ``-ln posterior(true token)`` over the masked positions: the Bayes-optimal masked-token
    cross-entropy (nats) on this corruption."""
    x = np.asarray(tokens, dtype=np.int64)
    m = np.asarray(mask, dtype=bool)
    if not m.any():
        raise ValueError("no masked position: the masked loss is undefined")
    post = masked_posterior(P, x, m, pi)
    if x.ndim == 1:
        x, m = x[None], m[None]
    true = np.take_along_axis(post, x[..., None], axis=2)[..., 0]
    return float(-np.log(np.clip(true[m], 1e-300, None)).mean())
