"""SDR estimators against statsmodels and against the population predictions, and the U-statistic against brute
force."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.data.index_models import IndexModel
from theorylab.probes.subspace import captures, overlap, principal_angles, projector_distance
from theorylab.theory.generative import (
    CHI2_MEDIAN,
    SpectralU3,
    TransformedPHD,
    k3_kernel,
    k4_kernel,
    staged_link,
    staged_moments,
    u_and_v_matrices,
    ustat_k3_matrix,
)
from theorylab.theory.hermite import hermite_tensor
from theorylab.theory.sdr import ADE, OPG, PHD, SAVE, SIR


def _data(link, d=20, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    model = IndexModel.make(d, link, rng)
    X, y, _ = model.sample(n, rng)
    return model, X, y


def test_sir_save_phd_agree_with_statsmodels():
    dimred = pytest.importorskip("statsmodels.regression.dimred")
    _, X, y = _data("z1+z1z2")
    pairs = [
        (SIR(2, 10).fit(X, y), dimred.SlicedInverseReg(y, X).fit(slice_n=200).params[:, :2]),
        (SAVE(2, 10).fit(X, y), dimred.SAVE(y, X).fit(slice_n=200).params[:, :2]),
        (PHD(2, whiten=True).fit(X, y), np.real(dimred.PrincipalHessianDirections(y, X).fit().params[:, :2])),
    ]
    for ours, theirs in pairs:
        assert principal_angles(ours.components_.T, theirs).max() < 1e-6


@pytest.mark.parametrize(
    "link, est, sees",
    [
        ("he1", ADE(1), True),
        ("he2", ADE(1), False),
        ("he2", PHD(1), True),
        ("he2", SIR(1), False),
        ("he3", SIR(1), True),
        ("he3", ADE(1), False),
    ],
)
def test_estimators_see_what_stein_predicts(link, est, sees):
    model, X, y = _data(link, d=100, n=20_000)  # blind estimators still pick up anisotropic noise at small d
    c = captures(est.fit(X, y).components_.T, model.W)[0]
    assert (c > 0.9) if sees else (c < 0.3)


def test_opg_recovers_a_product_link_that_ade_misses():
    model, X, y = _data("z1z2", d=4, n=3000)
    assert overlap(OPG(2, n_anchors=150, bandwidth=1.0).fit(X, y).components_.T, model.W) > 0.9
    assert overlap(ADE(1).fit(X, y).components_.T, model.W) < 0.5


def test_components_are_orthonormal_and_transform_projects():
    _, X, y = _data("z1z2")
    est = SAVE(2).fit(X, y)
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(2), atol=1e-12)
    assert est.transform(X).shape == (len(X), 2)


def test_input_validation():
    with pytest.raises(ValueError, match="n_components"):
        PHD(50).fit(np.zeros((10, 5)), np.zeros(10))
    with pytest.raises(ValueError, match="shape"):
        SIR(1).fit(np.zeros((10, 5)), np.zeros(9))
    with pytest.raises(ValueError, match="finite"):
        SIR(1).fit(np.full((10, 5), np.nan), np.zeros(10))
    with pytest.raises(ValueError, match="one direction"):
        ADE(2)


def test_k3_closed_form_equals_explicit_tensor_contraction():
    rng = np.random.default_rng(1)
    for d in (2, 4, 6):
        x, xp = rng.standard_normal(d), rng.standard_normal(d)
        explicit = np.einsum("ace,bce->ab", hermite_tensor(3, x), hermite_tensor(3, xp))
        np.testing.assert_allclose(k3_kernel(x, xp), explicit, atol=1e-10)


@pytest.mark.parametrize("diagonal", [False, True])
def test_blocked_ustatistic_equals_the_pair_sum(diagonal):
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((9, 4)), rng.standard_normal(9)
    pairs = [(i, j) for i in range(9) for j in range(9) if diagonal or i != j]
    ref = sum(y[i] * y[j] * k3_kernel(X[i], X[j]) for i, j in pairs) / len(pairs)
    np.testing.assert_allclose(ustat_k3_matrix(X, y, diagonal=diagonal, block=4), (ref + ref.T) / 2, atol=1e-10)


def test_k4_kernel_matches_explicit_hermite_tensors():
    rng = np.random.default_rng(11)
    for d in (2, 4, 6):
        x, xp = rng.standard_normal(d), rng.standard_normal(d)
        explicit = np.einsum("aceg,bceg->ab", hermite_tensor(4, x), hermite_tensor(4, xp))
        np.testing.assert_allclose(k4_kernel(x, xp), explicit, atol=1e-10)


@pytest.mark.parametrize("order", [3, 4])
def test_order_k_ustatistic_is_the_average_over_distinct_pairs(order):
    rng = np.random.default_rng(12)
    n, d = 7, 3
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    h = hermite_tensor(order, X).reshape(n, d, -1)  # unfolded (d, d^(k-1)) per sample
    kern = np.einsum("iap,jbp->ijab", h, h)  # brute force: every ordered pair from explicit tensors
    w = y[:, None] * y[None, :]
    distinct = [(i, j) for i in range(n) for j in range(n) if i != j]
    u_ref = sum(w[i, j] * kern[i, j] for i, j in distinct) / len(distinct)
    v_ref = np.einsum("ij,ijab->ab", w, kern) / n**2
    u, v = u_and_v_matrices(X, y, order, block=3)
    np.testing.assert_allclose(u, (u_ref + u_ref.T) / 2, atol=1e-9)
    np.testing.assert_allclose(v, (v_ref + v_ref.T) / 2, atol=1e-9)


def test_four_parity_population_matrix_is_six_times_two_over_pi_fourth_projector():
    rng = np.random.default_rng(13)
    model = IndexModel.make(6, "parity4", rng, W=np.eye(6)[:, :4])
    X, y, _ = model.sample(8000, rng)
    u, _ = u_and_v_matrices(X, y - y.mean(), 4)
    expected = np.diag([1, 1, 1, 1, 0, 0]) * 6 * (2 / np.pi) ** 4  # 0.985 on the span
    assert np.abs(u - expected).max() < 0.3  # U-statistic noise at n = 8000, d = 6
    assert overlap(np.linalg.eigh(u)[1][:, -4:], model.W) > 0.9


def test_staged_link_moments_and_its_control():
    def short(name):  # "E[y z1] (stage 1, degree 1)" -> "E[y z1]"
        return name.split("] (")[0] + "]" if "] (" in name else name

    rows = {
        (r["link"], short(r["moment"])): r
        for t in (1.0, CHI2_MEDIAN)
        for r in staged_moments(400_000, np.random.default_rng(14), t)
    }
    for r in rows.values():
        assert abs(r["measured"] - r["expected"]) <= 4 * r["se"], r
    assert rows[("staged", "E[y z1]")]["expected"] == pytest.approx(-0.2916, abs=1e-3)
    assert rows[("staged", "E[y sign(z1) (z2^2 - 1)]")]["expected"] == pytest.approx(0.9679, abs=1e-3)
    control = staged_link(CHI2_MEDIAN)
    assert rows[(control.name, "E[y z1]")]["expected"] == 0.0 and control.generative_exponent == 3
    assert staged_link().generative_exponent == 2


def test_parity_population_matrix_is_two_times_two_over_pi_cubed_projector():
    rng = np.random.default_rng(3)
    model = IndexModel.make(5, "parity3", rng, W=np.eye(5)[:, :3])
    X, y, _ = model.sample(6000, rng)
    m = ustat_k3_matrix(X, y)
    expected = np.diag([1, 1, 1, 0, 0]) * 2 * (2 / np.pi) ** 3
    assert np.abs(m - expected).max() < 0.25  # U-statistic noise at n = 6000, d = 5
    assert overlap(SpectralU3(3).fit(X, y).components_.T, model.W) > 0.9


def test_transformed_phd_sees_the_monomial_but_not_the_parity():
    model, X, y = _data("z1z2z3", d=16, n=16 * 60)
    assert overlap(TransformedPHD(3).fit(X, y).components_.T, model.W) > 0.8
    model, X, y = _data("parity3", d=16, n=16 * 60)
    assert overlap(TransformedPHD(3, transform=lambda t: t).fit(X, y).components_.T, model.W) < 0.5


def test_subspace_measures():
    u = np.eye(4)[:, :2]
    b = np.eye(4)[:, [0, 2]]
    np.testing.assert_allclose(captures(b, u), [1, 0])
    assert overlap(b, u) == pytest.approx(0.5)
    np.testing.assert_allclose(principal_angles(b, u), [0, np.pi / 2], atol=1e-12)
    assert projector_distance(u, u) == pytest.approx(0, abs=1e-12)
    assert projector_distance(b, u) == pytest.approx(np.sqrt(2))


@pytest.mark.parametrize(
    "link, n, leap", [("z1+z1z2", 4000, 1), ("z1z2z3", 8000, 2), ("he2", 4000, 2), ("parity3", 12000, 3)]
)
def test_sequential_leap_finds_the_index_space_at_the_right_order(link, n, leap):
    from theorylab.theory.generative import SequentialLeap

    model, X, y = _data(link, d=12, n=n)
    est = SequentialLeap(r_max=model.link.r + 1, n_null=2).fit(X, y)
    assert est.leap_ == leap == model.link.generative_exponent
    assert est.components_.shape[0] == model.link.r  # no spurious extra direction
    assert overlap(est.components_.T, model.W) > 0.95


def test_sliced_estimators_without_whitening_work_below_n_equals_d():
    model, X, y = _data("he3", d=50, n=40)
    with pytest.raises(ValueError, match="whiten"):
        SIR(1).fit(X, y)
    assert SIR(1, 5, whiten=False).fit(X, y).components_.shape == (1, 50)


def test_phd_noise_moments_of_he3_by_quadrature():
    from theorylab.data.index_models import get_link
    from theorylab.theory.sdr import phd_noise_moments

    m = phd_noise_moments(get_link("he3"))
    # E[He3^2 (z^2-1)^2] = 372, E[He3^2 z^2] = 42, 2 E[He3^2] = 12, E[He3^2] = 6 (Gaussian moments by hand).
    assert m == pytest.approx({"u1u1": 372.0, "u1k": 42.0, "kk": 12.0, "kl": 6.0}, rel=1e-9)


def test_phd_noise_floor_isotropic_is_chance_and_anisotropic_is_high():
    from theorylab.theory.sdr import phd_noise_floor

    rng = np.random.default_rng(0)
    iso = phd_noise_floor(50, {"u1u1": 2.0, "u1k": 1.0, "kk": 2.0, "kl": 1.0}, 200, rng)
    assert iso.mean() == pytest.approx(1 / 50, abs=0.01)  # a GOE eigenvector: uniform direction
    he3 = phd_noise_floor(100, {"u1u1": 372.0, "u1k": 42.0, "kk": 12.0, "kl": 6.0}, 100, rng)
    assert 0.4 <= he3.mean() <= 0.6


def test_phd_noise_floor_matches_blind_phd_at_large_n():
    # pHd on He3 at d = 20 with n = 400 d: the capture is near the n -> infinity floor (same law).
    from theorylab.theory.sdr import phd_noise_floor

    rng = np.random.default_rng(1)
    caps = []
    for seed in range(60):
        model, X, y = _data("he3", d=20, n=8000, seed=100 + seed)
        caps.append(captures(PHD(1).fit(X, y).components_.T, model.W)[0])
    floor = phd_noise_floor(20, {"u1u1": 372.0, "u1k": 42.0, "kk": 12.0, "kl": 6.0}, 400, rng)
    assert abs(np.mean(caps) - floor.mean()) <= 4 * np.sqrt(np.var(caps) / 60 + floor.var() / 400) + 0.05
