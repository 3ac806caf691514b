"""probes.matrix_overlap against theory.aim's overlap algebra and scipy's subspace angles."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

from theorylab.probes import matrix_overlap as mo
from theorylab.theory import aim


def test_rho_matches_the_overlap_algebra_batched():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 6, 6))
    S = A + A.transpose(0, 2, 1)
    T = S[0] + 0.3 * S[1] + 2 * np.eye(6)
    got = mo.rho(torch.as_tensor(S), torch.as_tensor(T)).numpy()
    for k in range(3):
        t, q = aim.overlaps([S[k], T])
        assert got[k] == pytest.approx(aim.rho(t, q), rel=1e-12)
    assert float(mo.rho(torch.as_tensor(5 * T - 7 * np.eye(6)), torch.as_tensor(T))) == pytest.approx(1.0)
    assert torch.allclose(mo.trace_overlap(torch.as_tensor(S)), torch.as_tensor(np.trace(S, axis1=1, axis2=2) / 6))


def test_eigenspace_angles_match_scipy():
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((8, 8)), rng.standard_normal((8, 8))
    S, T = A @ A.T, B @ B.T
    got = mo.eigenspace_angles(S, T, 3)
    ref = np.sort(scipy.linalg.subspace_angles(mo.top_eigenspace(S, 3), mo.top_eigenspace(T, 3)))
    assert np.allclose(got, ref, atol=1e-10)
    assert mo.eigenspace_overlap(S, 2 * S, 3) == pytest.approx(1.0)
