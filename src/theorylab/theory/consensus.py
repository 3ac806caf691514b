"""Consensus dynamics of tokens in an idealised selective state-space model (Silvestre, Rodríguez Abella and
Tabuada 2026, "The Attention Within: Consensus Dynamics in Selective State Space Models"; study card
``ssm-consensus``).

Tokens ``z_i ∈ S^{n−1}`` (``i = 1..ℓ``) pass through ``depth`` layers of a Mamba-2 block stripped to its
selective scan. Layer ``k`` has weights ``S_B, S_C ∈ R^{m×n}``, ``W_Δ ∈ R^{n×n}``, ``b_Δ, α ∈ R^n`` and, per
channel ``μ``,

    Δ_i^μ = softplus(W_Δ^μ z_i + b_Δ^μ),
    h_i^μ = exp(−α^μ Δ_i^μ) h_{i−1}^μ + Δ_i^μ ς(S_B z_i) z_i^μ,      h_0^μ = 0 ∈ R^m,
    r_i^μ = ς(S_C z_i)ᵀ h_i^μ,
    z_i ← π(z_i + τ g_i ⊙ r_i),     π(x) = x / ‖x‖,

with ``ς`` SiLU or the identity and ``g_i = 1`` or ``SiLU(√n W_z z_i)``. Unrolling the causal scan gives the
"attention within" form,

    r_i^μ = Σ_{j ≤ i} exp(−α^μ Σ_{j<k≤i} Δ_k^μ) · ς(S_C z_i)ᵀς(S_B z_j) · Δ_j^μ z_j^μ,

whose diagonal weight is the interaction term ``q_i = ς(S_C z_i)ᵀς(S_B z_i)``; the paper's stability result
needs ``q`` to be persistently exciting (:func:`pe_window`). The weight scales and init ranges follow the study
card, which reconstructs them from the paper's description (not verified against the paper).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

_NONLINEARITIES = ("silu", "linear")


@dataclass(frozen=True)
class LayerWeights:
    """One layer's weights for ``R`` independent runs (leading axis ``R`` on every tensor).

    ``S_B, S_C``: ``(R, m, n)``; ``W_delta``: ``(R, n, n)``; ``b_delta, alpha``: ``(R, n)``;
    ``W_z``: ``(R, n, n)`` or ``None`` when the layer has no gate."""

    S_B: Tensor
    S_C: Tensor
    W_delta: Tensor
    b_delta: Tensor
    alpha: Tensor
    W_z: Tensor | None = None


def draw_layer_weights(
    runs: int,
    n: int,
    m: int,
    *,
    gate: bool = False,
    isotropic: bool = False,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
) -> LayerWeights:
    """Draw one layer's weights for ``runs`` runs as the study card prescribes.

    ``S_B, S_C`` have N(0, 1) entries (isotropic: ``m = n`` and ``S_B = S_C = √(g n) I`` with one
    ``g ~ U[0.5, 2]`` per run); ``W_delta`` and ``W_z`` have N(0, 1/n) entries; ``b_delta`` is the inverse
    softplus of U[0.001, 0.1] (so that ``softplus(b_delta)``, the Δ at ``z = 0``, is uniform there, as in
    Mamba's Δ init); ``alpha ~ U[1, 16]`` (Mamba-2's A range). The draw order is fixed, so a seeded
    generator reproduces the weights."""
    kw = {"generator": generator, "dtype": dtype}
    if isotropic:
        if m != n:
            raise ValueError(f"the isotropic case needs m = n, got m={m}, n={n}")
        g = 0.5 + 1.5 * torch.rand(runs, **kw)
        S_B = (g * n).sqrt()[:, None, None] * torch.eye(n, dtype=dtype)
        S_C = S_B.clone()
    else:
        S_B = torch.randn(runs, m, n, **kw)
        S_C = torch.randn(runs, m, n, **kw)
    W_delta = torch.randn(runs, n, n, **kw) / math.sqrt(n)
    u = 0.001 + 0.099 * torch.rand(runs, n, **kw)
    b_delta = torch.log(torch.expm1(u))  # softplus⁻¹(u); exact for u this far from 0 in float64
    alpha = 1.0 + 15.0 * torch.rand(runs, n, **kw)
    W_z = torch.randn(runs, n, n, **kw) / math.sqrt(n) if gate else None
    return LayerWeights(S_B, S_C, W_delta, b_delta, alpha, W_z)


def _sigma(x: Tensor, nonlinearity: str) -> Tensor:
    if nonlinearity == "silu":
        return F.silu(x)
    if nonlinearity == "linear":
        return x
    raise ValueError(f"nonlinearity must be one of {_NONLINEARITIES}, got {nonlinearity!r}")


def interaction_term(z: Tensor, S_B: Tensor, S_C: Tensor, nonlinearity: str = "silu") -> Tensor:
    """``q_i = ς(S_C z_i)ᵀ ς(S_B z_i)`` for tokens ``z`` of shape ``(..., ℓ, n)`` and ``S_B, S_C`` of shape
    ``(..., m, n)`` (leading axes broadcast); returns ``(..., ℓ)``. With ``ς`` the identity this is
    ``z_iᵀ S_Cᵀ S_B z_i``."""
    u = _sigma(z @ S_B.transpose(-1, -2), nonlinearity)
    v = _sigma(z @ S_C.transpose(-1, -2), nonlinearity)
    return (u * v).sum(-1)


def ideal_ssm_layer(
    z: Tensor, w: LayerWeights, *, nonlinearity: str = "silu", tau: float = 1.0
) -> tuple[Tensor, Tensor]:
    """One layer of the idealised model on tokens ``z`` of shape ``(R, ℓ, n)`` (unit rows); returns the
    updated tokens and the interaction term ``q`` ``(R, ℓ)`` at the layer's input.

    The causal scan runs as a loop over the ``ℓ`` positions with the state ``h`` ``(R, n, m)`` of all runs and
    channels at once; this costs ``O(R ℓ n m)``, against ``O(R ℓ² n)`` (plus as many exponentials) for the
    unrolled form in the module docstring."""
    delta = F.softplus(z @ w.W_delta.transpose(-1, -2) + w.b_delta[:, None, :])  # (R, ℓ, n)
    u = _sigma(z @ w.S_B.transpose(-1, -2), nonlinearity)  # ς(S_B z_i): (R, ℓ, m)
    v = _sigma(z @ w.S_C.transpose(-1, -2), nonlinearity)  # ς(S_C z_i): (R, ℓ, m)
    decay = torch.exp(-w.alpha[:, None, :] * delta)  # (R, ℓ, n)
    drive = delta * z  # Δ_i^μ z_i^μ: (R, ℓ, n)
    h = z.new_zeros(z.shape[0], z.shape[-1], u.shape[-1])
    r = torch.empty_like(z)
    for i in range(z.shape[-2]):
        h = decay[:, i, :, None] * h + drive[:, i, :, None] * u[:, i, None, :]
        r[:, i] = (h @ v[:, i, :, None])[..., 0]
    g = F.silu(math.sqrt(z.shape[-1]) * z @ w.W_z.transpose(-1, -2)) if w.W_z is not None else 1.0
    x = z + tau * g * r
    return x / x.norm(dim=-1, keepdim=True), (u * v).sum(-1)


def _gram_spectrum(z: Tensor) -> Tensor:
    # Same measure as theorylab.probes.spectra.gram_spectrum (theory may not import probes).
    zn = z / z.norm(dim=-1, keepdim=True)
    lam = torch.linalg.eigvalsh(zn @ zn.transpose(-1, -2)).flip(-1).clamp_min(0.0)
    return lam / lam.sum(-1, keepdim=True)


@dataclass(frozen=True)
class ConsensusTrace:
    """Output of :func:`simulate_ideal_ssm` for ``R`` runs.

    ``layers``: the recorded layer indices (0 is the initial state; the last layer is always recorded);
    ``spectra``: ``(len(layers), R, ℓ)`` Gram spectra (descending, summing to 1) of the tokens after those
    layers; ``q``: ``(depth, R, ℓ)`` interaction term at the input of each layer; ``z``: final tokens
    ``(R, ℓ, n)``."""

    layers: list[int]
    spectra: Tensor
    q: Tensor
    z: Tensor

    @property
    def lambda1(self) -> Tensor:
        """``λ̄₁`` per recorded layer and run, ``(len(layers), R)``."""
        return self.spectra[..., 0]

    @property
    def participation(self) -> Tensor:
        """``r = 1 / Σ λ̄_k²`` per recorded layer and run, ``(len(layers), R)``."""
        return 1.0 / self.spectra.pow(2).sum(-1)


def simulate_ideal_ssm(
    n: int,
    m: int,
    length: int,
    runs: int,
    depth: int,
    *,
    nonlinearity: str | None = None,
    gate: bool = False,
    isotropic: bool = False,
    time_invariant: bool = False,
    tau: float = 1.0,
    generator: torch.Generator,
    record_every: int = 1,
    dtype: torch.dtype = torch.float64,
    z0: Tensor | None = None,
    weights: Sequence[LayerWeights] | None = None,
) -> ConsensusTrace:
    """Run ``runs`` independent copies of the idealised selective SSM (module docstring) for ``depth`` layers.

    ``nonlinearity``: ``"silu"`` or ``"linear"`` for ``ς``; ``None`` means SiLU, or the identity in the
    isotropic case (where the card prescribes no SiLU). ``isotropic`` needs ``m = n``. ``time_invariant``
    draws one layer's weights and reuses them at every layer; otherwise they are redrawn per layer.
    Initial tokens are uniform on ``S^{n−1}`` unless ``z0`` ``(R, ℓ, n)`` is given; ``weights`` (one
    :class:`LayerWeights` per layer, or one for ``time_invariant``) replaces the draws, so that references
    can share them. Draw order: ``z0``, then each layer's :func:`draw_layer_weights` in turn."""
    if nonlinearity is None:
        nonlinearity = "linear" if isotropic else "silu"
    if nonlinearity not in _NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {_NONLINEARITIES}, got {nonlinearity!r}")
    if record_every < 1:
        raise ValueError("record_every must be >= 1")
    if z0 is None:
        z0 = torch.randn(runs, length, n, generator=generator, dtype=dtype)
    z = z0 / z0.norm(dim=-1, keepdim=True)

    def layer_weights(k: int) -> LayerWeights:
        if weights is not None:
            return weights[0 if time_invariant else k]
        return draw_layer_weights(runs, n, m, gate=gate, isotropic=isotropic, generator=generator, dtype=dtype)

    fixed = layer_weights(0) if time_invariant else None
    layers, spectra, qs = [0], [_gram_spectrum(z)], []
    for k in range(depth):
        w = fixed if fixed is not None else layer_weights(k)
        z, q = ideal_ssm_layer(z, w, nonlinearity=nonlinearity, tau=tau)
        qs.append(q)
        if (k + 1) % record_every == 0 or k + 1 == depth:
            layers.append(k + 1)
            spectra.append(_gram_spectrum(z))
    q_all = torch.stack(qs) if qs else z.new_zeros(0, runs, length)
    return ConsensusTrace(layers=layers, spectra=torch.stack(spectra), q=q_all, z=z)


def pe_window(q: Tensor) -> int | None:
    """Persistence-of-excitation window ``T* = min{T : every length-T window average over layers of q_i(k)
    is > 0, for all i}`` for ``q`` of shape ``(depth, ...)`` (layer axis first; every trailing entry is a
    token ``i``); ``None`` if no ``T ≤ depth`` works. Windows are contiguous and inclusive, ``k..k+T−1``.

    Each candidate ``T`` is checked with one cumulative sum (window sums ``C[k+T] − C[k]``); ``T`` is scanned
    upward because the property is not monotone in ``T`` (``T`` passing implies ``2T`` passes, not ``T+1``)."""
    depth = q.shape[0]
    flat = q.reshape(depth, -1).double()
    C = torch.cat([flat.new_zeros(1, flat.shape[1]), torch.cumsum(flat, dim=0)])
    for T in range(1, depth + 1):
        if bool((C[T:] - C[:-T] > 0).all()):
            return T
    return None
