"""Two-dimensional toy laws for generative models, and the corruption channels the 2-D experiments use.

Modi, Han, Vanden-Eijnden, Bruna (arXiv 2512.10857, Sec. 5) clean 2-D data observed through black-box
channels: two moons (scikit-learn's coordinates, so a channel's sigma is in those units) or a ring of
Gaussians, under additive noise, coordinate masking, saturation or quantisation.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from theorylab.data.corruptions import Channel, GaussianNoise, Quantise, RandomMask, Saturate

ToyChannel = Literal["noise", "mask", "saturate", "quantise"]


def two_moons(n: int, seed: int, noise: float = 0.1) -> torch.Tensor:
    """scikit-learn's ``make_moons(n, noise=0.1, random_state=seed)`` as a float32 tensor (n, 2)."""
    from sklearn.datasets import make_moons

    x, _ = make_moons(n, noise=noise, random_state=seed)
    return torch.from_numpy(x).float()


def gaussian_mixture(n: int, seed: int, modes: int = 8, radius: float = 2.0, std: float = 0.15) -> torch.Tensor:
    """``modes`` equal Gaussians of std ``std`` on a circle of ``radius``: (n, 2) float32."""
    rng = np.random.default_rng(seed)
    k = rng.integers(modes, size=n)
    centres = radius * np.stack([np.cos(2 * np.pi * k / modes), np.sin(2 * np.pi * k / modes)], axis=1)
    return torch.from_numpy(centres + std * rng.standard_normal((n, 2))).float()


def toy_samples(kind: Literal["moons", "mixture"], n: int, seed: int) -> torch.Tensor:
    """``n`` samples of the named toy law (two moons or the 8-Gaussian ring) from ``seed``."""
    if kind not in ("moons", "mixture"):
        raise ValueError(f"unknown toy law '{kind}' (moons or mixture)")
    return two_moons(n, seed) if kind == "moons" else gaussian_mixture(n, seed)


def toy_channel(kind: ToyChannel, sigma: float = 0.5, mask_ratio: float = 0.5) -> Channel:
    """The 2-D channels: additive noise of ``sigma``, independent coordinate masking with probability
    ``mask_ratio``, saturation (``scale`` 0.8, noise 0.1) or quantisation (step 0.5, noise 0.05)."""
    return {
        "noise": lambda: GaussianNoise(sigma),
        "mask": lambda: RandomMask(mask_ratio),
        "saturate": lambda: Saturate(scale=0.8, sigma=0.1),
        "quantise": lambda: Quantise(step=0.5, sigma=0.05),
    }[kind]()
