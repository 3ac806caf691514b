"""Markov-chain token data: Dirichlet bigram chains and the noisy in-context recall task.

The task is the one of Chen, Bruna, Bietti, "Distributional Associations vs In-Context
Reasoning" (arXiv 2406.03068, Sec. 3), itself built on the induction-head task of Bietti et al.,
"Birth of a Transformer: A Memory Viewpoint" (arXiv 2306.00802): sequences follow a background
bigram chain, except that after every occurrence of a *trigger* token ``q`` the next token is the
sequence's own output token ``o`` with probability ``1 - p`` and a fixed generic *noise* token
``tau`` with probability ``p``. Predicting ``o`` needs the context (an induction head); predicting
``tau`` needs only the global statistic (a bigram association).

Every sampler takes an explicit ``torch.Generator``; nothing touches the global RNG.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


def dirichlet_bigram(vocab: int, alpha: float, seed: int) -> np.ndarray:
    """A random transition matrix on ``vocab`` states, rows i.i.d. ``Dirichlet(alpha * 1)``: (V, V)."""
    if vocab < 2:
        raise ValueError(f"vocab must be >= 2, got {vocab}")
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    rng = np.random.default_rng(seed)
    rows = rng.dirichlet(np.full(vocab, alpha), size=vocab)
    return rows / rows.sum(axis=1, keepdims=True)


def stationary_distribution(transition: np.ndarray) -> np.ndarray:
    """The stationary law ``pi = pi P`` of a row-stochastic matrix (left Perron eigenvector)."""
    p = np.asarray(transition, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != p.shape[1]:
        raise ValueError(f"transition must be square, got shape {p.shape}")
    values, vectors = np.linalg.eig(p.T)
    k = int(np.argmin(np.abs(values - 1.0)))
    pi = np.abs(np.real(vectors[:, k]))
    return pi / pi.sum()


def bigram_counts(tokens: np.ndarray, vocab: int, smoothing: float = 0.0) -> np.ndarray:
    """Row-normalised bigram transition estimate from a token stream, with additive ``smoothing``: (V, V)."""
    t = np.asarray(tokens, dtype=np.int64)
    counts = np.zeros((vocab, vocab), dtype=np.float64)
    np.add.at(counts, (t[:-1], t[1:]), 1.0)
    counts += smoothing
    rows = counts.sum(axis=1, keepdims=True)
    empty = rows[:, 0] == 0
    counts[empty] = 1.0  # a state never seen leaves uniformly
    return counts / counts.sum(axis=1, keepdims=True)


def top_successor(stream: np.ndarray, vocab_size: int) -> Tensor:
    """The most frequent next token after each token of a stream (its bigram arg-max; ties go to the
    largest id; a token never followed maps to itself): (V,)."""
    pairs, counts = np.unique(stream[:-1] * vocab_size + stream[1:], return_counts=True)
    prev, nxt = pairs // vocab_size, pairs % vocab_size
    order = np.lexsort((counts, prev))  # by prev, then count ascending: the last of each prev wins
    top = np.arange(vocab_size)
    top[prev[order]] = nxt[order]
    return torch.from_numpy(top)


@dataclass(frozen=True)
class TriggerBatch:
    """Sampled sequences and where the trigger task acts.

    ``tokens``: (n, T) int64. ``outputs``: (n,) each sequence's output token ``o``.
    ``after_trigger``: (n, T) bool, position ``t`` holds ``q`` (so ``t + 1`` is the trigger's
    next token; the last position is never marked). ``seen``: (n, T) bool, an ``after_trigger``
    position with an earlier trigger occurrence in the same sequence (so ``o`` has been shown,
    unless the earlier draw was noise).
    """

    tokens: Tensor
    outputs: Tensor
    after_trigger: Tensor
    seen: Tensor

    def targets(self, ignore: int = -100) -> Tensor:
        """Next-token targets at trigger positions, ``ignore`` elsewhere: (n, T)."""
        nxt = torch.full_like(self.tokens, ignore)
        nxt[:, :-1] = self.tokens[:, 1:]
        return torch.where(self.after_trigger, nxt, torch.full_like(nxt, ignore))


@dataclass(frozen=True)
class TriggerNoiseTask:
    """The noisy in-context recall task (arXiv 2406.03068, Sec. 3).

    ``transition``: background bigram chain (V, V). The noise token ``noise`` and the trigger
    ``trigger`` are fixed; ``trigger_boost`` f_q mixes every row with a jump to the trigger,
    ``pi <- (1 - f_q) pi + f_q delta_q``, so short sequences hold enough triggers (a quick-preset
    device of ours; the paper's T = 256 needs none). The background chain never emits the noise
    token (its column is zeroed and rows renormalised), so ``tau`` marks the task alone. Outputs are drawn uniformly
    from the tokens
    other than the trigger and the noise token.
    """

    transition: np.ndarray
    trigger: int
    noise: int
    trigger_boost: float = 0.0

    @classmethod
    def dirichlet(cls, vocab: int, alpha: float = 0.2, trigger_boost: float = 0.0, seed: int = 0) -> "TriggerNoiseTask":
        """The card's chain: Dirichlet(alpha) rows on ``vocab`` tokens, noise = ``vocab - 1``,
        trigger = the most frequent other token under the stationary law."""
        return cls.from_transition(dirichlet_bigram(vocab, alpha, seed), noise=vocab - 1, trigger_boost=trigger_boost)

    @classmethod
    def from_transition(
        cls, transition: np.ndarray, noise: int, trigger: int | None = None, trigger_boost: float = 0.0
    ) -> "TriggerNoiseTask":
        p = np.asarray(transition, dtype=np.float64)
        vocab = p.shape[0]
        if not 0 <= noise < vocab:
            raise ValueError(f"noise token {noise} outside the vocabulary [0, {vocab - 1}]")
        if not 0 <= trigger_boost < 1:
            raise ValueError(f"trigger_boost must lie in [0, 1), got {trigger_boost}")
        # The noise token is emitted only by the task, never by the background chain.
        p = p.copy()
        p[:, noise] = 0.0
        p /= p.sum(axis=1, keepdims=True)
        if trigger is None:
            pi = stationary_distribution(p)
            pi[noise] = -1.0
            trigger = int(np.argmax(pi))
        if trigger == noise:
            raise ValueError("the trigger and the noise token must differ")
        if trigger_boost > 0:
            p = (1 - trigger_boost) * p
            p[:, trigger] += trigger_boost
        return cls(transition=p, trigger=int(trigger), noise=int(noise), trigger_boost=trigger_boost)

    @property
    def vocab(self) -> int:
        return int(self.transition.shape[0])

    def output_candidates(self) -> Tensor:
        return torch.tensor([v for v in range(self.vocab) if v not in (self.trigger, self.noise)])

    def sample(self, n: int, length: int, p_noise: float, generator: torch.Generator) -> TriggerBatch:
        """``n`` sequences of ``length`` tokens; after each trigger, noise with prob. ``p_noise``, else ``o``.

        The first token is drawn from the stationary law of the (boosted) chain. Vectorised over
        sequences; one loop over positions.
        """
        if n < 1 or length < 2:
            raise ValueError(f"need n >= 1 and length >= 2, got n={n}, length={length}")
        if not 0 <= p_noise <= 1:
            raise ValueError(f"p_noise must lie in [0, 1], got {p_noise}")
        cum = torch.from_numpy(np.cumsum(self.transition, axis=1))
        cum[:, -1] = 1.0
        pi = torch.from_numpy(np.cumsum(stationary_distribution(self.transition)))
        pi[-1] = 1.0
        candidates = self.output_candidates()
        outputs = candidates[torch.randint(len(candidates), (n,), generator=generator)]
        u = torch.rand(length, n, 1, generator=generator, dtype=torch.float64)  # u[t]: contiguous (n, 1)
        noisy = torch.rand(n, length, generator=generator) < p_noise
        tokens = torch.empty(n, length, dtype=torch.long)
        tokens[:, 0] = torch.searchsorted(pi, u[0]).squeeze(1).clamp(max=self.vocab - 1)
        for t in range(1, length):
            prev = tokens[:, t - 1]
            background = torch.searchsorted(cum[prev], u[t]).squeeze(1).clamp(max=self.vocab - 1)
            forced = torch.where(noisy[:, t], torch.full_like(prev, self.noise), outputs)
            tokens[:, t] = torch.where(prev == self.trigger, forced, background)
        after = tokens == self.trigger
        after[:, -1] = False
        earlier = torch.cumsum(after.long(), dim=1) - after.long()  # triggers strictly before t
        return TriggerBatch(tokens=tokens, outputs=outputs, after_trigger=after, seen=after & (earlier > 0))


def previous_trigger_next(batch: TriggerBatch) -> Tensor:
    """For each position t holding the trigger, the position right after the previous trigger
    occurrence (where o, or noise, was written): the key an induction head attends to
    (arXiv 2406.03068, Sec. 3; Bietti et al. 2023). -1 elsewhere and at a first trigger: (n, T)."""
    n, t = batch.tokens.shape
    pos = torch.arange(t).expand(n, t)
    is_trig = batch.after_trigger
    marked = torch.where(is_trig, pos, torch.full_like(pos, -1))
    last = torch.cummax(marked, dim=1).values  # latest trigger at or before t
    prev = torch.full_like(pos, -1)
    prev[:, 1:] = last[:, :-1]  # latest trigger strictly before t
    return torch.where(is_trig & (prev >= 0), prev + 1, torch.full_like(prev, -1))


def split_halves(batch: TriggerBatch) -> dict[str, TriggerBatch]:
    """The sequences cut in two disjoint halves (first ``n // 2``, the rest): 'validation' picks, 'test' judges."""
    half = len(batch.tokens) // 2

    def cut(a: int, b: int) -> TriggerBatch:
        return TriggerBatch(batch.tokens[a:b], batch.outputs[a:b], batch.after_trigger[a:b], batch.seen[a:b])

    return {"validation": cut(0, half), "test": cut(half, len(batch.tokens))}


# --- Chains with a set spectrum, a vectorised sampler and masked-token corruption (issue 22) ---------
# Shared by studies/focus-dilution (Zipf-Markov chains) and studies/rg-order-parameter (lazy chains
# with a set correlation length xi = -1/ln|lambda_2|). Exact laws live in ``theory.markov``.


def zipf_chain(vocab: int, s: float = 1.0, mix: float = 0.5, seed: int = 0) -> np.ndarray:
    """``P = mix * 1 pi0^T + (1 - mix) * R``, ``pi0_k ∝ k^(-s)`` (k = 1..V), rows of ``R`` i.i.d.
    ``Dirichlet(0.5 * 1)`` from ``np.random.default_rng(seed)``: (V, V), row-stochastic."""
    if vocab < 2:
        raise ValueError(f"vocab must be >= 2, got {vocab}")
    if s < 0:
        raise ValueError(f"the Zipf exponent s must be >= 0, got {s}")
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"mix must lie in [0, 1], got {mix}")
    pi0 = np.arange(1, vocab + 1, dtype=np.float64) ** (-float(s))
    pi0 /= pi0.sum()
    rows = np.random.default_rng(seed).dirichlet(np.full(vocab, 0.5), size=vocab)
    rows /= rows.sum(axis=1, keepdims=True)
    p = mix * np.broadcast_to(pi0, (vocab, vocab)) + (1.0 - mix) * rows
    return p / p.sum(axis=1, keepdims=True)


def lazy_chain(vocab: int, lam: float, pi: np.ndarray | None = None) -> np.ndarray:
    """``P = lam * I + (1 - lam) * 1 pi^T`` (``pi`` uniform by default): (V, V). Its spectrum is
    ``{1, lam (multiplicity V - 1)}`` and ``P^k = lam^k I + (1 - lam^k) 1 pi^T``, so the correlation
    length is exactly ``xi = -1 / ln lam``; ``pi`` is its stationary law."""
    if vocab < 2:
        raise ValueError(f"vocab must be >= 2, got {vocab}")
    if not 0.0 <= lam < 1.0:
        raise ValueError(f"lam must lie in [0, 1), got {lam}")
    if pi is None:
        p0 = np.full(vocab, 1.0 / vocab)
    else:
        p0 = np.asarray(pi, dtype=np.float64)
        if p0.shape != (vocab,) or (p0 < 0).any() or not np.isclose(p0.sum(), 1.0):
            raise ValueError(f"pi must be a probability vector of length {vocab}")
    return lam * np.eye(vocab) + (1.0 - lam) * np.broadcast_to(p0, (vocab, vocab))


def mixed_random_chain(vocab: int, lam: float, seed: int = 0) -> np.ndarray:
    """``P = lam * I + (1 - lam) * R`` with ``R`` a random stochastic matrix (rows i.i.d. uniform on
    the simplex, ``Dirichlet(1)``, from ``np.random.default_rng(seed)``): (V, V). Richer spectra than
    the lazy chain; its correlation length is ``-1 / ln|lambda_2(P)|``."""
    if not 0.0 <= lam < 1.0:
        raise ValueError(f"lam must lie in [0, 1), got {lam}")
    return lam * np.eye(vocab) + (1.0 - lam) * dirichlet_bigram(vocab, 1.0, seed)


def sample_chain(
    P: np.ndarray, n_seq: int, length: int, generator: torch.Generator, start: np.ndarray | None = None
) -> Tensor:
    """``n_seq`` sequences of ``length`` states of the chain ``P``: int64 (n_seq, length).

    The first state is drawn from ``start`` (default: the stationary law of ``P``); vectorised over
    sequences, one loop over positions (inverse-CDF sampling against the cumulative rows)."""
    p = np.asarray(P, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != p.shape[1]:
        raise ValueError(f"P must be a square matrix, got shape {p.shape}")
    if (p < 0).any() or not np.allclose(p.sum(axis=1), 1.0, atol=1e-9):
        raise ValueError("P must be row-stochastic (non-negative rows summing to 1)")
    if n_seq < 1 or length < 1:
        raise ValueError(f"need n_seq >= 1 and length >= 1, got n_seq={n_seq}, length={length}")
    vocab = p.shape[0]
    p0 = stationary_distribution(p) if start is None else np.asarray(start, dtype=np.float64)
    if p0.shape != (vocab,) or (p0 < 0).any() or not np.isclose(p0.sum(), 1.0):
        raise ValueError(f"start must be a probability vector of length {vocab}")
    cdf = torch.from_numpy(np.cumsum(p, axis=1))
    cdf[:, -1] = 1.0 + 1e-12  # a uniform draw never falls past the last state
    cdf0 = torch.from_numpy(np.cumsum(p0))
    cdf0[-1] = 1.0 + 1e-12
    u = torch.rand(length, n_seq, 1, generator=generator, dtype=torch.float64)  # row t contiguous
    tokens = torch.empty(length, n_seq, dtype=torch.long)
    tokens[0] = torch.searchsorted(cdf0, u[0, :, 0], right=True)
    for t in range(1, length):
        tokens[t] = torch.searchsorted(cdf[tokens[t - 1]], u[t], right=True)[:, 0]
    return tokens.clamp_(max=vocab - 1).T.contiguous()


def mask_tokens(tokens: Tensor, rate: float, mask_id: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Replace each position independently with probability ``rate`` by ``mask_id``.

    Returns ``(corrupted, mask)``: the corrupted copy (same shape and dtype) and the bool mask of the
    replaced positions (the positions a masked-token loss is computed on)."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must lie in [0, 1], got {rate}")
    mask = torch.rand(tokens.shape, generator=generator) < rate
    corrupted = torch.where(mask, torch.full_like(tokens, mask_id), tokens)
    return corrupted, mask


def indicator_autocorrelation_empirical(tokens: Tensor | np.ndarray, vocab: int, lags) -> np.ndarray:
    """The sample ``Corr(1[x_t = a], 1[x_{t+k} = a])`` over all pairs ``(t, t + k)`` inside the sequences of
    ``tokens`` (n, L), averaged over the states ``a`` that occur: one value per lag ``k`` (the estimate
    of ``theory.markov.indicator_autocorrelation``)."""
    x = np.asarray(tokens.cpu() if isinstance(tokens, Tensor) else tokens, dtype=np.int64)
    if x.ndim != 2:
        raise ValueError(f"tokens must be (n, L), got shape {x.shape}")
    ks = [int(k) for k in np.atleast_1d(lags)]
    if min(ks) < 1 or max(ks) >= x.shape[1]:
        raise ValueError(f"lags must lie in [1, L - 1] = [1, {x.shape[1] - 1}], got {ks}")
    out = []
    for k in ks:
        a, b = x[:, :-k].ravel(), x[:, k:].ravel()
        n = a.size
        fa = np.bincount(a, minlength=vocab)[:vocab] / n
        fb = np.bincount(b, minlength=vocab)[:vocab] / n
        both = np.bincount(a[a == b], minlength=vocab)[:vocab] / n
        var = np.sqrt(fa * (1 - fa) * fb * (1 - fb))
        keep = var > 0
        out.append(float(((both - fa * fb)[keep] / var[keep]).mean()))
    return np.array(out)
