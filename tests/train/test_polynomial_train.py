"""train.polynomial: batched Adam equals each run alone and takes the closed-form first step; the Newton polish
lands on a constructed critical point."""

from __future__ import annotations

import numpy as np
import torch

from theorylab.data.polynomial import GaussianLaw, metric_loss
from theorylab.nn.polynet import flatten_params, poly_tensor, unflatten_params
from theorylab.probes.hessian import gradient
from theorylab.theory import polynomial_nets as pn
from theorylab.train.polynomial import adam_polynet, newton_polish, newton_polish_many, polynet_gradients


def _teacher(d, seed=0):
    rng = np.random.default_rng(seed)
    lam = np.sort(rng.uniform(-2, 2, d))
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return lam, V, (V * lam) @ V.T


def test_closed_form_gradients_equal_autograd():
    d, r, R = 4, 3, 2
    _, _, A = _teacher(d, seed=2)
    A, M4 = torch.tensor(A), torch.as_tensor(GaussianLaw(d).moment(4))
    gen = torch.Generator().manual_seed(4)
    W = torch.randn(R, r, d, generator=gen, dtype=torch.float64, requires_grad=True)
    a = torch.randn(R, r, generator=gen, dtype=torch.float64, requires_grad=True)
    loss = metric_loss(poly_tensor(W, a, 2) - A, M4)
    gW, ga = torch.autograd.grad(loss.sum(), (W, a))
    l2, dW, da = polynet_gradients(W.detach(), a.detach(), A, M4)
    torch.testing.assert_close(l2, loss.detach(), rtol=1e-12, atol=0)
    torch.testing.assert_close(dW, gW, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(da, ga, rtol=1e-12, atol=1e-12)


def test_batched_adam_equals_each_run_alone_and_takes_the_closed_form_first_step():
    d, r, R = 4, 2, 3
    _, _, A = _teacher(d)
    A, M4 = torch.tensor(A), torch.as_tensor(GaussianLaw(d).moment(4))
    gen = torch.Generator().manual_seed(1)
    W0 = torch.randn(R, r, d, generator=gen, dtype=torch.float64)
    a0 = torch.randn(R, r, generator=gen, dtype=torch.float64)
    W, a = adam_polynet(W0, a0, A, M4, steps=50, lr=1e-2)
    for i in range(R):
        Wi, ai = adam_polynet(W0[i : i + 1], a0[i : i + 1], A, M4, steps=50, lr=1e-2)
        torch.testing.assert_close(W[i : i + 1], Wi, rtol=0, atol=1e-12)
        torch.testing.assert_close(a[i : i + 1], ai, rtol=0, atol=1e-12)
    # Adam's first step is -lr * g / (|g| + eps'), i.e. -lr * sign(g) for the card's gradient G = 2 M4(D),
    # dL/dW = 2 diag(a) W G, dL/da_i = w_i^T G w_i
    lr = 1e-3
    W1, a1 = adam_polynet(W0, a0, A, M4, steps=1, lr=lr)
    D = poly_tensor(W0, a0, 2) - A
    G = 2 * torch.einsum("nkl,ijkl->nij", D, M4)
    gW, ga = 2 * a0[:, :, None] * (W0 @ G), torch.einsum("nri,nij,nrj->nr", W0, G, W0)
    torch.testing.assert_close(W1, W0 - lr * torch.sign(gW), rtol=0, atol=1e-8)
    torch.testing.assert_close(a1, a0 - lr * torch.sign(ga), rtol=0, atol=1e-8)


def _metric_loss_of_flat(A: np.ndarray, d: int, r: int):
    """The Gaussian-metric loss of teacher ``A`` as a function of the flat parameter vector."""
    M4, At = torch.as_tensor(GaussianLaw(d).moment(4)), torch.tensor(A)

    def f(theta):
        W, a = unflatten_params(theta, r, d)
        return metric_loss(poly_tensor(W, a, 2) - At, M4)

    return f


def test_newton_polish_lands_on_a_constructed_critical_point():
    d, r = 5, 2
    lam, V, A = _teacher(d, seed=3)
    f = _metric_loss_of_flat(A, d, r)
    best = pn.global_minimum(lam, r)
    W, a = pn.realise(lam, V, best["S"], r)
    theta0 = flatten_params(torch.tensor(W), torch.tensor(a))
    start = theta0 + 1e-3 * torch.randn(theta0.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(gradient(f, start).norm()) > 1e-4
    theta = newton_polish(f, start, steps=50)
    assert float(gradient(f, theta).norm()) < 1e-10
    assert abs(float(f(theta)) - best["loss"]) <= 1e-10 * best["loss"]


def test_newton_polish_many_follows_each_lone_polish():
    d, r = 5, 2
    _, _, A = _teacher(d, seed=4)
    f = _metric_loss_of_flat(A, d, r)
    gen = torch.Generator().manual_seed(1)
    P = r * (d + 1)
    starts = torch.randn((4, P), generator=gen, dtype=torch.float64) / d**0.5
    # 12 steps leave some rows still moving (the paths are compared), 40 let them stop (where they stop is compared)
    for steps in (12, 40):
        together = newton_polish_many(f, starts, steps=steps)
        for i in range(len(starts)):
            alone = newton_polish(f, starts[i], steps=steps)
            # The Hessian is singular along the (W, a) scaling symmetry, so the vmapped and the lone Hessian's last-bit
            # differences move the rows apart along it (~1e-8 here): compare what the symmetry leaves fixed, the tensor
            # W^T diag(a) W and the loss, to well below the 1e-4 separation of distinct critical values.
            T_together = poly_tensor(*unflatten_params(together[i], r, d), 2)
            T_alone = poly_tensor(*unflatten_params(alone, r, d), 2)
            torch.testing.assert_close(T_together, T_alone, rtol=0, atol=1e-7)
            assert abs(float(f(together[i]) - f(alone))) <= 1e-9 * max(float(f(alone)), 1e-12)
