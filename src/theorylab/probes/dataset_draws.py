"""Monte Carlo over data-set draws for linear (Gaussian) diffusion models (Wang, Zavatone-Veth, Pehlevan,
arXiv 2602.02908): the simulations that the deterministic equivalents of :mod:`theorylab.theory.rmt` predict.

Each draw is the known-mean sample covariance Σ̂ of n Gaussian points, drawn exactly
(:func:`theorylab.data.gaussian.wishart_sample_covariance`) in the population eigenbasis Σ = diag(λ): every
estimator here is rotation-equivariant, so that basis loses nothing. Draws are processed ``chunk`` at a time.

- :func:`spectral_draws`: one eigendecomposition Σ̂ = Q diag(w) Qᵀ per draw gives the diagonals (population
  basis) of the linear denoiser's gain Σ̂(Σ̂ + σ²)⁻¹, of Σ̂^(1/2) and of the PF-ODE sampling map
  F = (Σ̂ + σ²)^(1/2)(Σ̂ + σ_T²)^(−1/2), as running means with standard errors, and the map's outputs F u.
- :func:`bilinear_denoiser_draws`: vᵀD(x) = vᵀx − σ² vᵀ(Σ̂ + σ²)⁻¹x for readouts v and inputs x, by Cholesky.
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
import torch
from numpy.typing import NDArray

from theorylab.data.gaussian import wishart_sample_covariance
from theorylab.probes.estimators import RunningMoments

Progress = Callable[[Iterable[int], str], Iterable[int]]


def chunk_sizes(total: int, size: int) -> list[int]:
    """``total`` split into batches of ``size`` (the last one smaller)."""
    return [min(size, total - i) for i in range(0, total, size)]


def spectral_draws(
    eigenvalues: NDArray[np.float64],
    n: int,
    draws: int,
    chunk: int,
    sigma2: NDArray[np.float64],
    map_sigma: Iterable[float],
    sigma_T: float,
    map_inputs: NDArray[np.float64],
    rng: np.random.Generator,
    device: torch.device | str = "cpu",
    progress: Progress | None = None,
    check: Callable[[str, torch.Tensor], None] | None = None,
) -> dict:
    """Over ``draws`` sample covariances of ``n`` points: ``gain`` (a :class:`RunningMoments` of the diagonal of
    Σ̂(Σ̂ + σ²)⁻¹, shape (S, d) for the S levels ``sigma2``), ``sqrt`` (of diag Σ̂^(1/2), (d,)), ``map_mean``
    (per end level σ in ``map_sigma``: of diag F, (d,)) and ``map_outputs`` (per σ: F u for the rows u of
    ``map_inputs``, an array (draws, m, d)). ``check(what, eigenvalues)`` may raise on non-finite values."""
    to_dev = lambda a: torch.as_tensor(a, dtype=torch.float64, device=device)  # noqa: E731
    s2_t, u_t = to_dev(sigma2), to_dev(map_inputs)
    map_sigma = tuple(map_sigma)
    gain, sqrt = RunningMoments(), RunningMoments()
    map_mean = {s: RunningMoments() for s in map_sigma}
    map_out: dict[float, list[np.ndarray]] = {s: [] for s in map_sigma}
    sizes = chunk_sizes(draws, chunk)
    for size in sizes if progress is None else progress(sizes, f"n={n}: spectra of data-set draws"):
        cov = wishart_sample_covariance(eigenvalues, n, size, rng, device)
        w, q = torch.linalg.eigh(cov)  # (B, d), (B, d, d)
        if check is not None:
            check(f"Monte Carlo spectra (n={n})", w)
        w = w.clamp_min(0)
        q2 = q * q  # diag(Q f(w) Q^T) = (Q*Q) f(w)
        gains = w[:, None, :] / (w[:, None, :] + s2_t[None, :, None])  # (B, S, d)
        gain.add(torch.einsum("bij,bsj->bsi", q2, gains).cpu().numpy())
        sqrt.add(torch.einsum("bij,bj->bi", q2, w.sqrt()).cpu().numpy())
        uq = u_t @ q  # (B, m, d): inputs in each draw's eigenbasis
        for s in map_sigma:
            f = torch.sqrt((w + s * s) / (w + sigma_T**2))
            map_mean[s].add(torch.einsum("bij,bj->bi", q2, f).cpu().numpy())
            map_out[s].append(torch.einsum("bmd,bd,bid->bmi", uq, f, q).cpu().numpy())  # F u: (B, m, d)
        # Free this chunk before the next is drawn: held across the draw, its three (B, d, d) tensors would add
        # to the draw's four (measured: peak 7.2 x B d^2 float64 over several chunks, 4.1 x with this release).
        del cov, w, q, q2, gains, uq, f
    return dict(gain=gain, sqrt=sqrt, map_mean=map_mean, map_outputs={s: np.concatenate(v) for s, v in map_out.items()})


def bilinear_denoiser_draws(
    eigenvalues: NDArray[np.float64],
    n: int,
    draws: int,
    chunk: int,
    sigma2: float,
    readouts: NDArray[np.float64],
    inputs: NDArray[np.float64],
    rng: np.random.Generator,
    device: torch.device | str = "cpu",
    progress: Progress | None = None,
) -> NDArray[np.float64]:
    """``(draws, p, q)`` values of vᵀD(x) = vᵀx − σ² vᵀ(Σ̂ + σ²)⁻¹x of the linear denoiser at level ``sigma2``, for
    the p rows v of ``readouts`` and the q rows x of ``inputs``, over ``draws`` sample covariances of n points."""
    v_t = torch.as_tensor(readouts, dtype=torch.float64, device=device)
    x_t = torch.as_tensor(inputs, dtype=torch.float64, device=device)
    d = x_t.shape[-1]
    out = []
    sizes = chunk_sizes(draws, chunk)
    for size in sizes if progress is None else progress(sizes, f"n={n}: variance draws"):
        cov = wishart_sample_covariance(eigenvalues, n, size, rng, device)
        chol = torch.linalg.cholesky(cov + sigma2 * torch.eye(d, dtype=cov.dtype, device=cov.device))
        solved = torch.cholesky_solve(x_t.T.expand(size, -1, -1).contiguous(), chol)  # (B, d, q)
        out.append((v_t @ x_t.T - sigma2 * v_t @ solved).cpu().numpy())  # (B, p, q)
        del cov, chol, solved  # as in spectral_draws: the next chunk's draw must not stack on this one
    return np.concatenate(out)


def draws_peak_bytes(d: int, n: int, chunk: int) -> float:
    """Peak bytes above the interpreter's of :func:`spectral_draws` (the larger of the two functions) for dimension
    ``d``, ``n`` points and ``chunk`` draws at once: the draw of a chunk holds about four (B, d, d) float64 tensors
    at its peak (Bartlett's factor in float32 and float64, its product, the scaled covariance), then the covariance,
    its eigenvectors and their squares stay while the map outputs are formed (below ``n = d`` the explicit samples,
    (B, n, d) in float32 and twice in float64, weigh less than that). Calibrated by measurement (one thread,
    ``ru_maxrss``, d = 512, B = 100, three chunks: 4.1 x B d^2 x 8 bytes at n = 2d, 3.3 x at n = d/2; more below d =
    512, where ~100 MB of fixed costs show); the factors 4.5 and 3.6 and 150 MB for LAPACK's workspaces and the
    small temporaries make it an upper bound (``tests/probes/test_dataset_draws.py`` measures it)."""
    return (4.5 if n >= d else 3.6) * 8.0 * chunk * d * d + 150e6
