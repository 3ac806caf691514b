"""2-D toy laws, the correlated Gaussian, their channels, and the image tensors of the SCSI study."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.data.corruptions import GaussianNoise, Quantise, RandomMask, Saturate
from theorylab.data.digits import digits
from theorylab.data.gaussian import correlated_gaussian
from theorylab.data.images import display_image, image_tensors
from theorylab.data.toy2d import gaussian_mixture, toy_channel, toy_samples, two_moons


def test_correlated_gaussian_moments():
    mean, cov = np.array([1.0, -0.5]), np.array([[1.0, 0.5], [0.5, 0.5]])
    x = correlated_gaussian(200_000, mean, cov, np.random.default_rng(0))
    assert x.dtype == torch.float32 and x.shape == (200_000, 2)
    assert np.allclose(x.double().mean(0).numpy(), mean, atol=0.01)
    assert np.allclose(np.cov(x.double().numpy(), rowvar=False), cov, atol=0.01)


def test_toy_laws():
    from sklearn.datasets import make_moons

    assert torch.equal(two_moons(50, 3), torch.from_numpy(make_moons(50, noise=0.1, random_state=3)[0]).float())
    x = gaussian_mixture(4000, 0)
    r = x.double().norm(dim=1)
    assert abs(float(r.mean()) - 2.0) < 0.05 and torch.equal(x, gaussian_mixture(4000, 0))
    assert torch.equal(toy_samples("moons", 30, 1), two_moons(30, 1)) and torch.equal(
        toy_samples("mixture", 30, 1), gaussian_mixture(30, 1)
    )
    with pytest.raises(ValueError):
        toy_samples("spiral", 10, 0)


def test_toy_channels():
    assert isinstance(toy_channel("noise", 0.3), GaussianNoise) and isinstance(
        toy_channel("mask", mask_ratio=0.2), RandomMask
    )
    assert isinstance(toy_channel("saturate"), Saturate) and isinstance(toy_channel("quantise"), Quantise)


def test_digit_tensors_and_labels_follow_the_digits_order():
    from sklearn.datasets import load_digits

    x, labels = image_tensors()
    assert x.shape == (1797, 1, 8, 8) and x.dtype == torch.float32 and labels.shape == (1797,)
    raw = load_digits()
    i = 5
    j = int(np.flatnonzero((raw.data / 8.0 - 1.0 == digits().x[i]).all(1))[0])  # the unpermuted index of image i
    assert labels[i] == raw.target[j]


def test_local_images_are_channels_first(tmp_path):
    np.savez(tmp_path / "a.npz", x=np.random.default_rng(0).integers(0, 256, size=(5, 6, 6, 3)).astype(np.uint8))
    x, labels = image_tensors(tmp_path / "a.npz")
    assert x.shape == (5, 3, 6, 6) and labels is None and float(x.min()) >= -1 and float(x.max()) <= 1


def test_display_image():
    grey, kw = display_image(np.zeros((1, 4, 4)))
    assert grey.shape == (4, 4) and kw["cmap"] == "gray_r"
    rgb, kw = display_image(-np.ones((3, 4, 4)))
    assert rgb.shape == (4, 4, 3) and kw == {} and rgb.max() == 0.0
