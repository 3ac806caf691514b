"""data.attention_index: token covariance, teacher normalisation, Hermite links, bilinear forms vs brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from theorylab.data.attention_index import bilinear_forms, centred_form, link, link_derivative, teacher, tokens


def test_tokens_have_covariance_C_kron_I():
    C = torch.tensor([[1.0, 0.5], [0.5, 2.0]], dtype=torch.float64)
    x = tokens(200_000, 3, torch.Generator().manual_seed(0), C)
    assert x.shape == (200_000, 2, 3)
    emp = torch.einsum("nia,njb->ijab", x, x) / len(x)  # E x_ia x_jb = C_ij δ_ab
    ref = torch.einsum("ij,ab->ijab", C, torch.eye(3, dtype=torch.float64))
    assert torch.allclose(emp, ref, atol=0.02)


def test_tokens_are_reproducible_and_reject_bad_C():
    a = tokens(5, 4, torch.Generator().manual_seed(3))
    b = tokens(5, 4, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and a.shape == (5, 1, 4)
    with pytest.raises(ValueError, match="symmetric"):
        tokens(5, 4, torch.Generator(), torch.tensor([[1.0, 0.2], [0.1, 1.0]]))
    with pytest.raises(torch.linalg.LinAlgError):
        tokens(5, 4, torch.Generator(), torch.tensor([[1.0, 2.0], [2.0, 1.0]]))  # not positive definite


def test_teacher_is_psd_with_unit_variance_form():
    S = teacher(30, torch.Generator().manual_seed(1))
    assert torch.allclose(S, S.T)
    assert float(2 * torch.trace(S @ S) / 30) == pytest.approx(1.0, abs=1e-12)
    assert torch.linalg.eigvalsh(S).min() > -1e-12


def test_links_are_orthonormal_hermite_with_correct_derivatives():
    z, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    hs = [link(n)(z) for n in ("h1", "h2", "h3")]
    gram = np.array([[np.sum(w * a * b) for b in hs] for a in hs])
    assert np.allclose(gram, np.eye(3), atol=1e-12)
    t = torch.linspace(-2, 2, 9, dtype=torch.float64)
    for n in ("h1", "h2", "h3"):
        fd = (link(n)(t + 1e-6) - link(n)(t - 1e-6)) / 2e-6
        assert torch.allclose(link_derivative(n)(t), fd, atol=1e-6)
    with pytest.raises(ValueError, match="h4"):
        link("h4")


def test_forms_match_brute_force():
    g = torch.Generator().manual_seed(2)
    x = tokens(7, 5, g, torch.tensor([[1.0, 0.3], [0.3, 1.0]]))
    S = torch.randn(5, 5, generator=g, dtype=torch.float64)
    G = bilinear_forms(x, S, chunk=3)
    ref = torch.tensor(
        [
            [
                [sum(float(x[n, i, a] * S[a, b] * x[n, j, b]) for a in range(5) for b in range(5)) for j in range(2)]
                for i in range(2)
            ]
            for n in range(7)
        ]
    ) / math.sqrt(5)
    assert torch.allclose(G, ref.double(), atol=1e-12)
    x1 = x[:, 0]
    c = centred_form(x1, S, chunk=2)
    assert torch.allclose(c, ref[:, 0, 0].double() - torch.trace(S) / math.sqrt(5), atol=1e-12)
