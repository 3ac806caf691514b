"""nn.AttentionIndexed: forward against brute force, chain-rule gradients against autograd, initial statistics."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.nn.attention_indexed import AttentionIndexed


@pytest.mark.parametrize("param", ["tied", "direct", "untied"])
def test_param_grads_match_autograd(param):
    g = torch.Generator().manual_seed(0)
    m = AttentionIndexed(6, param, n_students=3, generator=g, dtype=torch.float64)
    x = torch.randn(11, 6, generator=g, dtype=torch.float64)
    y = torch.randn(3, 11, generator=g, dtype=torch.float64)
    loss = (0.5 * (m(x) - y) ** 2).mean(1).sum()
    loss.backward()
    with torch.no_grad():  # dL/dS: (1/(B sqrt d)) Σ r (x x^T - I) centred, Σ r x x^T uncentred (untied), r = G - y
        r = m(x) - y
        centre = 0.0 if param == "untied" else 1.0
        gS = (torch.einsum("kb,bi,bj->kij", r, x, x) - centre * r.sum(1)[:, None, None] * torch.eye(6)) / (
            11 * math.sqrt(6)
        )
    for name, grad in m.param_grads(gS).items():
        assert torch.allclose(grad, getattr(m, name).grad, atol=1e-12), name


def test_forward_matches_brute_force_and_multi_token():
    g = torch.Generator().manual_seed(1)
    m = AttentionIndexed(4, "untied", n_students=2, generator=g, dtype=torch.float64)
    S = m.S().detach()
    x = torch.randn(5, 4, generator=g, dtype=torch.float64)
    ref = torch.stack([torch.stack([xb @ S[k] @ xb / 2 for xb in x]) for k in range(2)])
    assert torch.allclose(m(x), ref)  # untied: the uncentred G of the paper's eq. 24
    tied = AttentionIndexed(4, "tied", generator=g, dtype=torch.float64)
    St = tied.S().detach()[0]
    assert torch.allclose(tied(x)[0], torch.stack([(xb @ St @ xb - torch.trace(St)) / 2 for xb in x]))
    xt = torch.randn(5, 3, 4, generator=g, dtype=torch.float64)
    G = m(xt)
    assert G.shape == (2, 5, 3, 3) and torch.allclose(G[1, 2, 0, 1], xt[2, 0] @ S[1] @ xt[2, 1] / 2)


def test_initial_statistics():
    g = torch.Generator().manual_seed(2)
    d = 200
    tied = AttentionIndexed(d, "tied", generator=g, dtype=torch.float64).S().detach()[0]
    assert float(2 * (tied * tied).sum() / d) == pytest.approx(1.0, abs=0.05)  # Var G = 1 at κ = 1/2
    assert float(torch.trace(tied) / d) == pytest.approx(0.5, abs=0.02) and torch.linalg.eigvalsh(tied).min() > -1e-9
    free = AttentionIndexed(d, "direct", direct_init="traceless", generator=g, dtype=torch.float64).S().detach()[0]
    assert abs(float(torch.trace(free))) < 1e-9 and torch.allclose(free, free.T)
    assert float(2 * (free * free).sum() / d) == pytest.approx(1.0, abs=0.05)
    zero = AttentionIndexed(d, "direct", direct_init="zero", generator=g).S().detach()
    assert float(zero.abs().max()) == 0.0
    # untied at the paper's scale (Assumption 4.2): Tr(S S^T)/d ≈ 1 (Var G ≈ 1), m = Tr S/√d = O(d^-1/2)
    drawn = AttentionIndexed(d, "untied", n_students=2, kappa=1.0, generator=g, dtype=torch.float64).S().detach()
    assert float((drawn[0] * drawn[0]).sum() / d) == pytest.approx(1.0, abs=0.05)
    assert float(torch.diagonal(drawn, dim1=1, dim2=2).sum(1).abs().max() / math.sqrt(d)) < 0.5
    shifted = AttentionIndexed(d, "untied", n_students=2, kappa=1.0, generator=g, dtype=torch.float64, mean0=1.0)
    S = shifted.S().detach()
    assert torch.allclose(torch.diagonal(S, dim1=1, dim2=2).sum(1) / math.sqrt(d), torch.ones(2, dtype=S.dtype))
    assert float((S[0] * S[0]).sum() / d) == pytest.approx(1.0, abs=0.05)
    with pytest.raises(ValueError, match="mean0"):
        AttentionIndexed(d, "tied", mean0=1.0)


def test_sgd_step_and_bad_arguments():
    m = AttentionIndexed(3, "direct", n_students=2, direct_init="zero")
    gS = torch.ones(2, 3, 3)
    m.sgd_step(gS, torch.tensor([0.1, 0.2]))
    S = m.S().detach()
    assert torch.allclose(S[0], -0.1 * torch.ones(3, 3)) and torch.allclose(S[1], -0.2 * torch.ones(3, 3))
    with pytest.raises(ValueError, match="parametrisation"):
        AttentionIndexed(3, "factorised")
    with pytest.raises(ValueError, match="direct_init"):
        AttentionIndexed(3, "direct", direct_init="identity")
