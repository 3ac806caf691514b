"""One vocabulary for study configs: one named, bounded type per concept.

A config field that means what a kit argument means carries the kit's name, prefixed by the part
of the study it belongs to (``lm_n_layers`` after ``ToyTransformer(n_layers=)``), and takes its
type from here. Each type has one bound: the widest sanity range that fits every study's defaults
and presets. A field that needs a different range for its own reason narrows (or, for "0 = off",
widens) it in place, always as ``Annotated[Steps, Field(ge=2)]`` and never as
``Field(default, ge=2)``: pydantic keeps the last constraint of each kind, so a bound passed to
``Field(...)`` on an annotated type is silently overridden by the type's own.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

__all__ = [
    "Batch",
    "Chunk",
    "Concentration",
    "Corpus",
    "DModel",
    "Dim",
    "Draws",
    "Every",
    "Fraction",
    "GraphNodes",
    "Horizon",
    "InformationExponent",
    "InverseTemperature",
    "LearningRate",
    "Length",
    "MLPMult",
    "NHeads",
    "NLayers",
    "Precision",
    "Probability",
    "Rank",
    "SampleRatio",
    "SampleSize",
    "Seeds",
    "Steps",
    "TreeLeaves",
    "VocabSize",
    "Width",
]

# --- how many times ------------------------------------------------------------------------------
Seeds = Annotated[int, Field(ge=1, le=1_000_000)]
"""Independently seeded replicas per configuration (trained models, estimator runs, noise seeds z),
each reported as its own row (a ``seed`` column). Unit: seeds. Kit: ``width_sweep(seeds=)``."""

Draws = Annotated[int, Field(ge=1, le=1_000_000)]
"""Monte Carlo repetitions of a random object (matrix, data set, random-init model) whose results
are averaged inside one measurement. Unit: draws. Kit: ``wishart_sample_covariance(draws=)``,
``phd_noise_floor(draws=)``."""

SampleSize = Annotated[int, Field(ge=1, le=1 << 30)]
"""Items in one data set or measurement: points, samples, sequences, sets, graphs, instances,
trajectories, particles. Samples (points drawn, a training or test set, Monte Carlo samples) are
``n``, prefixed by the part (``mc_n``, ``test_n``) and ``ns`` / ``<part>_ns`` for a grid of them
(never ``*_samples`` or ``*_size``); a count of named items says what it counts (``eval_sets``,
``train_graphs``, ``test_trajectories``). Unit: items. Kit: ``sphere(n=)``, ``IndexModel.sample(n)``,
``init_gap_monte_carlo(samples=)``, ``sample_sweep(sizes=)``."""

# --- how long -------------------------------------------------------------------------------------
Steps = Annotated[int, Field(ge=1, le=10_000_000)]
"""Iterations of an optimiser, an ascent or an ODE integrator (one update each). Unit: steps.
Kit: ``train_stacked(steps=)``, ``train_language_model(steps=)``, ``train_members(steps=)``,
``width_sweep(steps=)``, ``train_self_consistent(steps=, transport_steps=)``, ``transport(steps=)``,
``local_gain(steps=)``, ``patched_greedy(steps=)``."""

Horizon = Annotated[int, Field(ge=2, le=100_000_000)]
"""Length of an emulator rollout or stored trajectory, in emulator steps (not optimiser steps).
Kit: ``rollout(n_steps=)`` (K10)."""

Every = Annotated[int, Field(ge=1, le=1_000_000)]
"""Steps between two evaluations or log points. Kit: ``train_stacked(evaluate_every=)``,
``train_self_consistent(evaluate_every=)``, ``train_language_model(log_every=)``."""

# --- how big --------------------------------------------------------------------------------------
Dim = Annotated[int, Field(ge=1, le=100_000)]
"""Dimension d of the data / input space (d in R^d). Kit: ``width_sweep(d=)``, ``IndexModel(d=)``,
``PowerLawGaussian(d=)``, ``nearest_point_sets(d=)``, ``circle(d=)``."""

DModel = Annotated[int, Field(ge=2, le=65_536)]
"""Width of a transformer's residual stream. Kit: ``ToyTransformer(d_model=)`` (same upper bound),
HF ``hidden_size`` / ``n_embd``, ``make_stack(d=)`` (K6)."""

Width = Annotated[int, Field(ge=2, le=1 << 22)]
"""Hidden width of an MLP, CNN or U-Net, or the neurons m of a two-layer / mean-field network.
Unit: neurons or channels. Kit: ``DenoiserMLP(width=)``, ``TimeMLP(width=)``, ``UNet(width=)``,
``UNet8(width=)``, ``width_sweep(widths=, m_ref=)``, ``sample_sweep(width=)``,
``AlignedMPNN(hidden=)`` (K5)."""

MLPMult = Annotated[int, Field(ge=1, le=64)]
"""MLP hidden width as a multiple of the model width. Kit: ``make_stack(hidden_mult=)`` (K6)."""

NLayers = Annotated[int, Field(ge=1, le=256)]
"""Number of blocks / layers. Kit: ``ToyTransformer(n_layers=)`` (same bound), ``deepnorm(n_layers)``,
HF ``num_hidden_layers`` / ``n_layer``, ``make_stack(depth=)`` (K6), ``TimeMLP(depth=)`` (K7)."""

NHeads = Annotated[int, Field(ge=1, le=65_536)]
"""Attention heads per layer. Kit: ``ToyTransformer(n_heads=)`` (same bound), ``attention_only``,
``random_rank1_heads(n_heads=)``, ``make_stack(n_heads=)``, HF ``num_attention_heads``."""

Length = Annotated[int, Field(ge=2, le=1_000_000)]
"""Tokens (or set elements) per sequence. Kit: ``train_language_model(length=)``,
``random_windows(length=)``, ``TriggerNoiseTask.sample(length=)``,
``in_context_linear_regression(length=)``, ``nearest_point_sets(n_points=)``,
``ToyTransformer(max_len=)`` (same upper bound)."""

VocabSize = Annotated[int, Field(ge=2, le=10_000_000)]
"""Token vocabulary size. Kit: ``ToyTransformer(vocab_size=)`` (same bound), HF ``vocab_size``,
``WordVocab.from_text(text, size)``, ``TriggerNoiseTask.dirichlet(vocab=)`` (K12)."""

Batch = Annotated[int, Field(ge=1, le=1_000_000)]
"""Samples per optimiser step (or per forward pass of a check). Kit: ``train_language_model(batch=)``,
``train_self_consistent(batch=)``, ``nearest_point_sets(batch=)``."""

Chunk = Annotated[int, Field(ge=1, le=1_000_000)]
"""Items processed at once. A memory / speed knob: results do not depend on it.
Kit: ``evaluate_stacked(chunk=)``, ``theory/generative(block=)`` (K15)."""

NumberChunk = Annotated[int, Field(ge=1, le=1 << 30)]
"""Random numbers drawn at once (not samples: one sample of a hierarchical model is d^K numbers). A memory / speed
knob like :data:`Chunk`. Kit: ``data.msim`` samplers (``chunk=``)."""

Entities = Annotated[int, Field(ge=2, le=1 << 20)]
"""Number of entities N of a fact table (subjects and attributes share one set). Kit: ``data.facts``
(``random_bijections(n_entities=)``)."""

Relations = Annotated[int, Field(ge=1, le=64)]
"""Number of relations R of a fact table (one bijection each). Kit: ``data.facts``."""

NScales = Annotated[int, Field(ge=2, le=8)]
"""Number of scales K of a hierarchical (multiscale) target, which acts on d^K inputs (``<part>_n_scales``; the grids
of a multiscale closure's scales are a tuple ``scales``). Kit: ``data.msim.msim(K=)``, ``nn.msim.MSIMNet(K=)``."""

Rank = Annotated[int, Field(ge=1, le=65_536)]
"""Rank of a matrix or head. Kit: ``ToyTransformer(head_rank=)``, ``truncate(rank=)``,
``best_rank_k(rank=)``."""

# --- rates, ratios, probabilities ---------------------------------------------------------------
LearningRate = Annotated[float, Field(gt=0, le=10)]
"""Step size of a gradient method: Adam/AdamW/SGD learning rate, or the projected-GD step η of the
mean-field studies (mean-field time per step). Kit: ``AdamWSchedule(lr=)``,
``train_language_model(lr=)``, ``train_members(lr=)``, ``train_self_consistent(lr=)``,
``width_sweep(eta=)`` (K1)."""

Probability = Annotated[float, Field(ge=0, le=1)]
"""Probability of an event. Prefer the name ``p_<event>``. Kit: ``TriggerNoiseTask.sample(p_noise=)``,
``RandomMask(ratio=)``, ``train_self_consistent(alpha=)`` (K8)."""

Fraction = Annotated[float, Field(ge=0, le=1)]
"""Part of a whole that is not a probability: a share of the steps, of T, or of d_h.
Kit: ``AdamWSchedule(warmup_frac=)``."""

SampleRatio = Annotated[float, Field(gt=0, le=1_000_000)]
"""Samples per power of the dimension: α = n/d, or c = n/d^(k/2). Unit: samples per d^k."""

InverseTemperature = Annotated[float, Field(gt=0, le=1_000_000)]
"""Inverse temperature β of a softmax. Kit: ``full_rank_head(beta=)``."""

Concentration = Annotated[float, Field(gt=0, le=100)]
"""Concentration α of a symmetric Dirichlet. Kit: ``dirichlet_bigram(alpha=)``,
``TriggerNoiseTask.dirichlet(alpha=)``."""

CorrelationLength = Annotated[float, Field(gt=0, le=1000)]
"""Correlation length ξ = −1/ln|λ₂| of a Markov chain, in tokens. Kit: ``theory.markov.correlation_length``,
``data.markov.lazy_chain(lam=exp(−1/ξ))``."""

InformationExponent = Annotated[int, Field(ge=1, le=8)]
"""Hermite degree / information exponent k of a link (He_k). Kit: ``HermiteActivation.he(k)``."""

TreeLeaves = Annotated[int, Field(ge=2, le=4096)]
"""Leaves n of a rooted tree (a compositional reasoning question, a Boolean formula). Kit: ``data.crq``."""

GraphNodes = Annotated[int, Field(ge=8, le=128)]
"""Nodes n of a graph a transformer reads as n tokens (padded to the largest n). Kit: ``data.graph_tokens``."""

# --- text -----------------------------------------------------------------------------------------
Corpus = Annotated[str, Field(min_length=1)]
"""'stdlib', 'kjv' or the path of a local plain-text file. Studies still call
``data.text.check_corpus(field, value)`` in their validator."""


# --- how precisely ---------------------------------------------------------------------------------
def _resolve_precision(value: str) -> str:
    from theorylab.core.precision import resolve  # torch is imported only when a config says "auto"

    return resolve(value)


Precision = Annotated[
    Literal["fp32", "bf16"],
    BeforeValidator(lambda v: _resolve_precision(v) if v == "auto" else v),
    Field(
        description="arithmetic of the passes the study names (training steps, transport, rollouts): fp32, bf16 "
        "autocast, or auto (bf16 on GPUs and CPUs with "
        "AMX/AVX512-BF16, fp32 elsewhere)"
    ),
]
"""The precision of the passes a study names (ff-vs-attention's training steps; the transport and rollouts of the
no-gradient studies): ``fp32`` or ``bf16`` autocast
(:mod:`theorylab.core.precision`); ``auto`` is resolved by hardware when the config is built, so a config always
records the arithmetic that ran. Only studies whose claims tolerate it have the field. Kit:
``train_self_consistent(precision=)``, ``RunContext.autocast(precision)``."""
