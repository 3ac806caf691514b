"""Tensor unfoldings, HOSVD, balanced flattenings and feature overlaps (plain numpy; tensorly only in tests).

Used for the spectral estimators of the multiscale single-index model (Bruna, arXiv 2607.03347; DeepTD, Oymak &
Soltanolkotabi, arXiv 1805.06523): the first chaos ``E[y x]`` is a spiked rank-one tensor ``c w_K ⊗ ... ⊗ w_1``
plus an O(d^(-1/2)) perturbation, so the top singular vectors of its unfoldings estimate the features.
Conventions: tensors are row-major with axes (i_K, ..., i_1); layer ``l`` lives on axis ``K - l``
(:func:`layer_axis`). ``unfold(T, mode)`` moves ``mode`` to the front and flattens the rest in order, which is
tensorly's ``unfold`` (Kolda's ordering up to a column permutation; singular vectors are unaffected).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "balanced_features",
    "balanced_flattening",
    "hosvd",
    "hosvd_features",
    "layer_axis",
    "mode_product",
    "overlaps",
    "singular_value_ratios",
    "unfold",
]


def layer_axis(K: int, layer: int) -> int:
    """The tensor axis of layer ``layer`` (1..K) in the (i_K, ..., i_1) layout."""
    if not 1 <= layer <= K:
        raise ValueError(f"layer must lie in 1..{K}; got {layer}")
    return K - layer


def unfold(T: np.ndarray, mode: int) -> np.ndarray:
    """Mode-``mode`` unfolding: (T.shape[mode], prod of the other sizes)."""
    T = np.asarray(T)
    if not 0 <= mode < T.ndim:
        raise ValueError(f"mode must lie in 0..{T.ndim - 1}; got {mode}")
    return np.moveaxis(T, mode, 0).reshape(T.shape[mode], -1)


def mode_product(T: np.ndarray, M: np.ndarray, mode: int) -> np.ndarray:
    """``T ×_mode M``: contracts axis ``mode`` of T with the columns of M (M: (J, T.shape[mode]))."""
    return np.moveaxis(np.tensordot(M, T, axes=(1, mode)), 0, mode)


def hosvd(T: np.ndarray, ranks: int | tuple[int, ...] = 1) -> tuple[np.ndarray, list[np.ndarray]]:
    """Truncated higher-order SVD (De Lathauwer et al. 2000): factor ``U_n`` = top ``ranks[n]`` left singular
    vectors of the mode-n unfolding; core = ``T ×_1 U_1^T ... ×_N U_N^T``. Returns (core, factors)."""
    T = np.asarray(T, dtype=np.float64)
    ranks = (ranks,) * T.ndim if isinstance(ranks, int) else tuple(ranks)
    if len(ranks) != T.ndim:
        raise ValueError(f"hosvd needs one rank per mode ({T.ndim}); got {ranks}")
    factors = [np.linalg.svd(unfold(T, n), full_matrices=False)[0][:, :r] for n, r in enumerate(ranks)]
    core = T
    for n, U in enumerate(factors):
        core = mode_product(core, U.T, n)
    return core, factors


def hosvd_features(T: np.ndarray) -> list[np.ndarray]:
    """Rank-one HOSVD feature estimates, one unit vector per layer ``l = 1..K`` (list index l - 1)."""
    _, factors = hosvd(T, 1)
    K = np.ndim(T)
    return [factors[layer_axis(K, layer)][:, 0] for layer in range(1, K + 1)]


def balanced_flattening(T: np.ndarray) -> np.ndarray:
    """The d^floor(K/2) x d^ceil(K/2) matricisation: rows = the first floor(K/2) axes (i_K, ...), columns the rest.
    For K = 1 it is the 1 x d row."""
    T = np.asarray(T)
    k = T.ndim // 2
    return T.reshape(int(np.prod(T.shape[:k], dtype=np.int64)), -1)


def balanced_features(T: np.ndarray) -> list[np.ndarray]:
    """Feature estimates from the balanced flattening: its top singular pair, each side folded back into a tensor
    and reduced to rank one by HOSVD (Montanari-Richard unfolding estimator). One unit vector per layer."""
    T = np.asarray(T, dtype=np.float64)
    K, k = T.ndim, T.ndim // 2
    if K < 2:
        raise ValueError("balanced_features needs an order >= 2 tensor")
    U, _, Vt = np.linalg.svd(balanced_flattening(T), full_matrices=False)
    left = U[:, 0].reshape(T.shape[:k])
    right = Vt[0].reshape(T.shape[k:])
    axes = [hosvd(left, 1)[1][a][:, 0] for a in range(k)] if k > 1 else [U[:, 0]]
    axes += [hosvd(right, 1)[1][a][:, 0] for a in range(K - k)] if K - k > 1 else [Vt[0]]
    return [axes[layer_axis(K, layer)] for layer in range(1, K + 1)]


def overlaps(estimates, features) -> np.ndarray:
    """``|<u_l, w_l>| / (|u_l| |w_l|)`` for each layer (sign-blind: the features are identified up to sign)."""
    u = np.asarray(estimates, dtype=np.float64)
    w = np.asarray(features, dtype=np.float64)
    if u.shape != w.shape:
        raise ValueError(f"overlaps needs estimates and features of one shape; got {u.shape} and {w.shape}")
    return np.abs((u * w).sum(-1)) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(w, axis=-1))


def singular_value_ratios(M: np.ndarray, k: int = 4) -> np.ndarray:
    """``s_2/s_1, ..., s_k/s_1`` of a matrix (the spike-to-bulk gaps of an unfolding)."""
    s = np.linalg.svd(np.asarray(M, dtype=np.float64), compute_uv=False)
    return s[1:k] / s[0]
