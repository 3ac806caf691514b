"""probes.linear_probe against scikit-learn's own metric and hand-made data with known separability."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score

from theorylab.probes.linear_probe import balanced_accuracy, linear_probe, probe_over_training


def test_balanced_accuracy_matches_sklearn():
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    y[:400] = 1  # imbalanced
    assert balanced_accuracy(y, p) == pytest.approx(balanced_accuracy_score(y, p))


def test_probe_separates_a_linear_label_and_not_a_norm_label():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4000, 10))
    w = rng.standard_normal(10)
    lin = linear_probe(x, x @ w > 0, 2000)
    assert lin.score > 0.97
    # the coefficients reproduce the decisions in raw coordinates
    assert np.mean((x[2000:] @ lin.coef + lin.intercept > 0) == (x[2000:] @ w > 0)) > 0.97
    # a norm label (|x| small vs large) is invisible to a linear probe of a centred cloud
    norm = linear_probe(x, np.linalg.norm(x, axis=1) < np.sqrt(10), 2000)
    assert norm.score < 0.6


def test_probe_matches_sklearn_on_standardised_features_and_is_scale_free():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1000, 5)) * [1, 10, 0.1, 1, 1]
    y = (x[:, 0] + 0.5 * rng.standard_normal(1000) > 0.8).astype(int)  # imbalanced, noisy
    ours = linear_probe(x, y, 600)
    mu, sd = x[:600].mean(0), x[:600].std(0)
    ref = LogisticRegression(class_weight="balanced", max_iter=1000).fit((x[:600] - mu) / sd, y[:600])
    assert ours.score == pytest.approx(balanced_accuracy_score(y[600:], ref.predict((x[600:] - mu) / sd)))
    assert linear_probe(1e-4 * x, y, 600).score == pytest.approx(ours.score)


def test_probe_over_training_is_tidy():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400)
    ckpts = {10: rng.standard_normal((400, 3)), 1: rng.standard_normal((400, 3)) + y[:, None]}
    rows = probe_over_training(ckpts, {"a": lambda c: c, "b": lambda c: -c}, y, 200)
    assert [r["step"] for r in rows] == [1] * 4 + [10] * 4
    assert {r["site"] for r in rows} == {"a", "b"} and {r["metric"] for r in rows} == {"probe", "probe_fit"}
    s = {(r["step"], r["site"], r["metric"]): r["value"] for r in rows}
    assert s[(1, "a", "probe")] > 0.8 > s[(10, "a", "probe")]


def test_bad_split_and_labels_fail():
    x, y = np.zeros((10, 2)), np.arange(10) % 2
    with pytest.raises(ValueError, match="split"):
        linear_probe(x, y, 10)
    with pytest.raises(ValueError, match="both classes"):
        linear_probe(x, np.r_[np.zeros(5), np.ones(5)], 5)
    with pytest.raises(ValueError, match="features"):
        linear_probe(np.zeros(10), y, 5)
