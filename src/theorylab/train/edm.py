"""Training EDM denoisers (Karras et al. 2022) on a fixed training set, and sampling them.

:func:`train_edm` runs Adam on :func:`theorylab.nn.edm.edm_loss` with minibatches drawn with replacement from
``data`` (n, *event); :func:`train_edm_models` trains one denoiser per training set (the two disjoint splits of
a cross-split experiment) with independent streams; :func:`edm_samples` maps noise seeds ``z`` to samples with
the deterministic Heun sampler from ``sigma_max * z``, in chunks.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from theorylab.core.rng import seeded
from theorylab.nn.edm import EDMPrecond, edm_heun_sampler, edm_loss, edm_sigmas


def train_edm(
    net: EDMPrecond,
    data: Tensor,
    steps: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    callback: Callable[[int, float], None] | None = None,
    every: int = 100,
) -> np.ndarray:
    """Train ``net`` in place for ``steps`` Adam steps of batch ``batch`` (sampled with replacement) and learning
    rate ``lr``; returns the per-step loss (float64 array). ``callback(step, loss)`` is called every ``every``
    steps and after the last one (e.g. ``ctx.check_finite``-style checks that raise on NaN)."""
    params = [p for p in net.parameters() if p.requires_grad]
    try:  # the fused kernel is ~20% faster on CPU for small nets; same update rule
        opt = torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError):
        opt = torch.optim.Adam(params, lr=lr)
    first = next(net.parameters())
    device = first.device
    losses = torch.empty(steps, dtype=torch.float64, device=device)  # no device sync per step
    n = data.shape[0]
    data = data.to(device, first.dtype)
    noise_gen = generator  # minibatch indices always come from ``generator`` (CPU); noise on the net's device
    if device.type != "cpu":
        noise_gen = torch.Generator(device).manual_seed(int(torch.randint(2**62, (1,), generator=generator)))
    net.train()
    for step in range(steps):
        idx = torch.randint(n, (batch,), generator=generator)
        y = data[idx.to(device)]
        loss = edm_loss(net, y, generator=noise_gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses[step] = loss.detach()
        if callback is not None and ((step + 1) % every == 0 or step == steps - 1):
            callback(step, float(losses[step]))
    net.eval()
    return losses.cpu().numpy()


def train_edm_models(
    make_backbone: Callable[[], nn.Module],
    datasets: Sequence[Tensor],
    steps: int,
    batch: int,
    lr: float,
    generators: Sequence[torch.Generator],
    device: str | torch.device = "cpu",
    callback: Callable[[int, int, float], None] | None = None,
    sigma_data: float = 0.5,
    workers: int = 1,
) -> tuple[list[EDMPrecond], list[np.ndarray]]:
    """One :class:`EDMPrecond` per training set, each initialised by ``make_backbone()`` right after seeding torch
    from its generator (so each net's initialisation and minibatches come from its own stream).
    ``callback(k, step, loss)`` names the training set k. ``workers > 1`` trains that many nets at once in threads
    (torch releases the GIL inside its kernels: on a 2-core CPU two small nets train in about the time of one);
    the result does not depend on ``workers``."""
    nets = []
    for gen in generators[: len(datasets)]:
        with seeded(int(torch.randint(2**62, (1,), generator=gen))):  # global stream untouched
            nets.append(EDMPrecond(make_backbone(), sigma_data).to(device))

    def fit(k: int) -> np.ndarray:
        cb = None if callback is None else (lambda step, loss: callback(k, step, loss))
        return train_edm(nets[k], datasets[k].to(torch.float32), steps, batch, lr, generators[k], cb)

    if workers > 1 and len(datasets) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(workers, len(datasets))) as pool:
            losses = list(pool.map(fit, range(len(datasets))))
    else:
        losses = [fit(k) for k in range(len(datasets))]
    return nets, losses


@torch.no_grad()
def edm_samples(
    net: nn.Module,
    z: Tensor,
    steps: int = 18,
    sigma_min: float = 0.002,
    sigma_max: float = 80.0,
    rho: float = 7.0,
    chunk: int = 1024,
) -> Tensor:
    """Heun samples (2 steps - 1 evaluations) from the seeds ``z`` (m, *event), started at ``sigma_max * z``;
    float32 on the net's device, returned on the CPU as float64."""
    param = next(net.parameters())
    sigmas = edm_sigmas(steps, sigma_min, sigma_max, rho)
    out = []
    for part in torch.split(z, chunk):
        x_T = sigma_max * part.to(device=param.device, dtype=param.dtype)
        out.append(edm_heun_sampler(net, x_T, sigmas).to("cpu", torch.float64))
    return torch.cat(out)
