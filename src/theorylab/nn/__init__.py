"""Models (torch.nn.Module and model maps)."""

from theorylab.nn.denoisers import LinearDenoiser, linear_sampling_map

__all__ = ["LinearDenoiser", "linear_sampling_map"]
