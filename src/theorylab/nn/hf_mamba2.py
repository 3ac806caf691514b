"""A Hugging Face Mamba-2 adapter for the token-consensus study (card ``ssm-consensus``, "Real architecture" and
claims 7-8; Silvestre, Rodríguez Abella and Tabuada 2026, "The Attention Within: Consensus Dynamics in Selective
State Space Models").

Works on ``transformers``' Mamba-2 (``Mamba2ForCausalLM`` or ``Mamba2Model``) on its pure-PyTorch path; nothing is
downloaded, the CUDA kernels are not needed. Needs the ``hf`` extra.

- :func:`gate_off`: inside the block every mixer's gated RMSNorm ``norm(y · SiLU(z))`` computes ``norm(y)`` (the
  paper's "no gate"); the HF norm modules are wrapped, and restored on exit.
- :func:`layer_states`: run the real ``Mamba2Block`` forwards, layer ``k`` using block ``k mod L``, to any depth, and
  return the unit-normalised token states after each layer (:class:`LayerStates`), optionally re-projecting the
  residual stream onto a sphere after each layer (the idealisation's ``π``).
- :func:`idealized_mamba2`: a random-init HF Mamba-2 whose weights are set so that one block, followed by that
  projection, *is* the idealised layer of :func:`theorylab.theory.consensus.ideal_ssm_layer` (card claim 7);
  :func:`theorylab.probes.mamba2_consensus.idealization_error` measures how far the two are apart.
- The measurements on these states (``λ̄₁``, ``r``, the distance to the idealisation) are in
  :mod:`theorylab.probes.mamba2_consensus`.

**The mapping onto the idealised layer** (derived here from ``Mamba2Mixer.forward`` of transformers 5.x; what is
exact and what is a choice):

- Residual stream on the sphere of radius ``√n`` (RMS 1): with ``h = √n z`` (``‖z‖ = 1``) the block's input RMSNorm
  (weight 1, ``eps = 0``) returns ``u = √n z`` exactly, so every input projection row carries a ``1/√n``: in_proj's
  output is laid out ``[gate (d) | x (d) | B (m) | C (m) | dt (heads)]`` and gets ``W_z``, ``I/√n``, ``S_B/√n``,
  ``S_C/√n``, ``W_Δ/√n``. Then ``x = z``, ``dt = W_Δ z``, and the gate pre-activation is ``W_z u = √n W_z z``, the
  card's ``SiLU(√n W_z z)``.
- ``expand = 1``, ``head_dim = 1``, ``num_heads = n``: one ``Δ`` and one ``A`` per channel ``μ``; ``n_groups = 1``:
  ``B, C`` shared by all channels. ``dt_bias = b_Δ`` (HF adds it before its softplus), ``A_log = log α``
  (``A = −exp(A_log) = −α``, decay ``exp(AΔ)``), ``D = 0``; ``time_step_limit = (0, ∞)``, so HF's clamp of
  ``Δ > 0`` is inert, and ``time_step_min/max/floor`` only shape HF's init, which is overwritten.
- Conv: kernel ``conv_kernel`` (4) with only the last tap 1 and bias 0, the identity on the causal sequence.
- Activation: HF applies ``SiLU`` to the whole conv output ``xBC`` inside ``causal_conv1d_fn`` (the string
  ``mixer.activation``; ``mixer.act`` is built but unused in transformers 5.x). The idealisation keeps ``x`` linear
  and puts ``ς`` on ``B, C`` only, so ``mixer.activation`` is set to ``None`` and a forward hook on ``in_proj``
  applies ``SiLU`` to the ``B, C`` columns. This moves the activation before the conv, which is exact because the
  conv is the identity.
- Scan: with these weights HF's chunked scan computes ``y_i^μ = Σ_{j≤i} exp(−α^μ Σ_{j<k≤i} Δ_k^μ) C_iᵀB_j Δ_j^μ
  x_j^μ``, the card's unrolled ``r_i^μ``.
- Gated norm: replaced by :class:`GateOnly` (``y ↦ y · SiLU(gate)`` when the layer has ``W_z``, else ``y``; no
  normalisation). The card bypasses the internal norm; with it, ``r`` would be rescaled to RMS 1.
- ``out_proj = τ √n I`` and the residual add give ``h' = √n (z + τ g ⊙ r)``; re-projecting onto the sphere of radius
  ``√n`` (``layer_states(project=True)``, the default radius) gives ``h' = √n π(z + τ g ⊙ r)``, i.e. ``z' = π(…)``
  exactly.

Why the projection is needed: the next block's RMSNorm does normalise what its *mixer* sees (``u = √n π(h)``), but
the residual stream itself is never renormalised, so without ``project`` layer ``k`` acts on token ``i`` as the
idealised layer with step ``τ √n / ‖h_i^{(k)}‖``, a per-token step that shrinks as the stream grows. Only the first
layer (from ``‖h‖ = √n``) matches; the test uses this as a negative control.

Precision: HF's chunked scan casts its inputs to float32 (``mamba2_chunk_scan`` calls ``.float()``), as do its
RMSNorms and, by default, the residual (``residual_in_fp32``). A float64 model is therefore float32-limited inside
the scan; the idealised model turns ``residual_in_fp32`` off, and :func:`theorylab.nn.hf.full_precision_norms`
keeps the block norm at float64.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_NONLINEARITIES = ("silu", "linear")


class _CPUKernelAdvice(logging.Filter):
    """Drops transformers' "falling back to its reference PyTorch implementation ... install mamba_ssm /
    causal_conv1d" warnings when no GPU is present: those packages are CUDA-only, and the reference path is the one
    this adapter is built for. On a GPU machine the advice stands and is shown."""

    def filter(self, record: logging.LogRecord) -> bool:
        return torch.cuda.is_available() or "falling back to its reference PyTorch" not in record.getMessage()


logging.getLogger("transformers.integrations.hub_kernels").addFilter(_CPUKernelAdvice())


# --------------------------------------------------------------------------------------------------- model access


def mamba2_blocks(model: nn.Module) -> list[nn.Module]:
    """The decoder blocks (``Mamba2Block``) of a ``Mamba2ForCausalLM`` or ``Mamba2Model``, first layer first."""
    base = getattr(model, "backbone", model)
    layers = getattr(base, "layers", None)
    kind = getattr(getattr(model, "config", None), "model_type", None)
    if kind != "mamba2" or layers is None or not all(type(b).__name__ == "Mamba2Block" for b in layers):
        raise ValueError(
            f"expected a transformers Mamba-2 model (model_type 'mamba2'), got {type(model).__name__} "
            f"(model_type {kind!r})"
        )
    return list(layers)


def _mixers(model: nn.Module) -> list[nn.Module]:
    return [block.mixer for block in mamba2_blocks(model)]


# ------------------------------------------------------------------------------------------------------ the gate


class _GateIgnored(nn.Module):
    """Wraps a mixer's gated norm and calls it without the gate: ``norm(y · SiLU(z)) → norm(y)``."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, hidden_states: Tensor, gate: Tensor | None = None) -> Tensor:
        return self.inner(hidden_states, None)


class GateOnly(nn.Module):
    """The idealised model's stand-in for Mamba-2's gated RMSNorm: ``y ↦ y ⊙ SiLU(gate)`` when ``gated`` (the card's
    ``g = SiLU(√n W_z z)``), else ``y``; no normalisation. Same call signature as ``MambaRMSNormGated``."""

    def __init__(self, gated: bool):
        super().__init__()
        self.gated = gated

    def forward(self, hidden_states: Tensor, gate: Tensor | None = None) -> Tensor:
        if not self.gated or gate is None:
            return hidden_states
        return hidden_states * F.silu(gate)

    def extra_repr(self) -> str:
        return f"gated={self.gated}"


@contextmanager
def gate_off(model: nn.Module) -> Iterator[int]:
    """Turn the output gate off in every Mamba-2 mixer inside the block (yields how many mixers were switched).

    Mamba-2's mixer ends with ``norm(y · SiLU(z))`` (``MambaRMSNormGated``, ``z`` the gate branch of in_proj);
    inside this context each ``mixer.norm`` is wrapped by a module that calls it with ``gate=None``, i.e.
    ``norm(y)``, the same normalisation and scale without the gate (card "Real architecture": turn the gate off;
    the paper's ungated Mamba-2). Applies to any forward (``model(...)`` or :func:`layer_states`); the original
    modules are put back on exit, also after an error."""
    mixers = _mixers(model)
    originals = [mixer.norm for mixer in mixers]
    try:
        for mixer, norm in zip(mixers, originals):
            mixer.norm = _GateIgnored(norm)
        yield len(mixers)
    finally:
        for mixer, norm in zip(mixers, originals):
            mixer.norm = norm


@contextmanager
def _chunk_sizes(mixers: Sequence[nn.Module], length: int, chunk_size: int | None) -> Iterator[None]:
    """Set each mixer's scan chunk size for the block. The chunked scan is exact for any chunk size (only rounding
    differs); HF pads the sequence to a multiple of the chunk, so the default 256 costs ~20x at ℓ = 50."""
    saved = [mixer.chunk_size for mixer in mixers]
    try:
        for mixer in mixers:
            mixer.chunk_size = int(chunk_size) if chunk_size is not None else min(mixer.chunk_size, length)
        yield
    finally:
        for mixer, c in zip(mixers, saved):
            mixer.chunk_size = c


# ----------------------------------------------------------------------------------------------- layer states


@dataclass(frozen=True)
class LayerStates:
    """Output of :func:`layer_states`: ``layers`` are the recorded layer indices (0 is the input, the last layer is
    always recorded, as in ``ConsensusTrace``); ``states`` ``(len(layers), batch, ℓ, hidden)`` are the token states
    after those layers, each token scaled to unit norm (``π`` of the residual stream)."""

    layers: list[int]
    states: Tensor


def _unit(x: Tensor) -> Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def _embed(model: nn.Module, inputs: Tensor, hidden: int, dtype: torch.dtype) -> Tensor:
    if not isinstance(inputs, Tensor):
        raise ValueError(f"inputs must be a tensor of token ids or embeddings, got {type(inputs).__name__}")
    if not inputs.is_floating_point():
        if inputs.dim() != 2:
            raise ValueError(f"token ids must have shape (batch, length), got {tuple(inputs.shape)}")
        return model.get_input_embeddings()(inputs).to(dtype)
    if inputs.dim() != 3 or inputs.shape[-1] != hidden:
        raise ValueError(f"embeddings must have shape (batch, length, {hidden}), got {tuple(inputs.shape)}")
    return inputs.to(dtype)


def layer_states(
    model: nn.Module,
    inputs: Tensor,
    depth: int,
    *,
    gate: bool = True,
    project: bool = True,
    record_every: int = 1,
    radius: float | None = None,
    chunk_size: int | None = None,
) -> LayerStates:
    """Token states of a Mamba-2 model after each of ``depth`` layers, cycling its ``L`` blocks (layer ``k`` runs
    block ``k mod L``, card "Real architecture": cycle layers to depth 200).

    ``inputs``: token ids ``(batch, length)`` (looked up in the model's embeddings) or embeddings
    ``(batch, length, hidden)``. Each layer is the real ``Mamba2Block.forward`` (input RMSNorm, mixer, residual add;
    no cache, no mask); the final ``norm_f`` and the LM head are not used. ``gate=False`` runs inside
    :func:`gate_off`. ``project=True`` replaces the residual stream ``h`` by ``radius · h/‖h‖`` per token before the
    first layer and after each one (the idealisation's ``π``; default ``radius = √hidden``, where the block's RMSNorm
    is the identity up to its weight and eps). Without it the stream grows and the effective step of a layer on a
    token is ``1/‖h‖`` of the mixer's output (module docstring). Recorded: the input and every ``record_every``-th
    layer, and always the last; the returned states are ``h/‖h‖`` per token. ``chunk_size`` is the scan's
    (default: ``min(model's, length)``; exact for any value). Runs under ``torch.no_grad``."""
    blocks = mamba2_blocks(model)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
    if isinstance(record_every, bool) or not isinstance(record_every, int) or record_every < 1:
        raise ValueError(f"record_every must be an integer >= 1, got {record_every!r}")
    hidden = int(model.config.hidden_size)
    if radius is None:
        radius = math.sqrt(hidden)
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius!r}")
    dtype = next(model.parameters()).dtype
    with torch.no_grad(), ExitStack() as stack:
        h = _embed(model, inputs, hidden, dtype)
        if not gate:
            stack.enter_context(gate_off(model))
        stack.enter_context(_chunk_sizes([b.mixer for b in blocks], h.shape[1], chunk_size))
        if project:
            h = radius * _unit(h)
        layers, states = [0], [_unit(h)]
        for k in range(depth):
            h = blocks[k % len(blocks)](h)
            if project:
                h = radius * _unit(h)
            if (k + 1) % record_every == 0 or k + 1 == depth:
                layers.append(k + 1)
                states.append(_unit(h))
    return LayerStates(layers=layers, states=torch.stack(states))


# ------------------------------------------------------------------------------------------ the idealised model


def _silu_columns(start: int, stop: int):
    """Forward hook for in_proj: SiLU on output columns ``start:stop`` (the ``B, C`` part of ``xBC``)."""

    def hook(module: nn.Module, args: tuple, output: Tensor) -> Tensor:
        return torch.cat([output[..., :start], F.silu(output[..., start:stop]), output[..., stop:]], dim=-1)

    return hook


_WEIGHT_FIELDS = ("S_B", "S_C", "W_delta", "b_delta", "alpha")


def _is_layer(w: object) -> bool:
    # duck-typed theory.consensus.LayerWeights: nn sits below theory, so the adapter does not import it
    return all(hasattr(w, f) for f in _WEIGHT_FIELDS)


def as_layers(weights) -> list:
    """``weights`` (one ``LayerWeights`` or a sequence) as a checked non-empty list of layers."""
    layers = [weights] if _is_layer(weights) else list(weights)
    if not layers or not all(_is_layer(w) for w in layers):
        raise ValueError("weights must be one LayerWeights or a non-empty sequence of them")
    shape = layers[0].S_B.shape
    if any(w.S_B.shape != shape or w.S_C.shape != shape for w in layers):
        raise ValueError("every layer's S_B and S_C must have the same shape (runs, m, n)")
    return layers


def idealized_mamba2(
    weights,
    *,
    run: int = 0,
    nonlinearity: str = "silu",
    tau: float = 1.0,
    dtype: torch.dtype = torch.float64,
    chunk_size: int = 64,
    seed: int = 0,
) -> nn.Module:
    """A random-init HF ``Mamba2ForCausalLM`` whose blocks are the idealised layers of
    :func:`theorylab.theory.consensus.ideal_ssm_layer` (card claim 7, ``hf-matches-idealization``; mapping in the
    module docstring).

    ``weights``: one :class:`~theorylab.theory.consensus.LayerWeights` (one block; cycling reuses it, the
    time-invariant case) or one per layer (``num_hidden_layers = len(weights)``), as drawn by
    :func:`~theorylab.theory.consensus.draw_layer_weights`; ``run`` picks the run along their leading axis (an HF
    model has one set of weights; the batch axis of its input holds sequences). ``n`` and ``m`` are read from
    ``S_B`` ``(runs, m, n)``. A layer with ``W_z`` gets the gate ``SiLU(√n W_z z)``; :func:`gate_off` turns it off.
    ``nonlinearity``: ``ς`` on ``B, C`` (``"silu"`` or ``"linear"``); ``x`` is never passed through it.
    Use with :func:`layer_states` at its default ``project=True``, ``radius=√n``; the update is then
    ``z ← π(z + τ g ⊙ r)``. ``seed`` only seeds the unused parts (embeddings, LM head)."""
    from theorylab.nn.hf import random_init

    layers = as_layers(weights)
    if nonlinearity not in _NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {_NONLINEARITIES}, got {nonlinearity!r}")
    runs, m, n = layers[0].S_B.shape
    if not 0 <= run < runs:
        raise ValueError(f"run {run} out of range for weights of {runs} runs")
    model = random_init(
        "mamba2",
        seed=seed,
        dtype=dtype,
        hidden_size=n,
        num_hidden_layers=len(layers),
        state_size=m,
        head_dim=1,
        num_heads=n,
        expand=1,
        n_groups=1,
        vocab_size=16,
        conv_kernel=4,
        use_conv_bias=True,
        use_bias=False,
        layer_norm_epsilon=0.0,
        residual_in_fp32=False,
        chunk_size=chunk_size,
        time_step_limit=(0.0, math.inf),
        rescale_prenorm_residual=False,
    )
    root_n = math.sqrt(n)
    eye = torch.eye(n, dtype=torch.float64)
    with torch.no_grad():
        model.backbone.norm_f.weight.fill_(1.0)
        for block, w in zip(mamba2_blocks(model), layers):
            mixer = block.mixer
            block.norm.weight.fill_(1.0)
            W_z = w.W_z[run].double() if w.W_z is not None else torch.zeros(n, n, dtype=torch.float64)
            rows = [
                W_z,
                eye / root_n,
                w.S_B[run].double() / root_n,
                w.S_C[run].double() / root_n,
                w.W_delta[run].double() / root_n,
            ]  # in_proj's output order: [gate | x | B | C | dt]
            mixer.in_proj.weight.copy_(torch.cat(rows))
            mixer.conv1d.weight.zero_()
            mixer.conv1d.weight[:, 0, -1] = 1.0
            mixer.conv1d.bias.zero_()
            mixer.dt_bias.copy_(w.b_delta[run])
            mixer.A_log.copy_(w.alpha[run].double().log())
            mixer.D.zero_()
            mixer.out_proj.weight.copy_(tau * root_n * eye)
            mixer.norm = GateOnly(gated=w.W_z is not None)
            mixer.activation = None  # no SiLU on the whole xBC after the conv ...
            mixer.act = nn.Identity()  # (unused by transformers 5.x; kept inert should a version call it)
            if nonlinearity == "silu":  # ... SiLU on B and C only (before the identity conv: the same)
                mixer.in_proj.register_forward_hook(_silu_columns(2 * n, 2 * n + 2 * m))
    return model
