"""Hugging Face causal language models from a local directory (weights a user owns; never downloaded).

Needs the ``hf`` extra (``pip install "theorylab[hf]"``). :func:`load_local_causal_lm` reads a
directory written by ``save_pretrained`` (model and tokenizer) with ``local_files_only=True``;
:func:`mlp_input_weights` names each layer's MLP input matrix, the matrix LASER truncates
(Sharma et al., arXiv 2312.13558), for the families whose layout we know.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from torch import nn

# Parameter name of the MLP input (up-projection) matrix of layer {i}, per architecture family.
MLP_INPUT = {
    "gpt_neox": "gpt_neox.layers.{i}.mlp.dense_h_to_4h.weight",  # Pythia
    "gpt2": "transformer.h.{i}.mlp.c_fc.weight",  # Conv1D: stored transposed; the rank is the same
    "llama": "model.layers.{i}.mlp.up_proj.weight",
    "mistral": "model.layers.{i}.mlp.up_proj.weight",
    "qwen2": "model.layers.{i}.mlp.up_proj.weight",
    "gemma": "model.layers.{i}.mlp.up_proj.weight",
    "gemma2": "model.layers.{i}.mlp.up_proj.weight",
    "gemma3_text": "model.layers.{i}.mlp.up_proj.weight",
}


def load_local_causal_lm(path: str | Path, device: str | torch.device = "cpu") -> tuple[nn.Module, object]:
    """``(model, tokenizer)`` from a local directory; the model in eval mode, a pad token set."""
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError('a local Hugging Face model needs the hf extra: pip install "theorylab[hf]"') from err
    p = Path(path).expanduser()
    if not p.is_dir():
        raise FileNotFoundError(f"model directory {str(p)!r} does not exist")
    tokenizer = AutoTokenizer.from_pretrained(p, local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(p, local_files_only=True).to(device).eval()
    return model, tokenizer


def mlp_input_weights(model: nn.Module) -> list[str]:
    """Names of each layer's MLP input matrix, first layer first (see :data:`MLP_INPUT`)."""
    kind = getattr(model.config, "model_type", None)
    if kind not in MLP_INPUT:
        raise ValueError(f"no known MLP layout for model_type {kind!r}; known: {sorted(MLP_INPUT)}")
    pattern = re.compile("^" + re.escape(MLP_INPUT[kind]).replace(re.escape("{i}"), r"(\d+)") + "$")
    found = sorted((int(m.group(1)), name) for name, _ in model.named_parameters() if (m := pattern.match(name)))
    if not found:
        raise ValueError(f"model_type {kind!r}: no parameter matches {MLP_INPUT[kind]!r}")
    return [name for _, name in found]
