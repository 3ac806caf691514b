"""Index-space (sufficient dimension reduction) estimators with a scikit-learn-style API.

Each estimator builds a d x d matrix whose top eigenvectors span (part of) the index space of
``y = g(U^T x)``, ``x ~ N(0, I)`` (Bruna & Hsu, *Survey on algorithms for multi-index models*,
arXiv 2504.05426, Sec. 3), and exposes ``fit(X, y)``, ``components_`` (n_components, d) with
orthonormal rows, ``eigenvalues_``, ``matrix_`` and ``transform(X)``.

- :class:`ADE` (average derivative): ``v = (1/n) sum (y_i - ybar) x_i``; by Stein, ``E v = E[grad g]``.
- :class:`PHD` (Li 1992): ``M = (1/n) sum (y_i - ybar) x_i x_i^T``; ``E M = U E[hess g] U^T``; top by |eigenvalue|.
- :class:`SIR` (Li 1991): equal-count slices of sorted y; ``M = sum_h p_h m_h m_h^T`` of whitened slice means.
- :class:`SAVE` (Cook & Weisberg 1991): ``M = sum_h n_h (I - Cov_h)^2 / H`` on whitened slices.
- :class:`OPG` (Xia et al. 2002): outer product of local-linear gradient estimates at anchor points.

Slicing follows ``statsmodels.regression.dimred`` (``np.array_split`` of the y-sorted sample, SAVE
with unbiased slice covariances), so the subspaces agree with it exactly on the same data.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


def label_slices(y: np.ndarray, bins: int) -> np.ndarray:
    """Slice index of each label: one slice per value when ``y`` takes at most ``bins`` values,
    else ``bins`` equal-count slices of the sorted labels (ties broken by position)."""
    y = np.asarray(y)
    values = np.unique(y)
    if len(values) <= bins:
        return np.searchsorted(values, y)
    slices = np.empty(len(y), dtype=np.int64)
    slices[np.argsort(y, kind="stable")] = np.arange(len(y)) * bins // len(y)
    return slices


class SubspaceEstimator:
    """Shared validation and outputs; subclasses implement ``_matrix(X, y)`` (and may re-map directions)."""

    by_magnitude = False  # rank eigenvalues by |lambda| (pHd) rather than lambda

    def __init__(self, n_components: int = 1):
        self.n_components = n_components

    def _check(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n, d); got shape {X.shape}")
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},); got {y.shape}")
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise ValueError("X and y must be finite")
        if not 1 <= self.n_components <= X.shape[1]:
            raise ValueError(f"n_components must be in [1, d = {X.shape[1]}]; got {self.n_components}")
        return X, y

    def fit(self, X: np.ndarray, y: np.ndarray) -> "SubspaceEstimator":
        X, y = self._check(X, y)
        matrix = self._matrix(X, y)
        self.matrix_ = matrix
        vals, vecs = (
            np.linalg.eig(matrix)
            if not np.allclose(matrix, matrix.T, atol=1e-12 * max(1.0, np.abs(matrix).max()))
            else np.linalg.eigh(matrix)
        )
        vals, vecs = np.real(vals), np.real(vecs)
        order = np.argsort(-(np.abs(vals) if self.by_magnitude else vals), kind="stable")
        self.eigenvalues_ = vals[order]
        directions = self._directions(vecs[:, order[: self.n_components]])
        q, _ = np.linalg.qr(directions)
        self.components_ = q.T
        return self

    def _directions(self, vecs: np.ndarray) -> np.ndarray:
        return vecs

    def _matrix(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def transform(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=np.float64) @ self.components_.T


class ADE(SubspaceEstimator):
    """Average derivative estimator (one direction): ``v = (1/n) sum (y_i - ybar) x_i``."""

    def __init__(self, n_components: int = 1):
        if n_components != 1:
            raise ValueError("ADE estimates one direction; n_components must be 1")
        super().__init__(1)

    def _matrix(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        v = (y - y.mean()) @ X / len(y)
        self.direction_ = v
        return np.outer(v, v)


class PHD(SubspaceEstimator):
    """Principal Hessian directions: ``M = (1/n) sum (y_i - ybar)(x_i - xbar)(x_i - xbar)^T``.

    ``whiten=True`` uses ``Cov(x)^-1 M`` (Li 1992, as statsmodels does); the default treats x as
    standard Gaussian, as the index-model setting guarantees.
    """

    by_magnitude = True

    def __init__(self, n_components: int = 1, whiten: bool = False):
        super().__init__(n_components)
        self.whiten = whiten

    def _matrix(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        xc = X - X.mean(0)
        m = (xc * (y - y.mean())[:, None]).T @ xc / len(y)  # one BLAS product (einsum is ~10x slower)
        m = (m + m.T) / 2
        if self.whiten:
            return np.linalg.solve(np.cov(xc.T), m)
        return m


class _Sliced(SubspaceEstimator):
    """Equal-count slices of the y-sorted sample (``np.array_split``, as statsmodels).

    ``whiten=True`` (Li 1991; statsmodels) standardises x by its empirical covariance, which needs
    n > d; ``whiten=False`` uses the centred x as is, right for isotropic Gaussian inputs and any n.
    """

    def __init__(self, n_components: int = 1, n_slices: int = 10, whiten: bool = True):
        super().__init__(n_components)
        if n_slices < 2:
            raise ValueError(f"n_slices must be >= 2; got {n_slices}")
        self.n_slices = n_slices
        self.whiten = whiten

    def _slices(self, X: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
        if self.n_slices > len(y):
            raise ValueError(f"n_slices ({self.n_slices}) exceeds the sample size ({len(y)})")
        x = X[np.argsort(y)]
        x = x - x.mean(0)
        if not self.whiten:
            self._chol = np.eye(x.shape[1])
            return np.array_split(x, self.n_slices)
        if len(x) <= x.shape[1]:
            raise ValueError(
                f"whitening needs more samples than dimensions (n = {len(x)}, d = {x.shape[1]}); pass "
                f"whiten=False for isotropic x"
            )
        cov = x.T @ x / len(x)
        self._chol = np.linalg.cholesky(cov)
        white = np.linalg.solve(self._chol, x.T).T
        return np.array_split(white, self.n_slices)

    def _directions(self, vecs: np.ndarray) -> np.ndarray:
        # Back from whitened to original coordinates: beta = L^-T b.
        return np.linalg.solve(self._chol.T, vecs)


class SIR(_Sliced):
    """Sliced inverse regression: ``M = sum_h p_h m_h m_h^T`` of whitened slice means."""

    def _matrix(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        parts = self._slices(X, y)
        means = np.array([p.mean(0) for p in parts])
        counts = np.array([len(p) for p in parts], dtype=np.float64)
        return means.T @ (counts[:, None] * means) / counts.sum()


class SAVE(_Sliced):
    """Sliced average variance estimation: ``M = sum_h n_h (I - Cov_h)^2 / H`` (Cook's form)."""

    def _matrix(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        parts = self._slices(X, y)
        d = X.shape[1]
        m = np.zeros((d, d))
        for p in parts:
            a = np.eye(d) - np.cov(p.T)
            m += len(p) * a @ a
        return m / len(parts)


class OPG(SubspaceEstimator):
    """Outer product of gradients (Xia, Tong, Li, Zhu 2002): local-linear gradient estimates at
    ``n_anchors`` sample points with a Gaussian kernel of width ``bandwidth`` (default ``sqrt(d)``,
    a wide kernel suited to Gaussian designs), ``M = mean_a beta_a beta_a^T``. Cost O(n_anchors n d^2).
    """

    def __init__(
        self,
        n_components: int = 1,
        n_anchors: int = 200,
        bandwidth: float | None = None,
        ridge: float = 1e-6,
        seed: int = 0,
    ):
        super().__init__(n_components)
        self.n_anchors, self.bandwidth, self.ridge, self.seed = n_anchors, bandwidth, ridge, seed

    def _matrix(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        n, d = X.shape
        h = self.bandwidth or np.sqrt(d)
        rng = np.random.default_rng(self.seed)
        anchors = X[rng.choice(n, size=min(self.n_anchors, n), replace=False)]
        m = np.zeros((d, d))
        design = np.empty((n, d + 1))
        design[:, 0] = 1.0
        for a in anchors:
            diff = X - a
            w = np.exp(-(diff**2).sum(1) / (2 * h * h))
            design[:, 1:] = diff
            gram = design.T @ (w[:, None] * design) + self.ridge * n * np.eye(d + 1)
            beta = np.linalg.solve(gram, design.T @ (w * y))[1:]
            m += np.outer(beta, beta)
        return m / len(anchors)


ESTIMATORS = {"ADE": ADE, "pHd": PHD, "SIR": SIR, "SAVE": SAVE, "OPG": OPG}


def phd_noise_moments(link, order: int = 80) -> dict[str, float]:
    """Second moments of pHd's summand ``y (x x^T - I)`` for a single-index link ``y = g(z1)``, by
    Gauss-Hermite quadrature (exact for polynomial links up to degree ``2 order - 1``).

    In the basis (u1, its complement) the entries of ``sqrt(n) M`` are asymptotically independent
    Gaussians with variances ``u1u1 = E[y^2 (z^2 - 1)^2]``, ``u1k = E[y^2 z^2]``, ``kk = 2 E[y^2]``,
    ``kl = E[y^2]`` (labels centred). For ``He3``: 372, 42, 12, 6.
    """
    t, w = np.polynomial.hermite_e.hermegauss(order)
    w = w / w.sum()
    g = np.asarray(link(t[:, None]), dtype=np.float64)
    g = g - (w * g).sum()
    y2 = w * g * g
    return {
        "u1u1": float((y2 * (t * t - 1) ** 2).sum()),
        "u1k": float((y2 * t * t).sum()),
        "kk": float(2 * y2.sum()),
        "kl": float(y2.sum()),
    }


def phd_noise_floor(d: int, moments: dict[str, float], draws: int, rng: np.random.Generator) -> np.ndarray:
    """Capture ``|<v, u1>|^2`` of pHd's top-|eigenvalue| direction when the population matrix is zero
    in every direction (a blind link), in the limit n -> infinity at fixed d: ``v`` is then the top
    eigenvector of the Gaussian limit of ``sqrt(n) M`` with the variance profile of
    :func:`phd_noise_moments` (``u1`` = the first axis). ``draws`` samples of that capture.

    The noise is anisotropic (for He3 the u1 row has 7 times the bulk variance), so the floor is
    far above chance 1/d and does not vanish as d grows (about 0.5 at d = 50-100, 0.45 at d = 400):
    a blind pHd's capture climbs towards it from below as n grows, without ever recovering u1.
    """
    out = np.empty(draws)
    sd = {k: np.sqrt(v) for k, v in moments.items()}
    for i in range(draws):
        g = np.triu(rng.standard_normal((d, d)) * sd["kl"], 1)
        g = g + g.T
        g[np.diag_indices(d)] = rng.standard_normal(d) * sd["kk"]
        row = rng.standard_normal(d - 1) * sd["u1k"]
        g[0, 1:] = row
        g[1:, 0] = row
        g[0, 0] = rng.standard_normal() * sd["u1u1"]
        vals, vecs = np.linalg.eigh(g)
        out[i] = vecs[0, np.argmax(np.abs(vals))] ** 2
    return out


# Population predictions for the survey's links A-D (Bruna & Hsu, arXiv 2504.05426, Sec. 3): by Stein's
# identity ADE sees E[grad g] and pHd E[hess g]; SIR sees E[x | y], which vanishes for links even in
# z -> -z; SAVE sees Cov(x | y). (link, estimator) -> whether each index direction u_i is seen.
SURVEY_SEES: dict[tuple[str, str], tuple[bool, ...]] = {
    ("z1+z1z2", "ADE"): (True, False),
    ("z1+z1z2", "pHd"): (True, True),
    ("z1+z1z2", "SIR"): (True, True),
    ("z1+z1z2", "SAVE"): (True, True),
    ("he2", "ADE"): (False,),
    ("he2", "pHd"): (True,),
    ("he2", "SIR"): (False,),
    ("he2", "SAVE"): (True,),
    ("z1z2", "ADE"): (False, False),
    ("z1z2", "pHd"): (True, True),
    ("z1z2", "SIR"): (False, False),
    ("z1z2", "SAVE"): (True, True),
    ("he3", "ADE"): (False,),
    ("he3", "pHd"): (False,),
    ("he3", "SIR"): (True,),
    ("he3", "SAVE"): (True,),
}
# E[hess g] restricted to span(U) for the same links: pHd's exact population matrix (Stein).
SURVEY_HESSIANS: dict[str, np.ndarray] = {
    "z1+z1z2": np.array([[0.0, 1.0], [1.0, 0.0]]),
    "he2": np.array([[2.0]]),
    "z1z2": np.array([[0.0, 1.0], [1.0, 0.0]]),
    "he3": np.array([[0.0]]),
}


def phd_blind_floor(link, d: int, draws: int, rng: np.random.Generator) -> dict[str, float]:
    """pHd's capture floor for a blind single-index ``link`` at dimension ``d`` (n -> infinity):
    mean and standard error over ``draws`` samples of :func:`phd_noise_floor`, with the noise
    moments of :func:`phd_noise_moments` (keys floor, se, draws, u1u1, u1k, kk, kl)."""
    moments = phd_noise_moments(link)
    out = phd_noise_floor(d, moments, draws, rng)
    return dict(floor=float(out.mean()), se=float(out.std(ddof=1) / np.sqrt(len(out))), draws=len(out), **moments)


def stein_population_checks(
    model,
    rng: np.random.Generator,
    batches: int,
    per_batch: int,
    n_slices: int,
    hessian: np.ndarray,
    sees: Mapping[str, Sequence[bool]],
) -> list[dict]:
    """Monte Carlo population matrices of pHd, SIR and SAVE against Stein's predictions (Bruna & Hsu, Sec. 3).

    ``model``: an index model (:class:`theorylab.data.index_models.IndexModel`) whose ``W`` is the
    first ``r`` coordinate axes; ``batches`` samples of ``per_batch`` rows give means and standard
    errors. pHd's matrix is compared entry by entry (upper triangle) with ``hessian`` = E[hess g] on
    span(U), zero elsewhere. SIR and SAVE carry a finite-sample bias on the diagonal that is the same
    in every direction they do not see, so their diagonal in u_i is reported after subtracting the
    mean diagonal over the non-index axes; ``sees[method][i]`` says whether it should be nonzero.
    Returns one row per check: method, entry, measured, expected, se, predicted_nonzero.
    """
    d, r = model.d, model.link.r
    mats: dict[str, list] = {"pHd": [], "SIR": [], "SAVE": []}
    for _ in range(batches):
        X, y, _ = model.sample(per_batch, rng)
        mats["pHd"].append(PHD(1).fit(X, y).matrix_)
        mats["SIR"].append(SIR(1, n_slices, whiten=False).fit(X, y).matrix_)
        mats["SAVE"].append(SAVE(1, n_slices, whiten=False).fit(X, y).matrix_)
    expected = np.zeros((d, d))
    expected[:r, :r] = hessian
    phd = np.array(mats["pHd"])  # (batches, d, d)
    mean, se = phd.mean(0), phd.std(0, ddof=1) / np.sqrt(batches)
    rows = []
    for a in range(d):
        for b in range(a, d):
            rows.append(
                dict(
                    method="pHd",
                    entry=f"{a},{b}",
                    measured=mean[a, b],
                    expected=expected[a, b],
                    se=se[a, b],
                    predicted_nonzero=bool(expected[a, b] != 0),
                )
            )
    for method in ("SIR", "SAVE"):
        diag = np.diagonal(np.array(mats[method]), axis1=1, axis2=2)  # (batches, d)
        corrected = diag[:, :r] - diag[:, r:].mean(1, keepdims=True)
        for i in range(r):
            rows.append(
                dict(
                    method=method,
                    entry=f"u{i + 1}",
                    measured=corrected[:, i].mean(),
                    expected=np.nan,
                    se=corrected[:, i].std(ddof=1) / np.sqrt(batches),
                    predicted_nonzero=sees[method][i],
                )
            )
    return rows


def survey_population_checks(
    d: int,
    batches: int,
    per_batch: int,
    n_slices: int,
    rng_for,
    links: Sequence[str] = ("z1+z1z2", "he2", "z1z2", "he3"),
) -> list[dict]:
    """:func:`stein_population_checks` for each of the survey's links with ``W`` = the first ``r`` axes
    of R^d and the predictions :data:`SURVEY_HESSIANS` / :data:`SURVEY_SEES`; ``rng_for(link)`` gives
    each link's generator. Rows: link, then the check's columns."""
    from theorylab.data.index_models import IndexModel, get_link

    rows = []
    for link in links:
        rng = rng_for(link)
        model = IndexModel.make(d, link, rng, W=np.eye(d)[:, : get_link(link).r])
        sees = {m: SURVEY_SEES[(link, m)] for m in ("SIR", "SAVE")}
        checks = stein_population_checks(model, rng, batches, per_batch, n_slices, SURVEY_HESSIANS[link], sees)
        rows += [dict(link=link, **row) for row in checks]
    return rows
