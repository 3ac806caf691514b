"""Models (torch.nn.Module and model maps)."""

from theorylab.nn.activations import HermiteActivation
from theorylab.nn.attention_indexed import AttentionIndexed
from theorylab.nn.denoisers import LinearDenoiser, linear_sampling_map
from theorylab.nn.mean_field import MeanFieldNet, SphericalSGD
from theorylab.nn.rnn import RNN
from theorylab.nn.toy_transformer import (
    HookPoint,
    MultiHeadAttention,
    ToyTransformer,
    ToyTransformerConfig,
    attention_only,
)

__all__ = [
    "AttentionIndexed",
    "HermiteActivation",
    "HookPoint",
    "LinearDenoiser",
    "MeanFieldNet",
    "MultiHeadAttention",
    "RNN",
    "SphericalSGD",
    "ToyTransformer",
    "ToyTransformerConfig",
    "attention_only",
    "linear_sampling_map",
]
