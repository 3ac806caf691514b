"""Optimisers for teacher-student polynomial networks (Arjevani, Bruna, Kileel, Polak & Trager, arXiv 2501.06074).

``adam_polynet`` trains R quadratic networks f(x) = sum_i a_i <w_i, x>^2 at once on the population loss
L(W, a) = <D, M4 D>, D = W^T diag(a) W - A* (``data.polynomial.metric_loss``): each run gets exactly its own
gradient and Adam is element-wise, so every run follows the path it would follow alone (tested).
``newton_polish`` takes an endpoint to a critical point in float64 with damped pseudo-inverse Newton steps, which
converge where first-order methods stall because the Hessian is singular along the parametrisation's symmetries;
``newton_polish_many`` does the same for R endpoints at once (vmapped gradients and Hessians, batched least squares),
each row following the path ``newton_polish`` takes alone (tested).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch.func import grad, vmap
from torch.func import hessian as _hessian

from theorylab.nn.polynet import poly_tensor
from theorylab.probes.hessian import gradient, hessian


def polynet_gradients(
    W: torch.Tensor, a: torch.Tensor, A_star: torch.Tensor, M4: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Closed-form gradients of L = <D, M4 D>, D = W^T diag(a) W - A*, for R runs at once: with G = 2 M4(D) (M4
    symmetric), dL/dW = 2 diag(a) W G and dL/da_i = w_i^T G w_i. Returns (loss per run, dW, da); checked against
    autograd in the tests. Autograd through the d^4 contraction is ~5x slower at these sizes."""
    R, d = W.shape[0], W.shape[-1]
    D = poly_tensor(W, a, 2) - A_star
    MD = (D.reshape(R, d * d) @ M4.reshape(d * d, d * d)).reshape(R, d, d)
    loss = (D * MD).sum((-1, -2))
    G = 2 * MD
    return loss, 2 * a[:, :, None] * (W @ G), torch.einsum("nri,nij,nrj->nr", W, G, W)


def adam_polynet(
    W: torch.Tensor,
    a: torch.Tensor,
    A_star: torch.Tensor,
    M4: torch.Tensor,
    *,
    steps: int,
    lr: float,
    check: Callable[[str, float, int], None] | None = None,
    every: int = 1000,
) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's Adam on R runs: ``W`` (R, r, d), ``a`` (R, r) -> trained copies, with the closed-form gradients of
    :func:`polynet_gradients`. ``check(name, loss, step)`` sees the summed loss every ``every`` steps and at the end
    (e.g. ``RunContext.check_finite``)."""
    if W.ndim != 3 or a.shape != W.shape[:2]:
        raise ValueError(f"W must be (R, r, d) and a (R, r); got {tuple(W.shape)} and {tuple(a.shape)}")
    W, a = W.detach().clone(), a.detach().clone()
    opt = torch.optim.Adam([W, a], lr=lr, fused=W.device.type in ("cpu", "cuda"))
    for step in range(1, steps + 1):
        loss, W.grad, a.grad = polynet_gradients(W, a, A_star, M4)
        opt.step()
        if check is not None and (step == steps or step % every == 0):
            check("gd loss", float(loss.sum()), step)
    return W, a


def newton_polish(
    f: Callable[[torch.Tensor], torch.Tensor], theta: torch.Tensor, steps: int, tol: float = 1e-13
) -> torch.Tensor:
    """Damped pseudo-inverse Newton on a flat parameter vector: each step solves H s = g by least squares (rcond
    1e-10, so the symmetry null space is left alone) and halves s until the gradient norm drops; stops at
    ``|g| < tol``, after ``steps`` steps, or when no halving helps."""
    g = gradient(f, theta)
    for _ in range(steps):
        if float(g.norm()) < tol:
            break
        step = torch.linalg.lstsq(hessian(f, theta), g[:, None], rcond=1e-10).solution[:, 0]
        for _ in range(8):
            new = theta - step
            g_new = gradient(f, new)
            if float(g_new.norm()) < float(g.norm()):
                theta, g = new, g_new
                break
            step = step / 2
        else:
            break
    return theta


HALVINGS = 8  # step halvings newton_polish tries before it gives up


def newton_polish_many(
    f: Callable[..., torch.Tensor],
    thetas: torch.Tensor,
    steps: int,
    tol: float = 1e-13,
    args: tuple[torch.Tensor, ...] = (),
) -> torch.Tensor:
    """:func:`newton_polish` for R flat parameter vectors ``thetas`` (R, P) at once. Every row takes the step its
    own pseudo-inverse Newton solve gives, halved as often as the lone polish would halve it (all eight halvings
    are evaluated together and the first that lowers the row's gradient norm is kept), and freezes where the lone
    polish would stop (``|g| < tol``, no halving helps): the same path to rounding (where a row wanders without
    converging, rounding can send it elsewhere). ``args`` are per-row tensors (leading dimension R) passed to
    ``f(theta, *args)``, e.g. each row's teacher. Thousands of tiny autograd calls become a few batched ones: the
    monomial-networks metric count polishes 200 endpoints x 2 metrics for each of 50 teachers."""
    if thetas.ndim != 2:
        raise ValueError(f"thetas must be (R, P); got shape {tuple(thetas.shape)}")
    theta = thetas.detach().clone()
    if any(len(x) != len(theta) for x in args):
        raise ValueError(f"every tensor in args needs one row per theta ({len(theta)})")
    grads, hessians = vmap(grad(f)), vmap(_hessian(f))
    g = grads(theta, *args)
    active = torch.ones(theta.shape[0], dtype=torch.bool)
    scale = 0.5 ** torch.arange(HALVINGS, dtype=theta.dtype)
    for _ in range(steps):
        active &= g.norm(dim=1) >= tol
        if not active.any():
            break
        idx = active.nonzero()[:, 0]
        H = hessians(theta[idx], *(x[idx] for x in args))
        H = 0.5 * (H + H.transpose(1, 2))
        step = torch.linalg.lstsq(H, g[idx, :, None], rcond=1e-10).solution[..., 0]
        cand = theta[idx][None] - scale[:, None, None] * step[None]  # (HALVINGS, A, P)
        rep = tuple(x[idx].repeat(HALVINGS, *([1] * (x.ndim - 1))) for x in args)
        g_cand = grads(cand.reshape(-1, theta.shape[1]), *rep).reshape(cand.shape)
        better = g_cand.norm(dim=2) < g[idx].norm(dim=1)[None]  # (HALVINGS, A)
        took = better.any(0)
        first = better.to(torch.int8).argmax(0)
        rows = torch.arange(len(idx))
        theta[idx[took]] = cand[first[took], rows[took]]
        g[idx[took]] = g_cand[first[took], rows[took]]
        active[idx[~took]] = False
    return theta
