"""local-perturbation-geometry: the local geometry of small perturbations around one trained checkpoint.

Paper: Piontkovskaia & Nikolenko, arXiv 2607.16821 (2026; only the abstract was available), building on their
"Recoverable but Not Stationary: Local Linear Structures in Weights and Activations", arXiv 2606.10929. Task
arithmetic, sequential fine-tuning, activation steering and random search all move a checkpoint by small amounts;
the paper tests the local approximations they rely on. We train a multitask transformer on "[task] a b =" over Z_p
(add, sub, copy-a, max), then measure around theta_0, with exact torch.func JVPs/HVPs on one flat parameter vector:
first-order predictability (Taylor remainder), interference of two task vectors vs the Hessian bilinear form, drift
of the top-8 per-example-gradient subspace along SGD, the trajectory-prefix basis, best-of-N Gaussian random search
against s |g| e_N, and the cosine between a one-step edit's activation shift and a CAA steering vector.
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from theorylab.core import RunContext, study
from theorylab.data.modular_tasks import ANSWER_POSITION, multitask_sequences, task_prompts, vocab_size
from theorylab.nn import ToyTransformer
from theorylab.probes.second_order import FlatModel, hutchinson_trace, jvp, per_example_grads
from theorylab.probes.steering import caa_vector, residual_hook
from theorylab.probes.subspace import orthonormal
from theorylab.studies.local_perturbation_geometry.config import PRESETS, LocalPerturbationGeometryConfig
from theorylab.studies.local_perturbation_geometry.figures import draw_all
from theorylab.studies.local_perturbation_geometry.judges import claims
from theorylab.studies.local_perturbation_geometry.measure import (
    _additivity,
    _ce,
    _drift,
    _interference,
    _pairs,
    _taylor,
    _window,
)
from theorylab.theory.extremes import expected_max_normal
from theorylab.train.multitask import lora_recovery, sgd_path, train_until_accurate

PAPER = "Piontkovskaia & Nikolenko, arXiv 2607.16821 (2026); predecessor arXiv 2606.10929"
POS = ANSWER_POSITION


def _best_of_n(cfg, ctx, seed, model, fm, th0, probe_tokens, probe_answers) -> dict:
    """Best-of-N random search: mean over repeats of max_i (L(theta) - L(theta + delta_i)), delta_i ~ N(0, s^2 I)."""
    gen = ctx.generator(f"bestofn {seed}")
    if cfg.bestofn_params == "readout":
        with torch.no_grad():
            _, cache = model.run_with_cache(probe_tokens, ["hook_final"])
            h = model.norm_final(cache["hook_final"][:, POS])  # (n, d): the readout's input, cached
        W0, b0 = model.readout.weight.detach(), model.readout.bias.detach()
        x0 = torch.cat([W0.reshape(-1), b0])

        def logits(x):  # x: (..., V*d + V)
            W = x[..., : W0.numel()].reshape(*x.shape[:-1], *W0.shape)
            return torch.einsum("nd,...vd->...nv", h, W) + x[..., W0.numel() :].unsqueeze(-2)

        def L(x):
            z = logits(x)
            return (
                F.cross_entropy(
                    z.reshape(-1, z.shape[-1]),
                    probe_answers.repeat(z.numel() // z.shape[-1] // len(probe_answers)),
                    reduction="none",
                )
                .reshape(z.shape[:-1])
                .mean(-1)
            )
    else:
        x0 = th0
        L = _ce(fm, probe_tokens, probe_answers)
    g = torch.func.grad(L)(x0)
    tr, tr_se = hutchinson_trace(L, x0, cfg.trace_probes, generator=gen)
    e_min = expected_max_normal(min(cfg.bestofn_ns))
    s = cfg.bestofn_validity * 2 * float(g.norm()) * e_min / abs(tr)
    nmax = max(cfg.bestofn_ns)
    with torch.no_grad():
        l0 = float(L(x0))
        gains = []
        chunk = max(1, 4096 // nmax) if cfg.bestofn_params == "readout" else 1
        for i in range(0, cfg.bestofn_draws, chunk):
            k = min(chunk, cfg.bestofn_draws - i)
            d = s * torch.randn(k, nmax, x0.numel(), generator=gen, dtype=x0.dtype)
            if cfg.bestofn_params == "readout":
                vals = L(x0 + d)  # (k, nmax)
            else:
                vals = torch.stack([torch.stack([L(x0 + di) for di in dk]) for dk in d])
            gains.append(l0 - vals)
        gains = torch.cat(gains)  # (draws, nmax): nested, the first N columns are the best-of-N sample
    rows = []
    for n in cfg.bestofn_ns:
        best = gains[:, :n].max(1).values.numpy()
        rows.append(
            dict(
                seed=seed,
                n=n,
                mean_gain=float(best.mean()),
                se=float(best.std(ddof=1) / np.sqrt(len(best))),
                s=s,
                grad_norm=float(g.norm()),
                trace=tr,
                trace_se=tr_se,
                e_n=expected_max_normal(n),
                validity=s * abs(tr) / (2 * float(g.norm()) * expected_max_normal(n)),
                params=cfg.bestofn_params,
                dim=x0.numel(),
            )
        )
    return rows


def _caa(cfg, ctx, seed, model, fm, th0) -> list[dict]:
    t_a, _ = task_prompts(cfg.p, cfg.task_a, cfg.tasks)
    t_b, a_b = task_prompts(cfg.p, cfg.task_b, cfg.tasks)
    edit = -cfg.sgd_lr * torch.func.grad(_ce(fm, t_a, a_b))(th0)  # one SGD step on task-A prompts, task-B answers
    gen = ctx.generator(f"caa controls {seed}")
    controls = [torch.randn(fm.dim, generator=gen, dtype=th0.dtype) for _ in range(cfg.caa_controls)]
    rows = []
    for layer in range(1, cfg.n_layers + 1):
        name = residual_hook(model, layer)

        def h(th, name=name):
            store = {}
            with model.hooks({name: lambda t: store.__setitem__("h", t)}):
                fm(th, t_a)
            return store["h"][:, POS].mean(0)

        v = caa_vector(model, t_b, t_a, layer, POS)
        cos = lambda a, v=v: float(a @ v / (a.norm() * v.norm()))  # noqa: E731
        _, dh = jvp(h, th0, edit)
        with torch.no_grad():
            small = 1e-4
            fd = (h(th0 + small * edit) - h(th0)) / small  # finite-difference check of the JVP
            full = h(th0 + edit) - h(th0)
        rows.append(
            dict(
                seed=seed,
                layer=layer,
                kind="edit_jvp",
                cos=cos(dh),
                jvp_fd_rel=float((fd - dh).norm() / dh.norm()),
                edit_norm=float(edit.norm()),
            )
        )
        rows.append(
            dict(
                seed=seed,
                layer=layer,
                kind="edit_full_step",
                cos=cos(full),
                jvp_fd_rel=np.nan,
                edit_norm=float(edit.norm()),
            )
        )
        for r in controls:
            _, dr = jvp(h, th0, r * (edit.norm() / r.norm()))
            rows.append(
                dict(
                    seed=seed, layer=layer, kind="random", cos=cos(dr), jvp_fd_rel=np.nan, edit_norm=float(edit.norm())
                )
            )
    return rows


class _Clock:
    """CPU seconds of each part of a seed's run, appended to the 'timing' table."""

    def __init__(self, rows: list, seed: int):
        self.rows, self.seed, self.last = rows, seed, time.process_time()

    def __call__(self, part: str) -> None:
        now = time.process_time()
        self.rows.append(dict(seed=self.seed, part=part, cpu_s=now - self.last))
        self.last = now


def _one_seed(cfg, ctx, seed, tables, lora: bool) -> None:
    tokens, answers, task_ids = multitask_sequences(cfg.p, cfg.tasks)
    model = ToyTransformer(
        vocab_size=vocab_size(cfg.p, len(cfg.tasks)),
        d_model=cfg.d_model,
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        mlp_width=cfg.mlp_width,
        causal=True,
        positional="learned",
        max_len=4,
        final_norm=True,
        seed=ctx.seed(f"init {seed}"),
    ).to(ctx.device)
    clock = _Clock(tables["timing"], seed)
    steps, acc, losses = train_until_accurate(
        model,
        tokens.to(ctx.device),
        answers.to(ctx.device),
        task_ids.to(ctx.device),
        position=POS,
        max_steps=cfg.base_max_steps,
        min_steps=cfg.base_min_steps,
        lr=cfg.base_lr,
        batch=cfg.base_batch,
        target=cfg.base_target,
        generator=ctx.generator(f"base data {seed}"),
        check=ctx.check_finite,
    )
    clock("base run")
    model = model.cpu().double()  # the analysis runs in float64
    fm = FlatModel(model)
    th0 = fm.theta
    gen = ctx.generator(f"probes {seed}")
    probe = torch.randperm(len(tokens), generator=gen)[: cfg.probe_n]
    pt, pa = tokens[probe], answers[probe]
    L = _ce(fm, pt, pa)
    paths = {}
    for task in (cfg.task_a, cfg.task_b):
        tk, an = task_prompts(cfg.p, task, cfg.tasks)
        g = ctx.generator(f"sgd {task} {seed}")
        # sgd_batch >= p^2 is full-batch gradient descent on the task's p^2 prompts
        idx = [
            torch.arange(len(tk))
            if cfg.sgd_batch >= len(tk)
            else torch.randint(0, len(tk), (cfg.sgd_batch,), generator=g)
            for _ in range(cfg.sgd_steps)
        ]
        paths[task] = sgd_path(
            lambda th, i, tk=tk, an=an: F.cross_entropy(fm(th, tk[i])[:, POS], an[i]),
            th0,
            lambda k, idx=idx: idx[k],
            steps=cfg.sgd_steps,
            lr=cfg.sgd_lr,
        )
    clock("task-vector SGD paths")
    d_a, d_b = paths[cfg.task_a][-1] - th0, paths[cfg.task_b][-1] - th0
    ctx.check_finite("task vectors", float(d_a.norm() + d_b.norm()))
    tables["base"].append(
        dict(
            seed=seed,
            steps=steps,
            min_task_accuracy=float(acc.min()),
            dim=fm.dim,
            theta_norm=float(th0.norm()),
            probe_loss=float(L(th0)),
            final_train_loss=losses[-1],
            task_a_norm=float(d_a.norm()),
            task_b_norm=float(d_b.norm()),
        )
    )
    task_losses = {t: _ce(fm, *task_prompts(cfg.p, t, cfg.tasks)) for t in cfg.tasks}
    order, onset = _pairs(cfg, seed, fm, th0, task_losses)
    tables["order"] += order
    tables["onset"] += onset
    clock("order defect (all pairs)")
    stale = torch.func.grad(L)(paths[cfg.task_a][-1]).detach()
    tables["window"] += _window(cfg, ctx, seed, fm, th0, L, d_a, d_b, stale)
    clock("window")
    tables["additivity"] += _additivity(cfg, seed, model, fm, th0, pt, d_a, d_b)
    clock("additivity")
    tables["taylor"] += _taylor(cfg, ctx, seed, fm, th0, pt, d_a, gen)
    clock("taylor")
    tables["interference"] += _interference(cfg, seed, L, th0, d_a, d_b)
    clock("interference")
    path = paths[cfg.task_a]
    tables["drift"] += _drift(cfg, seed, fm, path, pt, pa)
    clock("drift and rotation")
    Q = orthonormal((path[1 : cfg.prefix_steps + 1] - path[: cfg.prefix_steps]).T.numpy())
    disp = (path[-1] - path[0]).numpy()
    tables["prefix"].append(
        dict(
            seed=seed,
            m=cfg.prefix_steps,
            steps=cfg.sgd_steps,
            dim=fm.dim,
            captured=float(np.sum((Q.T @ disp) ** 2) / np.sum(disp**2)),
            baseline=cfg.prefix_steps / fm.dim,
        )
    )
    tables["bestofn"] += _best_of_n(cfg, ctx, seed, model, fm, th0, pt, pa)
    clock("best-of-N")
    tables["caa"] += _caa(cfg, ctx, seed, model, fm, th0)
    clock("CAA")
    if lora:
        tables["lora"].append(_lora(cfg, ctx, seed, model, fm, th0, pt, pa))


def _lora(cfg, ctx, seed, model, fm, th0, pt, pa) -> dict:
    """Claim 7: recover from weight noise on the MLP matrices with LoRA; prefix basis vs a fixed task plane."""
    targets = [f"blocks.{i}.mlp.{w}" for i in range(cfg.n_layers) for w in ("up", "down")]
    path, clean = lora_recovery(
        model,
        lambda m: F.cross_entropy(m(pt)[:, POS], pa),
        targets,
        rank=cfg.lora_rank,
        steps=cfg.lora_steps,
        lr=cfg.lora_lr,
        noise=cfg.lora_noise,
        generator=ctx.generator(f"lora {seed}"),
    )
    disp = (path[-1] - path[0]).numpy()
    Q = orthonormal((path[1 : cfg.prefix_steps + 1] - path[: cfg.prefix_steps]).T.numpy())
    names = [f"{t}.weight" for t in targets]
    mask = torch.cat([torch.full((n,), name in names) for name, n in zip(fm.names, fm.numels)])
    plane = _drift_basis(cfg, fm, th0, pt, pa)[mask.numpy()]  # the top-k gradient plane at theta_0, on the targets
    P = orthonormal(plane)
    tot = float(np.sum(disp**2))
    with torch.no_grad():
        loss_clean = float(F.cross_entropy(model(pt)[:, POS], pa))
    return dict(
        seed=seed,
        rank=cfg.lora_rank,
        steps=cfg.lora_steps,
        dim=int(mask.sum()),
        prefix_captured=float(np.sum((Q.T @ disp) ** 2) / tot),
        plane_captured=float(np.sum((P.T @ disp) ** 2) / tot),
        recovered_distance=float(np.linalg.norm(path[-1].numpy() - clean.numpy())),
        noisy_distance=float(np.linalg.norm(path[0].numpy() - clean.numpy())),
        loss_clean=loss_clean,
    )


def _drift_basis(cfg, fm, th0, pt, pa) -> np.ndarray:
    """The fixed 'task plane' estimated before recovery: the top-k per-example-gradient subspace at theta_0."""

    def one(th, x, y):
        return F.cross_entropy(fm(th, x[None])[:, POS], y[None])

    G = per_example_grads(one, th0, pt, pa, chunk=cfg.chunk)
    _, V = torch.linalg.eigh(G @ G.T)
    return orthonormal((G.T @ V[:, -cfg.lora_rank :]).numpy())


@study(
    "local-perturbation-geometry",
    title="Local geometry of small perturbations around a trained checkpoint: Taylor, interference, drift, steering",
    paper=PAPER,
    config=LocalPerturbationGeometryConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
    cpu_threads=2,  # both cores: quick 43 s idle (62.0 s pinned to one; 2-core AVX2)
)
def run(cfg: LocalPerturbationGeometryConfig, ctx: RunContext) -> None:
    lora = bool(cfg.lora_steps) and importlib.util.find_spec("peft") is not None
    if cfg.lora_steps and not lora:
        ctx.say(
            "the optional package peft is not installed: LoRA recovery (claim 7) skipped, not decided "
            "(install it with `pip install peft`)"
        )
    tables: dict[str, list] = {
        k: []
        for k in (
            "base",
            "order",
            "onset",
            "window",
            "additivity",
            "taylor",
            "interference",
            "drift",
            "prefix",
            "bestofn",
            "caa",
            "lora",
            "timing",
        )
    }
    for seed in range(cfg.seeds):
        ctx.say(f"seed {seed}: base run (p = {cfg.p}, d = {cfg.d_model}, {cfg.n_layers} layers), then the probes")
        _one_seed(cfg, ctx, seed, tables, lora)
    for name, rows in tables.items():
        ctx.table(name, pd.DataFrame(rows))
    base = ctx.tables["base"]
    ctx.scalar("dim", int(base["dim"].iloc[0]))
    ctx.scalar("theta_norm", float(base["theta_norm"].mean()))
    ctx.scalar("lora_skipped_no_peft", bool(cfg.lora_steps) and not lora)
    draw_all(ctx)
