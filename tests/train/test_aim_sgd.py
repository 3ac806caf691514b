"""train.aim_sgd: one lockstep step equals an autograd SGD step; a tiny tied run learns; divergence is contained."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from theorylab.data.attention_index import link, teacher
from theorylab.nn.attention_indexed import AttentionIndexed
from theorylab.theory.aim import overlaps, rho
from theorylab.train.aim_sgd import aim_lr, train_aim


@pytest.mark.parametrize("param", ["tied", "direct", "untied"])
def test_one_step_matches_autograd(param):
    d, B, lr, links = 8, 32, 0.3, ("h1", "h2", "h3")
    S_star = teacher(d, torch.Generator().manual_seed(0))
    run = train_aim(
        S_star, links, B, B, lr, torch.Generator().manual_seed(1), param, kappa=0.5, n_test=16, dtype=torch.float64
    )
    g = torch.Generator().manual_seed(1)  # replay the trainer's draws: students, test set, one batch
    m = AttentionIndexed(d, param, 3, 0.5, "traceless", g, torch.float64)
    torch.randn(16, d, generator=g, dtype=torch.float64)
    x = torch.randn(B, d, generator=g, dtype=torch.float64)
    gs = (torch.einsum("bi,ij,bj->b", x, S_star, x) - torch.trace(S_star)) / math.sqrt(d)
    G = m(x)
    loss = sum((0.5 * (link(k)(G[i]) - link(k)(gs)) ** 2).mean() for i, k in enumerate(links))
    loss.backward()
    with torch.no_grad():
        for p in m.parameters():
            p -= lr * p.grad
        S = m.S().detach()
        Ssym = (S + S.transpose(1, 2)) / 2  # G sees only the symmetric part (untied S is not symmetric)
    assert np.allclose(run.rho[1], [rho(*overlaps([S_k, S_star])) for S_k in Ssym], atol=1e-10)
    assert np.allclose(run.q11[1], ((Ssym * Ssym).sum((1, 2)) / d).numpy(), atol=1e-10)
    assert np.allclose(run.t1[1], (torch.diagonal(S, dim1=1, dim2=2).sum(1) / d).numpy(), atol=1e-12)


def test_tiny_tied_run_learns_and_records():
    d = 16
    S_star = teacher(d, torch.Generator().manual_seed(2))
    n = int(12 * d * d * math.log(d))
    run = train_aim(
        S_star,
        ("h1", "h2"),
        n,
        64,
        aim_lr(d, 64, 0.05),
        torch.Generator().manual_seed(3),
        evaluate_every=20,
        n_test=512,
    )
    assert run.finite and run.rho.shape == (n // 64 + 1, 2)
    assert (run.rho[-1] > 0.7).all() and (run.test_mse[-1] < 0.5 * run.test_mse[0]).all()
    assert np.isfinite(run.n_half).all()
    k = np.flatnonzero(run.rho[:, 0] >= 0.5)[0]
    assert run.n_half[0] == run.n[k] and (run.rho[:k, 0] < 0.5).all()


def test_a_diverging_student_is_frozen_and_others_continue():
    d = 10
    S_star = teacher(d, torch.Generator().manual_seed(4))
    run = train_aim(
        S_star,
        ("h1", "h3"),
        64 * 200,
        64,
        40.0,
        torch.Generator().manual_seed(5),
        "direct",
        direct_init="psd",
        n_test=64,
    )
    assert not run.finite and np.isnan(run.rho[-1, 1])


def test_bad_arguments():
    S = teacher(8, torch.Generator())
    with pytest.raises(ValueError, match="n_samples >= batch"):
        train_aim(S, ("h1",), 10, 32, 0.1, torch.Generator())
