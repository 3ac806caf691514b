from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.data import (
    ImageFolderArray,
    PowerLawGaussian,
    disjoint_splits,
    stratify_by_pc,
    wishart_sample_covariance,
)
from theorylab.data.digits import digits  # the package's `digits` is the module (a name never shadows one)


def test_power_law_spectrum_and_random_basis():
    data = PowerLawGaussian(20, 1.5, basis="random", basis_seed=3)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(data.covariance))[::-1], np.arange(1, 21) ** -1.5, rtol=1e-10)
    u = data.orthogonal_basis
    np.testing.assert_allclose(u @ u.T, np.eye(20), atol=1e-12)
    x = data.sample(200_000, torch.Generator().manual_seed(0))
    emp = (x.T @ x / x.shape[0]).numpy()
    assert np.abs(emp - data.covariance).max() < 0.02


def test_rotation_changes_no_rotation_invariant_statistic():
    """The mean denoiser gain, measured in the population eigenbasis, is basis-free."""
    gen = torch.Generator().manual_seed(1)
    stats = []
    for basis in ("eigen", "random"):
        data = PowerLawGaussian(30, 1.0, basis=basis, basis_seed=7)
        u = torch.as_tensor(data.orthogonal_basis)
        x = data.sample(60, gen, batch=(400,))
        cov = x.transpose(1, 2) @ x / 60
        cov_eig = u.T @ cov @ u  # back to the eigenbasis
        inv = torch.linalg.inv(cov_eig + 0.01 * torch.eye(30, dtype=cov.dtype))
        stats.append(torch.diagonal(cov_eig @ inv, dim1=1, dim2=2).mean(0).numpy())
    assert np.abs(stats[0] - stats[1]).max() < 0.02  # equal up to Monte Carlo error


@pytest.mark.parametrize("n", [30, 60, 200])
def test_wishart_sampler_matches_explicit_samples(n):
    d, draws = 12, 20000
    lam = np.arange(1, d + 1, dtype=float) ** -1.0
    rng = np.random.default_rng(0)
    bartlett = wishart_sample_covariance(lam, n, draws, rng).numpy()
    # Exact moments of the known-mean sample covariance: E = Sigma, Var_ij = (l_i l_j + delta_ij l_i^2) / n.
    np.testing.assert_allclose(bartlett.mean(0), np.diag(lam), atol=5 * np.sqrt(2 / n / draws))
    expected_var = (np.outer(lam, lam) + np.diag(lam**2)) / n
    np.testing.assert_allclose(bartlett.var(0), expected_var, rtol=0.06)
    # Same law as explicit samples: compare a spectral statistic.
    x = np.random.default_rng(1).standard_normal((4000, n, d)) * np.sqrt(lam)
    explicit = np.einsum("bni,bnj->bij", x, x) / n
    top_b, top_e = np.linalg.eigvalsh(bartlett[:4000])[:, -1], np.linalg.eigvalsh(explicit)[:, -1]
    assert abs(top_b.mean() - top_e.mean()) < 4 * np.hypot(top_b.std(), top_e.std()) / np.sqrt(4000)


def test_wishart_rank_deficient_falls_back():
    cov = wishart_sample_covariance(np.ones(10), 4, 3, np.random.default_rng(0))
    assert cov.shape == (3, 10, 10)
    assert int(torch.linalg.matrix_rank(cov[0])) == 4


def test_digits_properties():
    images = digits()
    assert images.x.shape == (1797, 64) and images.image_shape == (8, 8)
    assert images.x.min() == -1.0 and images.x.max() == 1.0
    a, b = disjoint_splits(images, 800)
    assert a.shape == b.shape == (800, 64)
    np.testing.assert_array_equal(np.vstack([a, b]), images.x[:1600])
    with pytest.raises(ValueError):
        disjoint_splits(images, 900)
    np.testing.assert_array_equal(digits().x, images.x)  # one fixed permutation


def test_stratify_by_pc_groups_are_extremes():
    images = digits()
    top, bottom = stratify_by_pc(images, k=2, size=300)
    centered = images.x - images.mean
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    score_top = (top - images.mean) @ vt[1]
    score_bottom = (bottom - images.mean) @ vt[1]
    assert score_top.min() > score_bottom.max()
    assert len(top) == len(bottom) == 300


@settings(max_examples=10, deadline=None)
@given(st.integers(min_value=2, max_value=20), st.booleans())
def test_image_folder_npz_loader(count, channels_last):
    import tempfile
    from pathlib import Path

    rng = np.random.default_rng(count)
    shape = (count, 4, 4, 3) if channels_last else (count, 4, 4)
    arr = rng.integers(0, 256, size=shape).astype(np.uint8)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "set.npz"
        np.savez(path, x=arr)
        images = ImageFolderArray(path).load()
    assert images.x.shape == (count, int(np.prod(shape[1:])))
    assert images.x.min() >= -1 and images.x.max() <= 1
    assert images.image_shape == shape[1:]


def test_image_folder_missing_path():
    with pytest.raises(FileNotFoundError):
        ImageFolderArray("/nonexistent/data.npz")
