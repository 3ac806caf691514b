"""Information between distribution-valued representations (Murphy, Dillavou & Bassett, *Comparing the
information content of probabilistic representation spaces*, TMLR 2025, arXiv 2405.21042).

A *channel* (any subset of latent dims) encodes each of N probe inputs ``x_i`` as a diagonal Gaussian
``p(u | x_i) = N(mu_i, diag var_i)``; ``mu``, ``var`` are arrays ``(N, k)``. Everything the channel says
about the probe set is in its *fingerprint*: the N x N matrix of Bhattacharyya coefficients

    BC_ij = exp(-D_B(i, j)),
    D_B = 1/8 dmu^T Sbar^-1 dmu + 1/2 ln(det Sbar / sqrt(det S_i det S_j)),  Sbar = (S_i + S_j) / 2,

which for diagonal covariances is a sum over dims. With X uniform over the probes, the Kolchinsky–Tracey
pairwise estimate (Kolchinsky & Tracey, *Estimating mixture entropy with pairwise distances*, Entropy
2017, Eq. for ``Ĥ_D`` with the Bhattacharyya distance) of the mutual information is

    I(U; X) ≈ -(1/N) Σ_i log2((1/N) Σ_j BC_ij)    (bits).

Because the Bhattacharyya distance is the Chernoff alpha-divergence at alpha = 1/2, this is a *lower*
bound on the true I(U; X) (K&T 2017, Sec. 4); the same formula with ``exp(-KL_ij)`` is an upper bound
(:func:`kl_information`).

Two channels conditionally independent given X have the product fingerprint, so the paper's terms are
``I_12 = I(BC1 * BC2)`` (joint message), ``I_11 = I(BC1 ** 2)`` (two messages from the same channel), and

    NMI = (I_1 + I_2 - I_12) / sqrt((2 I_1 - I_11)(2 I_2 - I_22)),    VI = 2 I_12 - I_11 - I_22  (bits).

All computations are float64 torch, vectorised over pairs (memory ``O(N^2 k)``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def _gaussians(mu, var) -> tuple[Tensor, Tensor]:
    mu = torch.as_tensor(mu, dtype=torch.float64)
    var = torch.as_tensor(var, dtype=torch.float64)
    if mu.ndim != 2:
        raise ValueError(f"mu must be 2-d (N, k), got shape {tuple(mu.shape)}")
    if var.shape != mu.shape:
        raise ValueError(f"var shape {tuple(var.shape)} must equal mu shape {tuple(mu.shape)}")
    if mu.shape[0] == 0 or mu.shape[1] == 0:
        raise ValueError(f"need at least one probe and one dim, got shape {tuple(mu.shape)}")
    if not torch.isfinite(mu).all():
        raise ValueError("mu must be finite")
    if not (torch.isfinite(var).all() and (var > 0).all()):
        raise ValueError("var must be finite and > 0")
    return mu, var


def _square(m, name: str) -> Tensor:
    m = torch.as_tensor(m, dtype=torch.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square (N, N) matrix, got shape {tuple(m.shape)}")
    return m


def bhattacharyya_distance(mu, var) -> Tensor:
    """``D_B(i, j)`` (nats, shape (N, N)) between ``N(mu_i, diag var_i)`` and ``N(mu_j, diag var_j)``:
    ``Σ_d [dmu_d^2 / (8 sbar_d) + 1/2 ln(sbar_d / sqrt(var_id var_jd))]`` with ``sbar = (var_i + var_j)/2``,
    the diagonal-covariance form of D_B. The diagonal is set to exactly 0."""
    mu, var = _gaussians(mu, var)
    dmu = mu[:, None, :] - mu[None, :, :]
    sbar = 0.5 * (var[:, None, :] + var[None, :, :])
    log_var = var.log()
    quad = (dmu.square() / sbar).sum(-1) / 8
    logdet = 0.5 * (sbar.log() - 0.5 * (log_var[:, None, :] + log_var[None, :, :])).sum(-1)
    dist = quad + logdet
    # Identical distributions: the formula gives 0 up to rounding; make BC_ii = 1 exact.
    dist.fill_diagonal_(0.0)
    return dist


def bhattacharyya_coefficient(mu, var) -> Tensor:
    """``BC = exp(-D_B)`` (shape (N, N), entries in (0, 1], diagonal exactly 1); see
    :func:`bhattacharyya_distance`."""
    return torch.exp(-bhattacharyya_distance(mu, var))


bhattacharyya = bhattacharyya_coefficient


def fingerprint(mu, var) -> Tensor:
    """A channel's fingerprint over the probe set: its N x N Bhattacharyya-coefficient matrix."""
    return bhattacharyya_coefficient(mu, var)


def kl_divergence(mu, var) -> Tensor:
    """``KL(p_i || p_j)`` (nats, shape (N, N)) between diagonal Gaussians:
    ``1/2 Σ_d [var_id/var_jd + (mu_jd - mu_id)^2/var_jd - 1 + ln(var_jd/var_id)]``."""
    mu, var = _gaussians(mu, var)
    vi, vj = var[:, None, :], var[None, :, :]
    dmu = mu[None, :, :] - mu[:, None, :]
    kl = 0.5 * (vi / vj + dmu.square() / vj - 1 + vj.log() - vi.log()).sum(-1)
    kl.fill_diagonal_(0.0)
    return kl


def kt_information(bc, *, log: bool = False) -> float:
    """Kolchinsky–Tracey pairwise estimate ``-(1/N) Σ_i log2((1/N) Σ_j K_ij)`` (bits), X uniform over N.

    ``bc`` is the kernel ``K`` (a fingerprint, or an elementwise product/power of fingerprints); with
    ``log=True`` it is ``log K`` instead, so kernels far below float64's range (e.g. ``-KL``) lose nothing.
    The row sums go through log-sum-exp; ``K_ii = 1`` keeps each row mean >= 1/N, so entries that underflow
    to 0 (log ``-inf``) are harmless. The result lies in ``[0, log2 N]`` when ``0 <= K <= 1`` and ``K_ii = 1``."""
    m = _square(bc, "bc")
    if log:
        log_k = m
    else:
        if (m < 0).any():
            raise ValueError("bc must be >= 0 (pass log=True for a log-kernel)")
        log_k = m.log()
    n = m.shape[0]
    row = torch.logsumexp(log_k, dim=1) - math.log(n)
    return float(-row.mean() / math.log(2))


def kl_information(mu, var) -> float:
    """The same pairwise estimate with ``K_ij = exp(-KL(p_i || p_j))`` (bits): an upper bound on
    I(U; X) for X uniform over the probes (Kolchinsky & Tracey 2017, Sec. 4), complementing the
    Bhattacharyya lower bound ``kt_information(fingerprint(mu, var))``."""
    return kt_information(-kl_divergence(mu, var), log=True)


def information_terms(bc1, bc2) -> dict[str, float]:
    """The paper's five estimates (bits) for two channels with fingerprints ``bc1``, ``bc2`` on the same
    probes: ``I1``, ``I2`` (each channel), ``I11``, ``I22`` (two messages from one channel, kernel ``BC**2``)
    and ``I12`` (one message from each, kernel ``BC1 * BC2``)."""
    b1, b2 = _square(bc1, "bc1"), _square(bc2, "bc2")
    if b1.shape != b2.shape:
        raise ValueError(f"fingerprints must share the probe set, got shapes {tuple(b1.shape)} and {tuple(b2.shape)}")
    if (b1 < 0).any() or (b2 < 0).any():
        raise ValueError("fingerprints must be >= 0")
    # Products of kernels are sums of logs: exact even where the product would underflow.
    l1, l2 = b1.log(), b2.log()
    return {
        "I1": kt_information(l1, log=True),
        "I2": kt_information(l2, log=True),
        "I11": kt_information(2 * l1, log=True),
        "I22": kt_information(2 * l2, log=True),
        "I12": kt_information(l1 + l2, log=True),
    }


def nmi_vi(bc1, bc2) -> tuple[float, float]:
    """``(NMI, VI)`` between two channels from their fingerprints (Murphy et al. 2025):
    ``NMI = (I1 + I2 - I12) / sqrt((2 I1 - I11)(2 I2 - I22))`` and ``VI = 2 I12 - I11 - I22`` (bits).

    For 0/1 fingerprints (channels that are partitions of the probes) ``I = I11`` is the partition entropy,
    ``I12`` the joint entropy, so these are the discrete NMI ``I(A;B)/sqrt(H(A)H(B))`` and VI
    ``H(A|B) + H(B|A)``. NMI is ``nan`` when either channel carries no information (zero denominator)."""
    return nmi_vi_from_terms(**information_terms(bc1, bc2))


def nmi_vi_from_terms(I1: float, I2: float, I11: float, I22: float, I12: float) -> tuple[float, float]:
    """:func:`nmi_vi` from the five estimates of :func:`information_terms`, for comparing many channels: each
    channel's ``I`` and self term once (:class:`Channel`), only ``I12`` per pair."""
    vi = 2 * I12 - I11 - I22
    denom = (2 * I1 - I11) * (2 * I2 - I22)
    nmi = (I1 + I2 - I12) / math.sqrt(denom) if denom > 0 else math.nan
    return nmi, vi


class Channel:
    """One channel's fingerprint over a probe set, kept as ``log BC`` with its information ``I`` and self term
    ``I_self`` (kernel ``BC²``) computed once; :meth:`nmi_vi` against another channel then costs one estimate."""

    def __init__(self, mu, var):
        self.log_bc = -bhattacharyya_distance(mu, var)
        self.I = kt_information(self.log_bc, log=True)
        self.I_self = kt_information(2 * self.log_bc, log=True)

    def joint(self, other: "Channel") -> float:
        """``I12`` (bits): one message from each channel, kernel ``BC1 ⊙ BC2`` (a sum of logs)."""
        if self.log_bc.shape != other.log_bc.shape:
            raise ValueError(
                f"channels must share the probe set, got {tuple(self.log_bc.shape)} and {tuple(other.log_bc.shape)}"
            )
        return kt_information(self.log_bc + other.log_bc, log=True)

    def nmi_vi(self, other: "Channel") -> tuple[float, float]:
        return nmi_vi_from_terms(self.I, other.I, self.I_self, other.I_self, self.joint(other))
