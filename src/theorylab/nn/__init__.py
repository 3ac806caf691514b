"""Models (torch.nn.Module and model maps)."""

from theorylab.nn.denoisers import LinearDenoiser, linear_sampling_map
from theorylab.nn.toy_transformer import HookPoint, MultiHeadAttention, ToyTransformer, ToyTransformerConfig, attention_only

__all__ = ["HookPoint", "LinearDenoiser", "MultiHeadAttention", "ToyTransformer", "ToyTransformerConfig", "attention_only", "linear_sampling_map"]
