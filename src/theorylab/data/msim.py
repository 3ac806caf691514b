"""The multiscale single-index model (MSIM): one shared single-index feature per scale, applied to patches.

Bruna, *The Multiscale Single-Index Model*, arXiv 2607.03347 (2026); the model is DeepTD's (Oymak &
Soltanolkotabi, arXiv 1805.06523). ``x ~ N(0, I_D)``, ``D = d^K``, viewed as a tensor with axes
``(i_K, ..., i_1)``; layer ``l`` contracts axis ``i_l`` (the last remaining axis) with ``w_l`` and applies
``sigma_l``:

    h^0 = x,   h^l_j = sigma_l(<w_l, block_j(h^{l-1})>),   y = h^K.

Reconstructed (the card's DeepTD reading): every layer, the top one included, has a link, and the links are
shared unless given per layer. Two samplers:

- :meth:`MSIM.sample`: the full ``x`` (n, D) and ``y`` (chunked by the caller through ``chunk``);
- :meth:`MSIM.sample_blocks`: the card's exact shortcut for statistics of ``y`` and of projections of ``x`` on
  the features: the first-layer block projections ``g_j = <w_1, x_block_j>`` are i.i.d. N(0, 1) (the blocks are
  disjoint and ``|w_1| = 1``), so ``g`` (n, d^(K-1)) is drawn directly at cost ``n d^(K-1)`` instead of ``n d^K``;
  ``z = <w_K ⊗ ... ⊗ w_1, x> = <w_K ⊗ ... ⊗ w_2, g>`` exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

__all__ = [
    "MSIM",
    "MSIM_LINKS",
    "first_chaos_projection",
    "first_chaos_tensor",
    "msim",
    "msim_forward_torch",
    "msim_link",
    "second_chaos_matrix",
    "stack_features",
]

_SQ15 = math.sqrt(1.5)


def _quadratic(t):
    """``(t + He_2(t)/2)/sqrt(1.5)``: E sigma(g) = 0, E sigma(g)^2 = 1, E sigma'(g) = 1/sqrt(1.5) (card)."""
    return (t + 0.5 * (t * t - 1.0)) / _SQ15


def _linear(t):
    return t


# Plain arithmetic only, so the same callables act on numpy arrays and torch tensors.
MSIM_LINKS: dict[str, Callable] = {"quadratic": _quadratic, "linear": _linear}


def msim_link(name: str) -> Callable:
    """A link of the MSIM by name (``quadratic``: the card's normalised t + He_2/2; ``linear``: He_1)."""
    if name not in MSIM_LINKS:
        raise KeyError(f"unknown MSIM link {name!r}; known: {sorted(MSIM_LINKS)}")
    return MSIM_LINKS[name]


@dataclass(frozen=True)
class MSIM:
    """An MSIM target: ``features[l - 1] = w_l`` (unit vectors of R^d, l = 1..K) and one link name per layer."""

    features: tuple[np.ndarray, ...]
    links: tuple[str, ...]

    def __post_init__(self):
        if len(self.features) < 1 or len(self.links) != len(self.features):
            raise ValueError(
                f"MSIM needs K >= 1 features and one link per layer; got {len(self.features)} features "
                f"and {len(self.links)} links"
            )
        d = len(self.features[0])
        for w in self.features:
            if w.shape != (d,) or abs(float(np.linalg.norm(w)) - 1) > 1e-9:
                raise ValueError("MSIM features must be unit vectors of one dimension d")
        for name in self.links:
            msim_link(name)

    @property
    def d(self) -> int:
        return len(self.features[0])

    @property
    def K(self) -> int:
        return len(self.features)

    @property
    def D(self) -> int:
        return self.d**self.K

    def forward_blocks(self, h: np.ndarray, start: int = 1) -> np.ndarray:
        """Apply layers ``start..K`` to ``h`` (n, d^(K-start+1)) (axes (i_K, ..., i_start), last fastest)."""
        n = h.shape[0]
        for layer in range(start, self.K + 1):
            h = h.reshape(n, -1, self.d) @ self.features[layer - 1]
            h = msim_link(self.links[layer - 1])(h)
        return h.reshape(n)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``y`` for ``x`` (n, D) (row-major flattening of the axes (i_K, ..., i_1))."""
        x = np.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.D:
            raise ValueError(f"MSIM takes x of shape (n, {self.D}); got {x.shape}")
        return self.forward_blocks(x, 1)

    def sample(self, n: int, rng: np.random.Generator, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
        """The full sampler: ``x`` (n, D) ~ N(0, I_D) and ``y`` (n,)."""
        x = rng.standard_normal((n, self.D), dtype=dtype)
        return x, self(x)

    def sample_blocks(
        self, n: int, rng: np.random.Generator, dtype=np.float32
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The card's exact shortcut: ``g = <w_1, x_block>`` (n, d^(K-1)) i.i.d. N(0, 1), ``y`` and
        ``z = <w_K ⊗ ... ⊗ w_1, x>`` (n,), with the joint law of the full sampler."""
        g = rng.standard_normal((n, self.d ** (self.K - 1)), dtype=dtype)
        y = self.forward_blocks(msim_link(self.links[0])(g), 2)
        return g, y, g @ self.upper_tensor().reshape(-1).astype(dtype)

    def upper_tensor(self) -> np.ndarray:
        """``w_K ⊗ ... ⊗ w_2`` with axes (i_K, ..., i_2) (a scalar 1 for K = 1)."""
        return outer(self.features[:0:-1]) if self.K > 1 else np.ones(())

    def teacher_tensor(self) -> np.ndarray:
        """``w_K ⊗ ... ⊗ w_1`` (d,)*K, axes (i_K, ..., i_1): the leading first-chaos direction."""
        return outer(self.features[::-1])


def outer(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """``v_0 ⊗ v_1 ⊗ ...`` (axes in the order given)."""
    out = np.ones(())
    for v in vectors:
        out = np.multiply.outer(out, v)
    return out


def msim(
    d: int,
    K: int,
    rng: np.random.Generator | None = None,
    *,
    features: str = "random",
    link: str | Sequence[str] = "quadratic",
) -> MSIM:
    """An MSIM with ``K`` layers on ``D = d^K`` inputs; ``features='random'`` (uniform on S^(d-1), needs ``rng``),
    ``'sign'`` (random signs / sqrt(d): random and maximally delocalised, ``|w|_inf = d^(-1/2)`` at every d, needs
    ``rng``) or ``'flat'`` (``w = 1/sqrt(d)``, for exact-constant checks); ``link`` shared or one per layer."""
    if d < 2 or K < 1:
        raise ValueError(f"msim needs d >= 2 and K >= 1; got d = {d}, K = {K}")
    if features == "flat":
        ws = tuple(np.full(d, 1 / math.sqrt(d)) for _ in range(K))
    elif features in ("random", "sign"):
        if rng is None:
            raise ValueError(f"msim(features={features!r}) needs an explicit rng")
        g = rng.standard_normal((K, d))
        ws = tuple(v / np.linalg.norm(v) for v in (np.sign(g) if features == "sign" else g))
    else:
        raise ValueError(f"msim features must be 'random', 'sign' or 'flat'; got {features!r}")
    links = (link,) * K if isinstance(link, str) else tuple(link)
    return MSIM(ws, links)


def first_chaos_projection(
    models: MSIM | Sequence[MSIM], n: int, rng: np.random.Generator, chunk: int = 1 << 22
) -> list[tuple[float, float]]:
    """Monte Carlo ``E[y z]`` with ``z = <w_K ⊗ ... ⊗ w_1, x>`` and its standard error, by the shortcut sampler
    in chunks of about ``chunk`` numbers (memory ``O(chunk)``; sums in float64). Several ``models`` with the same
    features (e.g. the quadratic link and its linear control) share the draws of ``g``; one (mean, se) each."""
    models = [models] if isinstance(models, MSIM) else list(models)
    base = models[0]
    if any(
        m.features is not base.features and not all(np.array_equal(a, b) for a, b in zip(m.features, base.features))
        for m in models
    ):
        raise ValueError("first_chaos_projection: the models must share their features")
    rows = max(1, chunk // base.d ** (base.K - 1))
    upper = base.upper_tensor().reshape(-1).astype(np.float32)
    s1, s2 = np.zeros(len(models)), np.zeros(len(models))
    done = 0
    while done < n:
        m = min(rows, n - done)
        g = rng.standard_normal((m, base.d ** (base.K - 1)), dtype=np.float32)
        z = (g @ upper).astype(np.float64)
        for i, model in enumerate(models):
            y = model.forward_blocks(msim_link(model.links[0])(g), 2)
            p = y.astype(np.float64) * z
            s1[i] += p.sum()
            s2[i] += p @ p
        done += m
    out = []
    for a, b in zip(s1, s2):
        mean = a / n
        var = max(b / n - mean * mean, 0.0) * n / max(n - 1, 1)
        out.append((float(mean), math.sqrt(var / n)))
    return out


def msim_forward_torch(x: torch.Tensor, features: torch.Tensor, links: Sequence[str]) -> torch.Tensor:
    """Batched MSIM forward: ``x`` (S, B, d^K) or (S, B, d, ..., d), ``features`` (S, K, d) (one model per leading
    index S: seeds), ``links`` one per layer; returns ``y`` (S, B). Differentiable in ``features``."""
    S, K, d = features.shape
    h = x.reshape(S, x.shape[1], -1)
    for layer in range(K):
        h = torch.einsum("sbjk,sk->sbj", h.reshape(S, h.shape[1], -1, d), features[:, layer])
        h = msim_link(links[layer])(h)
    return h.reshape(S, -1)


def first_chaos_tensor(
    features: torch.Tensor,
    links: Sequence[str],
    sizes: int | Sequence[int],
    generator: torch.Generator,
    chunk: int = 1 << 22,
    control: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``T_hat(n) = (1/n) sum_{i <= n} y_i x_i`` for S models at once (``features`` (S, K, d)), by the full sampler
    in chunks of about ``chunk`` numbers per model (on ``features.device``), at every n of ``sizes`` along one
    stream: returns (len(sizes), S, d, ..., d) (or (S, d, ..., d) for an int) in float64.
    ``control``: also ``(1/n) sum y'_i x_i`` on the same x with ``y'`` from an independent copy of the block
    projections (the shortcut sampler): same law as y, independent of x; else None."""
    S, K, d = features.shape
    one = isinstance(sizes, int)
    sizes = [sizes] if one else sorted(int(v) for v in sizes)
    if not sizes or sizes[0] < 1:
        raise ValueError(f"first_chaos_tensor needs sample sizes >= 1; got {sizes}")
    D = d**K
    rows = max(1, chunk // D)
    acc = torch.zeros(2 if control else 1, S, D, dtype=torch.float64, device=features.device)
    out = []
    done = 0
    for n in sizes:
        while done < n:
            m = min(rows, n - done)
            x = torch.randn(S, m, D, generator=generator, device=features.device)
            y = msim_forward_torch(x, features, links)
            if control:
                h = msim_link(links[0])(torch.randn(S, m, d ** (K - 1), generator=generator, device=features.device))
                y = torch.stack([y, msim_forward_torch(h, features[:, 1:], links[1:]) if K > 1 else h.reshape(S, m)])
            else:
                y = y[None]
            acc += torch.einsum("csb,sbj->csj", y, x).double()
            done += m
        out.append((acc / n).reshape(-1, S, *(d,) * K))
    T = torch.stack(out)  # (len(sizes), 1 or 2, S, d, ..., d)
    main, ctrl = T[:, 0], (T[:, 1] if control else None)
    if one:
        return main[0], (ctrl[0] if control else None)
    return main, ctrl


def second_chaos_matrix(
    features: torch.Tensor, links: Sequence[str], n: int, generator: torch.Generator, chunk: int = 1 << 22
) -> torch.Tensor:
    """``(1/n) sum_i y_i (x_i x_i^T - I)`` (D, D) for one model (``features`` (1, K, d)): the second-chaos tensor
    ``E[y He_2(x)]`` flattened as d^K x d^K (rows (i_K..i_1), columns (i'_K..i'_1)). Costs ``n D^2``: paper
    sizes need a GPU."""
    _, K, d = features.shape
    D = d**K
    rows = max(1, chunk // D)
    acc = torch.zeros(D, D, dtype=torch.float64, device=features.device)
    ysum = 0.0
    done = 0
    while done < n:
        m = min(rows, n - done)
        x = torch.randn(1, m, D, generator=generator, device=features.device)
        y = msim_forward_torch(x, features, links)[0]
        acc += ((x[0] * y[:, None]).T @ x[0]).double()
        ysum += float(y.double().sum())
        done += m
    return acc / n - (ysum / n) * torch.eye(D, dtype=torch.float64, device=features.device)


def stack_features(models: Sequence[MSIM], device: torch.device | str = "cpu") -> torch.Tensor:
    """The features of several MSIMs (same d, K) as one (S, K, d) float32 tensor for the batched torch paths."""
    return torch.as_tensor(np.stack([np.stack(m.features) for m in models]), dtype=torch.float32, device=device)
