"""Separable GP fields: Monte Carlo covariance against the kernel, Kronecker sampling against dense factorisations of
the full covariance with shared noise, the GP toy data set, and one-line errors."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.data.gp_fields import GPKernelFields, SeparableGP, grid_points, sample_separable

Z_MAX = 5.0


def _z_scores(samples: torch.Tensor, cov: torch.Tensor) -> torch.Tensor:
    """Entrywise z-scores of the known-mean sample covariance S = XᵀX/m against ``cov``: for Gaussian x,
    Var[S_ij] = (Σ_ij² + Σ_ii Σ_jj)/m (Isserlis), and S_ij is close to normal at m = 20,000."""
    x = samples.flatten(1)
    m = x.shape[0]
    S = x.T @ x / m
    sd = ((cov**2 + torch.outer(cov.diagonal(), cov.diagonal())) / m).sqrt()
    return (S - cov) / sd


CASES = [  # (kind, shape, lengthscale, scale, period, boundary, method, jitter)
    ("rbf", (7,), 0.5, 2.0, None, "open", "eigh", 0.0),
    ("rbf", (6, 5), 0.8, 0.5, None, "open", "eigh", 0.0),
    ("periodic", (6, 5), 0.7, 1.5, 1.3, "open", "eigh", 0.0),
    ("rbf", (3, 4, 2), 1.0, 1.0, None, "open", "cholesky", 1e-6),
    ("rbf", (6, 8), 0.6, 1.0, None, "periodic", "fft", 0.0),
    ("periodic", (5, 4, 3), 0.9, 0.3, 0.8, "periodic", "fft", 0.0),
]


@pytest.mark.parametrize("kind, shape, ell, scale, period, boundary, method, jitter", CASES)
def test_empirical_covariance_matches_the_kernel(kind, shape, ell, scale, period, boundary, method, jitter):
    """Max |z| over the ≤ 1,300 distinct entries stays below 5 (a two-sided 5σ tail is 5.7e-7 per entry, so a correct
    sampler trips it with probability < 1e-3); a kernel 25% off in lengthscale — or the other kernel — is far above."""
    gp = SeparableGP(kind, shape, ell, scale, period, boundary, jitter=jitter)
    x = gp.sample(20_000, torch.Generator().manual_seed(0), method=method)
    assert x.shape == (20_000, *shape) and x.dtype == torch.float64
    cov = gp.covariance()
    # the kernel itself, written out independently of the sampler
    grids = torch.meshgrid(*[grid_points(n, boundary) for n in shape], indexing="ij")
    pts = torch.stack([g.reshape(-1) for g in grids], -1)  # (N, d)
    diff = pts[:, None, :] - pts[None, :, :]
    if kind == "rbf":
        sq = diff**2 if boundary == "open" else (4 / math.pi * torch.sin(math.pi * diff / 4)) ** 2
        per_axis = torch.exp(-sq / (2 * ell**2))
    else:
        per_axis = torch.exp(-2 * torch.sin(math.pi * diff / period) ** 2 / ell**2)
    expected = scale * (per_axis + jitter * (diff == 0)).prod(-1)  # jitter sits on each axis factor's diagonal
    assert (cov - expected).abs().max() < 1e-12
    assert _z_scores(x, cov).abs().max() < Z_MAX
    wrong = SeparableGP(kind, shape, 1.25 * ell, scale, period, boundary, jitter=jitter).covariance()
    assert _z_scores(x, wrong).abs().max() > 2 * Z_MAX
    other = "periodic" if kind == "rbf" else "rbf"
    swapped = SeparableGP(other, shape, ell, scale, 4 / 5 if other == "periodic" else None, boundary).covariance()
    assert _z_scores(x, swapped).abs().max() > 2 * Z_MAX


def test_kronecker_cholesky_draw_equals_the_dense_cholesky_draw():
    """⊗_a chol(C_a) is the (unique) Cholesky factor of ⊗_a C_a, so the same noise gives the same field."""
    gp = SeparableGP("rbf", (5, 4, 3), 0.5, 1.7, jitter=1e-9)
    z = torch.randn(6, 5, 4, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    L = torch.linalg.cholesky(gp.covariance())
    dense = (z.reshape(6, -1) @ L.T).reshape(z.shape)
    kron = gp.sample(6, method="cholesky", noise=z)
    assert (kron - dense).abs().max() < 1e-12 * dense.abs().max()


@pytest.mark.parametrize("kind, period", [("rbf", None), ("periodic", 1.1)])
def test_kronecker_eigh_draw_equals_the_dense_symmetric_square_root(kind, period):
    """⊗_a C_a^{1/2} = (⊗_a C_a)^{1/2} (the unique PSD root), computed here from one dense eigendecomposition."""
    gp = SeparableGP(kind, (6, 5), 0.7, 0.9, period)
    z = torch.randn(4, 6, 5, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    lam, U = torch.linalg.eigh(gp.covariance())
    root = (U * lam.clamp(min=0).sqrt()) @ U.T
    dense = (z.reshape(4, -1) @ root.T).reshape(z.shape)
    assert (gp.sample(4, noise=z) - dense).abs().max() < 1e-9


@pytest.mark.parametrize("kind, period, tol", [("rbf", None, 1e-12), ("periodic", 4 / 3, 1e-6)])
def test_fft_draw_equals_the_eigh_draw_on_a_periodic_grid(kind, period, tol):
    """Both are the symmetric root of the same circulant. The periodic kernel with p = 4/3 on 8 points is rank
    deficient: its zero eigenvalues come out at rounding level (~1e-16) and enter through a square root, so there
    the two roots agree to ~√eps ≈ 1e-8 only."""
    gp = SeparableGP(kind, (8, 6), 0.5, 1.0, period, boundary="periodic")
    z = torch.randn(3, 8, 6, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    assert (gp.sample(3, method="fft", noise=z) - gp.sample(3, method="eigh", noise=z)).abs().max() < tol


@pytest.mark.parametrize("method, boundary", [("eigh", "open"), ("fft", "periodic")])
def test_per_field_parameters_match_one_process_per_field(method, boundary):
    ell = torch.tensor([0.3, 0.5, 0.9], dtype=torch.float64)
    scale = torch.tensor([0.2, 1.0, 3.0], dtype=torch.float64)
    period = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)
    z = torch.randn(3, 4, 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    batch = sample_separable("periodic", (4, 8), ell, scale, period, boundary=boundary, method=method, noise=z)
    for b in range(3):
        one = SeparableGP("periodic", (4, 8), float(ell[b]), float(scale[b]), float(period[b]), boundary)
        assert (batch[b] - one.sample(1, method=method, noise=z[b : b + 1])[0]).abs().max() < 1e-12
    same = z[:1].expand(3, 4, 8)
    shared = sample_separable("rbf", (4, 8), 0.5, scale, boundary=boundary, method=method, noise=same)
    assert (shared[2] / math.sqrt(3.0) - shared[1]).abs().max() < 1e-12  # only the amplitude differs


def test_gp_kernel_fields_toy():
    gen = GPKernelFields(2)
    out = gen.generate(torch.Generator().manual_seed(0))  # its speed is a benchmark's business, not a test's
    out3 = GPKernelFields(3).generate(torch.Generator().manual_seed(0))
    assert out["x"].shape == (800, 1, 32, 32) and out["x"].dtype == torch.float32
    assert out3["x"].shape == (800, 1, 16, 16, 16)
    assert [GPKernelFields(d).shape for d in (4, 5)] == [(8,) * 4, (4,) * 5]
    y = out["y"]
    assert int(y.sum()) == 400 and set(y.tolist()) == {0, 1}
    assert 0 < int(y[:400].sum()) < 400  # shuffled, not sorted by class
    assert out["lengthscale"].min() >= 0.1 and out["lengthscale"].max() <= 0.6
    assert out["scale"].min() >= 0.1 and out["scale"].max() <= 1.0
    per = out["period"]
    assert per[y == 0].isnan().all() and per[y == 1].min() >= 0.1 and per[y == 1].max() <= 0.5
    assert len(out["train"]) == 640 and len(out["test"]) == 160
    assert set(out["train"].tolist()) | set(out["test"].tolist()) == set(range(800))
    # field variance follows the drawn scale (the marginal variance): per-field mean of x² / scale ≈ 1
    ratio = out["x"].double().pow(2).mean(dim=(1, 2, 3)) / out["scale"]
    assert 0.8 < float(ratio.mean()) < 1.2
    again = gen.generate(torch.Generator().manual_seed(0))
    assert torch.equal(again["x"], out["x"]) and torch.equal(again["y"], y)
    assert not torch.equal(gen.generate(torch.Generator().manual_seed(1))["x"], out["x"])
    periodic = GPKernelFields(2, per_class=20, boundary="periodic").generate(torch.Generator().manual_seed(0))
    ratio = 4.0 / periodic["period"][periodic["y"] == 1]
    assert (ratio - ratio.round()).abs().max() < 1e-9  # snapped so that the period divides the circle


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: SeparableGP("matern", (4,), 0.5), "kind"),
        (lambda: SeparableGP("rbf", (4,), 0.0), "lengthscale"),
        (lambda: SeparableGP("rbf", (4,), 0.5, scale=-1.0), "scale"),
        (lambda: SeparableGP("periodic", (4,), 0.5), "needs a period"),
        (lambda: SeparableGP("rbf", (), 0.5), "shape"),
        (lambda: SeparableGP("rbf", (4, 0), 0.5), "shape"),
        (lambda: SeparableGP("periodic", (8,), 0.5, period=0.7, boundary="periodic"), "divide"),
        (lambda: SeparableGP("rbf", (4,), 0.5, boundary="torus"), "boundary"),
        (lambda: SeparableGP("rbf", (4,), 0.5).sample(2, method="svd"), "method"),
        (lambda: SeparableGP("rbf", (4,), 0.5).sample(2, method="fft"), "periodic"),
        (lambda: SeparableGP("rbf", (64,), 0.6).sample(2, method="cholesky"), "not positive definite"),
        (lambda: sample_separable("rbf", (4,), torch.ones(3), torch.ones(2)), "share one length"),
        (lambda: sample_separable("rbf", (4,), 0.5), "give n"),
        (lambda: sample_separable("rbf", (4,), 0.5, noise=torch.zeros(2, 5)), "noise must have shape"),
        (lambda: GPKernelFields(0), "dims"),
        (lambda: GPKernelFields(2, lengthscale=(0.6, 0.1)), "lengthscale range"),
        (lambda: GPKernelFields(2, train_fraction=1.0), "train_fraction"),
    ],
)
def test_bad_inputs_fail_with_one_clear_line(call, match):
    with pytest.raises(ValueError, match=match) as err:
        call()
    assert "\n" not in str(err.value)
