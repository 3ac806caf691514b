"""Autoregressive rollouts of an emulator, batched over initial conditions, with an optional corrector.

``rollout(step, x0, n_steps, corrector=...)`` applies ``x <- step(x)`` (then ``x <- corrector(x, t)``
when given, e.g. a thermalizer's denoising) ``n_steps`` times under ``torch.no_grad()``, records every
``record_every``-th state, and stops a trajectory at its first non-finite value (``stop_on="nonfinite"``:
the trajectory is frozen at NaN from then on and its blow-up step logged; the others go on). The
corrector may return ``(x, info)`` with per-trajectory tensors (e.g. predicted noise levels, denoiser
calls), which are logged per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

import torch
from torch import Tensor


@dataclass
class Rollout:
    states: Tensor  # [B, n_records, C, *spatial]: the initial state, then every record_every-th step
    times: Tensor  # [n_records] steps at which states were recorded
    blowup_step: Tensor  # [B]: first step with a non-finite value, -1 when none
    logs: dict[str, Tensor] = field(default_factory=dict)  # name -> [n_steps, B] from the corrector


def rollout(step: Callable[[Tensor], Tensor], x0: Tensor, n_steps: int, *, corrector: Callable[[Tensor, int],
    Tensor | tuple[Tensor, dict]] | None = None,
            record_every: int = 1, stop_on: Literal["nonfinite", "never"] = "nonfinite") -> Rollout:
    if n_steps < 0 or record_every < 1:
        raise ValueError(f"rollout needs n_steps >= 0 and record_every >= 1; got {n_steps}, {record_every}")
    B = x0.shape[0]
    x = x0.clone()
    records, times = [x.clone()], [0]
    blowup = torch.full((B,), -1, dtype=torch.long)
    logs: dict[str, list[Tensor]] = {}
    with torch.no_grad():
        for t in range(1, n_steps + 1):
            x = step(x)
            if corrector is not None:
                out = corrector(x, t)
                if isinstance(out, tuple):
                    x, info = out
                    for name, value in info.items():
                        logs.setdefault(name, []).append(torch.as_tensor(value).detach().cpu().reshape(B))
                else:
                    x = out
            if stop_on == "nonfinite":
                bad = ~torch.isfinite(x.flatten(1)).all(1).cpu()
                new = bad & (blowup < 0)
                blowup[new] = t
                if bad.any():
                    x = torch.where(bad.to(x.device).view(B, *[1] * (x.ndim - 1)), torch.full_like(x, float("nan")), x)
            if t % record_every == 0:
                records.append(x.clone())
                times.append(t)
    return Rollout(torch.stack(records, 1), torch.tensor(times), blowup, {k: torch.stack(v) for k, v in logs.items()})


class Thermalize:
    """Algorithm 1 of the thermalizer (Pedersen, Zanna, Bruna, arXiv 2503.18731), as a rollout corrector.

    After each emulator step: ŝ = argmax of the denoiser's level classifier; trajectories with
    ŝ > ``s_init`` are denoised by DDPM ancestral steps s = ŝ, ŝ − 1, …, ``s_stop`` + 1 (each from its
    own ŝ: a per-sample level mask), and trajectories with ŝ > ``s_abort`` are flagged diverged and left
    alone. No forward re-noising to ŝ first (the card's default; reconstructed).

    ``denoiser(x, s)`` returns ``(ε̂, level logits)``; a noise-blind network ignores ``s`` (the level
    the corrector believes it is at), an oracle may use it (then pass ``noise_blind=False``, so the
    classification call's ε̂ is not reused). Logs per step and trajectory: ``level``
    (ŝ), ``calls`` (denoiser evaluations), ``thermalized`` (denoised this step), ``aborted``.
    ``scale``: the data std the denoiser was trained at; states are divided by it before and multiplied
    by it after the correction (1: states already normalised).
    """

    def __init__(self, denoiser, betas: Tensor, alpha_bars: Tensor, s_init: int = 10, s_stop: int = 4,
                 s_abort: int = 100,
                 generator: torch.Generator | None = None, noise: bool = True, noise_blind: bool = True,
                 scale: float = 1.0):
        if not 0 <= s_stop <= s_init <= s_abort:
            raise ValueError(f"Thermalize needs 0 <= s_stop <= s_init <= s_abort; got {s_stop}, {s_init}, {s_abort}")
        self.denoiser, self.s_init, self.s_stop, self.s_abort = denoiser, s_init, s_stop, s_abort
        self.betas, self.alpha_bars = betas.double(), alpha_bars.double()
        self.generator, self.noise, self.noise_blind, self.scale = generator, noise, noise_blind, scale

    def __call__(self, x: Tensor, t: int) -> tuple[Tensor, dict[str, Tensor]]:
        if self.scale != 1.0:
            y, info = self._correct(x / self.scale)
            return y * self.scale, info
        return self._correct(x)

    def _correct(self, x: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        B = x.shape[0]
        shape = (B,) + (1,) * (x.ndim - 1)
        eps0, logits = self.denoiser(x, None)
        s_hat = logits.argmax(-1).cpu()
        aborted = s_hat > self.s_abort
        active = (s_hat > self.s_init) & ~aborted
        calls = torch.ones(B, dtype=torch.long)
        if bool(active.any()):
            abar_prev = torch.cat([torch.ones(1, dtype=torch.float64), self.alpha_bars])  # abar_prev[s] = ᾱ_{s−1}
            top = int(s_hat[active].max())
            for s in range(top, self.s_stop, -1):
                do = active & (s_hat >= s)
                # at the first level every stepping trajectory is still the classified state: a noise-blind
                # denoiser's ε̂ from the classification call is the one needed (one call saved per correction)
                eps = eps0 if (s == top and self.noise_blind) else self.denoiser(x, s)[0]
                beta, abar = float(self.betas[s]), float(self.alpha_bars[s])
                mean = (x - beta / (1 - abar) ** 0.5 * eps) / (1 - beta) ** 0.5
                if self.noise and s > 0:
                    sigma = (beta * float(1 - abar_prev[s]) / (1 - abar)) ** 0.5
                    mean = mean + sigma * torch.randn(x.shape, generator=self.generator, dtype=x.dtype).to(x.device)
                x = torch.where(do.to(x.device).view(shape), mean, x)
                if not (s == top and self.noise_blind):
                    calls += do.long()
        return x, {"level": s_hat, "calls": calls, "thermalized": active, "aborted": aborted}


def float32_denoiser(net: torch.nn.Module, **call_kwargs):
    """A float32 network ``net(x, **call_kwargs) -> (ε̂, level logits)`` as a :class:`Thermalize` denoiser on
    float64 states: the level argument is ignored (noise-blind) and ε̂ comes back in float64."""

    def denoise(x: Tensor, s: int | None) -> tuple[Tensor, Tensor]:
        eps, logits = net(x.float(), **call_kwargs)
        return eps.double(), logits

    return denoise


def noisy_emulator(
    net: torch.nn.Module, noise: float, generator: torch.Generator, scale: float = 1.0
) -> Callable[[Tensor], Tensor]:
    """A float32 emulator network as a float64 rollout step with rollout noise (the thermalizer's learned emulators,
    Pedersen, Zanna, Bruna, arXiv 2503.18731: σ = 1e-4): ``x -> net(x/scale) scale + noise ξ``, ξ standard normal from
    ``generator`` (on the CPU, moved to x's device); ``scale`` is the data std the network was trained at."""

    def step(x: Tensor) -> Tensor:
        y = net((x / scale).float()).double() * scale if scale != 1.0 else net(x.float()).double()
        return y + noise * torch.randn(x.shape, generator=generator, dtype=torch.float64).to(x.device)

    return step
