"""Online SGD for single-token attention-indexed models, K students (one link each) advanced in lockstep.

Xu, Sagitova, Zdeborová & Krzakala, arXiv 2609.03858 (Sec. 5, Fig. 2). Every step draws a fresh batch of B tokens
``x ~ N(0, I_d)``; all K students see the same batch (each against the teacher's label under its own link), so one
batched matmul computes every ``G``. The loss is the batch mean of ``½(h(G(S)) - h(G(S*)))²``; its gradient in S is
``(1/(B sqrt d)) Σ_b r_b (x_b x_b^T - I)`` with ``r = (h(G) - y) h'(G)`` for the centred G of the tied and direct
students, ``(1/(B sqrt d)) Σ_b r_b x_b x_b^T`` for the uncentred G of the untied one (paper eq. 24; the teacher's G*
stays centred), pushed to the parameters by :meth:`AttentionIndexed.param_grads`. ρ and t1 are recorded at every
step (from the S the step already computed), so the first sample count with ρ >= 0.5 is resolved to one batch; the
test MSE on a fixed test set every ``evaluate_every`` steps. :func:`half_way` reads half-way times off the records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from theorylab.data.attention_index import link, link_derivative
from theorylab.nn.attention_indexed import AttentionIndexed


@dataclass
class AIMRun:
    """One lockstep run. Per-step arrays are (steps + 1, K); ``n`` counts samples seen before the record."""

    links: tuple[str, ...]
    n: np.ndarray  # (T,) samples seen
    rho: np.ndarray  # (T, K) cosine of the traceless parts of S and S*
    t1: np.ndarray  # (T, K) Tr S / d
    q11: np.ndarray  # (T, K) Tr(S_sym²)/d
    q12: np.ndarray  # (T, K) Tr(S S*)/d
    eval_n: np.ndarray  # (E,) samples seen at the test evaluations
    test_mse: np.ndarray  # (E, K) ½ mean (h(G) - y)² on the fixed test set
    n_half: np.ndarray  # (K,) first n with ρ >= 0.5 (nan: never)
    finite: bool  # False when a student's S became non-finite or exploded (it is frozen, its records nan)


def train_aim(
    S_star: torch.Tensor,
    links: tuple[str, ...],
    n_samples: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    parametrisation: str = "tied",
    kappa: float = 0.5,
    direct_init: str = "traceless",
    evaluate_every: int = 50,
    n_test: int = 4096,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
    mean0: float | None = None,
) -> AIMRun:
    """Online SGD of ``len(links)`` students of one parametrisation until ``n_samples`` fresh samples are seen.

    ``lr`` is the step on the batch-mean loss (per-sample rate ``lr / batch``). The students are initialised from
    ``generator`` before any data is drawn, so two calls with equal generators see the same stream. ``mean0``: the
    untied students' initial mean ``Tr S/√d`` (None: as drawn, ``O(d^-1/2)``).
    """
    if not links or batch < 1 or n_samples < batch or lr <= 0:
        raise ValueError(
            f"train_aim needs links, batch >= 1, n_samples >= batch, lr > 0; got {links}, {batch}, {n_samples}, {lr}"
        )
    d, K = S_star.shape[0], len(links)
    model = AttentionIndexed(d, parametrisation, K, kappa, direct_init, generator, dtype, mean0).to(device)
    centre = 1.0 if model.centred else 0.0
    Ss = S_star.to(device=device, dtype=dtype)
    tr_star = torch.trace(Ss)
    Sbar_star = (S_star.double() - torch.trace(S_star.double()) / d * torch.eye(d, dtype=torch.float64)).to(device)
    norm_star = torch.sqrt((Sbar_star * Sbar_star).sum())
    h = [link(k) for k in links]
    dh = [link_derivative(k) for k in links]
    eye = torch.eye(d, dtype=dtype, device=device)
    x_test = torch.randn(n_test, d, generator=generator, dtype=torch.float64).to(device=device, dtype=dtype)
    gs_test = (((x_test @ Ss) * x_test).sum(1) - tr_star) / math.sqrt(d)
    steps = n_samples // batch
    rec = torch.full((4, steps + 1, K), float("nan"), dtype=torch.float64, device=device)
    eye_rec = torch.eye(d, dtype=dtype, device=device)
    Sbar_star_t = Sbar_star.to(dtype)
    alive = torch.ones(K, dtype=torch.bool, device=device)
    ev_n, ev = [], []
    with torch.no_grad():
        for s in range(steps + 1):
            S = model.S()
            Ssym = (S + S.transpose(1, 2)) / 2
            tr = torch.diagonal(S, dim1=1, dim2=2).sum(1)
            Sbar = Ssym - (tr / d)[:, None, None] * eye_rec
            cos = (Sbar * Sbar_star_t).sum((1, 2)) / (torch.sqrt((Sbar * Sbar).sum((1, 2))) * norm_star)
            rec[0, s] = cos.double()
            rec[1, s] = (tr / d).double()
            rec[2, s] = ((Ssym * Ssym).sum((1, 2)) / d).double()
            rec[3, s] = ((Ssym * Ss).sum((1, 2)) / d).double()
            alive &= torch.isfinite(S).flatten(1).all(1) & (rec[2, s] < 1e6)  # a diverged student is frozen
            if not bool(alive.any()):
                break
            if s % evaluate_every == 0 or s == steps:
                g = model(x_test)
                ev_n.append(s * batch)
                ev.append([float((0.5 * (h[k](g[k]) - h[k](gs_test)) ** 2).mean()) for k in range(K)])
            if s == steps:
                break
            x = torch.randn(batch, d, generator=generator, dtype=torch.float64).to(device=device, dtype=dtype)
            gs = (((x @ Ss) * x).sum(1) - tr_star) / math.sqrt(d)
            G = ((x @ S * x).sum(2) - centre * tr[:, None]) / math.sqrt(d)  # (K, B): x S x^T row by row
            r = torch.stack([(h[k](G[k]) - h[k](gs)) * dh[k](G[k]) for k in range(K)])  # (K, B)
            grad_S = ((r[:, :, None] * x).transpose(1, 2) @ x - centre * r.sum(1)[:, None, None] * eye) / (
                batch * math.sqrt(d)
            )
            grad_S = torch.where(alive[:, None, None], grad_S, torch.zeros((), dtype=dtype, device=device))
            model.sgd_step(grad_S, lr)
    rec = rec.cpu().numpy()
    finite = bool(alive.all())
    n = np.arange(steps + 1) * batch
    rho = rec[0]
    n_half = np.array(
        [n[np.flatnonzero(rho[:, k] >= 0.5)[0]] if (rho[:, k] >= 0.5).any() else np.nan for k in range(K)], dtype=float
    )
    return AIMRun(tuple(links), n, rho, rec[1], rec[2], rec[3], np.array(ev_n), np.array(ev), n_half, finite)


def aim_lr(d: int, batch: int, constant: float) -> float:
    """The step on the batch-mean loss, ``constant · B / (d ln d)``: per-sample rate ``α_d = constant/(d ln d)``."""
    return constant * batch / (d * math.log(d))


def half_way(n: np.ndarray, v: np.ndarray, start: float, end: float) -> float:
    """First ``n`` at which ``v`` has covered half its move from ``start`` to ``end``, linearly interpolated between
    records (nan: never, or no move). For a half-way time of a relaxation (``end`` its settled level) or of a rise
    (``start`` 0, ``end`` 1: the first ``v >= 0.5``)."""
    v = np.asarray(v, float)
    if not (np.isfinite(start) and np.isfinite(end)) or start == end:
        return math.nan
    frac = (v - start) / (end - start)  # 0 at the start, 1 at the end
    hit = np.flatnonzero(frac >= 0.5)
    if not len(hit):
        return math.nan
    i = int(hit[0])
    if i == 0:
        return float(n[0])
    a, b = frac[i - 1], frac[i]
    return float(n[i - 1] + (n[i] - n[i - 1]) * (0.5 - a) / (b - a)) if np.isfinite(a) and b > a else float(n[i])
