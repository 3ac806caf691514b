"""The finite-d two-timescale algorithm for Gaussian multi-index models (Bietti, Bruna & Pillaud-Vivien,
arXiv 2310.19793, Sec. 5 "practical implementation").

State: ``W`` (d, r) with orthonormal columns (a point of St(d, r), standing for its span on the Grassmannian).
Each step draws a fresh batch ``(x, y)``, ``y = f*(W*^T x)``, and
  1. fast step: refits the link by ridge regression on features of ``z = W^T x`` (tensorised orthonormal Hermite
     features up to a degree, or ``N`` random ReLU features: our stand-in for the paper's isotropic Hermite RKHS with
     random features);
  2. slow step: takes a Riemannian gradient step on the empirical loss with the link frozen,
     ``W <- qr(W - lr (I - W W^T) grad_W L)`` (QR retraction, column signs fixed).
With the link at its optimum, ``grad_W L`` estimates ``grad_W Phi`` (envelope theorem), so ``lr * step`` is the time
of the overlap ODE ``dM/dt = -(I - M M^T) grad_M Phi`` (``theorylab.theory.multi_index``). ``population=True``
replaces the samples by the exact ``grad_M Phi`` (the Euler discretisation of the same flow).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np
import torch
from torch import Tensor

from theorylab.theory.multi_index import grad_phi


def multi_indices(r: int, degree: int) -> list[tuple[int, ...]]:
    """Every ``alpha`` in N^r with ``|alpha| <= degree``, by total degree."""
    return [a for k in range(degree + 1) for a in itertools.product(range(k + 1), repeat=r) if sum(a) == k]


def hermite_features(z: Tensor, degree: int) -> Tensor:
    """Orthonormal tensorised Hermite features ``prod_i He_{alpha_i}(z_i) / sqrt(alpha_i!)``, ``|alpha| <= degree``:
    (n, number of multi-indices); ``E[phi phi^T] = I`` for ``z ~ N(0, I_r)``."""
    n, r = z.shape
    he = []
    for i in range(r):  # He_0..He_degree of each coordinate, already divided by sqrt(k!)
        t = z[:, i]
        cols = [torch.ones_like(t), t]
        for k in range(1, degree):
            cols.append(t * cols[k] - k * cols[k - 1])
        he.append([c / math.sqrt(math.factorial(k)) for k, c in enumerate(cols[: degree + 1])])
    feats = []
    for a in multi_indices(r, degree):
        f = torch.ones(n, dtype=z.dtype, device=z.device)
        for i, k in enumerate(a):
            if k:
                f = f * he[i][k]
        feats.append(f)
    return torch.stack(feats, dim=1)


def ridge(F: Tensor, y: Tensor, lam: float) -> Tensor:
    """``argmin_a mean (y - F a)^2 + lam |a|^2``."""
    n, p = F.shape
    A = F.T @ F / n + lam * torch.eye(p, dtype=F.dtype, device=F.device)
    return torch.linalg.solve(A, F.T @ y / n)


def retract(W: Tensor) -> Tensor:
    """QR retraction onto St(d, r) with the column signs fixed (so a tiny step stays close to ``W``)."""
    q, rr = torch.linalg.qr(W)
    return q * torch.sign(torch.diagonal(rr)).where(torch.diagonal(rr) != 0, torch.ones_like(torch.diagonal(rr)))


@dataclass
class TwoTimescaleRun:
    """``t`` (T,) on the ODE time axis (lr * step), overlaps ``M`` (T, r, r) = W*^T W, the batch loss after each
    logged refit (``loss``, NaN for the population variant), and the final ``W`` (d, r)."""

    t: np.ndarray
    M: np.ndarray
    loss: np.ndarray
    W: np.ndarray


def train_two_timescale(
    link: Callable[[np.ndarray], np.ndarray],
    W_star: np.ndarray,
    W0: np.ndarray,
    *,
    steps: int,
    lr: float,
    batch: int,
    generator: torch.Generator,
    features: Literal["hermite", "random"] = "hermite",
    degree: int = 4,
    n_features: int = 500,
    lam: float = 1e-6,
    log_every: int = 1,
    population: bool = False,
    coeffs=None,
    device: str | torch.device = "cpu",
) -> TwoTimescaleRun:
    """Run the two-timescale algorithm from ``W0`` for ``steps`` steps of size ``lr`` (module doc).

    ``link`` maps latents (n, r) numpy to labels (n,); ``coeffs`` (``{k: C_k}`` or a HermiteLink) is needed for
    ``population=True``. Randomness (batches, random features) comes only from ``generator``.
    """
    d, r = W_star.shape
    if W0.shape != (d, r):
        raise ValueError(f"W0 must have shape {(d, r)}; got {W0.shape}")
    if steps < 1 or lr <= 0 or batch < 1 or log_every < 1:
        raise ValueError(
            f"need steps >= 1, lr > 0, batch >= 1, log_every >= 1; got {steps}, {lr}, {batch}, {log_every}"
        )
    if population and coeffs is None:
        raise ValueError("population=True needs the link's Hermite coefficients 'coeffs'")
    if features not in ("hermite", "random"):
        raise ValueError(f"features must be 'hermite' or 'random'; got {features!r}")
    dt = torch.float64
    Ws = torch.as_tensor(W_star, dtype=dt, device=device)
    W = retract(torch.as_tensor(W0, dtype=dt, device=device))
    eye = torch.eye(d, dtype=dt, device=device)
    if features == "random":
        rf_w = torch.randn(r, n_features, generator=generator, dtype=dt).to(device)
        rf_b = torch.randn(n_features, generator=generator, dtype=dt).to(device)

        def feat(z):
            return torch.relu(z @ rf_w + rf_b) / math.sqrt(n_features)
    else:

        def feat(z):
            return hermite_features(z, degree)

    ts, Ms, losses = [0.0], [(Ws.T @ W).cpu().numpy()], [math.nan]
    for step in range(1, steps + 1):
        if population:
            M = (Ws.T @ W).cpu().numpy()
            G = Ws @ torch.as_tensor(grad_phi(M, coeffs), dtype=dt, device=device)
            loss = math.nan
        else:
            x = torch.randn(batch, d, generator=generator, dtype=dt).to(device)
            y = torch.as_tensor(link((x @ Ws).cpu().numpy()), dtype=dt, device=device)
            with torch.no_grad():
                a = ridge(feat(x @ W), y, lam)  # fast step: the link at its optimum for the current W
            Wv = W.clone().requires_grad_(True)
            res = y - feat(x @ Wv) @ a
            obj = (res**2).mean()
            (G,) = torch.autograd.grad(obj, Wv)
            loss = float(obj.detach())
        W = retract(W - lr * (eye - W @ W.T) @ G)
        if step % log_every == 0 or step == steps:
            ts.append(step * lr)
            Ms.append((Ws.T @ W).cpu().numpy())
            losses.append(loss)
    return TwoTimescaleRun(np.array(ts), np.stack(Ms), np.array(losses), W.cpu().numpy())
