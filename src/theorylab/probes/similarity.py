"""Representation similarity: CKA, RSA, Procrustes and stochastic shape distances, Gaussian 2-Wasserstein and
kernel drift.

Every comparison reads two representations of the *same* n inputs, ``X`` (n, p) and ``Y`` (n, q), row i of both
being input i (activations with more axes are flattened to (n, -1); a 1-D array is one feature per input). NumPy
arrays and torch tensors are both accepted; the work is done in float64 torch on the first argument's device and
scalars come back as Python floats.

**Policy for a representation that is the same for every input** (all features constant, e.g. a dead ReLU layer or
an all-zero kernel): its centred Gram matrix is zero, so CKA, the shape angle, the RDM correlation and the kernel
alignment are 0/0. Every function here then raises ``ValueError`` naming the offending input; none returns
``nan``. The reason: pandas' ``mean``/``groupby`` and NumPy's ``nanmean`` skip a ``nan`` without a word, which
would quietly bias a layer-by-layer average; a caller who wants a placeholder catches the error. Single constant
*columns* are harmless (centring removes them) and never raise. "Constant" means the centred matrix is below
``1e-12`` of the uncentred one in Frobenius norm (float64 centring leaves ~1e-16 behind).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from numpy.typing import ArrayLike

_TOL = 1e-12  # relative norm below which a centred quantity is rounding noise, i.e. exactly zero

Array = ArrayLike | torch.Tensor


def _matrix(a: Array, name: str, device: torch.device | None = None) -> torch.Tensor:
    t = torch.as_tensor(a).detach()
    t = t.to(device=device if device is not None else t.device, dtype=torch.float64)
    if t.dim() == 0:
        raise ValueError(f"{name} must hold one row per input, got a scalar")
    return t.reshape(len(t), -1)


def _pair(
    X: Array, Y: Array, names: tuple[str, str] = ("X", "Y"), min_rows: int = 2
) -> tuple[torch.Tensor, torch.Tensor]:
    x = _matrix(X, names[0])
    y = _matrix(Y, names[1], x.device)
    if len(x) != len(y):
        raise ValueError(f"{names[0]} and {names[1]} must hold the same inputs as rows: {len(x)} vs {len(y)} rows")
    if len(x) < min_rows:
        raise ValueError(f"{names[0]} and {names[1]} need at least {min_rows} inputs (rows), got {len(x)}")
    return x, y


def _constant(name: str, what: str = "is the same for every input (all its features are constant)") -> ValueError:
    return ValueError(f"{name} {what}: the similarity is 0/0, undefined (policy: theorylab.probes.similarity)")


def _centre_columns(x: torch.Tensor, name: str) -> torch.Tensor:
    xc = x - x.mean(0)
    if xc.norm() <= _TOL * x.norm():  # `<=` also catches the all-zero matrix
        raise _constant(name)
    return xc


def _centre_gram(k: torch.Tensor) -> torch.Tensor:
    """H K H with H = I - 11^T/n, without forming H."""
    return k - k.mean(0, keepdim=True) - k.mean(1, keepdim=True) + k.mean()


def _u_centre(k: torch.Tensor) -> torch.Tensor:
    """The U-centred Gram matrix (Szekely & Rizzo 2014): zero diagonal, and <K_U, L_U> / (n(n-3)) is the unbiased
    HSIC of Song et al. 2012, in O(n^2) instead of the estimator's explicit sums."""
    n = len(k)
    k = k - torch.diag_embed(k.diagonal())
    ku = k - k.sum(1, keepdim=True) / (n - 2) - k.sum(0, keepdim=True) / (n - 2) + k.sum() / ((n - 1) * (n - 2))
    return ku - torch.diag_embed(ku.diagonal())


def _square(K: Array, name: str, device: torch.device | None = None) -> torch.Tensor:
    k = torch.as_tensor(K).detach()
    k = k.to(device=device if device is not None else k.device, dtype=torch.float64)
    if k.dim() != 2 or k.shape[0] != k.shape[1]:
        raise ValueError(f"{name} must be a square (n, n) Gram matrix, got shape {tuple(k.shape)}")
    return k


def _grams(K: Array, L: Array, names: tuple[str, str], min_rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    k = _square(K, names[0])
    l = _square(L, names[1], k.device)
    if k.shape != l.shape:
        raise ValueError(
            f"{names[0]} and {names[1]} must be Gram matrices of the same inputs: {tuple(k.shape)} vs {tuple(l.shape)}"
        )
    if len(k) < min_rows:
        raise ValueError(f"{names[0]} and {names[1]} need at least {min_rows} inputs, got {len(k)}")
    return k, l


def _centred(k: torch.Tensor, name: str, unbiased: bool) -> torch.Tensor:
    kc = _u_centre(k) if unbiased else _centre_gram(k)
    if kc.norm() <= _TOL * k.norm():
        if unbiased:
            # Also when the off-diagonal of K is additive (k_ij = a_i + a_j), e.g. mutually orthogonal rows of equal
            # norm: their only structure is the diagonal, which the unbiased estimator leaves out.
            raise _constant(
                name,
                "has zero unbiased HSIC with itself (it is the same for every input, or its "
                "off-diagonal is additive, k_ij = a_i + a_j)",
            )
        raise _constant(name, "has a zero centred Gram matrix (it is the same for every input)")
    return kc


def hsic(K: Array, L: Array, *, unbiased: bool = False) -> float:
    """The Hilbert-Schmidt independence criterion of two Gram matrices (n, n) of the same inputs.

    Biased (Gretton et al. 2005, as in Kornblith et al. 2019): ``tr(K H L H) / (n - 1)^2`` with ``H = I - 11^T/n``.
    ``unbiased=True``: the estimator of Song et al. 2012 (JMLR, "Feature selection via dependence maximization"),
    ``[tr(K~L~) + 1^T K~ 1 1^T L~ 1 / ((n-1)(n-2)) - 2/(n-2) 1^T K~ L~ 1] / (n(n-3))`` with ``K~`` = K with its
    diagonal zeroed; needs n >= 4 and can be negative."""
    k, l = _grams(K, L, ("K", "L"), 4 if unbiased else 2)
    n = len(k)
    if unbiased:
        return float((_u_centre(k) * _u_centre(l)).sum() / (n * (n - 3)))
    return float((_centre_gram(k) * l.T).sum() / (n - 1) ** 2)  # tr(A B) = <A, B^T>_F


def _cka_of_grams(k: torch.Tensor, l: torch.Tensor, names: tuple[str, str], debiased: bool) -> float:
    kc, lc = _centred(k, names[0], debiased), _centred(l, names[1], debiased)
    # HSIC's normalisation (1/(n-1)^2 or 1/(n(n-3))) cancels in the ratio.
    return float((kc * lc).sum() / (kc.norm() * lc.norm()))


def gram_cka(K: Array, L: Array, *, debiased: bool = False) -> float:
    """Centred kernel alignment of two Gram matrices (n, n): ``HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))``
    (Kornblith et al., ICML 2019). ``debiased=True`` puts the unbiased HSIC of Song et al. 2012 in all three places
    (Nguyen, Raghu & Kornblith, ICLR 2021), which removes the upward bias of CKA at p, q comparable to n; needs
    n >= 4. Biased CKA lies in [0, 1] for PSD kernels; debiased CKA can be slightly negative."""
    k, l = _grams(K, L, ("K", "L"), 4 if debiased else 2)
    return _cka_of_grams(k, l, ("K", "L"), debiased)


def linear_cka(X: Array, Y: Array, *, debiased: bool = False) -> float:
    """Linear CKA of two representations (n, p), (n, q) of the same inputs (Kornblith et al., ICML 2019):
    ``||Y_c^T X_c||_F^2 / (||X_c^T X_c||_F ||Y_c^T Y_c||_F)`` with column-centred ``X_c, Y_c``, i.e. CKA of the
    Gram matrices ``X X^T`` and ``Y Y^T``. Invariant to orthogonal maps and isotropic scaling of either input, to
    a common permutation of the rows, and to translations; not to general invertible linear maps.
    ``debiased=True``: see ``gram_cka`` (needs n >= 4)."""
    x, y = _pair(X, Y, min_rows=4 if debiased else 2)
    xc, yc = _centre_columns(x, "X"), _centre_columns(y, "Y")
    if debiased:
        return _cka_of_grams(xc @ xc.T, yc @ yc.T, ("X", "Y"), True)
    xy, xx, yy = _linear_products(xc, yc)
    return float(xy / (xx * yy).sqrt())


def _linear_products(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """<K, L>, ||K||^2, ||L||^2 for K = x x^T, L = y y^T: through the (n, n) Grams when n is below a feature
    count, else through the (p, q) cross-covariances, whichever matrices are smaller."""
    if len(x) < max(x.shape[1], y.shape[1]):
        k, l = x @ x.T, y @ y.T
        return (k * l).sum(), (k * k).sum(), (l * l).sum()
    return (y.T @ x).pow(2).sum(), (x.T @ x).pow(2).sum(), (y.T @ y).pow(2).sum()


def _pairwise_sq(x: torch.Tensor) -> torch.Tensor:
    sq = (x * x).sum(1)
    d2 = (sq[:, None] + sq[None, :] - 2 * x @ x.T).clamp_min(0)
    return d2 - torch.diag_embed(d2.diagonal())  # the diagonal is exactly 0, whatever the rounding


def _median(v: torch.Tensor) -> torch.Tensor:
    """The median with NumPy's convention (the mean of the two middle values for an even count)."""
    s = v.sort().values
    m = len(s)
    return (s[(m - 1) // 2] + s[m // 2]) / 2


def rbf_gram(X: Array, sigma: float | None = None, *, median_fraction: float = 1.0) -> torch.Tensor:
    """The Gaussian Gram matrix ``exp(-||x_i - x_j||^2 / (2 sigma^2))`` (n, n) of a representation (n, p).
    ``sigma=None``: ``median_fraction`` times the median distance between distinct inputs (the median over
    pairs i < j), Kornblith et al.'s bandwidth rule (their paper reports fractions 0.2, 0.4 and 0.8; their code's
    default is 1.0, ours too). The median rule makes the kernel invariant to isotropic scaling of X."""
    return _rbf_gram(_matrix(X, "X"), sigma, median_fraction, "X")


def _rbf_gram(x: torch.Tensor, sigma: float | None, median_fraction: float, name: str) -> torch.Tensor:
    xc = _centre_columns(x, name)  # centring changes no distance and keeps x x^T small, so less cancellation
    d2 = _pairwise_sq(xc)
    if sigma is None:
        if median_fraction <= 0:
            raise ValueError(f"median_fraction must be > 0, got {median_fraction}")
        iu = torch.triu_indices(len(x), len(x), 1, device=x.device)
        med = _median(d2[iu[0], iu[1]].sqrt())
        if med <= 0:
            raise ValueError(f"{name}: the median distance between inputs is 0 (most rows are duplicates); pass sigma")
        sigma = float(median_fraction * med)
    if sigma <= 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    return torch.exp(-d2 / (2 * sigma**2))


def rbf_cka(
    X: Array, Y: Array, sigma: float | None = None, *, median_fraction: float = 1.0, debiased: bool = False
) -> float:
    """CKA with Gaussian kernels (Kornblith et al., ICML 2019), each input with its own bandwidth from
    ``rbf_gram`` (``sigma=None``: ``median_fraction`` x its median pairwise distance, which keeps RBF CKA invariant
    to orthogonal maps and isotropic scaling of either input; a given ``sigma`` is used for both and breaks the
    scale invariance). ``debiased=True``: see ``gram_cka`` (needs n >= 4)."""
    x, y = _pair(X, Y, min_rows=4 if debiased else 2)
    k = _rbf_gram(x, sigma, median_fraction, "X")
    l = _rbf_gram(y, sigma, median_fraction, "Y")
    return _cka_of_grams(k, l, ("X", "Y"), debiased)


# --- RSA -------------------------------------------------------------------------------------------------------------


def rdm(X: Array, metric: Literal["correlation", "euclidean"] = "correlation") -> torch.Tensor:
    """The representational dissimilarity matrix (n, n) of a representation (n, p) (Kriegeskorte, Mur & Bandettini
    2008): ``1 - Pearson r`` between the activity patterns (rows) of two inputs for ``"correlation"`` (needs
    p >= 2), ``||x_i - x_j||`` for ``"euclidean"``. A row constant across features has no correlation distance:
    ``"correlation"`` raises naming it."""
    x = _matrix(X, "X")
    if metric == "correlation":
        if x.shape[1] < 2:
            raise ValueError("the correlation RDM needs at least 2 features per input")
        z = x - x.mean(1, keepdim=True)
        norms = z.norm(dim=1)
        flat = (norms <= _TOL * x.norm(dim=1)).nonzero().flatten().tolist()
        if flat:
            raise ValueError(
                f"X rows {flat[:10]} are constant across features: their correlation distance is "
                "undefined (use metric='euclidean' or drop them)"
            )
        z = z / norms[:, None]
        d = (1 - z @ z.T).clamp(0, 2)
        return d - torch.diag_embed(d.diagonal())
    if metric == "euclidean":
        # The direct difference, not the |a|^2 + |b|^2 - 2ab expansion, whose rounding swamps small distances.
        return torch.cdist(x, x, compute_mode="donot_use_mm_for_euclid_dist")
    raise ValueError(f"unknown metric {metric!r}; use 'correlation' or 'euclidean'")


def _ranks(v: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(v)  # ties get their average rank, as Spearman's rho requires


def compare_rdms(D1: Array, D2: Array, method: Literal["spearman", "pearson"] = "spearman") -> float:
    """Correlation between the upper triangles (i < j, diagonal left out) of two RDMs (n, n) of the same inputs:
    Spearman's rho (Kriegeskorte et al. 2008's default: it assumes only a monotone relation between dissimilarities)
    or Pearson's r. An RDM whose upper triangle is constant (e.g. n = 2, or equidistant inputs) raises."""
    d1, d2 = _grams(D1, D2, ("D1", "D2"), 2)
    iu = torch.triu_indices(len(d1), len(d1), 1, device=d1.device)
    a, b = d1[iu[0], iu[1]].cpu().numpy(), d2[iu[0], iu[1]].cpu().numpy()
    if method == "spearman":
        a, b = _ranks(a), _ranks(b)
    elif method != "pearson":
        raise ValueError(f"unknown method {method!r}; use 'spearman' or 'pearson'")
    ac, bc = a - a.mean(), b - b.mean()
    for v, v0, name in ((ac, a, "D1"), (bc, b, "D2")):
        if np.linalg.norm(v) <= _TOL * np.linalg.norm(v0):
            raise ValueError(
                f"{name}: all dissimilarities between distinct inputs are equal, so their correlation is 0/0, undefined"
            )
    return float(ac @ bc / (np.linalg.norm(ac) * np.linalg.norm(bc)))


def rsa(
    X: Array,
    Y: Array,
    *,
    metric: Literal["correlation", "euclidean"] = "correlation",
    method: Literal["spearman", "pearson"] = "spearman",
) -> float:
    """Representational similarity analysis (Kriegeskorte et al. 2008): ``compare_rdms(rdm(X), rdm(Y))`` for two
    representations (n, p), (n, q) of the same inputs."""
    x, y = _pair(X, Y)
    return compare_rdms(rdm(x, metric), rdm(y, metric), method)


# --- Procrustes shape distance ---------------------------------------------------------------------------------------


def _reduce_columns(x: torch.Tensor) -> torch.Tensor:
    """x R for an orthogonal R with at most n non-zero columns: every quantity below is invariant to a right
    orthogonal map, so p > n features are reduced to n (x^T = QR gives x Q = R^T) before any p x q work."""
    if x.shape[1] <= x.shape[0]:
        return x
    return torch.linalg.qr(x.T, mode="r").R.T


def procrustes_distance(
    X: Array, Y: Array, *, kind: Literal["angular", "euclidean"] = "angular", center: bool = True, scale: bool = True
) -> float:
    """Orthogonal-Procrustes shape distance between representations (n, p), (n, q) of the same inputs
    (Williams, Kunz, Kornblith & Linderman, NeurIPS 2021, "Generalized shape metrics on neural representations").

    After centring the columns (``center``):

    - ``kind="angular"`` (default): the angular shape metric ``arccos(||X^T Y||_* / (||X||_F ||Y||_F))`` in radians,
      in [0, pi/2]; scale-invariant by construction, so ``scale`` has no effect.
    - ``kind="euclidean"``: ``min_Q ||X - Y Q||_F = sqrt(||X||^2 + ||Y||^2 - 2 ||X^T Y||_*)`` over orthogonal Q,
      after scaling each input to unit Frobenius norm when ``scale`` (then it equals ``2 sin(angle / 2)``).

    Both are metrics on representations modulo orthogonal maps (and translations when centred; and scale for the
    angular one, or with ``scale``): symmetric, zero from X to X, and satisfying the triangle inequality. If p != q
    the smaller is zero-padded to max(p, q) columns (as Williams et al. do), which changes no nuclear or Frobenius
    norm, so the result does not depend on how far one pads. Both are computed as ``||X - Y Q*||_F`` with the
    optimal Q* from an SVD rather than from ``arccos`` of the norms, which would lose half the digits near 0.
    A constant representation (zero after centring) raises where the result would be 0/0 (angular, or scaled)."""
    if kind not in ("angular", "euclidean"):
        raise ValueError(f"unknown kind {kind!r}; use 'angular' or 'euclidean'")
    x, y = _pair(X, Y)
    raw = x.norm(), y.norm()
    if center:
        x, y = x - x.mean(0), y - y.mean(0)
    if kind == "angular" or scale:
        for z, z0, name in ((x, raw[0], "X"), (y, raw[1], "Y")):
            if z.norm() <= _TOL * z0:
                raise _constant(name, "is zero after centring (the same for every input)" if center else "is zero")
        x, y = x / x.norm(), y / y.norm()
    x, y = _reduce_columns(x), _reduce_columns(y)
    m = max(x.shape[1], y.shape[1])  # zero-pad to a common width
    x = torch.nn.functional.pad(x, (0, m - x.shape[1]))
    y = torch.nn.functional.pad(y, (0, m - y.shape[1]))
    u, _, vh = torch.linalg.svd(y.T @ x)
    e = (x - y @ (u @ vh)).norm()  # Q* = U V^T maximises tr(Q^T Y^T X)
    if kind == "euclidean":
        return float(e)
    return float(2 * torch.asin((e / 2).clamp(max=1.0)))  # unit-norm chord e -> angle


# --- Gaussian 2-Wasserstein ------------------------------------------------------------------------------------------


def _rounding_floor(w: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of a symmetric PSD matrix with those inside ``eigh``'s backward error (d·ε·max|λ|, Golub & Van
    Loan Sec. 8.1) set to 0: a zero eigenvalue comes back as ±1e-16·‖S‖, whose square root (1e-8·√‖S‖) would
    otherwise dominate the error of every square-root-based distance of a singular covariance."""
    floor = w.shape[-1] * torch.finfo(w.dtype).eps * w.abs().amax(dim=-1, keepdim=True)
    return torch.where(w > floor, w, torch.zeros_like(w))


def psd_sqrt(S: Array) -> torch.Tensor:
    """The PSD square root of a symmetric PSD matrix by ``eigh``; eigenvalues within rounding of 0 (or below it) are
    taken as 0 (:func:`_rounding_floor`)."""
    s = torch.as_tensor(S).detach().to(torch.float64)
    w, v = torch.linalg.eigh((s + s.T) / 2)
    return (v * _rounding_floor(w).sqrt()) @ v.T


def _gaussian(mu: Array, S: Array, name: str, device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    m = torch.as_tensor(mu).detach().to(device=device, dtype=torch.float64).reshape(-1)
    d = len(m)
    s = torch.as_tensor(S).detach().to(device=m.device, dtype=torch.float64)
    if s.numel() != d * d:
        raise ValueError(f"covariance {name} must be ({d}, {d}) to match its mean, got shape {tuple(s.shape)}")
    s = s.reshape(d, d)
    scale = s.abs().max().clamp_min(torch.finfo(torch.float64).tiny)
    if (s - s.T).abs().max() > 1e-8 * scale:
        raise ValueError(f"covariance {name} is not symmetric")
    s = (s + s.T) / 2
    low = torch.linalg.eigvalsh(s)[0]
    if low < -1e-8 * scale:
        raise ValueError(f"covariance {name} is not positive semi-definite (smallest eigenvalue {float(low):.3g})")
    return m, s


def gaussian_w2(mu1: Array, S1: Array, mu2: Array, S2: Array, *, squared: bool = False) -> float:
    """The 2-Wasserstein **distance** between N(mu1, S1) and N(mu2, S2) (``squared=True``: its square), in closed
    form (Dowson & Landau 1982; Givens & Shortt 1984):
    ``W2^2 = ||mu1 - mu2||^2 + tr(S1 + S2 - 2 (S2^{1/2} S1 S2^{1/2})^{1/2})``, the second term the squared Bures
    distance. Square roots by ``eigh`` with negative rounding eigenvalues clipped, so singular covariances work;
    covariances more than 1e-8 (relative) from symmetric or PSD raise. Means (d,), covariances (d, d); for d = 1
    scalars are fine, and the result is ``sqrt((m1 - m2)^2 + (s1 - s2)^2)`` with standard deviations s."""
    m1, s1 = _gaussian(mu1, S1, "S1")
    m2, s2 = _gaussian(mu2, S2, "S2", m1.device)
    if len(m1) != len(m2):
        raise ValueError(f"the Gaussians live in different dimensions: {len(m1)} vs {len(m2)}")
    if torch.equal(m1, m2) and torch.equal(s1, s2):
        return 0.0  # a Gaussian's distance to itself is 0 exactly, not the square root of the trace's rounding
    r = psd_sqrt(s2)
    c = r @ s1 @ r
    cross = _rounding_floor(torch.linalg.eigvalsh((c + c.T) / 2)).sqrt().sum()  # tr (S2^1/2 S1 S2^1/2)^1/2
    w2sq = ((m1 - m2) ** 2).sum() + (s1.trace() + s2.trace() - 2 * cross)
    w2sq = w2sq.clamp_min(0)  # rounding can leave -1e-16 for nearly equal Gaussians
    return float(w2sq if squared else w2sq.sqrt())


def gaussian_w2_from_samples(A: Array, B: Array, *, squared: bool = False) -> float:
    """``gaussian_w2`` between Gaussian fits (sample mean, covariance with 1/(n-1)) of two samples (n, d), (m, d);
    n and m may differ. With ``squared=True`` this is the Frechet distance that FID computes on Inception features
    (Heusel et al. 2017). It compares the first two moments only: different laws with equal moments give 0."""
    a, b = _matrix(A, "A"), _matrix(B, "B")
    b = b.to(a.device)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"samples live in different dimensions: {a.shape[1]} vs {b.shape[1]}")
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"a covariance needs at least 2 samples, got {len(a)} and {len(b)}")
    cov = lambda z: torch.cov(z.T).reshape(z.shape[1], z.shape[1])  # torch.cov returns a scalar for d = 1
    return gaussian_w2(a.mean(0), cov(a), b.mean(0), cov(b), squared=squared)


# --- stochastic shape distance ---------------------------------------------------------------------------------------


def _gaussian_family(
    mu: Array, var: Array, name: str, device: torch.device | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Means (N, k) and square-root factors L (N, k, k) with L L^T = covariance, from variances (N, k) or full
    covariances (N, k, k); the factor is diag(sqrt(var)) or the clipped-``eigh`` PSD square root."""
    m = _matrix(mu, f"mu_{name}", device)
    n, k = m.shape
    v = torch.as_tensor(var).detach().to(device=m.device, dtype=torch.float64)
    if tuple(v.shape) == (n, k):
        if (v < 0).any():
            raise ValueError(f"var_{name} holds negative variances")
        return m, torch.diag_embed(v.sqrt())
    if tuple(v.shape) != (n, k, k):
        raise ValueError(
            f"var_{name} must be variances ({n}, {k}) or covariances ({n}, {k}, {k}) to match "
            f"mu_{name}, got shape {tuple(v.shape)}"
        )
    scale = v.abs().amax(dim=(1, 2)).clamp_min(torch.finfo(torch.float64).tiny)
    if ((v - v.mT).abs().amax(dim=(1, 2)) > 1e-8 * scale).any():
        raise ValueError(f"var_{name} holds a covariance that is not symmetric")
    w, u = torch.linalg.eigh((v + v.mT) / 2)
    if (w[:, 0] < -1e-8 * scale).any():
        raise ValueError(f"var_{name} holds a covariance that is not positive semi-definite")
    return m, (u * w.clamp_min(0).sqrt().unsqueeze(1)) @ u.mT


def _bures_couplings(q: torch.Tensor, la: torch.Tensor, lb: torch.Tensor) -> torch.Tensor:
    """Per input, the orthogonal V_i minimising ||L_a,i - Q L_b,i V_i||_F: V_i = U W^T from the batched SVD
    (Q L_b,i)^T L_a,i = U S W^T."""
    u, _, wh = torch.linalg.svd(lb.mT @ q.mT @ la)
    return u @ wh


def _stochastic_objective(
    q: torch.Tensor, ma: torch.Tensor, la: torch.Tensor, mb: torch.Tensor, lb: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(F(Q), the optimal couplings V_i) with F(Q) = mean_i W2^2(N(m_a,i, S_a,i), N(Q m_b,i, Q S_b,i Q^T)), summed
    as residuals ``||m_a - Q m_b||^2 + ||L_a - Q L_b V||_F^2`` (not ``tr S_a + tr S_b - 2 ||.||_*``, which would
    lose half the digits near 0)."""
    v = _bures_couplings(q, la, lb)
    f = ((ma - mb @ q.T) ** 2).sum() + ((la - q @ lb @ v) ** 2).sum()
    return f / len(ma), v


def _stochastic_descent(
    ma: torch.Tensor, la: torch.Tensor, mb: torch.Tensor, lb: torch.Tensor, iters: int, tol: float
) -> tuple[float, list[float]]:
    """Alternating minimisation of F from the best of three starts (identity, Procrustes on the means, Procrustes
    on means and square roots with V_i = I); returns (min F found, trace of F after each accepted step)."""
    m = ma.shape[1]

    def procrustes(mat: torch.Tensor) -> torch.Tensor:  # argmax_Q <mat, Q> over orthogonal Q
        u, _, wh = torch.linalg.svd(mat)
        return u @ wh

    means = ma.T @ mb
    starts = [
        torch.eye(m, dtype=ma.dtype, device=ma.device),
        procrustes(means),
        procrustes(means + (la @ lb.mT).sum(0)),
    ]
    f, v = min((_stochastic_objective(s, ma, la, mb, lb) for s in starts), key=lambda t: float(t[0]))
    trace = [float(f)]
    for _ in range(iters):
        q_new = procrustes(means + (la @ v.mT @ lb.mT).sum(0))  # Q-step on the stacked blocks
        f_new, v_new = _stochastic_objective(q_new, ma, la, mb, lb)  # V-step: exact F at the new Q
        if f_new > f:  # only rounding can do this (each step minimises a bound); keep the trace monotone
            break
        done = f - f_new <= tol * f
        f, v = f_new, v_new
        trace.append(float(f))
        if done:
            break
    return float(f), trace


def stochastic_shape_distance(
    mu_a: Array,
    var_a: Array,
    mu_b: Array,
    var_b: Array,
    *,
    iters: int = 100,
    tol: float = 1e-10,
    center: bool = True,
    rotation: Array | None = None,
    return_trace: bool = False,
) -> float | tuple[float, list[float]]:
    """Stochastic shape distance between two stochastic representations of the same N inputs (Duong, Zhou, Nassar,
    Berman, Olieslagers & Williams, ICLR 2023, "Representational dissimilarity metric spaces for stochastic neural
    networks"), each input i encoded as a Gaussian: N(mu_a[i], S_a,i) by network a and N(mu_b[i], S_b,i) by b.

    ``mu_a`` (N, k_a), ``mu_b`` (N, k_b); ``var_a``/``var_b`` either variances (N, k) of diagonal covariances (a VAE
    encoder's ``exp(logvar)``) or full covariances (N, k, k). The means are centred across inputs (``center``); the
    covariances are untouched; the narrower representation is zero-padded (means and covariances) to
    m = max(k_a, k_b), which changes no W2. The result is ::

        d = min_Q sqrt( (1/N) sum_i W2^2( N(mu_a[i], S_a,i), N(Q mu_b[i], Q S_b,i Q^T) ) )   over orthogonal Q (m, m)

    with the **mean** over inputs, so for zero covariances d equals ``procrustes_distance(mu_a, mu_b,
    kind="euclidean", scale=False) / sqrt(N)`` -- that Euclidean Procrustes distance between centred mean matrices
    is the closed-form (deterministic) special case, and this module has no separate function for it.

    Derivation of the solver. For any factors L L^T = S (here diag(sqrt(var)) or the PSD square root) the Bures
    term is an orthogonal Procrustes problem: ``tr S_1 + tr S_2 - 2 tr (S_1^{1/2} S_2 S_1^{1/2})^{1/2}
    = min_V ||L_1 - L_2 V||_F^2`` over orthogonal V, the minimum being ``||L_1||^2 + ||L_2||^2 - 2 ||L_2^T L_1||_*``
    and ``||L_2^T L_1||_*`` the cross term. Q L_b,i factors Q S_b,i Q^T, so

        N F(Q) = min_{V_1..V_N} J(Q, V),   J = sum_i ||mu_a,i - Q mu_b,i||^2 + ||L_a,i - Q L_b,i V_i||_F^2,

    and min_Q F = min_{Q, V} J. Block-coordinate descent on J: (1) V-step, Q fixed: each V_i = U_i W_i^T from the
    SVD (Q L_b,i)^T L_a,i = U_i S_i W_i^T (batched over inputs), after which J = N F(Q) exactly; (2) Q-step, V
    fixed: J = ||X - Q Y||_F^2 with the stacked blocks X = [mu_a,1 .. mu_a,N, L_a,1 .. L_a,N] and
    Y = [mu_b,1 .. mu_b,N, L_b,1 V_1 .. L_b,N V_N] (m x N(m + 1)), minimised by Q = U W^T from the SVD
    X Y^T = sum_i mu_a,i mu_b,i^T + L_a,i V_i^T L_b,i^T = U S W^T. Since F(Q_new) <= J(Q_new, V) <= J(Q_old, V)
    = N F(Q_old), F never increases. It starts from the best of Q = I, the Procrustes Q of the means alone, and the
    Q-step with all V_i = I, and stops after ``iters`` rounds or when F falls by less than ``tol`` (relative). J
    is not convex in Q, so this is a local minimum, an upper bound on d; to make d(a, b) = d(b, a) exact, the
    scheme also runs from b to a (F_ab(Q) = F_ba(Q^T) by W2's symmetry and rotation invariance) and keeps the
    smaller. Cost per round: N SVDs of m x m matrices, and memory O(N m^2).

    ``rotation`` (m, m): evaluate at this fixed map Q (no minimisation). ``return_trace=True``: also return the
    list of F after each accepted round (non-increasing) of the run that gave d. Covariances more than 1e-8
    (relative) from symmetric or PSD, or negative variances, raise."""
    ma, la = _gaussian_family(mu_a, var_a, "a")
    mb, lb = _gaussian_family(mu_b, var_b, "b", ma.device)
    if len(ma) != len(mb):
        raise ValueError(f"mu_a and mu_b must hold the same inputs as rows: {len(ma)} vs {len(mb)} rows")
    if len(ma) < 1:
        raise ValueError("the representations hold no inputs")
    if center:
        ma, mb = ma - ma.mean(0), mb - mb.mean(0)
    m = max(ma.shape[1], mb.shape[1])
    ma, mb = (torch.nn.functional.pad(z, (0, m - z.shape[1])) for z in (ma, mb))
    la, lb = (torch.nn.functional.pad(z, (0, m - z.shape[2], 0, m - z.shape[1])) for z in (la, lb))
    if rotation is not None:
        q = torch.as_tensor(rotation).detach().to(device=ma.device, dtype=torch.float64)
        if tuple(q.shape) != (m, m):
            raise ValueError(f"rotation must be ({m}, {m}), got shape {tuple(q.shape)}")
        f = float(_stochastic_objective(q, ma, la, mb, lb)[0])
        trace = [f]
    else:
        f, trace = _stochastic_descent(ma, la, mb, lb, iters, tol)
        f_ba, trace_ba = _stochastic_descent(mb, lb, ma, la, iters, tol)
        if f_ba < f:  # d = min of the two runs, the same computation for (b, a)
            f, trace = f_ba, trace_ba
    d = float(np.sqrt(max(f, 0.0)))
    return (d, trace) if return_trace else d


# --- kernel drift ----------------------------------------------------------------------------------------------------


def kernel_drift(K0: Array, K1: Array, *, center: bool = True) -> float:
    """How far a kernel (Gram matrix (n, n) of the same inputs, e.g. an empirical NTK) moved between two checkpoints:
    ``1 - <K0, K1>_F / (||K0||_F ||K1||_F)``, on centred kernels ``H K H`` by default, where it equals
    ``1 - gram_cka(K0, K1)``. ``center=False`` gives Fort et al.'s kernel distance (NeurIPS 2020, "Deep learning
    versus kernel learning"). 0 for identical kernels, invariant to rescaling either one; in [0, 1] for PSD kernels.
    A kernel that is zero (after centring, if centred) raises."""
    k0, k1 = _grams(K0, K1, ("K0", "K1"), 2)
    if center:
        k0, k1 = _centred(k0, "K0", False), _centred(k1, "K1", False)
    else:
        for k, name in ((k0, "K0"), (k1, "K1")):
            if k.norm() == 0:
                raise _constant(name, "is the zero kernel")
    return float(1 - (k0 * k1).sum() / (k0.norm() * k1.norm()))


def feature_kernel_drift(F0: Array, F1: Array, *, center: bool = True) -> float:
    """``kernel_drift`` of the linear kernels ``F0 F0^T`` and ``F1 F1^T`` of features (n, p0), (n, p1) of the same
    inputs at two checkpoints (e.g. the penultimate layer: the conjugate kernel), without forming the n x n kernels
    when the feature counts are below n. Centred, it is ``1 - linear_cka(F0, F1)``."""
    f0, f1 = _pair(F0, F1, ("F0", "F1"))
    if center:
        f0, f1 = _centre_columns(f0, "F0"), _centre_columns(f1, "F1")
    else:
        for f, name in ((f0, "F0"), (f1, "F1")):
            if f.norm() == 0:
                raise _constant(name, "is zero (a zero kernel)")
    xy, xx, yy = _linear_products(f0, f1)
    return float(1 - xy / (xx * yy).sqrt())
