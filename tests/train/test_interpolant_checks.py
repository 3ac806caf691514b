"""Training with measurements of both weight sets, and the measurements themselves."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from theorylab.data.corruptions import GaussianNoise, RandomMask
from theorylab.nn.velocity import TimeMLP
from theorylab.probes.distances import psnr
from theorylab.theory.scsi_gaussian import covariance_error, self_consistency_residual
from theorylab.train.interpolant_checks import (
    clean_classifier_accuracy,
    gaussian_moment_errors,
    image_restoration_scores,
)
from theorylab.train.interpolants import train_and_measure


class Still(nn.Module):
    """Zero velocity: the transport is the identity."""

    def forward(self, x, t, latent=None):
        return torch.zeros_like(x)


def test_train_and_measure_measures_raw_then_ema_at_each_evaluation():
    g = torch.Generator().manual_seed(0)
    model = TimeMLP(2, 16, 1, 4)
    calls = []

    def measure(step, weights, net):
        calls.append((step, weights, net.training))
        return None if weights == "ema" else dict(step=step)

    rows, log = train_and_measure(
        model,
        torch.randn(64, 2, generator=g),
        GaussianNoise(0.5),
        measure,
        ema_decay=0.9,
        steps=4,
        batch=8,
        lr=1e-3,
        generator=g,
        transport_steps=2,
        evaluate_every=2,
    )
    assert [c[:2] for c in calls] == [(0, "raw"), (0, "ema"), (2, "raw"), (2, "ema"), (4, "raw"), (4, "ema")]
    assert not any(c[2] for c in calls) and rows == [dict(step=0), dict(step=2), dict(step=4)] and len(log.losses) == 4


def test_gaussian_moment_errors_of_the_identity_transport():
    rng = np.random.default_rng(0)
    mean, cov = np.array([0.5, 0.0]), np.eye(2)
    y = torch.from_numpy(rng.standard_normal((3000, 2)) * 1.2).float()
    plain = gaussian_moment_errors(Still(), y, None, mean, cov, steps=3)
    c = y.double().numpy()
    assert plain == dict(mean_error=float(np.linalg.norm(c.mean(0) - mean)), cov_error=covariance_error(c, cov))
    gen = torch.Generator().manual_seed(1)
    full = gaussian_moment_errors(Still(), y, None, mean, cov, steps=3, channel=GaussianNoise(0.5), generator=gen)
    again = GaussianNoise(0.5)(y.double(), torch.Generator().manual_seed(1))[0].numpy()
    assert full["residual"] == self_consistency_residual(again, y.numpy()) and set(full) >= {"c11", "c12", "c22"}
    assert abs(full["c11"] - np.cov(c, rowvar=False)[0, 0]) < 1e-12


def test_classifier_accuracy_without_labels_is_nan_and_with_labels_is_a_score():
    x = torch.cat([torch.zeros(20, 1, 2, 2), torch.ones(20, 1, 2, 2)])
    labels = np.array([0] * 20 + [1] * 20)
    assert np.isnan(clean_classifier_accuracy(x, None, None)(x))
    assert clean_classifier_accuracy(x, labels, labels)(x) == 1.0


def test_restoration_scores_of_the_identity_transport_match_the_observed_images():
    g = torch.Generator().manual_seed(0)
    clean = torch.rand(40, 1, 8, 8, generator=g) * 2 - 1
    channel = RandomMask(0.5)
    observed, lat = channel(clean[10:], g)
    test_obs, test_lat = channel(clean[:10], g)
    scores, restored = image_restoration_scores(
        Still(), test_obs, test_lat, clean[:10], observed, lat, channel, g, steps=2, bandwidth=1.0
    )
    assert torch.equal(restored, test_obs.clamp(-1, 1))
    assert (
        scores["psnr_restored"] == float(psnr(test_obs.clamp(-1, 1), clean[:10]).mean())
        and scores["psnr_observed"] < scores["psnr_restored"]
    )
    assert scores["held_out"] == 10 and np.isnan(scores["acc_clean"])
    assert scores["mmd_recorrupted"] >= 0 and scores["mmd_halves"] >= 0
