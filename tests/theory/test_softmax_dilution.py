"""Softmax dilution (studies/representation-collapse.md): B(L) against attention computed by hand in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from theorylab.nn.toy_transformer import attention_only
from theorylab.theory.softmax import count_construction_output, dilution_bound, max_score

LENGTHS = (16, 64, 256, 1024)


@torch.no_grad()
def _hand_attention(model, X: torch.Tensor, normalise: bool = True):
    """Last-query single-head attention by hand: (output (d,), scores (L,), values (L, d)); W_O = I."""
    a = model.blocks[0].attn
    q = a.cfg.scale * (X[-1] @ a.W_Q[0].T)
    k, v = X @ a.W_K[0].T, X @ a.W_V[0].T
    s = k @ q
    w = torch.exp(s)
    p = w / w.sum() if normalise else w  # the broken variant skips the normalisation
    return p @ v, s, v


def _layer(d: int, seed: int):
    model = attention_only(d, 1, d, seed=seed).double()
    model.set_head(0, 0, o=torch.eye(d, dtype=torch.float64))
    return model


@pytest.mark.parametrize("L", LENGTHS)
def test_dilution_bound_holds_and_a_broken_normalisation_violates_it(L):
    d = 8
    model = _layer(d, seed=L)
    gen = torch.Generator().manual_seed(L)
    X = 0.3 * torch.randn(L, d, generator=gen, dtype=torch.float64)  # small scores keep e^{2c} moderate
    X2 = X.clone()
    X2[0] = 0.3 * torch.randn(d, generator=gen, dtype=torch.float64)
    o1, s1, v1 = _hand_attention(model, X)
    o2, s2, v2 = _hand_attention(model, X2)
    with torch.no_grad():  # the model agrees with the independent reference
        assert torch.allclose(model(X[None])[0, -1], o1, atol=1e-12)
        assert torch.allclose(model(X2[None])[0, -1], o2, atol=1e-12)
    c = max(max_score(s1), max_score(s2))
    v_max = float(torch.cat([v1, v2]).norm(dim=-1).max())
    bound = dilution_bound(L, c, v_max, float((v2[0] - v1[0]).norm()))
    change = float((o2 - o1).norm())
    assert 0 < change <= bound * (1 + 1e-6)
    broken = float((_hand_attention(model, X2, False)[0] - _hand_attention(model, X, False)[0]).norm())
    assert broken > bound


def test_dilution_bound_formula_and_arguments():
    assert dilution_bound(10, 0.0, 1.0, 2.0) == pytest.approx(0.4)
    assert dilution_bound(100, 0.5, 1.0, 0.0) == pytest.approx(math.e * 2 / 100)
    with pytest.raises(ValueError):
        dilution_bound(0, 0.0, 1.0, 1.0)


def test_count_construction_matches_direct_attention_and_decays_quadratically():
    d = 6
    gen = torch.Generator().manual_seed(0)
    q, ka, kb, va, vb = torch.randn(5, d, generator=gen, dtype=torch.float64)
    wa, wb = math.exp(float(q @ ka)), math.exp(float(q @ kb))
    for L in (1, 7, 100):
        K = torch.cat([ka.expand(L, d), kb[None]])
        V = torch.cat([va.expand(L, d), vb[None]])
        direct = torch.softmax(K @ q, dim=0) @ V
        np.testing.assert_allclose(count_construction_output(L, va, vb, wa, wb), direct.numpy(), rtol=1e-12)
    Ls = 2.0 ** np.arange(4, 13)  # 16 .. 4096
    change = np.linalg.norm(
        count_construction_output(Ls + 1, va, vb, wa, wb) - count_construction_output(Ls, va, vb, wa, wb), axis=-1
    )
    slope = np.polyfit(np.log(Ls), np.log(change), 1)[0]
    assert -2.05 <= slope <= -1.95, slope
    # the closed form of the change, w_a w_b ‖v_a − v_b‖ / ((L w_a + w_b)((L + 1) w_a + w_b))
    exact = wa * wb * float((va - vb).norm()) / ((Ls * wa + wb) * ((Ls + 1) * wa + wb))
    np.testing.assert_allclose(change, exact, rtol=1e-6)
