"""probes.linear_fit: held-out R² against NumPy least squares; freeze lists and row masks keep frozen weights exact."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.core.rng import seeded
from theorylab.probes.linear_fit import linear_fit_r2, retrain_subset, set_trainable


def test_r2_matches_numpy_reference():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    W = rng.standard_normal((5, 3))
    Y = X @ W + 0.5 + 0.7 * rng.standard_normal((200, 3))
    split = np.zeros(200, bool)
    split[rng.permutation(200)[:100]] = True
    got = linear_fit_r2(torch.as_tensor(X), torch.as_tensor(Y), torch.as_tensor(split))
    A = np.c_[X, np.ones(200)]
    coef = np.linalg.lstsq(A[split], Y[split], rcond=None)[0]
    res = ((Y[~split] - A[~split] @ coef) ** 2).sum()
    tot = ((Y[~split] - Y[split].mean(0)) ** 2).sum()
    assert got["r2"] == pytest.approx(1 - res / tot, rel=1e-10)
    np.testing.assert_allclose(got["prediction"].numpy(), A[~split] @ coef, rtol=1e-10)
    assert got["n_fit"] == got["n_test"] == 100
    exact = linear_fit_r2(torch.as_tensor(X), torch.as_tensor(X @ W), 0.5)
    assert exact["r2"] == pytest.approx(1.0, abs=1e-12)
    noise = linear_fit_r2(torch.as_tensor(X), torch.as_tensor(rng.standard_normal((200, 3))), 0.5)
    assert noise["r2"] < 0.05  # unrelated targets: nothing explained out of sample


def test_r2_bad_input():
    with pytest.raises(ValueError, match="split"):
        linear_fit_r2(torch.zeros(4, 2), torch.zeros(4, 1), 1.5)
    with pytest.raises(ValueError, match="'X' and 'Y'"):
        linear_fit_r2(torch.zeros(4, 2), torch.zeros(3, 1))


def _net():
    with seeded(0):  # the same init for every call, the global RNG untouched
        return torch.nn.Sequential(torch.nn.Embedding(6, 3), torch.nn.Flatten(), torch.nn.Linear(6, 4))


def test_freeze_list_and_rows_keep_frozen_weights_exact():
    net = _net()
    before = {n: p.detach().clone() for n, p in net.named_parameters()}
    x = torch.tensor([[0, 1], [2, 3], [1, 2]])
    y = torch.tensor([0, 1, 3])
    rows = torch.tensor([True, True, True, False, False, False])  # train embedding rows 0-2 only
    losses = retrain_subset(
        net, ["0."], x, y, torch.nn.functional.cross_entropy, steps=20, lr=0.1, rows={"0.weight": rows}
    )
    assert losses[-1] < losses[0]
    assert torch.equal(net[2].weight, before["2.weight"]) and torch.equal(net[2].bias, before["2.bias"])
    assert torch.equal(net[0].weight[3:], before["0.weight"][3:])
    assert not torch.equal(net[0].weight[:3], before["0.weight"][:3])
    assert set_trainable(net, [""]) == ["0.weight", "2.weight", "2.bias"]
    with pytest.raises(ValueError, match="trainable"):
        set_trainable(net, ["nope"])


def test_chunked_gradient_equals_full_batch():
    x = torch.tensor([[0, 1], [2, 3], [1, 2], [4, 5], [5, 0]])
    y = torch.tensor([0, 1, 3, 2, 2])
    a, b = _net().double(), _net().double()
    retrain_subset(a, [""], x, y, torch.nn.functional.cross_entropy, steps=5, lr=0.05)
    retrain_subset(b, [""], x, y, torch.nn.functional.cross_entropy, steps=5, lr=0.05, chunk=2)
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-10, atol=1e-12)
