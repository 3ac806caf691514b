"""Digit labels: ``digits().y`` follows the same permutation as ``digits().x``, and every other ImageSet keeps
working without labels."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from theorylab.data.digits import ImageSet, digits
from theorylab.data.images import image_tensors


def test_labels_follow_the_image_permutation():
    raw = load_digits()
    images = digits()
    assert images.y is not None and images.y.shape == (1797,) and images.y.dtype == np.int64
    assert set(np.unique(images.y)) == set(range(10))
    # Each row's label is the label of the unpermuted image with exactly those pixels (some images repeat:
    # compare against every raw row equal to it).
    scaled = raw.data / 8.0 - 1.0
    for i in np.random.default_rng(0).choice(len(images.x), 60, replace=False):
        matches = np.flatnonzero((scaled == images.x[i]).all(1))
        assert images.y[i] in set(raw.target[matches])
    assert not np.array_equal(images.y, raw.target)  # permuted, not left in sklearn's order
    np.testing.assert_array_equal(digits(permutation_seed=3).y[np.argsort(_order(3))], raw.target)


def _order(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(1797)


def test_labels_agree_with_image_tensors():
    _, labels = image_tensors()
    np.testing.assert_array_equal(digits().y, labels)


def test_imageset_without_labels_still_works_and_checks_lengths():
    s = ImageSet(x=np.zeros((3, 4)), image_shape=(2, 2))
    assert s.y is None and s.mean.shape == (4,)
    assert ImageSet(np.zeros((2, 4)), (2, 2)).y is None  # positional construction is unchanged
    with pytest.raises(ValueError, match="labels"):
        ImageSet(x=np.zeros((3, 4)), image_shape=(2, 2), y=np.zeros(2, dtype=np.int64))
