"""Self-refining neural surrogates (SNS; Liu, Zanna, Bruna, arXiv 2603.17750): training a pair model with
independent per-frame noise levels, and the :class:`SelfRefine` rollout corrector.

- :func:`train_sns`: pairs ``(x_{t−1}, x_t)`` one step apart are diffused to independent levels s_1, s_2 (each from
  a ``low_share`` / 1 − ``low_share`` mixture of U{0..low_levels−1} and U{0..levels−1}; the card's quick deviation)
  and a :class:`~theorylab.nn.conditional_diffusion.ConditionalDiffusion` is trained on
  ``‖(ε̂_1, ε̂_2) − (ε_1, ε_2)‖² + λ [CE(s_1) + CE(s_2)]``.
- :func:`refine`: one correction of a proposal given the previous frame. Modes from the same network: ``sns``
  (both levels from the heads; the previous frame is forward-diffused to ŝ_1), ``acdm`` (ŝ_1 forced to 0: trust the
  previous frame), ``thermo`` (the previous frame fully noised to level T − 1: the invariant measure). Variants:
  ``fix_short`` (reverse DDPM on the proposal from ŝ_2 down to 0 with the previous frame held at its level) and
  ``joint`` (the noisier frame alone down to the other's level, then both together down to 0; per sample a frame
  steps at level s iff s <= its level). No threshold hyperparameter.
- :class:`SelfRefine`: :func:`refine` as a corrector for ``theorylab.train.rollout.rollout`` (remembers the last
  corrected state as the previous frame; call :meth:`SelfRefine.reset` with the initial state first), logging per
  step ``level_prev`` (ŝ_1), ``level`` (ŝ_2) and ``calls`` (denoiser evaluations).
"""

from __future__ import annotations

from typing import Callable, Iterable, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.nn.unet import diffuse

Progress = Callable[[Iterable[int], str], Iterable[int]]
Check = Callable[[str, Tensor, int], None]
Mode = Literal["sns", "acdm", "thermo"]
Variant = Literal["fix_short", "joint"]


def draw_levels(n: int, levels: int, low_levels: int, low_share: float, generator: torch.Generator) -> Tensor:
    """``[n]`` levels from the mixture: with probability ``low_share`` U{0..low_levels−1}, else U{0..levels−1}
    (from ``generator``: the coins, the low draws, the full draws)."""
    coin = torch.rand(n, generator=generator) < low_share
    low = torch.randint(0, low_levels, (n,), generator=generator)
    full = torch.randint(0, levels, (n,), generator=generator)
    return torch.where(coin, low, full)


def train_sns(
    model: nn.Module,
    trajectories: Tensor,
    alpha_bars: Tensor,
    *,
    steps: int,
    batch: int,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    levels: int = 1000,
    low_levels: int | None = None,
    low_share: float = 0.0,
    ce_weight: float = 0.1,
    anchor: bool = False,
    clip: float | None = None,
    ema: nn.Module | None = None,
    ema_decay: float = 0.999,
    device: torch.device | str = "cpu",
    log_every: int = 100,
    progress: Progress | None = None,
    check: Check | None = None,
    description: str = "train the SNS model",
) -> list[dict]:
    """Train ``model(noisy [B, 2, *frame], anchor, levels=True) -> (ε̂, logits [B, 2, levels])``
    (a :class:`~theorylab.nn.conditional_diffusion.ConditionalDiffusion`) on pairs of consecutive frames of
    ``trajectories`` ``[N, T, *frame]`` (kept where they are; batches move to ``device``). Per step, from
    ``generator`` (CPU), in this order: trajectory indices, times t ~ U{1..T−1}, the levels of frame 1 then frame 2
    (:func:`draw_levels`; ``low_levels=None`` draws U{0..levels−1}), the noise. ``anchor=True`` passes the
    trajectory's first frame as a clean anchor (reconstructed: the official code passes the initial condition at
    inference). ``clip``: gradient-norm clip; ``ema``: a copy of ``model`` updated with ``ema_decay``. Returns
    ``[{step, loss, eps_loss, ce}]`` every ``log_every`` steps and at the last."""
    if not 0 <= low_share <= 1:
        raise ValueError(f"low_share must be in [0, 1], got {low_share}")
    ab = alpha_bars.float().to(device)
    N, T = trajectories.shape[:2]
    low = levels if low_levels is None else low_levels
    log = []
    it = range(steps) if progress is None else progress(range(steps), description)
    for step in it:
        b = torch.randint(0, N, (batch,), generator=generator)
        t = torch.randint(1, T, (batch,), generator=generator)
        s = torch.stack([draw_levels(batch, levels, low, low_share, generator) for _ in range(2)], 1)
        pair = torch.stack([trajectories[b, t - 1], trajectories[b, t]], 1).to(device)
        e = torch.randn(pair.shape, generator=generator).to(device)
        s = s.to(device)
        a = ab[s].view(batch, 2, *[1] * (pair.ndim - 2))
        noisy = a.sqrt() * pair + (1 - a).sqrt() * e
        anc = trajectories[b, 0].unsqueeze(1).to(device) if anchor else None
        eps, logits = model(noisy, anc) if anchor else model(noisy)
        eps_loss = F.mse_loss(eps, e)
        ce = F.cross_entropy(logits[:, 0], s[:, 0]) + F.cross_entropy(logits[:, 1], s[:, 1])
        loss = eps_loss + ce_weight * ce
        if check is not None:
            check("SNS loss", loss, step)
        optimizer.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        if ema is not None:
            with torch.no_grad():
                for pe, pm in zip(ema.parameters(), model.parameters()):
                    pe.lerp_(pm, 1 - ema_decay)
        if step % log_every == 0 or step == steps - 1:
            log.append(dict(step=step, loss=loss.item(), eps_loss=eps_loss.item(), ce=ce.item()))
    return log


def _noise(shape, generator: torch.Generator | None, like: Tensor) -> Tensor:
    return torch.randn(shape, generator=generator, dtype=like.dtype).to(like.device)


@torch.no_grad()
def refine(model: nn.Module, prev: Tensor, proposal: Tensor, betas: Tensor, alpha_bars: Tensor, *, mode: Mode = "sns",
           variant: Variant = "fix_short", generator: torch.Generator | None = None, anchor: Tensor | None = None,
           noise: bool = True) -> tuple[Tensor, dict[str, Tensor]]:
    """One SNS correction of ``proposal`` given ``prev`` (both ``[B, *frame]``, normalised; float64 states, a float32
    model). Returns ``(refined, info)`` with ``level_prev`` (ŝ_1 used), ``level`` (ŝ_2) and ``calls`` per sample."""
    if mode not in ("sns", "acdm", "thermo"):
        raise ValueError(f"mode must be 'sns', 'acdm' or 'thermo', got {mode!r}")
    if variant not in ("fix_short", "joint"):
        raise ValueError(f"variant must be 'fix_short' or 'joint', got {variant!r}")
    B = prev.shape[0]
    T = len(alpha_bars)
    ab = alpha_bars.double()
    abar_prev = torch.cat([torch.ones(1, dtype=torch.float64), ab])  # abar_prev[s] = ᾱ_{s−1}
    anc = None if anchor is None else anchor.unsqueeze(1).float()

    def call(frames: Tensor, levels: bool = True, rows: Tensor | None = None) -> tuple[Tensor, Tensor]:
        a = None if anc is None else (anc if rows is None else anc[rows])
        eps, logits = model(frames.float(), a, levels=levels) if a is not None else model(frames.float(),
                                                                                            levels=levels)
        return eps.to(frames.dtype), logits

    cond = prev
    if mode == "thermo":
        cond = diffuse(prev, ab[torch.full((B,), T - 1)].to(prev.dtype).to(prev.device),
                       _noise(prev.shape, generator, prev))
    _, logits = call(torch.stack([cond, proposal], 1))
    s_hat = logits.argmax(-1).cpu()
    finite = (torch.isfinite(prev.flatten(1)).all(1) & torch.isfinite(proposal.flatten(1)).all(1)).cpu()
    s_hat = torch.where(finite[:, None], s_hat, torch.zeros_like(s_hat))  # a blown-up trajectory is left alone
    s1, s2 = s_hat[:, 0].clone(), s_hat[:, 1].clone()
    if mode == "acdm":
        s1.zero_()
    elif mode == "thermo":
        s1.fill_(T - 1)
    else:
        e = _noise(prev.shape, generator, prev)
        noisy = diffuse(prev, ab[s1].to(prev.dtype).to(prev.device), e)
        cond = torch.where((s1 > 0).to(prev.device).view(B, *[1] * (prev.ndim - 1)), noisy, prev)
    frames = torch.stack([cond, proposal], 1)
    lv = torch.stack([s1, s2], 1)  # [B, 2]
    stepping = torch.tensor([variant == "joint", True])
    lv_active = torch.where(stepping, lv, torch.zeros_like(lv))
    calls = torch.ones(B, dtype=torch.long)
    top = int(lv_active.max())
    shape = (B, 2) + (1,) * (frames.ndim - 2)
    for s in range(top, -1, -1):
        do = (lv_active >= s) & (lv_active > 0)  # [B, 2]: frame steps at s iff 0 <= s <= its level (> 0)
        rows = do.any(1).nonzero().squeeze(1)
        if len(rows) == 0:
            continue
        # only the trajectories still denoising are evaluated (their count, not the batch's, sets the cost)
        idx = rows.to(frames.device)
        sub = frames[idx]
        eps, _ = call(sub, levels=False, rows=idx)
        beta, abar = float(betas[s]), float(ab[s])
        mean = (sub - beta / (1 - abar) ** 0.5 * eps) / (1 - beta) ** 0.5
        if noise and s > 0:
            sigma = (beta * float(1 - abar_prev[s]) / (1 - abar)) ** 0.5
            mean = mean + sigma * _noise(sub.shape, generator, sub)
        frames[idx] = torch.where(do[rows].to(frames.device).view((len(rows),) + shape[1:]), mean, sub)
        calls[rows] += 1
    return frames[:, 1], {"level_prev": s1, "level": s2, "calls": calls}


class SelfRefine:
    """:func:`refine` as a rollout corrector: ``corrector(x, t)`` refines the proposal ``x`` given the previous
    corrected state (in units of ``scale``, the data std the model was trained at). Call :meth:`reset` with the
    rollout's initial state first (it returns the corrector); ``anchor`` (``[B, *frame]``, physical units) is passed
    to models with an anchor frame."""

    def __init__(self, model: nn.Module, betas: Tensor, alpha_bars: Tensor, *, mode: Mode = "sns",
                 variant: Variant = "fix_short", generator: torch.Generator | None = None, scale: float = 1.0,
                 anchor: bool = False, noise: bool = True):
        if mode not in ("sns", "acdm", "thermo") or variant not in ("fix_short", "joint"):
            raise ValueError(f"SelfRefine: unknown mode {mode!r} or variant {variant!r}")
        self.model, self.betas, self.alpha_bars = model, betas.double(), alpha_bars.double()
        self.mode, self.variant, self.generator, self.scale = mode, variant, generator, scale
        self.use_anchor, self.noise = anchor, noise
        self.prev: Tensor | None = None
        self.anchor: Tensor | None = None

    def reset(self, x0: Tensor) -> "SelfRefine":
        self.prev = x0.clone()
        self.anchor = x0.clone() / self.scale if self.use_anchor else None
        return self

    def __call__(self, x: Tensor, t: int) -> tuple[Tensor, dict[str, Tensor]]:
        if self.prev is None or self.prev.shape != x.shape:
            raise RuntimeError("SelfRefine needs reset(x0) with the rollout's initial state before the rollout")
        y, info = refine(self.model, self.prev / self.scale, x / self.scale, self.betas, self.alpha_bars,
                         mode=self.mode, variant=self.variant, generator=self.generator, anchor=self.anchor,
                         noise=self.noise)
        y = y * self.scale
        self.prev = y.clone()
        return y, info
