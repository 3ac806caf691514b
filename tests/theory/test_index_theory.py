"""Kit pieces of the index-model studies: named estimators, Stein population checks, blind pHd floor, leap moments."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.data.index_models import IndexModel, get_link
from theorylab.theory.generative import P3_TRIPLE, index_space, leap_moment_checks
from theorylab.theory.hermite import leap_scores
from theorylab.theory.sdr import (
    SURVEY_HESSIANS,
    SURVEY_SEES,
    phd_blind_floor,
    phd_noise_floor,
    phd_noise_moments,
    stein_population_checks,
    survey_population_checks,
)


@pytest.mark.parametrize("name", ["ADE", "pHd", "SIR", "SAVE", "pHd-clip", "order-3 V-stat"])
def test_index_space_returns_orthonormal_columns(name):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 6))
    y = X[:, 0] ** 2 - 1
    b = index_space(name, 1, X, y, n_slices=5)
    assert b.shape == (6, 1) and np.allclose(b.T @ b, 1.0)
    with pytest.raises(KeyError):
        index_space("nope", 1, X, y)


def test_index_space_finds_he2_with_phd_and_a_clipped_label():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20_000, 5))
    y = X[:, 2] ** 2 - 1
    assert abs(index_space("pHd", 1, X, y)[2, 0]) > 0.99
    assert abs(index_space("pHd-clip", 1, X, y, clip=1.0)[2, 0]) > 0.99


def test_stein_population_matches_the_hessian_within_four_se():
    rng = np.random.default_rng(2)
    model = IndexModel.make(4, "he2", rng, W=np.eye(4)[:, :1])
    rows = stein_population_checks(
        model, rng, 10, 20_000, 10, SURVEY_HESSIANS["he2"], {"SIR": (False,), "SAVE": (True,)}
    )
    phd = {r["entry"]: r for r in rows if r["method"] == "pHd"}
    assert len(phd) == 10 and phd["0,0"]["expected"] == 2.0 and phd["0,0"]["predicted_nonzero"]
    assert all(abs(r["measured"] - r["expected"]) <= 4 * r["se"] for r in phd.values())
    save = next(r for r in rows if r["method"] == "SAVE")
    assert save["predicted_nonzero"] and save["measured"] > 4 * save["se"]


def test_survey_tables_and_population_rows_cover_every_link():
    assert set(SURVEY_HESSIANS) == {link for link, _ in SURVEY_SEES}
    rows = survey_population_checks(3, 5, 2000, 5, lambda link: np.random.default_rng(len(link)))
    assert {r["link"] for r in rows} == set(SURVEY_HESSIANS)
    assert sum(r["method"] == "pHd" for r in rows) == 4 * 6  # upper triangle of 3 x 3 per link


def test_blind_floor_summarises_the_noise_floor_draws():
    link = get_link("he3")
    out = phd_blind_floor(link, 20, 30, np.random.default_rng(3))
    draws = phd_noise_floor(20, phd_noise_moments(link), 30, np.random.default_rng(3))
    assert out["floor"] == pytest.approx(draws.mean()) and out["draws"] == 30
    assert out["u1u1"] == pytest.approx(372, rel=1e-6) and out["kl"] == pytest.approx(6, rel=1e-6)


def test_leap_moment_checks_within_four_se():
    rows = leap_moment_checks(200_000, np.random.default_rng(4))
    assert len(rows) == 11
    for r in rows:
        assert abs(r["measured"] - r["expected"]) <= 4 * r["se"], r
    assert rows[-2]["expected"] == P3_TRIPLE


def test_leap_scores_of_the_parity_and_the_monomial():
    p3 = leap_scores(get_link("parity3"), 100_000, np.random.default_rng(5))
    m3 = leap_scores(get_link("z1z2z3"), 100_000, np.random.default_rng(6))
    assert p3[-1]["leap"] == 3 and [r["k"] for r in p3] == [1, 2, 3]
    assert m3[-1]["leap"] == 2 and m3[0]["known"] == 2
