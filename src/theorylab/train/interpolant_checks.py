"""Measurements of a learned self-consistent transport, taken while it trains.

Modi, Han, Vanden-Eijnden, Bruna (arXiv 2512.10857, Sec. 5) judge the cleaned law ``T_# nu_obs``
against what is known about the clean one: the moments of a Gaussian truth (with the
self-consistency residual of :mod:`theorylab.theory.scsi_gaussian`), and for images PSNR/SSIM to
held-out clean images, the accuracy of a classifier trained on clean images, and the MMD between
the re-corrupted cleaned law and the observed one. Each function transports with
:func:`theorylab.train.interpolants.transport` and returns one row of numbers.
"""

from __future__ import annotations

from typing import Callable, Literal

import numpy as np
import torch
from torch import Tensor, nn

from theorylab.data.corruptions import Channel
from theorylab.probes.distances import mmd_rbf, psnr, ssim
from theorylab.theory.scsi_gaussian import covariance_error, self_consistency_residual
from theorylab.train.interpolants import transport


@torch.no_grad()
def gaussian_moment_errors(
    net: nn.Module,
    observed: Tensor,
    latents: Tensor | None,
    mean: np.ndarray,
    cov: np.ndarray,
    steps: int = 20,
    method: Literal["euler", "heun"] = "euler",
    channel: Channel | None = None,
    generator: torch.Generator | None = None,
) -> dict[str, float]:
    """Transport ``observed`` (with its channel ``latents``) back to clean estimates and compare them with
    the true law N(mean, cov): ``mean_error = |mean(T y) - m|``, ``cov_error = |Cov(T y) - S|_F / |S|_F``.
    With a ``channel``, also the self-consistency residual ``R`` of the cleaned samples re-corrupted once
    (``generator``) against ``observed``, and the cleaned covariance ``c11, c12, c22`` (2-D data)."""
    cleaned = transport(net, observed, latents, steps, method).double()
    row: dict[str, float] = {}
    if channel is not None:
        again = channel(cleaned, generator)[0].numpy()
    c = cleaned.numpy()
    row.update(mean_error=float(np.linalg.norm(c.mean(0) - mean)), cov_error=covariance_error(c, cov))
    if channel is not None:
        cov_c = np.cov(c, rowvar=False)
        row.update(
            residual=self_consistency_residual(again, observed.numpy()),
            c11=cov_c[0, 0],
            c12=cov_c[0, 1],
            c22=cov_c[1, 1],
        )
    return row


def clean_classifier_accuracy(
    train_images: Tensor, train_labels: np.ndarray | None, test_labels: np.ndarray | None
) -> Callable[[Tensor], float]:
    """A logistic regression on the flattened clean ``train_images`` (scikit-learn, 2000 iterations); returns
    ``accuracy(images)`` on images whose labels are ``test_labels``. Without labels, ``accuracy`` is NaN."""
    if train_labels is None or test_labels is None:
        return lambda z: float("nan")
    from sklearn.linear_model import LogisticRegression

    classifier = LogisticRegression(max_iter=2000).fit(
        train_images.reshape(len(train_images), -1).numpy(), train_labels
    )
    return lambda z: float(classifier.score(z.reshape(len(z), -1).numpy(), test_labels))


@torch.no_grad()
def image_restoration_scores(
    net: nn.Module,
    test_observed: Tensor,
    test_latents: Tensor | None,
    test_clean: Tensor,
    observed: Tensor,
    observed_latents: Tensor | None,
    channel: Channel,
    generator: torch.Generator,
    *,
    steps: int,
    method: Literal["euler", "heun"] = "euler",
    bandwidth: float,
    accuracy: Callable[[Tensor], float] | None = None,
    device: torch.device | str | None = None,
) -> tuple[dict[str, float], Tensor]:
    """Held-out restoration and channel consistency of a learned transport on images.

    Tensors are on the CPU; ``net`` runs on ``device``.

    ``h = len(test_clean)`` held-out images observed as ``test_observed``: the restoration ``T(y)``
    (clamped to [-1, 1]) against the clean images by PSNR and SSIM (window ``min(7, width)``) and by
    ``accuracy`` (e.g. :func:`clean_classifier_accuracy`), each also for ``y`` itself. Channel
    consistency: biased MMD^2 (RBF of ``bandwidth``) between ``A(T(y))`` for the first ``h`` observed
    images and ``test_observed``, against two disjoint halves of ``observed`` and against re-corrupting
    ``y`` without cleaning (both channel draws from ``generator``, in that order). Returns the scores
    and the restored images.
    """
    h = len(test_clean)
    to = lambda z: None if z is None else z.to(device)  # noqa: E731
    acc = accuracy if accuracy is not None else (lambda z: float("nan"))
    window = min(7, test_clean.shape[-1])
    restored = transport(net, test_observed.to(device), to(test_latents), steps, method).cpu().clamp(-1, 1)
    lat = observed_latents[:h] if observed_latents is not None else None
    cleaned = transport(net, observed[:h].to(device), to(lat), steps, method).cpu()
    again = channel(cleaned, generator)[0]
    scores = dict(
        psnr_restored=float(psnr(restored, test_clean).mean()),
        psnr_observed=float(psnr(test_observed, test_clean).mean()),
        ssim_restored=float(ssim(restored, test_clean, window=window).mean()),
        ssim_observed=float(ssim(test_observed, test_clean, window=window).mean()),
        acc_restored=acc(restored),
        acc_observed=acc(test_observed),
        acc_clean=acc(test_clean),
        mmd_recorrupted=mmd_rbf(again, test_observed, bandwidth, biased=True),
        mmd_halves=mmd_rbf(observed[:h], observed[h : 2 * h], bandwidth, biased=True),
        mmd_identity=mmd_rbf(channel(observed[:h], generator)[0], test_observed, bandwidth, biased=True),
        held_out=h,
    )
    return scores, restored
