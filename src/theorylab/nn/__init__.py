"""Models (torch.nn.Module and model maps).

The package-level names below are the curated surface (the pieces more than one study uses), loaded on
first use, so ``import theorylab.nn`` stays light; every module stays importable on its own.

- Transformers: ``toy_transformer`` (ToyTransformer, ToyTransformerConfig, MultiHeadAttention, HookPoint,
  attention_only); ``token_losses`` (next_token_loss); ``blocks`` (BlockStack, make_stack)
- Activations: ``activations`` (HermiteActivation)
- Index and mean-field models: ``attention_indexed`` (AttentionIndexed); ``mean_field`` (MeanFieldNet,
  SphericalSGD); ``polynet`` (poly_tensor)
- Recurrent networks: ``rnn`` (RNN)
- Graph networks: ``mpnn`` (AlignedMPNN)
- Denoisers and diffusion: ``denoisers`` (LinearDenoiser, linear_sampling_map, linear_samples); ``unet`` (UNet,
  DenoiserMLP, PeriodicCNN, noise_schedule, diffuse); ``edm`` (EDMPrecond, edm_heun_sampler);
  ``conditional_diffusion`` (ConditionalDiffusion); ``velocity`` (TimeMLP)
- Fields and closures: ``closure`` (DirectClosure, MultiscaleClosure)
- Real architectures (Hugging Face): ``hf`` (random_init, load_local_causal_lm)
"""

from __future__ import annotations

from theorylab.core.lazy import lazy_attributes

_WHERE = {
    "ToyTransformer": "theorylab.nn.toy_transformer",
    "ToyTransformerConfig": "theorylab.nn.toy_transformer",
    "MultiHeadAttention": "theorylab.nn.toy_transformer",
    "HookPoint": "theorylab.nn.toy_transformer",
    "attention_only": "theorylab.nn.toy_transformer",
    "next_token_loss": "theorylab.nn.token_losses",
    "BlockStack": "theorylab.nn.blocks",
    "make_stack": "theorylab.nn.blocks",
    "HermiteActivation": "theorylab.nn.activations",
    "AttentionIndexed": "theorylab.nn.attention_indexed",
    "MeanFieldNet": "theorylab.nn.mean_field",
    "SphericalSGD": "theorylab.nn.mean_field",
    "poly_tensor": "theorylab.nn.polynet",
    "RNN": "theorylab.nn.rnn",
    "AlignedMPNN": "theorylab.nn.mpnn",
    "LinearDenoiser": "theorylab.nn.denoisers",
    "linear_sampling_map": "theorylab.nn.denoisers",
    "linear_samples": "theorylab.nn.denoisers",
    "UNet": "theorylab.nn.unet",
    "DenoiserMLP": "theorylab.nn.unet",
    "PeriodicCNN": "theorylab.nn.unet",
    "noise_schedule": "theorylab.nn.unet",
    "diffuse": "theorylab.nn.unet",
    "EDMPrecond": "theorylab.nn.edm",
    "edm_heun_sampler": "theorylab.nn.edm",
    "ConditionalDiffusion": "theorylab.nn.conditional_diffusion",
    "TimeMLP": "theorylab.nn.velocity",
    "DirectClosure": "theorylab.nn.closure",
    "MultiscaleClosure": "theorylab.nn.closure",
    "random_init": "theorylab.nn.hf",
    "load_local_causal_lm": "theorylab.nn.hf",
}


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE)
__all__ = sorted(_WHERE)
