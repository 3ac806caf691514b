"""Second-order local geometry of a scalar function of a flat parameter vector, via torch.func.

``hessian`` (dense, forward-over-reverse), ``hvp`` (Hessian-vector products without forming H), ``inertia``
(negative / zero / positive eigenvalue counts with an explicit tolerance), ``project_out`` (the Hessian restricted
to the orthogonal complement of given directions, e.g. the tangent space of a parameter symmetry, whose zero
eigenvalues are not information about the critical point) and ``signature`` (all of it at one point). Generic: any
``f: (P,) tensor -> scalar tensor``.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch.func import grad, jvp, vmap
from torch.func import hessian as _hessian

__all__ = ["gradient", "hessian", "hvp", "inertia", "orthonormal_complement", "project_out", "signature"]

Scalar = Callable[[torch.Tensor], torch.Tensor]


def _flat(theta: torch.Tensor) -> torch.Tensor:
    theta = torch.as_tensor(theta)
    if theta.ndim != 1 or not theta.is_floating_point():
        raise ValueError(f"theta must be a 1-d floating tensor; got shape {tuple(theta.shape)}, dtype {theta.dtype}")
    return theta.detach()


def gradient(f: Scalar, theta: torch.Tensor) -> torch.Tensor:
    """grad f(theta)."""
    return grad(f)(_flat(theta))


def hessian(f: Scalar, theta: torch.Tensor) -> torch.Tensor:
    """Dense Hessian (P, P) of f at theta, symmetrised (forward-over-reverse rounding is not exactly symmetric)."""
    H = _hessian(f)(_flat(theta))
    return 0.5 * (H + H.T)


def hvp(f: Scalar, theta: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """H(theta) v for one vector v (P,) or a batch (B, P), without forming H."""
    theta = _flat(theta)
    v = torch.as_tensor(v, dtype=theta.dtype)

    def one(u: torch.Tensor) -> torch.Tensor:
        return jvp(grad(f), (theta,), (u,))[1]

    if v.shape == theta.shape:
        return one(v)
    if v.ndim == 2 and v.shape[1] == theta.shape[0]:
        return vmap(one)(v)
    raise ValueError(f"v must be of shape (P,) or (B, P) with P = {theta.shape[0]}; got {tuple(v.shape)}")


def orthonormal_complement(directions: torch.Tensor, dim: int, rtol: float = 1e-10) -> torch.Tensor:
    """Orthonormal basis (dim, dim - rank) of the complement of span(rows of ``directions``)."""
    D = torch.as_tensor(directions, dtype=torch.float64).reshape(-1, dim)
    if D.shape[0] == 0:
        return torch.eye(dim, dtype=torch.float64)
    U, s, Vh = torch.linalg.svd(D, full_matrices=True)
    rank = int((s > rtol * s.max()).sum()) if s.numel() and float(s.max()) > 0 else 0
    return Vh[rank:].T


def project_out(H: torch.Tensor, directions: torch.Tensor | None, rtol: float = 1e-10) -> torch.Tensor:
    """Q^T H Q with Q an orthonormal basis of the complement of the directions (rows)."""
    H = torch.as_tensor(H)
    if H.ndim != 2 or H.shape[0] != H.shape[1]:
        raise ValueError(f"H must be square; got {tuple(H.shape)}")
    if directions is None:
        return H
    Q = orthonormal_complement(directions, H.shape[0], rtol).to(H.dtype)
    return Q.T @ H @ Q


def inertia(H: torch.Tensor, tol: float = 1e-8, relative: bool = False) -> dict:
    """Counts of eigenvalues < -tol, |.| <= tol and > tol (tol scaled by the largest |eigenvalue| if relative),
    with the eigenvalues (ascending)."""
    H = torch.as_tensor(H, dtype=torch.float64)
    if H.ndim != 2 or H.shape[0] != H.shape[1]:
        raise ValueError(f"H must be square; got {tuple(H.shape)}")
    if tol < 0:
        raise ValueError(f"tol must be >= 0; got {tol}")
    ev = torch.linalg.eigvalsh(0.5 * (H + H.T))
    cut = tol * float(ev.abs().max()) if relative and ev.numel() else tol
    return dict(
        negative=int((ev < -cut).sum()),
        zero=int((ev.abs() <= cut).sum()),
        positive=int((ev > cut).sum()),
        eigenvalues=ev,
    )


def signature(f: Scalar, theta: torch.Tensor, directions: torch.Tensor | None = None, tol: float = 1e-8) -> dict:
    """At theta: gradient norm, inertia of the full Hessian and of the Hessian with ``directions`` projected out
    (keys ``negative``/``zero``/``positive`` and ``reduced_negative``/... ), smallest |eigenvalue| of the reduced
    Hessian."""
    g = gradient(f, theta)
    H = hessian(f, theta)
    full = inertia(H, tol)
    red = inertia(project_out(H, directions), tol)
    return dict(
        grad_norm=float(g.norm()),
        negative=full["negative"],
        zero=full["zero"],
        positive=full["positive"],
        reduced_negative=red["negative"],
        reduced_zero=red["zero"],
        reduced_positive=red["positive"],
        reduced_min_abs=float(red["eigenvalues"].abs().min()) if red["eigenvalues"].numel() else float("nan"),
        eigenvalues=full["eigenvalues"],
    )
