"""θ(p): the balanced-mass factor against the definition (brute force over sign vectors) and its closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.theory.softmax import (
    attention_gain_bound,
    block_inf_rms_norm,
    inf_to_one_norm_bruteforce,
    jacobian,
    theta_dp,
    theta_exact,
    theta_greedy,
    theta_upper,
)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 10), conc=st.sampled_from([0.1, 1.0, 10.0]))
def test_theta_is_the_jacobians_inf_to_one_norm(seed, n, conc):
    p = np.random.default_rng(seed).dirichlet(np.full(n, conc))
    tau = 0.7
    brute = inf_to_one_norm_bruteforce(jacobian(torch.tensor(p), tau))
    assert theta_exact(p) / tau == pytest.approx(brute, rel=1e-12, abs=1e-12)
    lo = float(theta_greedy(torch.tensor(p)))
    value, bound = theta_dp(p)
    assert lo <= theta_exact(p) + 1e-12 and value <= theta_exact(p) + 1e-12 <= bound + 1e-9
    assert 1 - p.max() ** 2 - 1e-12 <= theta_exact(p) <= 1 + 1e-12


def test_closed_forms():
    assert theta_exact([1.0, 0.0, 0.0]) == 0.0
    assert theta_exact(np.full(6, 1 / 6)) == pytest.approx(1.0)
    assert theta_exact(np.full(7, 1 / 7)) == pytest.approx(1 - 1 / 49)
    p = np.array([0.7, 0.1, 0.1, 0.1])
    assert theta_exact(p) == pytest.approx(4 * 0.7 * 0.3)


def test_meet_in_the_middle_and_dp_on_long_rows():
    rng = np.random.default_rng(1)
    for n in (21, 30):
        p = rng.dirichlet(np.full(n, 0.3))
        exact = theta_exact(p)
        value, bound = theta_dp(p, step=1e-5)
        assert value <= exact + 1e-12 <= bound + 1e-9 and exact - value < 1e-3
        # meet-in-the-middle agrees with the DP optimum found over the same masses
        assert exact >= float(theta_greedy(torch.tensor(p))) - 1e-12
    with pytest.raises(ValueError):
        theta_exact(np.full(50, 0.02))


def test_greedy_is_vectorised_and_norm():
    P = torch.softmax(torch.randn(5, 3, 12, dtype=torch.float64), -1)
    g = theta_greedy(P)
    assert g.shape == (5, 3)
    assert all(float(g[i, j]) <= theta_exact(P[i, j].numpy()) + 1e-12 for i in range(5) for j in range(3))
    X = torch.ones(2, 4, 9)
    assert torch.allclose(block_inf_rms_norm(X), torch.ones(2))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), conc=st.sampled_from([0.05, 1.0, 10.0]))
def test_theta_upper_is_an_upper_bound_and_exact_above_one_half(seed, n, conc):
    p = np.random.default_rng(seed).dirichlet(np.full(n, conc))
    up = float(theta_upper(torch.tensor(p)))
    assert theta_exact(p) <= up + 1e-12
    if p.max() >= 0.5:
        assert up == pytest.approx(theta_exact(p), abs=1e-12)


def test_attention_gain_bound_holds_for_a_random_layer():
    """The measured gain of a random attention layer never exceeds the first-order bound."""
    import math

    from theorylab.nn.toy_transformer import MultiHeadAttention, ToyTransformerConfig
    from theorylab.probes.jacobian import local_gain

    cfg = ToyTransformerConfig(d_model=8, n_heads=2, bias=False)
    torch.manual_seed(0)
    attn = MultiHeadAttention(cfg).double()
    with torch.no_grad():
        attn.W_Q.mul_(3.0)  # sharper attention, so the softmax term matters
    for p in attn.parameters():
        p.requires_grad_(False)
    value = torch.linalg.matrix_norm(attn.W_O @ attn.W_V, ord=2)
    score = torch.linalg.matrix_norm(cfg.scale * attn.W_Q.transpose(1, 2) @ attn.W_K, ord=2)
    for T in (4, 32):
        X = torch.randn(T, 8, dtype=torch.float64)
        X = X / X.pow(2).mean(-1, keepdim=True).sqrt()
        gain, _ = local_gain(attn, X, restarts=3, steps=30, generator=torch.Generator().manual_seed(T))
        bound = float(attention_gain_bound(value, score, math.sqrt(8), 1.0))
        assert float(value.sum()) * 0.1 < gain <= bound


def test_random_theta_rows_match_the_definition_and_cycle_alpha_and_tau():
    from theorylab.theory.softmax import random_theta_rows

    rows = random_theta_rows(np.random.default_rng(3), 24, 8, (0.1, 1.0), (0.5, 2.0))
    assert len(rows) == 24 and rows["n"].between(2, 8).all()
    assert list(rows["alpha"][:4]) == [0.1, 1.0, 0.1, 1.0] and list(rows["tau"][:4]) == [0.5, 0.5, 2.0, 2.0]
    for r in rows.itertuples():  # brute force recomputed here, from the same draws
        assert r.theta_exact / r.tau == pytest.approx(r.brute_norm, rel=1e-10, abs=1e-15)
    assert (rows["rel_error"] <= 1e-10).all() and (rows["theta_greedy"] <= rows["theta_exact"] + 1e-12).all()
    assert (rows["theta_dp_bound"] >= rows["theta_exact"] - 1e-12).all()
    again = random_theta_rows(np.random.default_rng(3), 24, 8, (0.1, 1.0), (0.5, 2.0))
    assert again.equals(rows)


def test_theta_closed_form_cases_hold_and_would_catch_a_wrong_theta():
    from theorylab.theory.softmax import theta_closed_form_cases

    cases = theta_closed_form_cases(7)
    assert set(cases["n"]) == set(range(2, 8)) and len(cases) == 6 * 7
    assert cases["error"].max() <= 1e-12
    odd = cases[(cases["case"] == "uniform") & (cases["n"] == 5)]
    assert float(odd["expected"].iloc[0]) == pytest.approx(1 - 1 / 25)  # a wrong closed form (θ = 1): off by 1/25
