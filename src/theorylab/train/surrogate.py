"""The data half of the 2-D surrogate pipeline that the thermalizer (Pedersen, Zanna, Bruna, arXiv 2503.18731) and
self-refining-surrogate (SNS, arXiv 2603.17750) studies share: truth trajectories of a flow (Kolmogorov flow, the QG
jet) spun up, stored on the emulator's grid and normalised by the training trajectories' std.

The pipeline after it is shared too: :func:`theorylab.train.thermalizer.fit_unet_emulator` trains the learned
emulator on ``train``, and :mod:`theorylab.train.rollout` rolls it out from ``test_init``, plain or corrected (the
thermalizer's denoiser, SNS's conditional diffusion model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from torch import Tensor

from theorylab.data.pde import NS2D, coarse_trajectories
from theorylab.data.qg import QG2L


@dataclass(frozen=True)
class SurrogateData:
    """Normalised truth for an emulator and its corrector (every field divided by ``std``).

    ``train`` ``[n_train, horizon + 1, C, n, n]`` float32; ``test`` the test trajectories' truth, the same shape
    with ``n_test`` rows (no rows when the truth was not asked for); ``test_init`` ``[n_test, C, n, n]`` float64,
    the test rollouts' initial states; ``std`` the training trajectories' std, a 0-dim tensor or, per channel,
    ``[1, 1, C, 1, 1]``.
    """

    train: Tensor
    test: Tensor
    test_init: Tensor
    std: Tensor


def surrogate_data(
    solver: NS2D | QG2L,
    w0: Tensor,
    *,
    n_train: int,
    spinup: int,
    horizon: int,
    substeps: int,
    store_n: int,
    test_truth: bool,
    per_channel_std: bool = False,
    progress: Callable | None = None,
    label: str = "Kolmogorov",
) -> SurrogateData:
    """Spin the states ``w0`` up ``spinup`` solver steps, integrate the first ``n_train`` for ``horizon`` emulator
    steps of ``substeps`` solver steps, stored at ``store_n`` points per axis
    (:func:`theorylab.data.pde.coarse_trajectories`); the other ``len(w0) - n_train`` are the test trajectories,
    integrated too when ``test_truth`` (SNS compares its rollouts with their truth; the thermalizer needs their
    initial states only).

    Every field is divided by the training trajectories' std: one number, or one per channel when
    ``per_channel_std`` (the SNS card's QG normalisation, each layer by its own)."""
    if not 0 < n_train < len(w0):
        raise ValueError(f"surrogate_data needs 0 < n_train < len(w0) (a test trajectory); got {n_train}, {len(w0)}")
    simulated = len(w0) if test_truth else n_train
    data, rest0 = coarse_trajectories(
        solver, w0, simulated, spinup, horizon, substeps, store_n, progress=progress, label=label
    )
    train = data[:n_train]
    if per_channel_std:
        std = train.std(dim=tuple(i for i in range(train.ndim) if i != 2), keepdim=True)
    else:
        std = train.std()
    test = data[n_train:] / std
    test_init = test[:, 0].double() if test_truth else rest0 / std.squeeze(0).double()
    return SurrogateData(train=train / std, test=test, test_init=test_init, std=std)
