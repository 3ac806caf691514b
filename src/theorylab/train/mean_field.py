"""Projected gradient descent of many mean-field networks at once, next to a wide reference.

All networks of a sweep (every width and seed) are padded to the largest width and stepped as
one batched computation: particles ``(B, M, d)`` with weights ``1/m`` on the real particles and 0
on the padding, so padded particles never act on anything (see :mod:`theorylab.theory.mean_field`).
The reference system (``m_ref`` particles) steps on the same time grid; its loss is recorded at
every step (the mean-field loss curve L_MF(t)), the networks are snapshotted at checkpoints.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import torch
from torch import Tensor

from theorylab.core.errors import MissingResource
from theorylab.nn.activations import HermiteActivation, hermite_activation_torch
from theorylab.probes.function_gap import gap_to_reference
from theorylab.theory.mean_field import (
    OverlapDynamics,
    empirical_velocity,
    population_loss,
    projected_step,
    uniform_sphere,
)


@dataclass
class NetworkBatch:
    """Padded networks: ``w (B, M, d)``, ``c (B, M)``, and for each network its width and seed."""

    w: Tensor
    c: Tensor
    widths: list[int]
    seeds: list[int]

    @classmethod
    def uniform(
        cls,
        widths: Sequence[int],
        seeds: int,
        d: int,
        generator: torch.Generator,
        *,
        dtype: torch.dtype = torch.float64,
        device: str | torch.device = "cpu",
    ) -> "NetworkBatch":
        top = max(widths)
        w = torch.zeros(len(widths) * seeds, top, d, dtype=dtype, device=device)
        c = torch.zeros(len(widths) * seeds, top, dtype=dtype, device=device)
        ws, ss = [], []
        b = 0
        for m in widths:
            for s in range(seeds):
                w[b, :m] = uniform_sphere((m,), d, generator, dtype=dtype, device=device)
                w[b, m:] = w[b, :1]  # padding sits on a real particle (any unit vector works; weight 0)
                c[b, :m] = 1.0 / m
                ws.append(m)
                ss.append(s)
                b += 1
        return cls(w, c, ws, ss)

    def split(self) -> list["NetworkBatch"]:
        """One unpadded batch per network (for the looped comparison)."""
        return [
            NetworkBatch(self.w[b : b + 1, :m], self.c[b : b + 1, :m], [m], [s])
            for b, (m, s) in enumerate(zip(self.widths, self.seeds))
        ]


@dataclass
class ParticleHistory:
    """What :func:`run_projected_gd` keeps: reference loss per step, snapshots at checkpoint steps."""

    times: np.ndarray  # (steps + 1,) mean-field time eta * step
    ref_loss: np.ndarray  # (steps + 1,)
    snapshots: dict[int, tuple[Tensor, Tensor]]  # step -> (networks (B, M, d), reference (m_ref, d))
    net_loss: dict[int, np.ndarray]  # step -> (B,) population loss of each network
    ref_escaped: np.ndarray | None = None  # (steps + 1,) fraction of reference particles with |<w, w*>| >= threshold
    ref_escape_time: np.ndarray | None = None  # (m_ref,) first time each reference particle escaped (nan: never)
    net_escaped: np.ndarray | None = None  # (steps + 1, B) the same fraction for each network


def run_projected_gd(
    act: HermiteActivation,
    w_star: Tensor,
    nets: NetworkBatch,
    ref: Tensor,
    *,
    eta: float,
    steps: int,
    checkpoints: Iterable[int],
    progress: Callable[[Iterable[int], str], Iterator[int]] | None = None,
    on_step: Callable[[int, Tensor, Tensor], None] | None = None,
    escape_threshold: float | None = None,
    samples: tuple[Tensor, Tensor] | None = None,
    max_elements: int | None = None,
    keep_networks: bool = True,
) -> ParticleHistory:
    """Step every network and the reference ``steps`` times with ``w <- normalise(w + eta v(w))``.

    With ``samples = (x (B, n, d), y (B, n))`` the networks follow the empirical loss on their own
    fixed samples (:func:`~theorylab.theory.mean_field.empirical_velocity`); the reference always
    follows the population loss.

    With ``escape_threshold``, also track escape from the equator: the fraction of particles with
    ``|<w, w*>| >= threshold`` at every step, and each reference particle's first escape time.

    Pairwise interactions are formed in blocks of at most ``max_elements`` entries
    (:func:`~theorylab.theory.mean_field.pair_blocks`), and the networks are stepped in groups of
    :func:`network_chunk` networks, so the temporaries of a step stay bounded whatever the widths; the
    particles themselves are never modified in place. With ``keep_networks=False`` the snapshots hold only
    the reference (``(None, reference)``): a caller that reads the networks at checkpoints does so in ``on_step``.
    """
    marks = sorted(set(int(k) for k in checkpoints if 0 <= k <= steps))
    ref_c = torch.full((ref.shape[0],), 1.0 / ref.shape[0], dtype=ref.dtype, device=ref.device)
    w, r = nets.w, ref  # every update below makes new tensors: the inputs are never written
    losses = np.empty(steps + 1)
    snaps: dict[int, tuple[Tensor, Tensor]] = {}
    net_loss: dict[int, np.ndarray] = {}
    ref_escaped = np.zeros(steps + 1) if escape_threshold is not None else None
    net_escaped = np.zeros((steps + 1, w.shape[0])) if escape_threshold is not None else None
    first_escape = torch.full((r.shape[0],), -1, dtype=torch.long, device=r.device)
    it: Iterable[int] = range(steps + 1)
    if progress is not None:
        it = progress(it, "projected GD")
    for step in it:
        if escape_threshold is not None:
            out_ref = (r @ w_star).abs() >= escape_threshold
            ref_escaped[step] = float(out_ref.double().mean())
            first_escape = torch.where(out_ref & (first_escape < 0), torch.full_like(first_escape, step), first_escape)
            net_escaped[step] = (((w @ w_star).abs() >= escape_threshold).double() * nets.c).sum(-1).cpu().numpy()
        losses[step] = float(population_loss(act, r, ref_c, w_star, max_elements))
        if not np.isfinite(losses[step]):
            from theorylab.core.errors import Diverged

            raise Diverged("mean-field reference loss", step)
        if step in marks:
            snaps[step] = (w.clone() if keep_networks else None, r.clone())
            net_loss[step] = population_loss(act, w, nets.c, w_star, max_elements).cpu().numpy()
        if on_step is not None:
            on_step(step, w, r)
        if step == steps:
            break
        w = _step_networks(act, w, nets.c, w_star, eta, samples, max_elements)
        r = projected_step(act, r, ref_c, w_star, eta, max_elements)
    escape_time = None
    if escape_threshold is not None:
        first = first_escape.cpu().numpy().astype(float)
        escape_time = np.where(first >= 0, first * eta, np.nan)
    return ParticleHistory(eta * np.arange(steps + 1), losses, snaps, net_loss, ref_escaped, escape_time, net_escaped)


STEP_CHUNK_ELEMENTS = 1 << 24
"""Most particle coordinates (float64 entries, 128 MiB) whose update is formed at once: a step's temporaries
(drive, interaction, projection: about six arrays the size of the particles) are that many per group of
networks, not per sweep. A sweep smaller than this (every quick preset) is stepped as one group."""


def network_chunk(batch: int, width: int, d: int) -> int:
    """How many networks of ``width`` particles in ``d`` dimensions one group of a step holds."""
    return max(1, min(batch, STEP_CHUNK_ELEMENTS // max(width * d, 1)))


def _step_networks(
    act: HermiteActivation,
    w: Tensor,
    c: Tensor,
    w_star: Tensor,
    eta: float,
    samples: tuple[Tensor, Tensor] | None,
    max_elements: int | None,
) -> Tensor:
    """One projected step of every network ``w (B, M, d)`` (population loss, or the empirical loss on each network's
    own ``samples``), over groups of :func:`network_chunk` networks written into one new tensor (a sweep that is a
    single group gets the step's own result)."""

    def update(part: slice) -> Tensor:
        if samples is None:
            return projected_step(act, w[part], c[part], w_star, eta, max_elements)
        moved = w[part] + eta * empirical_velocity(
            act, w[part], c[part], samples[0][part], samples[1][part], max_elements=max_elements
        )
        return moved / moved.norm(dim=-1, keepdim=True)

    size = network_chunk(w.shape[0], w.shape[-2], w.shape[-1])
    if size >= w.shape[0]:
        return update(slice(None))
    out = torch.empty_like(w)
    for start in range(0, w.shape[0], size):
        out[start : start + size] = update(slice(start, start + size))
    return out


def sweep_peak_bytes(
    networks: int, width: int, d: int, m_ref: int, checkpoints: int, *, keep_networks: bool, block_mib: float
) -> float:
    """Peak bytes of one :func:`width_sweep` (float64 particles): the networks ``(networks, width, d)`` held three
    times (the initial batch, the current and the next step's particles), the temporaries of one group of a step
    (about six times :func:`network_chunk` networks), plus one copy per checkpoint when ``keep_networks``; the
    reference's ``(m_ref, d)`` once per checkpoint and about eight times more (its step's temporaries, the split
    halves); and a few pairwise blocks of ``block_mib`` MiB."""
    net = networks * width * d * 8.0
    group = network_chunk(networks, width, d) * width * d * 8.0
    ref = m_ref * d * 8.0
    return (
        (3 + (checkpoints if keep_networks else 0)) * net
        + 6 * group
        + (checkpoints + 8) * ref
        + 6 * block_mib * (1 << 20)
    )


@dataclass
class WidthSweep:
    """A width sweep's results: the reference loss curve and corrected gaps at every checkpoint."""

    history: ParticleHistory
    nets: NetworkBatch
    gaps: dict[int, np.ndarray]  # step -> (B,) corrected gap of each network to the reference
    ref_error: dict[int, float]  # step -> split-half estimate of the reference's own error

    @classmethod
    def measure(cls, act: HermiteActivation, history: ParticleHistory, nets: NetworkBatch) -> "WidthSweep":
        """Reference-corrected gaps of every network at every snapshot of ``history``."""
        gaps, own = {}, {}
        for step, (w, r) in history.snapshots.items():
            g, e = gap_to_reference(act, w, nets.c, r)
            gaps[step], own[step] = g.cpu().numpy(), e
        return cls(history, nets, gaps, own)

    def gap_rows(self, marks: Iterable[int], eta: float, /, **labels: object) -> list[dict]:
        """One row per checkpoint and network: ``labels``, then step, t (= step * eta), width, seed, the
        reference-corrected gap and the reference's own error estimate."""
        return [
            dict(
                labels,
                step=step,
                t=step * eta,
                width=m,
                seed=s,
                gap=float(self.gaps[step][b]),
                ref_error=self.ref_error[step],
            )
            for step in marks
            for b, (m, s) in enumerate(zip(self.nets.widths, self.nets.seeds))
        ]

    def overlap_samples(self, marks: Iterable[int], w_star: Tensor) -> list[tuple[int, str, np.ndarray]]:
        """``s = <w, w*>`` of every particle at each checkpoint, for the first network (a network of the
        first width) and the reference: ``(step, system, s)``, system "m = <width>" or "reference (m = <m_ref>)"."""
        out = []
        m = self.nets.widths[0]
        for step in marks:
            nets_w, ref_w = self.history.snapshots[step]
            out.append((step, f"m = {m}", (nets_w[0, :m] @ w_star).cpu().numpy()))
            out.append((step, f"reference (m = {ref_w.shape[0]})", (ref_w @ w_star).cpu().numpy()))
        return out

    def escape_rows(self, marks: Iterable[int], eta: float, /, **labels: object) -> list[dict]:
        """Fraction of particles off the equator at each checkpoint: one row per network, then the reference
        (width m_ref, seed -1). Needs a run with ``escape_threshold``."""
        hist, marks = self.history, list(marks)
        m_ref = next(iter(hist.snapshots.values()))[1].shape[0]
        rows = [
            dict(labels, step=step, t=step * eta, width=m, seed=s, escaped_fraction=float(hist.net_escaped[step, b]))
            for step in marks
            for b, (m, s) in enumerate(zip(self.nets.widths, self.nets.seeds))
        ]
        return rows + [
            dict(labels, step=step, t=step * eta, width=m_ref, seed=-1, escaped_fraction=float(hist.ref_escaped[step]))
            for step in marks
        ]


def planted_direction(d: int, device: str | torch.device = "cpu") -> Tensor:
    """``w* = e_1``: every loss here is rotation invariant, so the first axis loses nothing."""
    w_star = torch.zeros(d, dtype=torch.float64, device=device)
    w_star[0] = 1.0
    return w_star


def checkpoint_steps(fractions: Iterable[float], steps: int) -> list[int]:
    """The steps at the given fractions of a run of ``steps`` steps (rounded, without repeats, ascending)."""
    return sorted({int(round(f * steps)) for f in fractions})


def steps_to_loss_fraction(
    act: HermiteActivation,
    d: int,
    m_ref: int,
    *,
    eta: float,
    stop_ratio: float,
    max_steps: int,
    generator: torch.Generator,
    device: str | torch.device = "cpu",
    progress: Callable[[Iterable[int], str], Iterator[int]] | None = None,
    label: str = "horizon",
    max_elements: int | None = None,
) -> int:
    """The horizon T of Glasgow, Wu, Bruna (arXiv 2504.13110): projected GD steps until a system of ``m_ref``
    i.i.d. uniform particles (drawn from ``generator``) reaches ``stop_ratio`` times its initial population
    loss (the paper: 1%), capped at ``max_steps``."""
    w_star = planted_direction(d, device)
    r = uniform_sphere((m_ref,), d, generator, device=device)
    c = torch.full((m_ref,), 1.0 / m_ref, dtype=torch.float64, device=device)
    start = float(population_loss(act, r, c, w_star, max_elements))
    it: Iterable[int] = range(1, max_steps + 1)
    for step in it if progress is None else progress(it, label):
        r = projected_step(act, r, c, w_star, eta, max_elements)
        if float(population_loss(act, r, c, w_star, max_elements)) <= stop_ratio * start:
            return step
    return max_steps


def reduction_against_reference(
    act: HermiteActivation,
    d: int,
    ref0: Tensor,
    *,
    n: int,
    nodes: int,
    eta: float,
    steps: int,
    max_elements: int | None = None,
) -> dict[str, np.ndarray]:
    """What it takes to compare the 1-D overlap reduction (:class:`~theorylab.theory.mean_field.OverlapDynamics`)
    with a particle reference started at ``ref0 (m_ref, d)``: losses at every step ``(steps + 1,)`` of

    - ``L_reduced``: the reduction with ``n`` particles and ``nodes`` Gauss-Jacobi nodes, step ``eta``;
    - ``L_reduced_coarse``: the same with ``n/2`` particles (its discretisation error);
    - ``L_ref_half_eta``: the reference rerun from ``ref0`` at ``eta/2`` (2 x steps, read every other step;
      its time-step error)."""
    fine, _ = OverlapDynamics(act, d, n, nodes, device=ref0.device).run(eta, steps)
    coarse, _ = OverlapDynamics(act, d, max(n // 2, 2), nodes, device=ref0.device).run(eta, steps)
    w_star = planted_direction(d, ref0.device)
    dummy = NetworkBatch(ref0[None, :1], torch.ones(1, 1, dtype=torch.float64, device=ref0.device), [1], [0])
    half = run_projected_gd(
        act, w_star, dummy, ref0, eta=eta / 2, steps=2 * steps, checkpoints=[0], max_elements=max_elements
    ).ref_loss[::2]
    return dict(L_ref_half_eta=half, L_reduced=fine, L_reduced_coarse=coarse)


def width_sweep(
    act: HermiteActivation,
    d: int,
    widths: Sequence[int],
    seeds: int,
    m_ref: int,
    *,
    eta: float,
    steps: int,
    checkpoints: Iterable[int],
    generator: torch.Generator,
    device: str | torch.device = "cpu",
    progress: Callable[[Iterable[int], str], Iterator[int]] | None = None,
    escape_threshold: float | None = None,
    max_elements: int | None = None,
    inline_gaps: bool = False,
) -> WidthSweep:
    """Networks of every width and seed plus a reference of ``m_ref`` particles, all from i.i.d. uniform
    particles, trained together; ``w* = e_1`` (the losses are rotation invariant).

    With ``inline_gaps`` the gaps are measured at each checkpoint as the run passes it and the networks'
    snapshots are not kept (``history.snapshots[step] = (None, reference)``): the same numbers, without holding
    one copy of every network per checkpoint (the paper presets' largest arrays)."""
    w_star = planted_direction(d, device)
    nets = NetworkBatch.uniform(widths, seeds, d, generator, device=device)
    ref = uniform_sphere((m_ref,), d, generator, device=device)
    checkpoints = list(checkpoints)
    if not inline_gaps:
        hist = run_projected_gd(
            act,
            w_star,
            nets,
            ref,
            eta=eta,
            steps=steps,
            checkpoints=checkpoints,
            progress=progress,
            escape_threshold=escape_threshold,
            max_elements=max_elements,
        )
        return WidthSweep.measure(act, hist, nets)
    marks = {int(k) for k in checkpoints if 0 <= k <= steps}
    gaps, own = {}, {}

    def at_checkpoint(step: int, w: Tensor, r: Tensor) -> None:
        if step in marks:
            g, e = gap_to_reference(act, w, nets.c, r)
            gaps[step], own[step] = g.cpu().numpy(), e

    hist = run_projected_gd(
        act,
        w_star,
        nets,
        ref,
        eta=eta,
        steps=steps,
        checkpoints=checkpoints,
        progress=progress,
        on_step=at_checkpoint,
        escape_threshold=escape_threshold,
        max_elements=max_elements,
        keep_networks=False,
    )
    return WidthSweep(hist, nets, gaps, own)


def sample_sweep(
    act: HermiteActivation,
    d: int,
    width: int,
    sizes: Sequence[int],
    seeds: int,
    m_ref: int,
    *,
    eta: float,
    steps: int,
    checkpoints: Iterable[int],
    generator: torch.Generator,
    device: str | torch.device = "cpu",
    progress: Callable[[Iterable[int], str], Iterator[int]] | None = None,
    max_elements: int | None = None,
) -> dict[int, WidthSweep]:
    """Networks of one width trained on ``n`` fixed samples (each its own), for every ``n`` in
    ``sizes``, against the population mean-field reference; returns one :class:`WidthSweep` per n."""
    w_star = planted_direction(d, device)
    out = {}
    for n in sizes:
        nets = NetworkBatch.uniform((width,), seeds, d, generator, device=device)
        ref = uniform_sphere((m_ref,), d, generator, device=device)
        x = torch.randn(seeds, n, d, generator=generator, dtype=torch.float64, device=device)
        y = hermite_activation_torch(act, x @ w_star)
        hist = run_projected_gd(
            act,
            w_star,
            nets,
            ref,
            eta=eta,
            steps=steps,
            checkpoints=checkpoints,
            samples=(x, y),
            progress=progress,
            max_elements=max_elements,
        )
        out[n] = WidthSweep.measure(act, hist, nets)
    return out


_ASKED = re.compile(r"(?:tried to allocate|Tried to allocate)\s+([0-9.]+)\s*(bytes|[KMGT]i?B)?")


def _asked_gib(message: str) -> str:
    """The allocation size named in a CPU or CUDA out-of-memory message, in GiB (or "?")."""
    hit = _ASKED.search(message)
    if hit is None:
        return "?"
    value, unit = float(hit.group(1)), (hit.group(2) or "bytes")
    scale = {
        "bytes": 1,
        "KiB": 1 << 10,
        "MiB": 1 << 20,
        "GiB": 1 << 30,
        "TiB": 1 << 40,
        "KB": 1e3,
        "MB": 1e6,
        "GB": 1e9,
        "TB": 1e12,
    }.get(unit, 1)
    return f"{value * scale / (1 << 30):.1f} GiB"


def is_out_of_memory(err: BaseException) -> bool:
    """True for torch's CPU/CUDA allocation failures and Python's MemoryError."""
    if isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError":
        return True
    text = str(err)
    return isinstance(err, RuntimeError) and ("can't allocate memory" in text or "out of memory" in text.lower())


@contextmanager
def bounded_memory(field: str, value: float, sizes: str):
    """Turn an allocation failure inside the block into one line (a :class:`MissingResource`, exit 2)
    naming the size asked for and the config field to lower (``field``, now ``value``) or the
    ``sizes`` that set the stored arrays."""
    try:
        yield
    except Exception as err:  # noqa: BLE001 - only allocation failures are translated
        if not is_out_of_memory(err):
            raise
        first = " ".join(str(err).split())[:160]
        raise MissingResource(
            f"memory for one allocation of {_asked_gib(str(err))} ({first})",
            f"lower --set {field}=... (now {value:g}; pairwise blocks are at most that many MiB) or reduce {sizes}",
        ) from err
