"""Gaussian-process random fields on d-dimensional grids with separable (Kronecker) covariance, sampled exactly.

A field on the grid ``x_1 × ... × x_d`` (``n_a`` points per axis) has covariance

    Cov[f(x), f(x')] = scale · Π_a k(x_a − x'_a),     i.e.  Σ = scale · (C_1 ⊗ ... ⊗ C_d),

with a unit-diagonal 1-D correlation ``C_a`` per axis. A draw ``f = √scale · (R_1 ⊗ ... ⊗ R_d) z``,
``R_a R_aᵀ = C_a``, ``z ~ N(0, I)``, is exact and costs d small factorisations and d mode products
(``O(N Σ_a n_a)``) instead of one ``O(N³)`` factorisation of Σ (N = Π_a n_a). Methods:

- ``"eigh"`` (default): ``R_a = U_a Λ_a^{1/2} U_aᵀ``, the symmetric square root (tiny negative eigenvalues
  from rounding clipped to 0); robust for the near-singular matrices smooth kernels give;
- ``"cholesky"``: ``R_a`` lower-triangular; then ``⊗_a R_a`` *is* the Cholesky factor of ``⊗_a C_a``, so
  with the same noise a draw equals the dense-Cholesky draw (needs ``jitter`` for smooth kernels);
- ``"fft"`` (``boundary="periodic"`` only): ``C_a`` is circulant, ``R_a = F⁻¹ diag(√λ_a) F`` with λ_a the
  FFT of its first row; equals ``"eigh"`` with the same noise, in ``O(N log N)``.

Kernels (``k(0) = 1``): ``"rbf"`` ``exp(−Δ²/(2ℓ²))``; ``"periodic"`` ``exp(−2 sin²(πΔ/p)/ℓ²)`` (ExpSineSquared).
Grids (``boundary``): ``"open"``, ``n`` points ``linspace(low, high, n)`` and ``Δ = x − x'`` (the paper's box
[−2, 2]^d); ``"periodic"``, ``n`` points ``low + (high − low) m / n`` on a circle of length L = high − low,
where the RBF uses the chordal distance ``Δ² → (L/π)² sin²(πΔ/L)`` (a Gaussian on the embedded circle,
hence positive definite) and the periodic kernel needs ``L / p`` to be an integer.

:class:`SeparableGP` is one such process; :func:`sample_separable` draws a batch with one parameter
set per field; :class:`GPKernelFields` is the axial-networks GP toy (RBF-vs-periodic classification,
Kim et al., arXiv 2510.13665, Sec. 5.1; separable product kernels are our deviation, see the card).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

import torch
from torch import Tensor

KINDS = ("rbf", "periodic")
BOUNDARIES = ("open", "periodic")
METHODS = ("eigh", "cholesky", "fft")
DTYPE = torch.float64

Kind = Literal["rbf", "periodic"]
Boundary = Literal["open", "periodic"]
Method = Literal["eigh", "cholesky", "fft"]


def _choice(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")


def _positive(name: str, value: float | Tensor) -> Tensor:
    t = torch.as_tensor(value, dtype=DTYPE).reshape(-1)
    if t.numel() == 0 or not bool(torch.isfinite(t).all()) or bool((t <= 0).any()):
        raise ValueError(
            f"{name} must be finite and > 0; got {value if t.numel() <= 4 else 'a tensor'} "
            f"(min {t.min().item() if t.numel() else 'n/a'})"
        )
    return t


def grid_points(n: int, boundary: Boundary = "open", low: float = -2.0, high: float = 2.0) -> Tensor:
    """The ``n`` grid coordinates of one axis (float64): ``linspace(low, high, n)`` for ``"open"``,
    ``low + (high − low) m / n`` (m = 0..n−1) for ``"periodic"``."""
    _choice("boundary", boundary, BOUNDARIES)
    if n < 1 or not low < high:
        raise ValueError(f"grid needs n >= 1 and low < high; got n={n}, low={low}, high={high}")
    if boundary == "open":
        return torch.linspace(low, high, n, dtype=DTYPE)
    return low + (high - low) * torch.arange(n, dtype=DTYPE) / n


def axis_correlation(
    kind: Kind,
    points: Tensor,
    lengthscale: float | Tensor,
    period: float | Tensor | None = None,
    boundary: Boundary = "open",
    length: float | None = None,
) -> Tensor:
    """The unit-diagonal 1-D correlation matrix ``k(x_m − x_n)`` on ``points`` ``[n]``: ``[n, n]``, or ``[B, n, n]``
    when ``lengthscale`` (and ``period``) hold one value per field ``[B]``. ``length`` is the circle length
    for ``boundary="periodic"``."""
    _choice("kind", kind, KINDS)
    _choice("boundary", boundary, BOUNDARIES)
    ell = _positive("lengthscale", lengthscale)
    batched = torch.as_tensor(lengthscale).ndim > 0 or (period is not None and torch.as_tensor(period).ndim > 0)
    delta = (points[:, None] - points[None, :]).to(DTYPE)  # (n, n)
    if boundary == "periodic":
        if length is None or not length > 0:
            raise ValueError(f"boundary='periodic' needs the circle length > 0; got {length}")
    if kind == "rbf":
        sq = delta**2 if boundary == "open" else (length / math.pi * torch.sin(math.pi * delta / length)) ** 2
        c = torch.exp(-sq / (2 * ell[:, None, None] ** 2))
    else:
        if period is None:
            raise ValueError("kind='periodic' needs a period")
        p = _positive("period", period)
        if boundary == "periodic":
            ratio = length / p
            if bool(((ratio - ratio.round()).abs() > 1e-9 * ratio).any()):
                raise ValueError(
                    f"on a periodic grid of length {length} the period must divide it; got period "
                    f"{period if p.numel() <= 4 else 'a tensor'} (use a period L / m)"
                )
        c = torch.exp(-2 * torch.sin(math.pi * delta / p[:, None, None]) ** 2 / ell[:, None, None] ** 2)
    return c if batched else c[0]


def _root(c: Tensor, method: str, jitter: float) -> Tensor:
    """``R`` with ``R Rᵀ = c + jitter I`` (``c``: ``[..., n, n]``)."""
    n = c.shape[-1]
    if jitter:
        c = c + jitter * torch.eye(n, dtype=c.dtype)
    if method == "cholesky":
        L, info = torch.linalg.cholesky_ex(c)
        if bool((info != 0).any()):
            raise ValueError(
                f"a kernel matrix is not positive definite at jitter={jitter}; raise jitter or use method='eigh'"
            )
        return L
    lam, U = torch.linalg.eigh(c)
    return (U * lam.clamp(min=0).sqrt()[..., None, :]) @ U.mT


def _mode_product(z: Tensor, R: Tensor, axis: int) -> Tensor:
    """Apply ``R`` (``[n, n]`` or ``[B, n, n]``) along spatial ``axis`` of ``z`` ``[B, *shape]``."""
    zt = z.movedim(1 + axis, -1)  # (B, ..., n)
    shape = zt.shape
    out = zt.reshape(shape[0], -1, shape[-1]) @ R.mT  # (B, M, n)
    return out.reshape(shape).movedim(-1, 1 + axis)


def sample_separable(
    kind: Kind,
    shape: Sequence[int],
    lengthscale: float | Tensor,
    scale: float | Tensor = 1.0,
    period: float | Tensor | None = None,
    generator: torch.Generator | None = None,
    n: int | None = None,
    boundary: Boundary = "open",
    method: Method = "eigh",
    low: float = -2.0,
    high: float = 2.0,
    jitter: float = 0.0,
    noise: Tensor | None = None,
) -> Tensor:
    """Exact draws of the separable GP on the grid ``shape`` (float64 ``[B, *shape]``).

    Parameters are scalars (then ``n`` fields share them) or ``[B]`` tensors (one set per field).
    The standard normal noise ``z`` ``[B, *shape]`` is drawn from ``generator`` unless ``noise`` is given
    (the same noise through two methods gives the same field up to rounding where their roots agree)."""
    _choice("kind", kind, KINDS)
    _choice("boundary", boundary, BOUNDARIES)
    _choice("method", method, METHODS)
    shape = tuple(int(s) for s in shape)
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"shape must hold d >= 1 sizes >= 1; got {shape}")
    if method == "fft" and boundary != "periodic":
        raise ValueError("method='fft' needs boundary='periodic' (a circulant covariance)")
    if jitter < 0:
        raise ValueError(f"jitter must be >= 0; got {jitter}")
    if kind == "periodic" and period is None:
        raise ValueError("kind='periodic' needs a period")
    ell, s = _positive("lengthscale", lengthscale), _positive("scale", scale)
    p = _positive("period", period) if kind == "periodic" else None
    sizes = {ell.numel(), s.numel(), 1 if p is None else p.numel()} - {1}
    if len(sizes) > 1:
        raise ValueError(f"per-field parameters must share one length; got lengths {sorted(sizes)}")
    batch = sizes.pop() if sizes else None
    if noise is None:
        B = batch if batch is not None else n
        if B is None or B < 1:
            raise ValueError(f"give n >= 1 (the number of fields) or per-field parameter tensors; got n={n}")
        noise = torch.randn(B, *shape, generator=generator, dtype=DTYPE)
    elif tuple(noise.shape[1:]) != shape or (batch is not None and noise.shape[0] != batch):
        raise ValueError(
            f"noise must have shape [B, *{shape}] with B matching the parameters; got {tuple(noise.shape)}"
        )
    z = noise.to(DTYPE)
    per_field = batch is not None
    if per_field:  # one parameter set per field: [B] tensors give [B, n, n] roots
        ell, p = ell.expand(batch), (None if p is None else p.expand(batch))
    else:  # shared: 0-d tensors give one [n, n] root
        ell, p = ell[0], (None if p is None else p[0])
    length = high - low
    if method == "fft":
        spec = torch.ones(1, dtype=DTYPE)
        for a, n_a in enumerate(shape):
            first_row = axis_correlation(kind, grid_points(n_a, "periodic", low, high), ell, p, "periodic", length)[
                ..., 0, :
            ]
            lam = torch.fft.fft(first_row).real.clamp(min=0)  # ([B,] n_a): eigenvalues of the circulant
            view = [-1 if per_field else 1] + [1] * len(shape)
            view[1 + a] = n_a
            spec = spec * lam.reshape(view)
        dims = tuple(range(1, len(shape) + 1))
        f = torch.fft.ifftn(spec.sqrt() * torch.fft.fftn(z, dim=dims), dim=dims).real
    else:
        f, cache = z, {}
        for a, n_a in enumerate(shape):
            if n_a not in cache:
                c = axis_correlation(kind, grid_points(n_a, boundary, low, high), ell, p, boundary, length)
                cache[n_a] = _root(c, method, jitter)
            f = _mode_product(f, cache[n_a], a)
    amp = s.sqrt().reshape(-1, *[1] * len(shape))
    return amp * f


@dataclass(frozen=True)
class SeparableGP:
    """One separable GP on the grid ``shape`` over ``[low, high]^d``: covariance ``scale · ⊗_a C_a``."""

    kind: Kind
    shape: tuple[int, ...]
    lengthscale: float
    scale: float = 1.0
    period: float | None = None
    boundary: Boundary = "open"
    low: float = -2.0
    high: float = 2.0
    jitter: float = 0.0

    def __post_init__(self) -> None:
        _choice("kind", self.kind, KINDS)
        _choice("boundary", self.boundary, BOUNDARIES)
        if not self.shape or any(int(s) < 1 for s in self.shape):
            raise ValueError(f"shape must hold d >= 1 sizes >= 1; got {self.shape}")
        _positive("lengthscale", self.lengthscale)
        _positive("scale", self.scale)
        if self.kind == "periodic":
            if self.period is None:
                raise ValueError("kind='periodic' needs a period")
            _positive("period", self.period)
        if self.jitter < 0:
            raise ValueError(f"jitter must be >= 0; got {self.jitter}")
        for n in set(self.shape):  # the period/grid compatibility check, early
            self.axis_correlation(n)

    def axis_correlation(self, n: int) -> Tensor:
        """``C`` ``[n, n]`` for an axis of ``n`` points (jitter not included)."""
        return axis_correlation(
            self.kind,
            grid_points(n, self.boundary, self.low, self.high),
            self.lengthscale,
            self.period,
            self.boundary,
            self.high - self.low,
        )

    def covariance(self) -> Tensor:
        """The dense ``[N, N]`` covariance ``scale · ⊗_a (C_a + jitter I)`` (row-major grid order), for checks."""
        N = math.prod(self.shape)
        if N > 8192:
            raise ValueError(f"the dense covariance of {N} points is too large to form here; N <= 8192")
        out = torch.ones(1, 1, dtype=DTYPE)
        for n in self.shape:
            out = torch.kron(out, self.axis_correlation(n) + self.jitter * torch.eye(n, dtype=DTYPE))
        return self.scale * out

    def sample(
        self, n: int, generator: torch.Generator | None = None, method: Method = "eigh", noise: Tensor | None = None
    ) -> Tensor:
        """``n`` exact draws, float64 ``[n, *shape]``."""
        return sample_separable(
            self.kind,
            self.shape,
            self.lengthscale,
            self.scale,
            self.period,
            generator,
            n,
            self.boundary,
            method,
            self.low,
            self.high,
            self.jitter,
            noise,
        )


@dataclass(frozen=True)
class GPKernelFields:
    """The axial-networks GP toy: binary classification of fields drawn with an RBF (label 0) or a periodic
    (label 1) separable kernel on ``[low, high]^d`` with ``n`` points per axis (default ``2^(7−d)``: 2D 32²,
    3D 16³, 4D 8⁴, 5D 4⁵). Per field: ``ℓ ~ U[lengthscale]``, ``scale ~ U[scale]`` (the marginal
    variance), and for periodic fields ``p ~ U[period]`` (on a periodic grid p is snapped to the nearest
    ``L / m`` so that the kernel lives on the circle). Sampling is exact (``"eigh"``, or ``"fft"`` on a
    periodic grid)."""

    dims: int
    n: int | None = None
    per_class: int = 400
    lengthscale: tuple[float, float] = (0.1, 0.6)
    scale: tuple[float, float] = (0.1, 1.0)
    period: tuple[float, float] = (0.1, 0.5)
    boundary: Boundary = "open"
    low: float = -2.0
    high: float = 2.0
    train_fraction: float = 0.8

    def __post_init__(self) -> None:
        if self.dims < 1 or self.per_class < 1:
            raise ValueError(f"GPKernelFields needs dims >= 1 and per_class >= 1; got {self.dims}, {self.per_class}")
        if self.n is not None and self.n < 1:
            raise ValueError(f"n must be >= 1; got {self.n}")
        if self.dims > 6 and self.n is None:
            raise ValueError(f"give n for dims > 6 (the default 2^(7-d) is < 2); got dims={self.dims}")
        for name in ("lengthscale", "scale", "period"):
            lo, hi = getattr(self, name)
            if not 0 < lo <= hi:
                raise ValueError(f"{name} range must satisfy 0 < low <= high; got ({lo}, {hi})")
        _choice("boundary", self.boundary, BOUNDARIES)
        if not 0 < self.train_fraction < 1:
            raise ValueError(f"train_fraction must be in (0, 1); got {self.train_fraction}")

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n if self.n is not None else 2 ** (7 - self.dims),) * self.dims

    def generate(self, generator: torch.Generator) -> dict[str, Tensor]:
        """``x`` float32 ``[2 per_class, 1, *shape]``, ``y`` int64 (0 RBF, 1 periodic), the per-field ``lengthscale``,
        ``scale`` and ``period`` (NaN for RBF fields) in float64, and ``train`` / ``test`` index tensors
        (a random ``train_fraction`` split). Fields are in random order."""
        P = self.per_class

        def uniform(lo_hi: tuple[float, float], m: int) -> Tensor:
            lo, hi = lo_hi
            return lo + (hi - lo) * torch.rand(m, generator=generator, dtype=DTYPE)

        ell, amp = uniform(self.lengthscale, 2 * P), uniform(self.scale, 2 * P)
        period = uniform(self.period, P)
        if self.boundary == "periodic":
            L = self.high - self.low
            period = L / (L / period).round().clamp(min=1)
        method = "fft" if self.boundary == "periodic" else "eigh"
        kw = dict(generator=generator, boundary=self.boundary, method=method, low=self.low, high=self.high)
        rbf = sample_separable("rbf", self.shape, ell[:P], amp[:P], **kw)
        per = sample_separable("periodic", self.shape, ell[P:], amp[P:], period, **kw)
        order = torch.randperm(2 * P, generator=generator)
        y = torch.cat([torch.zeros(P, dtype=torch.long), torch.ones(P, dtype=torch.long)])
        periods = torch.cat([torch.full((P,), float("nan"), dtype=DTYPE), period])
        n_train = round(self.train_fraction * 2 * P)
        idx = torch.arange(2 * P)
        return dict(
            x=torch.cat([rbf, per])[order].unsqueeze(1).float(),
            y=y[order],
            lengthscale=ell[order],
            scale=amp[order],
            period=periods[order],
            train=idx[:n_train],
            test=idx[n_train:],
        )
