"""EDM diffusion pieces (Karras, Aittala, Aila, Laine, "Elucidating the Design Space of Diffusion-Based Generative
Models", NeurIPS 2022): the preconditioned denoiser, its denoising-score-matching loss, the noise-level schedule and
the deterministic Heun sampler, plus backbones.

- :class:`EDMPrecond` wraps a backbone ``F(x_in, c_noise)`` into
  ``D(x; sigma) = c_skip(sigma) x + c_out(sigma) F(c_in(sigma) x, c_noise(sigma))`` with
  ``c_skip = sd^2/(sigma^2+sd^2)``, ``c_out = sigma sd/sqrt(sigma^2+sd^2)``, ``c_in = 1/sqrt(sigma^2+sd^2)``,
  ``c_noise = ln(sigma)/4`` and ``sd = sigma_data`` (0.5 by default). ``x`` is ``(B, *event)``.
- :func:`edm_loss`: ``E lambda(sigma) ||D(y + sigma n; sigma) - y||^2`` with ``ln sigma ~ N(P_mean, P_std^2)``
  (-1.2, 1.2) and ``lambda = (sigma^2+sd^2)/(sigma sd)^2``; mean over batch and event entries.
- :func:`edm_sigmas`: ``sigma_i = (smax^(1/rho) + i/(N-1) (smin^(1/rho) - smax^(1/rho)))^rho``, i < N, then 0.
- :func:`edm_heun_sampler`: the probability-flow ODE ``dx/dsigma = (x - D(x; sigma))/sigma`` by Heun's method
  (no churn); the step into sigma = 0 is an Euler step, so N levels plus 0 cost 2N - 1 evaluations.
- Backbones: :class:`FourierMLP` (flat vectors, Fourier features of c_noise; always available), and the
  ``diffusers`` UNet (:func:`diffusers_unet`) and DiT (:func:`diffusers_dit`) behind an optional import
  (``pip install diffusers``), wrapped to take flat vectors of a given image shape.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from torch import Tensor, nn

from theorylab.core.errors import MissingResource

Denoiser = Callable[[Tensor, Tensor], Tensor]  # D(x (B, *event), sigma (B,)) -> (B, *event)


def _per_sample(sigma: Tensor | float, x: Tensor) -> Tensor:
    """sigma as a (B,) tensor of x's dtype and device."""
    s = torch.as_tensor(sigma, dtype=x.dtype, device=x.device)
    return s.expand(x.shape[0]) if s.ndim == 0 else s.reshape(x.shape[0])


def _bcast(s: Tensor, x: Tensor) -> Tensor:
    return s.reshape(s.shape[0], *([1] * (x.ndim - 1)))


def edm_coefficients(sigma: Tensor, sigma_data: float = 0.5) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(c_skip, c_out, c_in, c_noise)`` of EDM's preconditioning (Karras et al. 2022, Table 1) at ``sigma``."""
    s2, sd2 = sigma**2, sigma_data**2
    return sd2 / (s2 + sd2), sigma * sigma_data / (s2 + sd2).sqrt(), 1 / (s2 + sd2).sqrt(), sigma.log() / 4


class EDMPrecond(nn.Module):
    """D(x; sigma) = c_skip x + c_out F(c_in x, c_noise) around a backbone ``F(x_in (B, *event), c_noise (B,))``."""

    def __init__(self, backbone: nn.Module, sigma_data: float = 0.5):
        super().__init__()
        self.backbone = backbone
        self.sigma_data = sigma_data

    def forward(self, x: Tensor, sigma: Tensor | float) -> Tensor:
        s = _per_sample(sigma, x)
        c_skip, c_out, c_in, c_noise = edm_coefficients(s, self.sigma_data)
        f = self.backbone(_bcast(c_in, x) * x, c_noise)
        return _bcast(c_skip, x) * x + _bcast(c_out, x) * f.to(x.dtype)


def edm_loss(
    denoiser: EDMPrecond,
    y: Tensor,
    generator: torch.Generator | None = None,
    p_mean: float = -1.2,
    p_std: float = 1.2,
    sigma_data: float | None = None,
) -> Tensor:
    """EDM's weighted denoising-score-matching loss on clean data ``y`` (B, *event), one log-normal sigma per row."""
    sd = denoiser.sigma_data if sigma_data is None else sigma_data
    ln_sigma = p_mean + p_std * torch.randn(y.shape[0], generator=generator, dtype=y.dtype, device=y.device)
    sigma = ln_sigma.exp()
    noise = torch.randn(y.shape, generator=generator, dtype=y.dtype, device=y.device)
    weight = (sigma**2 + sd**2) / (sigma * sd) ** 2
    err = (denoiser(y + _bcast(sigma, y) * noise, sigma) - y) ** 2
    return (_bcast(weight, y) * err).mean()


def edm_sigmas(
    steps: int, sigma_min: float = 0.002, sigma_max: float = 80.0, rho: float = 7.0, dtype: torch.dtype = torch.float64
) -> Tensor:
    """EDM's ``steps`` noise levels from ``sigma_max`` down to ``sigma_min`` (rho-warped), followed by 0."""
    if steps < 2:
        raise ValueError(f"steps = {steps}: the EDM schedule needs at least 2 levels")
    i = torch.arange(steps, dtype=torch.float64)
    a, b = sigma_max ** (1 / rho), sigma_min ** (1 / rho)
    levels = (a + i / (steps - 1) * (b - a)) ** rho
    return torch.cat([levels, levels.new_zeros(1)]).to(dtype)


@torch.no_grad()
def edm_heun_sampler(denoiser: Denoiser, x_T: Tensor, sigmas: Tensor | Sequence[float]) -> Tensor:
    """Integrate the PF-ODE from ``x_T`` (B, *event) at ``sigmas[0]`` through the decreasing ``sigmas``.

    Heun's second-order step between consecutive levels; the step into a level 0 is Euler (EDM Algorithm 1 with
    S_churn = 0). Deterministic: the only randomness is in ``x_T`` (use ``sigma_max * z``).
    """
    sig = [float(s) for s in sigmas]
    x = x_T
    for cur, nxt in zip(sig[:-1], sig[1:]):
        d = (x - denoiser(x, _per_sample(cur, x))) / cur
        x_next = x + (nxt - cur) * d
        if nxt > 0:
            d2 = (x_next - denoiser(x_next, _per_sample(nxt, x))) / nxt
            x_next = x + (nxt - cur) * (d + d2) / 2
        x = x_next
    return x


class FourierMLP(nn.Module):
    """MLP backbone ``F(x_in (B, d), c_noise (B,)) -> (B, d)`` for flat data.

    ``dim -> width -> ... -> width -> dim`` with SiLU; the noise level enters every hidden layer through a linear
    map of fixed Fourier features ``[cos(2 pi f c_noise), sin(2 pi f c_noise)]`` with ``n_freqs`` frequencies
    spaced geometrically in [1/8, 16] (c_noise = ln(sigma)/4 spans about [-1.6, 1.1] on EDM's range).
    """

    def __init__(self, dim: int, width: int = 256, n_layers: int = 3, n_freqs: int = 16):
        super().__init__()
        self.register_buffer("freqs", torch.logspace(math.log10(1 / 8), math.log10(16), n_freqs))
        self.inp = nn.ModuleList([nn.Linear(dim if i == 0 else width, width) for i in range(n_layers)])
        self.emb = nn.ModuleList([nn.Linear(2 * n_freqs, width) for _ in range(n_layers)])
        self.out = nn.Linear(width, dim)
        self.act = nn.SiLU()

    def features(self, c_noise: Tensor) -> Tensor:
        arg = 2 * math.pi * c_noise[:, None] * self.freqs.to(c_noise.dtype)
        return torch.cat([arg.cos(), arg.sin()], dim=-1)

    def forward(self, x: Tensor, c_noise: Tensor) -> Tensor:
        e = self.features(c_noise.to(x.dtype))
        h = x
        for lin, emb in zip(self.inp, self.emb):
            h = self.act(lin(h) + emb(e))
        return self.out(h)


def _diffusers():
    try:
        import diffusers
    except ImportError:
        raise MissingResource(
            "the diffusers package (UNet/DiT backbones of the paper preset)", "install it with `pip install diffusers`"
        ) from None
    return diffusers


def _chw(image_shape: Sequence[int]) -> tuple[tuple[int, int, int], bool]:
    """((C, H, W), channel_last) of an image shape (H, W), (H, W, C) with C <= 4, or (C, H, W)."""
    s = tuple(int(v) for v in image_shape)
    if len(s) == 2:
        return (1, *s), False
    if len(s) == 3 and s[-1] <= 4 < s[0]:
        return (s[2], s[0], s[1]), True
    if len(s) == 3:
        return s, False
    raise ValueError(f"image_shape {s}: expected (H, W), (H, W, C) or (C, H, W)")


class FlatImageBackbone(nn.Module):
    """Adapts an image network ``net(sample (B, C, H, W), timestep (B,))`` (a diffusers model) to flat vectors
    laid out as ``image_shape``: (H, W), channel-last (H, W, C) as :class:`~theorylab.data.images.ImageFolderArray`
    stores them, or (C, H, W)."""

    def __init__(self, net: nn.Module, image_shape: Sequence[int]):
        super().__init__()
        self.net = net
        self.chw, self.channel_last = _chw(image_shape)

    def forward(self, x: Tensor, c_noise: Tensor) -> Tensor:
        c, h, w = self.chw
        dtype = next(self.net.parameters()).dtype
        if self.channel_last:
            img = x.reshape(x.shape[0], h, w, c).permute(0, 3, 1, 2)
        else:
            img = x.reshape(x.shape[0], c, h, w)
        out = self.net(img.to(dtype).contiguous(), c_noise.to(dtype))
        out = out.sample if hasattr(out, "sample") else out[0]
        if self.channel_last:
            out = out.permute(0, 2, 3, 1)
        return out.reshape(x.shape[0], -1).to(x.dtype)


def diffusers_unet(
    image_shape: Sequence[int],
    channels: int = 128,
    channel_mult: Sequence[int] = (1, 2, 2, 2),
    attention_resolution: int = 8,
    layers_per_block: int = 2,
) -> FlatImageBackbone:
    """The card's EDM-style UNet (model_channels 128, channel_mult (1,2,2,2), attention at resolution 8) as a
    ``diffusers.UNet2DModel`` taking flat vectors. Needs ``pip install diffusers``."""
    diffusers = _diffusers()
    (c, h, _), _ = _chw(image_shape)
    down, res = [], h
    for level in range(len(channel_mult)):
        attn = res == attention_resolution
        down.append("AttnDownBlock2D" if attn else "DownBlock2D")
        if level < len(channel_mult) - 1:
            res //= 2
    up = [b.replace("Down", "Up") for b in reversed(down)]
    net = diffusers.UNet2DModel(
        sample_size=h,
        in_channels=c,
        out_channels=c,
        layers_per_block=layers_per_block,
        block_out_channels=tuple(channels * m for m in channel_mult),
        down_block_types=tuple(down),
        up_block_types=tuple(up),
        norm_num_groups=min(32, channels),
        attention_head_dim=min(64, channels),
    )
    return FlatImageBackbone(net, image_shape)


def diffusers_dit(
    image_shape: Sequence[int], patch: int = 2, d_model: int = 384, n_layers: int = 6, n_heads: int = 6
) -> FlatImageBackbone:
    """The card's DiT (patch 2, hidden 384, depth 6, 6 heads, mlp_ratio 4) as ``diffusers.DiTTransformer2DModel``
    (unconditional: one dummy class; diffusers' feed-forward has mlp_ratio 4) taking flat vectors. Needs
    ``pip install diffusers`` with that class."""
    diffusers = _diffusers()
    if not hasattr(diffusers, "DiTTransformer2DModel"):
        raise MissingResource(
            "diffusers.DiTTransformer2DModel (DiT backbone)", "install a newer version with `pip install -U diffusers`"
        )
    (c, h, _), _ = _chw(image_shape)
    net = diffusers.DiTTransformer2DModel(
        num_attention_heads=n_heads,
        attention_head_dim=d_model // n_heads,
        in_channels=c,
        out_channels=c,
        num_layers=n_layers,
        sample_size=h,
        patch_size=patch,
        num_embeds_ada_norm=1,
        norm_num_groups=1,
    )

    class _Uncond(nn.Module):
        def __init__(self, dit):
            super().__init__()
            self.dit = dit

        def forward(self, sample, timestep):
            labels = torch.zeros(sample.shape[0], dtype=torch.long, device=sample.device)
            return self.dit(sample, timestep=timestep, class_labels=labels)

    return FlatImageBackbone(_Uncond(net), image_shape)


def make_backbone(
    kind: str,
    dim: int,
    image_shape: Sequence[int],
    width: int = 256,
    unet_channels: int = 128,
    dit_d_model: int = 384,
    dit_n_layers: int = 6,
    dit_n_heads: int = 6,
) -> nn.Module:
    """One backbone by name: ``'mlp'`` (:class:`FourierMLP`), ``'unet'`` or ``'dit'`` (diffusers)."""
    if kind == "mlp":
        return FourierMLP(dim, width)
    if kind == "unet":
        return diffusers_unet(image_shape, channels=unet_channels)
    if kind == "dit":
        return diffusers_dit(image_shape, d_model=dit_d_model, n_layers=dit_n_layers, n_heads=dit_n_heads)
    raise ValueError(f"unknown backbone {kind!r}: expected 'mlp', 'unet' or 'dit'")
