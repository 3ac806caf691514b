"""local_gain against maps whose block-∞/RMS gain is known exactly."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.probes.jacobian import local_gain, token_norm


def test_tokenwise_linear_map_gain_is_its_spectral_norm():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(8, 8, dtype=torch.float64, generator=g)
    X = torch.randn(16, 8, dtype=torch.float64, generator=g)
    gain, per = local_gain(lambda Z: Z @ A, X, generator=g)
    assert gain == pytest.approx(float(torch.linalg.matrix_norm(A, 2)), rel=1e-9)
    assert per.shape == (5,) and (per <= gain).all()


def test_row_stochastic_mixing_has_gain_one_and_sequence_norm_grows_like_sqrt_T():
    g = torch.Generator().manual_seed(1)
    for T in (4, 64):
        P = torch.softmax(torch.randn(T, T, dtype=torch.float64, generator=g), -1)
        X = torch.randn(T, 3, dtype=torch.float64, generator=g)
        gain, _ = local_gain(lambda Z, P=P: P @ Z, X, generator=g)
        assert gain == pytest.approx(1.0, abs=1e-6)  # every token moved the same way: P 1 = 1
        seq, _ = local_gain(lambda Z, P=P: P @ Z, X, out_norm="sequence_rms", generator=g, restarts=1)
        assert seq == pytest.approx(math.sqrt(T), rel=1e-6)


def test_norms_and_bad_arguments():
    Y = torch.ones(2, 4, 9)
    assert torch.allclose(token_norm(Y, "block_inf_rms"), torch.ones(2))
    assert torch.allclose(token_norm(Y, "sequence_rms"), torch.full((2,), 2.0))
    with pytest.raises(ValueError, match="norm"):
        token_norm(Y, "frobenius")
    with pytest.raises(ValueError, match="eps"):
        local_gain(lambda Z: Z, torch.ones(3, 2), eps=0)


def test_attention_gain_vs_length_stays_under_its_bound_and_the_control_grows():
    from theorylab.nn.toy_transformer import frozen_attention_layer
    from theorylab.probes.jacobian import attention_gain_vs_length, attention_pattern

    attn = frozen_attention_layer(16, 2, seed=0)
    X = torch.randn(5, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    P = attention_pattern(attn, X)
    q = torch.einsum("hrd,td->htr", attn.W_Q, X)
    k = torch.einsum("hrd,td->htr", attn.W_K, X)
    manual = torch.softmax(attn.cfg.scale * q @ k.transpose(1, 2), -1)  # no mask, no biases, no positions
    assert P.shape == (2, 5, 5) and torch.allclose(P, manual, atol=1e-12)
    t = attention_gain_vs_length(
        attn, (8, 128), eps=1e-4, restarts=2, steps=10, control_restarts=1, generator=torch.Generator().manual_seed(1)
    )
    assert list(t["T"]) == [8, 128] and (t["gain"] <= t["bound"]).all() and (t["gain"] > 0).all()
    assert t["gain_sequence_l2"].iloc[1] / t["gain_sequence_l2"].iloc[0] > 2  # ~ √(128/8) = 4
    assert 0.5 <= t["gain"].iloc[1] / t["gain"].iloc[0] <= 2
