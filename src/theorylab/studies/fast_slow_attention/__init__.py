"""fast-slow-attention: attention as coupling, a fast-slow (singular-perturbation) reading of pretraining.

Paper: Z. Gao, "Attention is Just Another Name for Coupling?: A Fast-Slow ODE Perspective on Hierarchical
Pretraining", arXiv 2606.16730 (2026); only the abstracts were read. Two halves:

- the theory toy (:mod:`theorylab.theory.fastslow`): a CTMC fast variable ``eps dx/dt = Q(y)^T x`` driven by a slow
  ``dy/dt = c^T x - y``; its slow manifold is the stationary law ``p_st(y)`` (claim 1), x tracks it at distance
  ``O(eps)`` (claim 2), the Tikhonov correction brings that to ``O(eps^2)`` (claim 3), and a softmax-MLP trained on the
  master-equation residual recovers ``p_st`` (claim 4);
- the language model (:class:`theorylab.nn.fast_slow.FastSlowLM`): a causal decoder with a block-mean pooled slow
  path joined by a zero-initialised gate; it must be causal (claim 5), its slow scores cost ``1/P^2`` of the fast ones
  (claim 6), and at 500k tokens the gate stays closed (claim 7) and coupled, frozen and dense are within seed noise
  (claim 8).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.text import char_stream, random_windows
from theorylab.nn.fast_slow import FastSlowConfig, FastSlowLM, attention_score_flops
from theorylab.probes.causality import leak_test
from theorylab.studies.fast_slow_attention.config import PRESETS, FastSlowAttentionConfig
from theorylab.studies.fast_slow_attention.figures import (
    figure_ablation_losses,
    figure_depth_smoothness,
    figure_gate_trajectory,
    figure_manifold_tracking,
    figure_phi_fit,
)
from theorylab.studies.fast_slow_attention.judges import claims
from theorylab.theory.fastslow import (
    FastSlowToy,
    correction_errors,
    ctmc_stationary,
    fit_variational_phi,
    frozen_chain_limit,
    manifold_terms,
    simulate_fast_slow,
)
from theorylab.train.batched import AdamWSchedule
from theorylab.train.fast_slow import mean_next_token_loss, train_lockstep

PAPER = "Gao, arXiv 2606.16730 (2026)"
TRACK_EPS = 0.03  # the epsilon whose trajectory the manifold figure shows


def _toy(cfg: FastSlowAttentionConfig, ctx: RunContext) -> None:
    toy = FastSlowToy.draw(ctx.rng("ctmc"), cfg.ode_states)
    rows = []
    for y in np.linspace(-2.0, 2.0, cfg.manifold_ys):
        p = ctmc_stationary(toy.Q(y))
        limit, t_end = frozen_chain_limit(toy.Q(y), cfg.mixing_times)
        rows.append(
            dict(
                y=y,
                l1_to_limit=float(np.abs(p - limit).sum()),
                min_p=float(p.min()),
                sum_minus_one=float(p.sum() - 1.0),
                t_end=t_end,
            )
        )
    ctx.table("stationary", pd.DataFrame(rows))
    rows, track = [], []
    shown = min(cfg.ode_epsilons, key=lambda e: abs(np.log(e / TRACK_EPS)))
    for eps in cfg.ode_epsilons:
        path = simulate_fast_slow(toy, eps, cfg.ode_t_end, cfg.ode_points)
        ctx.check_finite(f"Radau solution at eps = {eps}", torch.as_tensor(path.x))
        rows.append(dict(eps=eps, **correction_errors(toy, path, cfg.ode_t_min)))
        if eps == shown:
            for t, x, y in zip(path.t[::5], path.x[::5], path.y[::5]):
                m = manifold_terms(toy, y)
                p, x1 = m.p, m.x1
                track += [
                    dict(eps=eps, t=t, y=y, state=i, x=x[i], p_st=p[i], corrected=p[i] + eps * x1[i])
                    for i in range(toy.states)
                ]
    ctx.table("errors", pd.DataFrame(rows))
    ctx.table("tracking", pd.DataFrame(track))
    ctx.say(f"fitting the variational phi ({cfg.phi_steps} Adam steps)")
    phi, losses = fit_variational_phi(
        toy, ctx.seed("phi"), steps=cfg.phi_steps, batch=cfg.phi_batch, width=cfg.phi_width, lr=cfg.phi_lr
    )
    ctx.check_finite("phi residual loss", torch.as_tensor(losses))
    ys = np.linspace(-2.0, 2.0, cfg.phi_grid)
    fitted, untrained = phi(ys), phi.untrained(ys)
    exact = np.stack([ctmc_stationary(toy.Q(y)) for y in ys])
    ctx.table(
        "phi",
        pd.DataFrame(
            [
                dict(y=y, state=i, phi=fitted[k, i], phi_untrained=untrained[k, i], p_st=exact[k, i])
                for k, y in enumerate(ys)
                for i in range(toy.states)
            ]
        ),
    )
    ctx.scalar("phi_final_residual", float(losses[-20:].mean()))


def _variants(
    cfg: FastSlowAttentionConfig, vocab: int, seed: Callable[[str], int], s: int, device
) -> list[tuple[str, int, FastSlowLM]]:
    """Seed ``s``'s models: dense, and coupled and frozen per P, each from its own initialisation draw
    (``seed(name)``: the run's seed of a named stream).

    Each variant is its own run (the card compares means over seeds with the run-to-run SD): with one shared draw
    ``frozen`` (gate 0, slow weights frozen) trained exactly as ``dense`` (its slow output enters times an exact 0),
    so the claim's two comparisons were one number. The batches stay shared within a seed (lockstep)."""
    base = dict(
        vocab_size=vocab,
        d_model=cfg.lm_d_model,
        n_layers=cfg.lm_n_layers,
        n_heads=cfg.lm_n_heads,
        mlp_width=cfg.lm_mlp_width,
        max_len=cfg.lm_length,
        attention_kernel="fused" if device.type == "cpu" else "auto",
    )
    out = [("dense", 0, FastSlowLM(FastSlowConfig(**base, variant="dense"), seed=seed(f"lm init {s} dense")))]
    for P in cfg.lm_pool_sizes:
        for variant in ("coupled", "frozen"):
            out.append(
                (
                    variant,
                    P,
                    FastSlowLM(
                        FastSlowConfig(**base, pool_size=P, variant=variant), seed=seed(f"lm init {s} {variant} {P}")
                    ),
                )
            )
    return [(v, P, m.to(device)) for v, P, m in out]


class _GateSteps:
    """The gate of every layer of the coupled models, read before each training step (a forward pre-hook that
    ignores eval-mode forwards) and once after training: each step's largest coordinate move ``max_i |dg_i|``."""

    def __init__(self, models: list[tuple[str, int, FastSlowLM]]):
        self.reads: dict[tuple[int, int], list[torch.Tensor]] = {}
        self.handles = []
        self.gates = {}
        for variant, P, m in models:
            if variant != "coupled":
                continue
            for layer, block in enumerate(m.layers):
                key = (P, layer)
                self.reads[key], self.gates[key] = [], block.gate
                self.handles.append(
                    block.gate.register_forward_pre_hook(
                        lambda module, _args, key=key: (
                            self.reads[key].append(module.g.detach().clone()) if module.training else None
                        )
                    )
                )  # a device copy: no host sync inside the timed step

    def rows(self, lr: list[float], **labels) -> list[dict]:
        """Per (P, layer): the largest step move over ``lr_t`` (Adam's bound says <~ 1), the path length
        ``sum_t max_i |dg_i|`` and the final ``max_i |g_i|``; removes the hooks."""
        for h in self.handles:
            h.remove()
        out = []
        for (P, layer), reads in self.reads.items():
            g = torch.stack(reads + [self.gates[P, layer].g.detach().clone()]).cpu().double()
            moves = (g[1:] - g[:-1]).abs().amax(dim=1)
            if len(moves) != len(lr):
                raise RuntimeError(f"gate reads: {len(moves)} steps recorded, {len(lr)} trained")
            out.append(
                dict(
                    **labels,
                    P=P,
                    layer=layer,
                    max_step_over_lr=float((moves / torch.tensor(lr)).max()),
                    path=float(moves.sum()),
                    final_max_abs=float(g[-1].abs().max()),
                )
            )
        return out


_MATRICES = {
    "W_Q": "attn.W_Q",
    "W_K": "attn.W_K",
    "W_V": "attn.W_V",
    "W_O": "attn.W_O",
    "mlp_up": "mlp.up.weight",
    "mlp_down": "mlp.down.weight",
}


def _depth_rows(model: FastSlowLM, **labels) -> list[dict]:
    """``||θ_{l+1} - θ_l||_F / ||θ_l||_F`` and cos(θ_l, θ_{l+1}) per matrix type of the fast blocks."""
    rows = []
    for kind, name in _MATRICES.items():
        ws = [dict(layer.fast.named_parameters())[name].detach().double().flatten() for layer in model.layers]
        for layer in range(len(ws) - 1):
            a, b = ws[layer], ws[layer + 1]
            rows.append(
                dict(
                    **labels,
                    matrix=kind,
                    layer=layer,
                    rel_diff=float((b - a).norm() / a.norm()),
                    cos=float(a @ b / (a.norm() * b.norm())),
                )
            )
    return rows


def _language_model(cfg: FastSlowAttentionConfig, ctx: RunContext) -> None:
    vocab, stream = char_stream(cfg.corpus)
    n_val = int(len(stream) * cfg.lm_val_fraction)
    train_stream, val_stream = stream[:-n_val], stream[-n_val:]
    val = random_windows(val_stream, cfg.lm_val_windows, cfg.lm_length, ctx.generator("validation")).to(ctx.device)
    optim = AdamWSchedule(lr=cfg.lm_lr, weight_decay=cfg.lm_weight_decay)
    lr = optim.lr_factor(cfg.lm_steps)
    lr_t = [cfg.lm_lr * lr(k) for k in range(cfg.lm_steps)]  # the rate of step k (LambdaLR: factor(k) at step k)
    curve, final, timing, depth, steps = [], [], [], [], []
    ctx.say(
        f"training {3 * cfg.lm_seeds} LMs ({len(cfg.lm_pool_sizes)} P), {cfg.lm_steps} steps = {cfg.lm_tokens:,} "
        f"tokens each"
    )
    for s in range(cfg.lm_seeds):
        models = _variants(cfg, len(vocab), ctx.seed, s, ctx.device)
        reads = _GateSteps(models)
        gen = ctx.generator(f"lm data {s}")

        def batches(_step: int, gen=gen) -> torch.Tensor:
            return random_windows(train_stream, cfg.lm_batch, cfg.lm_length, gen)

        def evaluate(n: int, models=models, s=s) -> None:
            for variant, P, m in models:
                loss = mean_next_token_loss(m, val)
                ctx.check_finite(f"validation loss ({variant}, seed {s})", torch.tensor(loss), n)
                maxabs = [
                    float(layer.gate.g.detach().abs().max()) if layer.gate is not None else 0.0 for layer in m.layers
                ]
                curve.extend(
                    [
                        dict(
                            seed=s,
                            variant=variant,
                            P=P,
                            step=n,
                            tokens=n * cfg.lm_batch * cfg.lm_length,
                            val_loss=loss,
                            layer=layer,
                            gate_rms=g,
                            gate_max_abs=a,
                        )
                        for layer, (g, a) in enumerate(zip(m.gate_rms(), maxabs))
                    ]
                )

        log = train_lockstep(
            [m for _, _, m in models],
            batches,
            steps=cfg.lm_steps,
            optim=optim,
            evaluate=evaluate,
            evaluate_every=cfg.lm_evaluate_every,
            progress=ctx.progress,
            description=f"LM seed {s}",
        )
        steps += reads.rows(lr_t, seed=s)
        for i, (variant, P, m) in enumerate(models):
            final.append(
                dict(
                    seed=s,
                    variant=variant,
                    P=P,
                    tokens=cfg.lm_tokens,
                    val_loss=mean_next_token_loss(m, val),
                    train_loss=float(np.mean(log.losses[i][-5:])),
                )
            )
            timing += [dict(seed=s, variant=variant, P=P, step=k, seconds=t) for k, t in enumerate(log.step_seconds[i])]
            depth += _depth_rows(m, seed=s, variant=variant, P=P)
        if s == 0:
            _causality(cfg, ctx, models, len(vocab))
    ctx.table("lm_curve", pd.DataFrame(curve))
    ctx.table("lm_final", pd.DataFrame(final))
    ctx.table("step_time", pd.DataFrame(timing))
    ctx.table("depth", pd.DataFrame(depth))
    ctx.table("gate_steps", pd.DataFrame(steps))
    # Adam moves a coordinate by <~ lr_t per step (Kingma & Ba 2015, Sec. 2.1), so |g_i| <= sum_t lr_t (claim 7)
    ctx.scalar("adam_gate_bound", float(sum(lr_t)))
    ctx.scalar("lm_tokens", cfg.lm_tokens)
    ctx.scalar("timing_on_gpu", int(ctx.device.type == "cuda"))
    ctx.scalar("vocab_size", len(vocab))


def _causality(cfg: FastSlowAttentionConfig, ctx: RunContext, models, vocab: int) -> None:
    """Claim 5 on seed 0's trained coupled model with its gates set to N(0, 1) (an open gate), and the same weights
    with an unshifted block mean (the control that must leak); claim 6's FLOP count on explicit-kernel copies."""
    rows, flops = [], []
    for variant, P, m in models:
        if variant != "coupled":
            continue
        for causal in (True, False):
            probe = FastSlowLM(m.cfg.model_copy(update=dict(causal_pool=causal, attention_kernel="explicit")))
            probe.load_state_dict(m.state_dict())
            with torch.no_grad():
                for layer in probe.layers:
                    layer.gate.g.copy_(torch.randn(layer.gate.g.shape, generator=ctx.generator(f"gate {P}")))
            probe = probe.to(ctx.device)
            report = leak_test(
                probe,
                cfg.lm_length,
                vocab,
                ctx.generator(f"leak {P} {causal}"),
                sequences=cfg.leak_sequences,
                device=ctx.device,
            )
            rows += [
                dict(
                    P=P,
                    pooling="shifted (causal)" if causal else "unshifted (leaky)",
                    t=t,
                    boundary=bool(t % P == 0),
                    leak=float(x),
                )
                for t, x in enumerate(report.per_position)
            ]
            if causal:
                flops += _flop_rows(cfg, probe.cpu(), P)
    ctx.table("leak", pd.DataFrame(rows))
    ctx.table("flops", pd.DataFrame(flops))


def _flop_rows(cfg: FastSlowAttentionConfig, model: FastSlowLM, P: int) -> list[dict]:
    """Analytic score FLOPs ``2 L^2 d`` of the fast and slow attention at L = lm_length, and the measured quadratic
    part of their matmul FLOPs (torch's FlopCounterMode at lengths L0 and 2 L0: ``F(2L0) - 2F(L0)`` isolates the
    ``L^2`` term; scores and pattern-times-values are its two equal halves), rescaled to L."""
    from torch.utils.flop_counter import FlopCounterMode

    def counts(length: int) -> dict[str, int]:
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            model(torch.zeros(1, length, dtype=torch.long))
        per = counter.get_flop_counts()
        return {
            path: sum(int(v) for v in per.get(f"FastSlowLM.layers.0.{name}", {}).values())
            for path, name in (("fast", "fast.attn"), ("slow", "slow_attn"))
        }

    L0, T, d = cfg.flop_check_length, cfg.lm_length, cfg.lm_d_model
    one, two = counts(L0), counts(2 * L0)
    rows = []
    for path, length in (("fast", T), ("slow", T // P)):
        quad_coeff = Fraction(two[path] - 2 * one[path], 2 * (L0 if path == "fast" else L0 // P) ** 2)
        rows.append(
            dict(
                P=P,
                path=path,
                tokens=length,
                analytic_score_flops=attention_score_flops(length, d),
                measured_score_flops=float(quad_coeff * length**2 / 2),
            )
        )
    return rows


@study(
    "fast-slow-attention",
    title="Attention as coupling: a fast-slow (singular-perturbation) view of pretraining",
    paper=PAPER,
    config=FastSlowAttentionConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
    # small matmuls: one thread is fastest on a shared 2-core box
    cpu_threads=1,
)
def run(cfg: FastSlowAttentionConfig, ctx: RunContext) -> None:
    _toy(cfg, ctx)
    _language_model(cfg, ctx)
    figure_manifold_tracking(ctx, ctx.tables["tracking"], ctx.tables["errors"])
    figure_phi_fit(ctx, ctx.tables["phi"])
    figure_gate_trajectory(ctx, ctx.tables["lm_curve"])
    figure_ablation_losses(ctx, ctx.tables["lm_curve"])
    figure_depth_smoothness(ctx, ctx.tables["depth"])


__all__ = ["PAPER", "run", "claims"]
