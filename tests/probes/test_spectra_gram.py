"""Gram spectrum and participation ratio: consensus and orthonormal extremes, and a NumPy brute force."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.probes.spectra import gram_spectrum, participation_ratio


def test_collinear_tokens_give_lambda1_one_and_r_one():
    g = torch.Generator().manual_seed(0)
    ell, n = 12, 7
    direction = torch.randn(n, generator=g, dtype=torch.float64)
    scales = torch.randn(ell, 1, generator=g, dtype=torch.float64)  # ± signs and norms both vary
    lam = gram_spectrum(scales * direction)
    assert lam[0].item() == pytest.approx(1.0, abs=1e-12)
    assert participation_ratio(lam).item() == pytest.approx(1.0, abs=1e-12)
    assert participation_ratio(scales * direction, tokens=True).item() == pytest.approx(1.0, abs=1e-12)


def test_orthonormal_tokens_give_lambda1_one_over_ell_and_r_ell():
    g = torch.Generator().manual_seed(1)
    ell, n = 9, 15
    Q, _ = torch.linalg.qr(torch.randn(n, ell, generator=g, dtype=torch.float64))
    Z = 3.0 * Q.T  # row norms do not matter: rows are normalised first
    lam = gram_spectrum(Z)
    assert torch.allclose(lam, torch.full((ell,), 1.0 / ell, dtype=torch.float64), atol=1e-12)
    assert participation_ratio(Z, tokens=True).item() == pytest.approx(ell, abs=1e-10)


def test_gram_spectrum_matches_numpy_eigvalsh_batched():
    g = torch.Generator().manual_seed(2)
    Z = torch.randn(3, 4, 10, 6, generator=g, dtype=torch.float64)  # ℓ = 10 > n = 6: rank-deficient G
    lam = gram_spectrum(Z)
    assert lam.shape == (3, 4, 10)
    for idx in np.ndindex(3, 4):
        z = Z[idx].numpy()
        z = z / np.linalg.norm(z, axis=1, keepdims=True)
        ref = np.sort(np.linalg.eigvalsh(z @ z.T))[::-1]
        ref = np.clip(ref, 0.0, None) / np.trace(z @ z.T)
        np.testing.assert_allclose(lam[idx].numpy(), ref, atol=1e-12)
        assert participation_ratio(lam[idx]).item() == pytest.approx(1.0 / (ref**2).sum(), rel=1e-10)
    assert bool((lam[..., :-1] >= lam[..., 1:]).all())
    assert torch.allclose(lam.sum(-1), torch.ones(3, 4, dtype=torch.float64), atol=1e-12)
