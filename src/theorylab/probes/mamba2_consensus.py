"""Consensus measurements on Hugging Face Mamba-2 token states (card ``ssm-consensus``, "Measurements" and claim 7).

- :func:`consensus_measures`: ``λ̄₁`` and the participation ratio ``r`` of token states, through
  :func:`theorylab.probes.spectra.gram_spectrum` and :func:`~theorylab.probes.spectra.participation_ratio` (only the
  shape handling lives here), e.g. of :func:`theorylab.nn.hf_mamba2.layer_states`.
- :func:`idealization_error`: how far the HF module configured by :func:`theorylab.nn.hf_mamba2.idealized_mamba2`
  is from :func:`theorylab.theory.consensus.ideal_ssm_layer` on the same weights, layer by layer.

The adapter itself (gate toggle, layer cycling, the idealised configuration) is :mod:`theorylab.nn.hf_mamba2`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from theorylab.nn.hf_mamba2 import as_layers, idealized_mamba2, layer_states
from theorylab.probes.spectra import gram_spectrum, participation_ratio
from theorylab.theory.consensus import LayerWeights, ideal_ssm_layer


def consensus_measures(states: Tensor) -> tuple[Tensor, Tensor]:
    """``(λ̄₁, r)`` of token states ``(..., ℓ, n)``, each of shape ``(...)``: the top normalised Gram eigenvalue and
    the participation ratio ``1/Σλ̄_k²`` (card "Measurements"; :func:`theorylab.probes.spectra.gram_spectrum`, rows
    normalised there). For ``(depth, runs, ℓ, n)`` states this gives ``(depth, runs)``, as
    ``ConsensusTrace.lambda1`` and ``.participation`` do for the idealised model."""
    spectrum = gram_spectrum(states)
    return spectrum[..., 0], participation_ratio(spectrum)


def idealization_error(
    weights: LayerWeights | Sequence[LayerWeights],
    z0: Tensor,
    *,
    depth: int | None = None,
    run: int = 0,
    nonlinearity: str = "silu",
    tau: float = 1.0,
    gate: bool = True,
    dtype: torch.dtype = torch.float32,
    model: nn.Module | None = None,
) -> Tensor:
    """Largest ``|z_HF − z_ideal|`` over sequences, tokens and channels after each layer ``1..depth``, ``(depth,)``.

    ``z_HF``: :func:`layer_states` of :func:`idealized_mamba2` (built here from ``weights`` and ``run`` at ``dtype``
    unless ``model`` is given) from the unit tokens ``z0`` ``(batch, ℓ, n)``; ``z_ideal``:
    :func:`~theorylab.theory.consensus.ideal_ssm_layer` in float64 on the same run's weights, layer ``k`` using
    ``weights[k mod L]``; ``gate=False`` drops ``W_z`` there and runs the HF model under :func:`gate_off`. ``depth``
    defaults to the number of layers given. Card claim 7 asks for ``<= 1e-5`` in float32."""
    layers = as_layers(weights)
    if not 0 <= run < layers[0].S_B.shape[0]:
        raise ValueError(f"run {run} out of range for weights of {layers[0].S_B.shape[0]} runs")
    depth = len(layers) if depth is None else depth
    if model is None:
        model = idealized_mamba2(layers, run=run, nonlinearity=nonlinearity, tau=tau, dtype=dtype)
    got = layer_states(model, z0, depth, gate=gate).states[1:].double()
    z = z0.double() / z0.double().norm(dim=-1, keepdim=True)
    errors = []
    for k in range(depth):
        z = ideal_ssm_layer(z, _one_run(layers[k % len(layers)], run, gate), nonlinearity=nonlinearity, tau=tau)[0]
        errors.append((got[k] - z).abs().max())
    return torch.stack(errors)


def _one_run(w: LayerWeights, run: int, gate: bool) -> LayerWeights:
    """Run ``run`` of ``w`` as a one-run float64 ``LayerWeights`` (``W_z`` dropped unless ``gate``)."""

    def pick(t: Tensor) -> Tensor:
        return t[run : run + 1].double()

    W_z = pick(w.W_z) if gate and w.W_z is not None else None
    return LayerWeights(pick(w.S_B), pick(w.S_C), pick(w.W_delta), pick(w.b_delta), pick(w.alpha), W_z)
