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
from theorylab.theory.thermalize import reverse_step_coefficients, reverse_step_rows

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


class Corrections:
    """SNS corrections in flight for up to ``batch`` trajectories, each at its own reverse level.

    :meth:`begin` takes proposals for some rows (normalised ``[R, *frame]``, with their previous frames), infers
    (ŝ_1, ŝ_2) with one batched call of the heads and sets each row's reverse schedule; :meth:`advance` makes one
    batched network call over every row still denoising, each at its own level (the network is noise-blind, so
    rows at different levels share a call), and returns the rows that finished with their refined frames.
    :func:`refine` begins every row at once and advances until all are done; ``rollout_pipelined`` (in
    :mod:`theorylab.train.rollout`) begins a trajectory's next step as soon as its correction is done, so the
    calls stay full-width instead of trailing off to the one trajectory with the largest ŝ_2 (measured on KS22,
    16 trajectories: ~12 calls per trajectory and step, but ~36 sequential calls per synchronous step).

    Per row, as in the paper's ``fix_short`` / ``joint`` schedules: frame j steps at level s iff s <= its level
    l_j (> 0) for s = max(l) .. 0 (``fix_short`` steps only the proposal); ``calls`` counts the level call and
    every reverse call."""

    def __init__(
        self,
        model: nn.Module,
        betas: Tensor,
        alpha_bars: Tensor,
        *,
        batch: int,
        mode: Mode = "sns",
        variant: Variant = "fix_short",
        generator: torch.Generator | None = None,
        noise: bool = True,
    ):
        if mode not in ("sns", "acdm", "thermo"):
            raise ValueError(f"mode must be 'sns', 'acdm' or 'thermo', got {mode!r}")
        if variant not in ("fix_short", "joint"):
            raise ValueError(f"variant must be 'fix_short' or 'joint', got {variant!r}")
        self.model, self.mode, self.variant, self.generator, self.noise = model, mode, variant, generator, noise
        self.betas = betas.double().cpu()
        self.ab = alpha_bars.double().cpu()
        self.frames: Tensor | None = None  # [batch, 2, *frame]
        self.anchor: Tensor | None = None  # [batch, 1, *frame] float32, for models with an anchor frame
        self.lv = torch.zeros(batch, 2, dtype=torch.long)  # the levels each frame steps from (0: it does not)
        self.level = torch.full((batch,), -1, dtype=torch.long)  # the current reverse level; -1: not denoising
        self.s1 = torch.zeros(batch, dtype=torch.long)
        self.s2 = torch.zeros(batch, dtype=torch.long)
        self.calls = torch.zeros(batch, dtype=torch.long)
        self.done = torch.zeros(batch, dtype=torch.bool)  # finished, not yet returned by advance
        self._none = torch.zeros(0, dtype=torch.long)
        # the reverse step x_{s−1} = c_x[s] x_s − c_eps[s] ε̂ + σ[s] z (Ho et al. 2020, eq. 11; σ_0 = 0)
        self._coef = reverse_step_coefficients(self.betas, self.ab)

    def _call(self, frames: Tensor, rows: Tensor | None, levels: bool) -> tuple[Tensor, Tensor]:
        """The network on ``frames`` of the trajectories ``rows`` (``None``: all of them)."""
        if self.anchor is not None:
            anchor = self.anchor if rows is None else self.anchor[rows.to(self.anchor.device)]
            eps, logits = self.model(frames.float(), anchor, levels=levels)
        else:
            eps, logits = self.model(frames.float(), levels=levels)
        return eps.to(frames.dtype), logits

    def begin(self, rows: Tensor, prev: Tensor, proposal: Tensor) -> None:
        """Start correcting ``proposal`` given ``prev`` (``[R, *frame]``, normalised) for the trajectories ``rows``."""
        R = len(rows)
        if self.frames is None:
            self.frames = torch.zeros(
                (len(self.level), 2) + tuple(prev.shape[1:]), dtype=prev.dtype, device=prev.device
            )
        T = len(self.ab)
        cond = prev
        if self.mode == "thermo":
            cond = diffuse(
                prev,
                self.ab[torch.full((R,), T - 1)].to(prev.dtype).to(prev.device),
                _noise(prev.shape, self.generator, prev),
            )
        _, logits = self._call(torch.stack([cond, proposal], 1), rows, levels=True)
        s_hat = logits.argmax(-1).cpu()
        finite = (torch.isfinite(prev.flatten(1)).all(1) & torch.isfinite(proposal.flatten(1)).all(1)).cpu()
        s_hat = torch.where(finite[:, None], s_hat, torch.zeros_like(s_hat))  # a blown-up trajectory is left alone
        s1, s2 = s_hat[:, 0].clone(), s_hat[:, 1].clone()
        if self.mode == "acdm":
            s1.zero_()
        elif self.mode == "thermo":
            s1.fill_(T - 1)
        else:
            noisy = diffuse(prev, self.ab[s1].to(prev.dtype).to(prev.device), _noise(prev.shape, self.generator, prev))
            cond = torch.where((s1 > 0).to(prev.device).view(R, *[1] * (prev.ndim - 1)), noisy, prev)
        lv = torch.stack([s1, s2], 1)
        if self.variant == "fix_short":
            lv[:, 0] = 0
        top = lv.max(1).values
        self.frames[rows.to(self.frames.device)] = torch.stack([cond, proposal], 1)
        self.lv[rows], self.s1[rows], self.s2[rows] = lv, s1, s2
        self.level[rows] = torch.where(top > 0, top, torch.full_like(top, -1))
        self.calls[rows] = 1
        self.done[rows] = top == 0

    def busy(self) -> bool:
        """Whether any row is still denoising."""
        return bool((self.level >= 0).any())

    def advance(self) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
        """One reverse step of every denoising row at its own level; returns ``(rows, refined [R, *frame], info)``
        for the rows finished since the last call (``info``: ``level_prev`` ŝ_1 used, ``level`` ŝ_2, ``calls``)."""
        assert self.frames is not None
        busy = self.level >= 0
        n = int(busy.sum())
        if n:
            # the bookkeeping is as costly as a batch-16 MLP call on a CPU: whole-batch views when every row is
            # busy (the pipelined rollout's usual case), per-level coefficient tables, fix_short touches frame 2 only
            rows = None if n == len(busy) else busy.nonzero().squeeze(1)
            s = self.level if rows is None else self.level[rows]
            sub = self.frames if rows is None else self.frames[rows.to(self.frames.device)]
            eps = self._call(sub, rows, levels=False)[0]
            if self.variant == "fix_short":
                z = _noise(sub[:, 1].shape, self.generator, sub) if self.noise else None
                new = reverse_step_rows(sub[:, 1], eps[:, 1], s, self._coef, z)
                if rows is None:
                    self.frames[:, 1] = new
                else:
                    self.frames[rows.to(self.frames.device), 1] = new
            else:
                mean = reverse_step_rows(
                    sub, eps, s, self._coef, _noise(sub.shape, self.generator, sub) if self.noise else None
                )
                lv = self.lv if rows is None else self.lv[rows]
                do = (lv >= s[:, None]) & (lv > 0)  # [R, 2]: which frames step at this level
                new = torch.where(do.to(sub.device).view((n, 2) + (1,) * (sub.ndim - 2)), mean, sub)
                if rows is None:
                    self.frames = new
                else:
                    self.frames[rows.to(self.frames.device)] = new
            step = busy.long()
            self.calls += step
            self.level -= step
            self.done |= busy & (self.level < 0)
        if not bool(self.done.any()):
            return self._none, self.frames[:0, 1], {k: self._none for k in ("level_prev", "level", "calls")}
        out = self.done.nonzero().squeeze(1)
        self.done[out] = False
        refined = self.frames[out.to(self.frames.device), 1]
        return out, refined, {"level_prev": self.s1[out], "level": self.s2[out], "calls": self.calls[out]}


@torch.no_grad()
def refine(
    model: nn.Module,
    prev: Tensor,
    proposal: Tensor,
    betas: Tensor,
    alpha_bars: Tensor,
    *,
    mode: Mode = "sns",
    variant: Variant = "fix_short",
    generator: torch.Generator | None = None,
    anchor: Tensor | None = None,
    noise: bool = True,
) -> tuple[Tensor, dict[str, Tensor]]:
    """One SNS correction of ``proposal`` given ``prev`` (both ``[B, *frame]``, normalised; float64 states, a float32
    model). Returns ``(refined, info)`` with ``level_prev`` (ŝ_1 used), ``level`` (ŝ_2) and ``calls`` per sample.
    Each sample runs its own reverse schedule (:class:`Corrections`); samples share the network calls."""
    B = prev.shape[0]
    work = Corrections(model, betas, alpha_bars, batch=B, mode=mode, variant=variant, generator=generator, noise=noise)
    if anchor is not None:
        work.anchor = anchor.unsqueeze(1).float()
    rows = torch.arange(B)
    work.begin(rows, prev, proposal)
    out = prev.new_empty(proposal.shape)
    info = {k: torch.zeros(B, dtype=torch.long) for k in ("level_prev", "level", "calls")}
    while True:
        done, y, i = work.advance()
        if len(done):
            out[done.to(out.device)] = y
            for k, v in i.items():
                info[k][done] = v
        if not work.busy():
            break
    return out, info


class SelfRefine:
    """SNS as a rollout corrector (in units of ``scale``, the data std the model was trained at; ``anchor``:
    the initial state is the anchor frame of models that take one). Call :meth:`reset` with the rollout's initial
    state first (it returns the corrector). Two ways to use it:

    - ``rollout(step, x0, n, corrector=SelfRefine(...).reset(x0))``: ``corrector(x, t)`` refines a whole batch
      of proposals given the previous corrected states (:func:`refine`);
    - ``rollout_pipelined(step, x0, n, SelfRefine(...).reset(x0))``: the :meth:`start` / :meth:`advance`
      protocol, each trajectory starting its next step as soon as its correction is done (:class:`Corrections`;
      the same corrections with the network calls kept full, ~2-3x faster on a CPU at batch 16).

    Logs per step ``level_prev`` (ŝ_1), ``level`` (ŝ_2) and ``calls`` (denoiser evaluations)."""

    def __init__(
        self,
        model: nn.Module,
        betas: Tensor,
        alpha_bars: Tensor,
        *,
        mode: Mode = "sns",
        variant: Variant = "fix_short",
        generator: torch.Generator | None = None,
        scale: float = 1.0,
        anchor: bool = False,
        noise: bool = True,
    ):
        if mode not in ("sns", "acdm", "thermo") or variant not in ("fix_short", "joint"):
            raise ValueError(f"SelfRefine: unknown mode {mode!r} or variant {variant!r}")
        self.model, self.betas, self.alpha_bars = model, betas.double(), alpha_bars.double()
        self.mode, self.variant, self.generator, self.scale = mode, variant, generator, scale
        self.use_anchor, self.noise = anchor, noise
        self.prev: Tensor | None = None
        self.anchor: Tensor | None = None
        self.work: Corrections | None = None

    def reset(self, x0: Tensor) -> "SelfRefine":
        self.prev = x0.clone()
        self.anchor = x0.clone() / self.scale if self.use_anchor else None
        self.work = None
        return self

    def _need_reset(self, x: Tensor, whole_batch: bool = False) -> Tensor:
        """The previous states, once ``reset(x0)`` set them with ``x``'s frame shape (and batch, if asked)."""
        first = 0 if whole_batch else 1
        if self.prev is None or self.prev.shape[first:] != x.shape[first:]:
            raise RuntimeError("SelfRefine needs reset(x0) with the rollout's initial state before the rollout")
        return self.prev

    def __call__(self, x: Tensor, t: int) -> tuple[Tensor, dict[str, Tensor]]:
        prev = self._need_reset(x, whole_batch=True)
        y, info = refine(
            self.model,
            prev / self.scale,
            x / self.scale,
            self.betas,
            self.alpha_bars,
            mode=self.mode,
            variant=self.variant,
            generator=self.generator,
            anchor=self.anchor,
            noise=self.noise,
        )
        y = y * self.scale
        self.prev = y.clone()
        return y, info

    def start(self, rows: Tensor, x: Tensor) -> None:
        """Begin correcting the proposals ``x`` (``[R, *frame]``) of the trajectories ``rows``."""
        prev = self._need_reset(x)
        if self.work is None:
            self.work = Corrections(
                self.model,
                self.betas,
                self.alpha_bars,
                batch=len(prev),
                mode=self.mode,
                variant=self.variant,
                generator=self.generator,
                noise=self.noise,
            )
            if self.anchor is not None:
                self.work.anchor = self.anchor.unsqueeze(1).float()
        self.work.begin(rows, prev[rows.to(prev.device)] / self.scale, x / self.scale)

    def advance(self) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
        """One batched network call; returns ``(rows, corrected [R, *frame], info)`` for the rows finished."""
        if self.work is None:
            raise RuntimeError("SelfRefine.advance before start")
        rows, y, info = self.work.advance()
        y = y * self.scale
        if len(rows):
            assert self.prev is not None
            self.prev[rows.to(self.prev.device)] = y
        return rows, y, info

    def busy(self) -> bool:
        return self.work is not None and self.work.busy()
