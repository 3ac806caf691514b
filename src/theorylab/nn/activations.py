"""Activations given by Hermite coefficients, ``sigma = sum_j a_j He_j / sqrt(j!)``.

In this orthonormal basis ``E[sigma(<w, x>) sigma(<w', x>)] = K(<w, w'>)`` with
``K(t) = sum_j a_j^2 t^j`` for unit w, w' and x ~ N(0, I) (Mehler), which is what makes the
mean-field population loss exact (:mod:`theorylab.theory.mean_field`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


def hermite_activation_torch(act: "HermiteActivation", z: Tensor) -> Tensor:
    """``sigma(z)`` in torch (differentiable), by the recurrence ``He_{j+1} = z He_j - j He_{j-1}``."""
    out = act.coeffs[0] * torch.ones_like(z)
    prev, cur = torch.ones_like(z), z
    for j in range(1, len(act.coeffs)):
        if act.coeffs[j]:
            out = out + act.coeffs[j] * cur / math.sqrt(math.factorial(j))
        prev, cur = cur, z * cur - j * prev
    return out


def _int_pow(t: Tensor, j: int) -> Tensor:
    """``t ** j`` for an integer ``j >= 0``: torch's own fast paths up to 3, repeated squaring above (its generic
    ``pow`` for 4 and beyond is several times slower on a CPU, the kernels' hottest line)."""
    if j <= 3:
        return t.pow(j)
    half = _int_pow(t, j // 2)
    sq = half * half
    return sq * t if j % 2 else sq


@dataclass(frozen=True)
class HermiteActivation:
    """``sigma = sum_j a_j He_j / sqrt(j!)`` (orthonormal Hermite basis), kernel ``K(t) = sum_j a_j^2 t^j``."""

    coeffs: tuple[float, ...]

    @classmethod
    def he(cls, k: int) -> "HermiteActivation":
        """``He_k / sqrt(k!)``: information exponent k, ``K(t) = t^k``."""
        return cls(tuple(1.0 if j == k else 0.0 for j in range(k + 1)))

    @classmethod
    def mix(cls, weights: dict[int, float]) -> "HermiteActivation":
        """``sum_j w_j He_j / sqrt(j!)`` normalised so that ``K(1) = 1``."""
        top = max(weights)
        norm = math.sqrt(sum(w * w for w in weights.values()))
        return cls(tuple(weights.get(j, 0.0) / norm for j in range(top + 1)))

    @property
    def information_exponent(self) -> int:
        return next(j for j, a in enumerate(self.coeffs) if j >= 1 and a != 0)

    def kernel(self, t: Tensor) -> Tensor:
        """``K(t) = sum_j a_j^2 t^j`` (only the nonzero terms: most links are one or two monomials)."""
        terms = [(j, a * a) for j, a in enumerate(self.coeffs) if a]
        out = terms[0][1] * _int_pow(t, terms[0][0])
        for j, w in terms[1:]:
            out = out + w * _int_pow(t, j)
        return out

    def kernel_prime(self, t: Tensor) -> Tensor:
        """``K'(t) = sum_j j a_j^2 t^(j-1)``."""
        terms = [(j, j * a * a) for j, a in enumerate(self.coeffs) if a and j >= 1]
        out = terms[0][1] * _int_pow(t, terms[0][0] - 1)
        for j, w in terms[1:]:
            out = out + w * _int_pow(t, j - 1)
        return out

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """``sigma(z)`` on NumPy arrays."""
        return hermite_activation_torch(self, torch.as_tensor(np.asarray(z, dtype=np.float64))).numpy()

    def evaluate(self, z: Tensor) -> Tensor:
        """``sigma(z)`` on torch tensors (differentiable): :func:`hermite_activation_torch`."""
        return hermite_activation_torch(self, z)

    @property
    def derivative(self) -> "HermiteActivation":
        """``sigma'`` as an activation: ``He_j' = j He_{j-1}``, so its coefficients are ``a_{j+1} sqrt(j+1)``."""
        return HermiteActivation(tuple(a * math.sqrt(j) for j, a in enumerate(self.coeffs))[1:] or (0.0,))


def single_index_link(k: int) -> HermiteActivation:
    """The link of Glasgow, Wu, Bruna (arXiv 2504.13110)'s experiments with information exponent ``k``:
    ``He_k / sqrt(k!)``, except ``k = 3``: ``(He_3/sqrt(6) + He_4/sqrt(24)) / sqrt(2)``, so that the escape
    from the equator is driven at order 3 while particles of negative overlap still converge."""
    return HermiteActivation.mix({3: 1.0, 4: 1.0}) if k == 3 else HermiteActivation.he(k)
