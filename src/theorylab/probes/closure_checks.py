"""Measurements on closures: the exact algebra of the closure target, the Germano identity, offline skill.

The closure of a coarse model on ``n`` points is ``S^(n)(u) = C_n(F_fine(u)) − F_n(C_n u)`` (the PDE kit's
:func:`~theorylab.data.pde.closure_target`). For a chain of grids ``n_0 < N_c`` with a coarsening ``D`` from
``N_c`` to ``n_0`` such that ``D ∘ C_{N_c} = C_{n_0}`` (nested sharp truncations), the Germano identity of LES
(Germano 1992, applied here to the chain of scales of Otness, Zanna, Bruna, arXiv 2303.17496) holds exactly:

    S^(n_0)(u) = D(S^(N_c)(u)) + S^(N_c→n_0)(C_{N_c} u),    S^(N_c→n_0)(v) = D(F_{N_c}(v)) − F_{n_0}(D v),

where the last term is computed from the resolved field alone. So the target of the multiscale chain's
downscale step, ``D(S^(N_c))``, is the true closure at ``n_0`` minus a known term.

- :func:`full_band`: the full-band truncation operator (every mode the coarse grid holds, no dealiasing band),
  the mismatched operator of the negative controls.
- :func:`linear_only`: a copy of a solver with its nonlinear term switched off.
- :func:`closure_algebra`: C∘C = C, S ≡ 0 inside the coarse band, S ≡ 0 for linear dynamics.
- :func:`germano_errors`: the identity's relative error per snapshot.
- :func:`offline_relative_mse`: ``‖Ŝ − S‖² / ‖S‖²`` per level of a closure model.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import torch
from torch import Tensor

from theorylab.data.pde import DTYPE, closure_target, resample_spectral, tendency

Coarsen = Callable[[Tensor], Tensor]


def full_band(n: int, dims: int = 1) -> Coarsen:
    """Full-band spectral truncation to ``n`` points per axis (``resample_spectral``): keeps ``|m| < n/2``."""
    return lambda x: resample_spectral(x.to(DTYPE), n, dims=dims)


def linear_only(system: Any) -> Any:
    """A shallow copy of ``system`` whose nonlinear term is zero (its linear part and grid unchanged)."""
    lin = copy.copy(system)
    lin.nonlinear = lambda v: torch.zeros_like(v)
    return lin


def _rel(a: Tensor, b: Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def band_limited(x: Tensor, n_band: int, dims: int = 1) -> Tensor:
    """``x`` with every Fourier mode at or beyond ``n_band / 3`` (per axis) removed: a field supported in the
    dealiased band of an ``n_band``-point grid, kept on ``x``'s own grid."""
    n = x.shape[-1]
    if dims == 1:
        xh = torch.fft.rfft(x.to(DTYPE), dim=-1)
        return torch.fft.irfft(xh * (torch.arange(xh.shape[-1]) < n_band / 3), n=n, dim=-1)
    xh = torch.fft.rfft2(x.to(DTYPE))
    kx = torch.arange(n // 2 + 1)[None, :]
    ky = torch.fft.fftfreq(n, 1.0 / n).abs()[:, None]
    return torch.fft.irfft2(xh * ((kx < n_band / 3) & (ky < n_band / 3)), s=(n, n))


def closure_algebra(fine: Any, coarse: Any, coarsen: Coarsen, u: Tensor, dims: int = 1) -> dict[str, float]:
    """The closure's exact algebra on fine states ``u``:

    - ``idempotence``: ``‖C(C u) − C u‖ / ‖C u‖`` (C applied again on the coarse grid);
    - ``inside_band``: ``‖S(v)‖ / ‖F_coarse(C v)‖`` for ``v`` = ``u`` restricted to the coarse dealiased band
      (products of such fields are resolved on both grids, so S = 0);
    - ``linear``: ``‖S_lin(u)‖ / ‖F_coarse,lin(C u)‖`` with the nonlinear term off on both grids (the linear
      operators are the same Fourier multipliers on both grids and commute with C)."""
    cu = coarsen(u)
    v = band_limited(u, coarse.N, dims)
    lf, lc = linear_only(fine), linear_only(coarse)
    return dict(
        idempotence=_rel(coarsen(cu), cu),
        inside_band=float(closure_target(fine, coarse, coarsen, v).norm() / tendency(coarse, coarsen(v)).norm()),
        linear=float(closure_target(lf, lc, coarsen, u).norm() / tendency(lc, coarsen(u)).norm()),
    )


def germano_errors(
    fine: Any, coarse: Any, small: Any, coarsen: Coarsen, down: Coarsen, coarsen_small: Coarsen, u: Tensor
) -> Tensor:
    """``[B]`` relative error ``‖LHS − RHS‖ / ‖LHS‖`` of the Germano identity per snapshot ``u[b]``:
    LHS ``= S^(n_0)(u)`` with ``coarsen_small`` (``C_{n_0}``), RHS ``= D(S^(N_c)(u)) + D(F_{N_c}(C u)) −
    F_{n_0}(D C u)`` with ``coarsen`` (``C_{N_c}``) and ``down`` (``D``). ``coarse``/``small`` are the solvers on
    ``N_c``/``n_0`` points. Exact (rounding) when ``D ∘ C_{N_c} = C_{n_0}``; a mismatched ``coarsen_small``
    (e.g. full band while the chain uses the dealiased band) is the negative control."""
    lhs = closure_target(fine, small, coarsen_small, u)
    cu = coarsen(u)
    rhs = down(closure_target(fine, coarse, coarsen, u)) + down(tendency(coarse, cu)) - tendency(small, down(cu))
    err = (lhs - rhs).flatten(1).norm(dim=-1)
    return err / lhs.flatten(1).norm(dim=-1).clamp_min(1e-300)


@torch.no_grad()
def offline_relative_mse(
    model: torch.nn.Module, x: Tensor, targets: Sequence[Tensor], chunk: int = 1024
) -> list[float]:
    """``‖Ŝ_k − S_k‖² / ‖S_k‖²`` per level ``k`` of ``model.levels_forward`` (a multiscale or direct closure) over
    inputs ``x`` and ``targets[k]`` (pooled over every sample, point and channel)."""
    err = [0.0] * len(targets)
    for i in range(0, len(x), chunk):
        preds = model.levels_forward(x[i : i + chunk])
        for k, (p, t) in enumerate(zip(preds, targets)):
            err[k] += float((p.double() - t[i : i + chunk].double()).pow(2).sum())
    return [e / float(t.double().pow(2).sum()) for e, t in zip(err, targets)]
