"""Hugging Face causal language models: random-init from small configs, or local weights a user owns.

Needs the ``hf`` extra (``pip install "theorylab[hf]"``). Nothing is ever downloaded.

- :func:`random_init`: a ``transformers`` causal LM of a known family (Gemma 3 text, Llama,
  Mistral, Qwen2, Mixtral, GPT-2, Mamba-2; BERT as a masked LM) built from a small config with seeded random
  weights; RMSNorm scales get random offsets so that ``(1 + w) != 1`` is exercised.
- :func:`load_local_causal_lm` (alias :func:`load_local`): model and tokenizer from a directory
  written by ``save_pretrained``, with ``local_files_only=True``.
- :func:`full_precision_norms`: HF RMSNorms compute in float32, an *up*cast meant for bf16/fp16
  models; for a float64 model it is a *down*cast. Inside this context they run at the input's
  precision (same formula), which float64 exactness checks need.
- :func:`small_config`: the keyword arguments of :func:`random_init` for a family at given sizes
  (Gemma 3's local/global layer pattern, Mixtral's experts), from the card's names of the sizes.
- :func:`mlp_input_weights`: each layer's MLP input matrix, the matrix LASER truncates (Sharma et
  al., arXiv 2312.13558), for the families whose layout we know.
"""

from __future__ import annotations

import re
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import torch
from torch import nn

from theorylab.core.errors import MissingExtra
from theorylab.core.rng import seeded

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
        raise MissingExtra("Hugging Face transformers (a local model)", "hf") from err
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


load_local = load_local_causal_lm

# arch name -> transformers model_type
ARCHS = {
    "gemma3": "gemma3_text",
    "gemma3_text": "gemma3_text",
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "mixtral": "mixtral",
    "gpt2": "gpt2",
    "bert": "bert",
    "mamba2": "mamba2",
}
MASKED_LM = {"bert"}  # encoders get a masked-LM head; the rest are causal LMs


def _transformers():
    try:
        import transformers
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise MissingExtra("Hugging Face transformers", "hf") from err
    return transformers


def random_init(
    arch: str,
    *,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    init_std: float | None = None,
    norm_std: float = 0.1,
    attn_implementation: str = "eager",
    **config: Any,
) -> nn.Module:
    """A random-weight ``transformers`` causal LM of family ``arch`` built from ``config`` (small sizes).

    ``init_std`` (default ``1/sqrt(hidden_size)``) is the Gaussian std of every matrix, so the
    context changes the query's state by O(1) (HF's default 0.02 makes attention nearly uniform at
    small widths). Every RMSNorm scale is perturbed by ``N(0, norm_std²)``: Gemma stores ``w`` with
    scale ``1 + w`` (so ``w ~ N(0, norm_std²)``), the others store the scale itself (``1 + N``).
    Example: ``random_init("gemma3", hidden_size=64, intermediate_size=256, num_hidden_layers=4,
    num_attention_heads=4, num_key_value_heads=1, head_dim=16, vocab_size=512, sliding_window=8)``.
    """
    tf = _transformers()
    if arch not in ARCHS:
        raise ValueError(f"unknown architecture {arch!r}; known: {', '.join(sorted(ARCHS))}")
    model_type = ARCHS[arch]
    hidden = int(config.get("hidden_size", config.get("n_embd", 64)))
    # A family's default special-token ids (GPT-2: 50256) lie outside a small vocabulary; unless the
    # caller sets them, they mean nothing here, and transformers warns about them on every build.
    defaults = tf.AutoConfig.for_model(model_type)
    vocab = config.get("vocab_size", getattr(defaults, "vocab_size", None))
    special = {
        name: None
        for name in ("bos_token_id", "eos_token_id", "pad_token_id")
        if name not in config
        and isinstance(getattr(defaults, name, None), int)
        and vocab is not None
        and getattr(defaults, name) >= vocab
    }
    cfg = tf.AutoConfig.for_model(
        model_type, initializer_range=init_std if init_std is not None else hidden**-0.5, **special, **config
    )
    cfg._attn_implementation = attn_implementation
    # Fused grouped-matmul experts (the default for MoE families) take no float64; the loop does.
    cfg._experts_implementation = "eager"
    with seeded(seed):
        auto = tf.AutoModelForMaskedLM if model_type in MASKED_LM else tf.AutoModelForCausalLM
        model = auto.from_config(cfg, attn_implementation=attn_implementation)
        # e.g. GPT2LMHeadModel: name the loss instead of a warning per run
        if getattr(model, "loss_type", None) is None:
            model.loss_type = "ForMaskedLM" if model_type in MASKED_LM else "ForCausalLM"
        with torch.no_grad():
            for module in model.modules():
                # Mamba-2's gated norm (MambaRMSNormGated, scale stored as is) is a norm too
                if type(module).__name__.endswith(("RMSNorm", "RMSNormGated")) and isinstance(
                    getattr(module, "weight", None), torch.Tensor
                ):
                    offset = 0.0 if "Gemma" in type(module).__name__ else 1.0
                    module.weight.copy_(offset + norm_std * torch.randn_like(module.weight))
    return model.to(dtype).eval()


def gemma3_layer_types(n_layers: int, global_every: int) -> list[str]:
    """Gemma 3's attention pattern: every ``global_every``-th layer global (``"full_attention"``), the
    others local (``"sliding_attention"``); Gemma 3 uses 6 (local:global 5:1)."""
    return ["full_attention" if (i + 1) % global_every == 0 else "sliding_attention" for i in range(n_layers)]


def small_config(
    arch: str,
    *,
    hidden: int,
    intermediate: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    vocab: int,
    max_positions: int = 4096,
    window: int = 8,
    global_every: int = 4,
    experts: int = 4,
    experts_per_token: int = 2,
) -> dict:
    """The ``transformers`` config keywords of a family at these sizes, for :func:`random_init`.

    Common: width ``hidden``, MLP ``intermediate``, ``layers`` decoder layers, ``heads`` query and
    ``kv_heads`` key/value heads (grouped-query attention) of ``head_dim``, ``vocab`` tokens and
    ``max_positions`` positions. ``"gemma3"`` adds the sliding ``window`` and
    :func:`gemma3_layer_types`; ``"mixtral"`` adds ``experts`` experts, ``experts_per_token`` routed.
    Gemma 3 1B: hidden 1152, intermediate 6912, 26 layers, 4 heads, 1 KV head, head_dim 256,
    vocab 262144, window 512, global_every 6.
    """
    common = dict(
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        max_position_embeddings=max_positions,
    )
    if arch in ("gemma3", "gemma3_text"):
        return dict(common, sliding_window=window, layer_types=gemma3_layer_types(layers, global_every))
    if arch == "mixtral":
        return dict(common, num_local_experts=experts, num_experts_per_tok=experts_per_token)
    return common


def _norm_forward(module: nn.Module, offset: float, eps: float):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (offset + self.weight.to(x.dtype))

    return types.MethodType(forward, module)


@contextmanager
def full_precision_norms(model: nn.Module) -> Iterator[int]:
    """Run the model's RMSNorms at the input's precision inside the block (yields how many were swapped).

    Same formula as HF's (``x / sqrt(mean x² + eps) * scale``, Gemma's scale ``1 + w``), without the
    cast to float32 and back. Restored on exit.
    """
    swapped = []
    for module in model.modules():
        name = type(module).__name__
        if name.endswith("RMSNorm") and isinstance(getattr(module, "weight", None), torch.Tensor):
            eps = getattr(module, "eps", getattr(module, "variance_epsilon", None))
            if eps is None:
                continue
            module.forward = _norm_forward(module, 1.0 if "Gemma" in name else 0.0, float(eps))
            swapped.append(module)
    try:
        yield len(swapped)
    finally:
        for module in swapped:
            del module.forward
