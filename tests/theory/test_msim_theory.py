"""MSIM theory: link moments in closed form, the Edgeworth constant against Monte Carlo, noise scales (Bai-Yin)."""

from __future__ import annotations

import math

import numpy as np

from theorylab.data.msim import MSIM, first_chaos_projection, msim, msim_link
from theorylab.theory.msim import (
    balanced_noise_scale,
    edgeworth_constant,
    edgeworth_first_chaos,
    leading_coefficient,
    link_moments,
    mode_noise_scale,
    spectral_threshold,
)

Q = msim_link("quadratic")


def test_link_moments_closed_form():
    m = link_moments(Q)
    r = 1 / math.sqrt(1.5)
    assert abs(m["mean"]) < 1e-12 and abs(m["second"] - 1) < 1e-12
    assert abs(m["c1"] - r) < 1e-12 and abs(m["d2"] - r) < 1e-12 and abs(m["d4"]) < 1e-12
    assert abs(m["s2g"] - 4 / 3) < 1e-12
    assert abs(leading_coefficient([Q] * 3) - r**3) < 1e-12


def test_edgeworth_constant_and_exactness_by_monte_carlo():
    """The card's a = 1/sqrt(1.5); for a quadratic top link the expansion is exact: E[y z] = c1^2 + S3 (2/3)/sqrt(1.5)
    for any unit w_2 (here a random one at d = 5, Monte Carlo within 4 SE)."""
    assert abs(edgeworth_constant(Q, Q) - 1 / math.sqrt(1.5)) < 1e-12
    rng = np.random.default_rng(0)
    w2 = rng.standard_normal(5)
    w2 /= np.linalg.norm(w2)
    model = MSIM((msim(5, 1, rng).features[0], w2), ("quadratic", "quadratic"))
    lead, corr = edgeworth_first_chaos(Q, Q, w2)
    assert abs(corr - np.sum(w2**3) * (2 / 3) / math.sqrt(1.5)) < 1e-12
    ((mean, se),) = first_chaos_projection(model, 1_000_000, np.random.default_rng(1))
    assert abs(mean - lead - corr) <= 4 * se
    assert abs(mean - lead) > 4 * se  # the correction is resolved, not just the leading term


def test_noise_scales_match_gaussian_matrices():
    rng = np.random.default_rng(2)
    d, K, n = 8, 3, 500
    G = rng.standard_normal((d, d ** (K - 1))) / math.sqrt(n)
    assert abs(np.linalg.norm(G, 2) / mode_noise_scale(d, K, n) - 1) < 0.15
    B = rng.standard_normal((d, d**2)) / math.sqrt(n)  # K = 3 balanced: d x d^2 as well
    assert abs(np.linalg.norm(B, 2) / balanced_noise_scale(d, K, n) - 1) < 0.15
    c = 0.5
    n_star = spectral_threshold(d, K, c)
    assert abs(mode_noise_scale(d, K, round(n_star)) - c) < 1e-3
    assert spectral_threshold(16, 4, c, balanced=True) < spectral_threshold(16, 4, c)
