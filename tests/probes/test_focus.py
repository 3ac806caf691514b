"""probes.focus against brute-force loops and exact constructions (uniform attention gives F = 1 exactly)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from theorylab.probes.focus import (
    count_above,
    focus_ratio,
    key_frequency_spearman,
    key_scores,
    late_entropy,
    singular_ratio,
    stable_rank,
    token_mass,
    top_tokens,
)


def _causal_random(B, H, T, g):
    s = torch.randn(B, H, T, T, generator=g, dtype=torch.float64)
    return s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)


def _uniform(B, H, T):
    return (
        torch.ones(T, T, dtype=torch.float64)
        .tril()
        .div(torch.arange(1, T + 1, dtype=torch.float64)[:, None])
        .expand(B, H, T, T)
    )


def test_focus_ratio_by_brute_force():
    g = torch.Generator().manual_seed(0)
    B, H, T, V = 5, 2, 9, 8
    tokens = torch.randint(0, V, (B, T), generator=g)
    pat = _causal_random(B, H, T, g)
    top = [1, 4]
    for h in range(H):
        num = den = 0.0
        count = 0
        for b in range(B):
            for t in range(4, T):
                num += sum(float(pat[b, h, t, s]) for s in range(t + 1) if int(tokens[b, s]) in top)
                den += sum(int(tokens[b, s]) in top for s in range(t + 1)) / (t + 1)
                count += 1
        assert math.isclose(float(focus_ratio(pat, tokens, top)[h]), (num / count) / (den / count), rel_tol=1e-12)


def test_uniform_attention_gives_one_and_top_only_attention_more():
    g = torch.Generator().manual_seed(1)
    B, T, V = 64, 12, 10
    tokens = torch.randint(0, V, (B, T), generator=g)
    torch.testing.assert_close(focus_ratio(_uniform(B, 1, T), tokens, [0, 1]), torch.ones(1, dtype=torch.float64))
    m = (tokens == 0) | (tokens == 1)
    pat = _uniform(B, 1, T) * m[:, None, None, :]  # attend only to Top tokens where any exist
    pat = pat / pat.sum(-1, keepdim=True).clamp_min(1e-30)
    assert float(focus_ratio(pat, tokens, [0, 1])[0]) > 2.0  # Top is ~1/5 of tokens: F near 1 / share
    anti = _uniform(B, 1, T) * (~m)[:, None, None, :]
    anti = anti / anti.sum(-1, keepdim=True).clamp_min(1e-30)
    assert float(focus_ratio(anti, tokens, [0, 1])[0]) < 0.2  # dilution below uniform


def test_token_mass_by_loop_and_it_sums_to_one():
    g = torch.Generator().manual_seed(2)
    B, H, T, V = 4, 2, 7, 5
    tokens = torch.randint(0, V, (B, T), generator=g)
    pat = _causal_random(B, H, T, g)
    mass = token_mass(pat, tokens, V, min_position=3)
    ref = torch.zeros(H, V, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            for t in range(3, T):
                for s in range(T):
                    ref[h, tokens[b, s]] += pat[b, h, t, s]
    torch.testing.assert_close(mass, ref / (B * (T - 3)))
    torch.testing.assert_close(mass.sum(-1), torch.ones(H, dtype=torch.float64))


def test_late_entropy_of_uniform_rows():
    T = 10
    expected = np.mean([math.log(t + 1) for t in range(4, T)])
    assert math.isclose(float(late_entropy(_uniform(3, 1, T))[0]), expected, rel_tol=1e-12)
    with pytest.raises(ValueError, match="min_position"):
        late_entropy(_uniform(3, 1, T), min_position=T)


def test_spectral_summaries_against_numpy():
    g = torch.Generator().manual_seed(3)
    W = torch.randn(6, 4, generator=g, dtype=torch.float64)
    s = np.linalg.svd(W.numpy(), compute_uv=False)
    assert math.isclose(float(singular_ratio(W)), s[1] / s[0], rel_tol=1e-12)
    assert int(count_above(W, 0.3)) == int((s > 0.3 * s[0]).sum())
    assert math.isclose(float(stable_rank(W)), (s**2).sum() / s[0] ** 2, rel_tol=1e-12)
    u, v = torch.randn(6, 1, generator=g), torch.randn(1, 4, generator=g)
    assert float(singular_ratio(u @ v)) < 1e-6 and int(count_above(u @ v)) == 1  # rank one
    assert int(count_above(torch.diag(torch.tensor([3.0, 1.0, 0.5])), 0.3)) == 2


def test_key_scores_and_spearman():
    g = torch.Generator().manual_seed(4)
    S = torch.randn(5, 5, generator=g, dtype=torch.float64)
    pi = np.array([0.4, 0.3, 0.15, 0.1, 0.05])
    ref = [sum(pi[i] * float(S[i, j]) for i in range(5)) for j in range(5)]
    np.testing.assert_allclose(key_scores(S, pi).numpy(), ref, rtol=1e-12)
    assert key_frequency_spearman(torch.tensor([5.0, 4, 3, 2, 1]), pi) == pytest.approx(1.0)
    assert key_frequency_spearman(np.array([1.0, 2, 3, 4, 5]), pi) == pytest.approx(-1.0)
    k = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    rk, rp = np.argsort(np.argsort(k)), np.argsort(np.argsort(pi))
    assert key_frequency_spearman(k, pi) == pytest.approx(np.corrcoef(rk, rp)[0, 1])
    with pytest.raises(ValueError, match="scores"):
        key_scores(torch.zeros(5, 4), pi)


def test_top_tokens_and_shape_errors():
    assert list(top_tokens([0.1, 0.4, 0.2, 0.3], 0.5)) == [1, 3]
    assert list(top_tokens([0.5, 0.5], 0.25)) == [0]  # at least one token
    with pytest.raises(ValueError, match="pattern"):
        focus_ratio(torch.ones(2, 1, 4, 4), torch.zeros(2, 5, dtype=torch.long), [0])
    with pytest.raises(ValueError, match="min_position"):
        focus_ratio(torch.ones(2, 1, 4, 4), torch.zeros(2, 4, dtype=torch.long), [0], min_position=4)
