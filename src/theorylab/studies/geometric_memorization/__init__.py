"""geometric-memorization: factual recall by geometry (superposed attribute codes + a ReLU selector MLP).

Paper: Ravfogel, Yehudai, Bruna & Bietti, *Geometric Factual Recall in Transformers*, arXiv 2605.12426 (2026). A
one-layer transformer memorises R random bijections of N entities with d = O(R log N): subject embeddings superpose
their attributes' codes and the MLP selects the queried block. The quick preset runs our reconstruction of the
construction (``theory.geometric_memory``) as exact weights of a ``ToyTransformer`` over every fact of an (N, R)
grid, the pigeonhole check one bit below, chain-of-thought two-hop, and trains one model (``train.fact_recall``)
whose embeddings it regresses on its unembedding rows (``probes.linear_fit``).
"""

from __future__ import annotations

import copy
import time

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.facts import FactTable, random_bijections
from theorylab.probes.linear_fit import linear_fit_r2
from theorylab.studies.geometric_memorization.config import PRESETS, GeometricMemorizationConfig
from theorylab.studies.geometric_memorization.figures import (
    figure_capacity,
    figure_construction,
    figure_superposition,
    figure_transfer,
)
from theorylab.studies.geometric_memorization.judges import claims
from theorylab.theory.geometric_memory import (
    code_length,
    construction_margin,
    construction_width,
    parameter_counts,
    recall_bound,
)
from theorylab.train.fact_recall import (
    construction_model,
    cot_margins,
    fact_margins,
    fact_model,
    train_facts,
    transfer,
)

PAPER = "Ravfogel, Yehudai, Bruna & Bietti, arXiv 2605.12426 (2026)"
SCATTER_POINTS = 400  # held-out embedding coordinates kept for the superposition figure


def _mlp_params(d: int, width: int) -> int:
    return 2 * d * width + width + d


def _construction(cfg: GeometricMemorizationConfig, ctx: RunContext) -> None:
    """Claims 1-2: the exact construction at k = ceil(log2 N) on the grid, and at k - 1 (pigeonhole)."""
    dtype = getattr(torch, cfg.eval_dtype)
    rows, tight, hist = [], [], []
    for n in cfg.construction_n_entities:
        for r in sorted(set(cfg.construction_relations) | set(cfg.tight_relations)):
            facts = random_bijections(n, r, ctx.generator(f"facts {n} {r}"))
            seq, tgt = (t.to(ctx.device) for t in facts.queries())
            k = code_length(n)
            offsets = ([0] if r in cfg.construction_relations else []) + (
                [-1] if r in cfg.tight_relations and k > 1 else []
            )
            for off in offsets:
                kk = k + off
                t0 = time.perf_counter()
                model = construction_model(facts, kk, cfg.gate, dtype, ctx.device)
                m, _ = fact_margins(model, seq, tgt, cfg.chunk)
                m = m.double().cpu()
                closed = parameter_counts(n, r, kk)
                nonzero = sum(int(p.count_nonzero()) for p in model.parameters())
                dense = sum(p.numel() for p in model.parameters())
                row = dict(
                    n=n,
                    r=r,
                    k=kk,
                    k_log=k,
                    d=construction_width(r, kk),
                    n_facts=len(m),
                    accuracy=float((m > 0).double().mean()),
                    min_margin=float(m.min()),
                    max_margin=float(m.max()),
                    margin_closed_form=construction_margin(n, kk),
                    recall_bound=recall_bound(n, kk),
                    nonzero_params=nonzero,
                    nonzero_closed_form=closed["nonzero_total"],
                    dense_params=dense,
                    dense_closed_form=closed["dense_total"],
                    mlp_nonzero=closed["nonzero_mlp"],
                    seconds=time.perf_counter() - t0,
                )
                (rows if off == 0 else tight).append(row)
                if off == 0:
                    values, counts = torch.unique(m, return_counts=True)
                    hist += [dict(n=n, r=r, margin=float(v), count=int(c)) for v, c in zip(values, counts)]
    ctx.table("construction", pd.DataFrame(rows))
    ctx.table("tight", pd.DataFrame(tight))
    ctx.table("margin_hist", pd.DataFrame(hist))


def _cot(cfg: GeometricMemorizationConfig, ctx: RunContext) -> None:
    """Claim 3: the one-hop construction applied twice (CoT) on every two-hop query."""
    facts = random_bijections(cfg.cot_n_entities, cfg.cot_relations, ctx.generator("cot facts"))
    k = code_length(cfg.cot_n_entities)
    model = construction_model(facts, k, cfg.gate, getattr(torch, cfg.eval_dtype), ctx.device)
    m = cot_margins(model, facts, cfg.chunk, ctx.device).double().cpu()
    ctx.table(
        "cot",
        pd.DataFrame(
            [
                dict(
                    n=cfg.cot_n_entities,
                    r=cfg.cot_relations,
                    k=k,
                    n_queries=len(m),
                    accuracy=float((m > 0).double().mean()),
                    min_margin=float(m.min()),
                )
            ]
        ),
    )


def _superposition(model, facts: FactTable, control: FactTable, gen: torch.Generator) -> tuple[dict, list]:
    """Regress learned e_s on [U_{pi_1(s)}, ..., U_{pi_R(s)}] (one map for all subjects), fit on half the subjects;
    the control uses independent bijections (shuffled pi's)."""
    n = facts.n_entities
    E = model.embed.weight[:n].detach().double().cpu()
    U = model.readout.weight.detach().double().cpu()
    split = torch.zeros(n, dtype=torch.bool)
    split[torch.randperm(n, generator=gen)[: n // 2]] = True
    out, points = {}, []
    for name, table in (("real", facts), ("control", control)):
        X = torch.cat([U[table.table[r]] for r in range(facts.n_relations)], dim=1)
        if X.shape[1] + 1 > int(split.sum()):  # underdetermined: the fit would interpolate
            out[name] = float("nan")
            continue
        res = linear_fit_r2(X, E, split)
        out[name] = res["r2"]
        pred, actual = res["prediction"].flatten(), E[~split].flatten()
        keep = torch.randperm(len(pred), generator=gen)[:SCATTER_POINTS]
        points += [dict(fit=name, predicted=float(p), actual=float(a)) for p, a in zip(pred[keep], actual[keep])]
    return out, points


def _random_mlp(model, seed: int):
    """A copy of ``model`` whose MLP is re-drawn at its initial distribution (the random-selector control)."""
    c = model.cfg
    fresh = fact_model(
        c.d_output, c.vocab_size - c.d_output, c.d_model, c.mlp_width, n_layers=c.n_layers, length=c.max_len, seed=seed
    )
    twin = copy.deepcopy(model)
    for blk, new in zip(twin.blocks, fresh.blocks):
        blk.mlp.load_state_dict(new.mlp.state_dict())
    return twin


def _training(cfg: GeometricMemorizationConfig, ctx: RunContext) -> None:
    """Claims 4-6: trained one-layer models at d = multiplier x R ceil(log2 N); superposition R²; transfer."""
    rows, curves, points, trans, tcurves = [], [], [], [], []
    for n in cfg.train_n_entities:
        k = code_length(n)
        for r in cfg.train_relations:
            for mult in cfg.width_multipliers:
                d = mult * r * k
                for seed in range(cfg.seeds):
                    key = dict(n=n, r=r, multiplier=mult, d=d, seed=seed)
                    facts = random_bijections(n, r, ctx.generator(f"train facts {n} {r} {mult} {seed}"))
                    seq, tgt = (t.to(ctx.device) for t in facts.queries())
                    model = fact_model(n, r, d, cfg.mlp_mult * d, seed=ctx.seed(f"init {n} {r} {mult} {seed}"))
                    model = model.to(ctx.device)
                    curve = []

                    def evaluate(updates: int, model=model, seq=seq, tgt=tgt, curve=curve, key=key) -> None:
                        m, _ = fact_margins(model, seq, tgt, cfg.chunk)
                        curve.append(dict(**key, step=updates, accuracy=float((m > 0).double().mean())))

                    t0 = time.perf_counter()
                    losses = train_facts(
                        model,
                        seq,
                        tgt,
                        steps=cfg.steps,
                        lr=cfg.lr,
                        evaluate=evaluate,
                        evaluate_every=cfg.evaluate_every,
                        chunk=cfg.train_chunk,
                    )
                    seconds = time.perf_counter() - t0
                    ctx.check_finite(f"loss (N = {n}, R = {r}, d = {d}, seed {seed})", losses[-1])
                    m, _ = fact_margins(model, seq, tgt, cfg.chunk)
                    m = m.double().cpu()
                    gen = ctx.generator(f"probe {n} {r} {mult} {seed}")
                    control = facts.shuffled(gen)
                    r2, pts = _superposition(model, facts, control, gen)
                    points += [dict(**key, **p) for p in pts]
                    curves += curve
                    first = next((c["step"] for c in curve if c["accuracy"] == 1.0), -1)
                    rows.append(
                        dict(
                            **key,
                            mlp_width=cfg.mlp_mult * d,
                            accuracy=float((m > 0).double().mean()),
                            min_margin=float(m.min()),
                            final_loss=losses[-1],
                            first_full_step=first,
                            r2=r2["real"],
                            r2_control=r2["control"],
                            mlp_params=_mlp_params(d, cfg.mlp_mult * d),
                            seconds=seconds,
                        )
                    )
                    if mult == cfg.transfer_multiplier:
                        new = random_bijections(n, r, ctx.generator(f"new facts {n} {r} {seed}"))
                        for mlp in ("trained", "random"):
                            twin = (
                                copy.deepcopy(model)
                                if mlp == "trained"
                                else _random_mlp(model, ctx.seed(f"random mlp {n} {r} {seed}"))
                            )
                            c = transfer(
                                twin,
                                new,
                                steps=cfg.transfer_steps,
                                lr=cfg.lr,
                                generator=ctx.generator(f"re-init {n} {r} {seed} {mlp}"),
                                evaluate_every=max(1, cfg.transfer_steps // 10),
                                device=ctx.device,
                                chunk=cfg.train_chunk,
                            )
                            tcurves += [dict(**key, mlp=mlp, step=s, accuracy=a) for s, a in c]
                            trans.append(dict(**key, mlp=mlp, steps=cfg.transfer_steps, accuracy=c[-1][1]))
    ctx.table("training", pd.DataFrame(rows))
    ctx.table("training_curve", pd.DataFrame(curves))
    ctx.table(
        "superposition_points",
        pd.DataFrame(points, columns=["n", "r", "multiplier", "d", "seed", "fit", "predicted", "actual"]),
    )
    ctx.table(
        "transfer", pd.DataFrame(trans, columns=["n", "r", "multiplier", "d", "seed", "mlp", "steps", "accuracy"])
    )
    ctx.table(
        "transfer_curve",
        pd.DataFrame(tcurves, columns=["n", "r", "multiplier", "d", "seed", "mlp", "step", "accuracy"]),
    )


def _assoc(cfg: GeometricMemorizationConfig, ctx: RunContext) -> None:
    """Claim 7 baseline: d fixed, MLP width grown (in order) until 100% recall; MLP parameters at that width."""
    rows = []
    for n in cfg.assoc_n_entities:
        facts = random_bijections(n, cfg.assoc_relations, ctx.generator(f"assoc facts {n}"))
        seq, tgt = (t.to(ctx.device) for t in facts.queries())
        for width in cfg.assoc_widths:
            model = fact_model(n, cfg.assoc_relations, cfg.assoc_d_model, width, seed=ctx.seed(f"assoc {n} {width}"))
            model = model.to(ctx.device)
            train_facts(model, seq, tgt, steps=cfg.steps, lr=cfg.lr, chunk=cfg.train_chunk)
            acc = float((fact_margins(model, seq, tgt, cfg.chunk)[0] > 0).double().mean())
            rows.append(
                dict(
                    n=n,
                    r=cfg.assoc_relations,
                    d=cfg.assoc_d_model,
                    mlp_width=width,
                    accuracy=acc,
                    mlp_params=_mlp_params(cfg.assoc_d_model, width),
                )
            )
            if acc == 1.0:
                break
    ctx.table("assoc", pd.DataFrame(rows, columns=["n", "r", "d", "mlp_width", "accuracy", "mlp_params"]))


def _twohop(cfg: GeometricMemorizationConfig, ctx: RunContext) -> None:
    """Claim 8: 1-layer model + CoT (trained on one-hop facts, chained) vs a 2-layer model trained on [s, r1, r2].

    Both sweeps climb ``twohop_dims`` in order: CoT stops at its first 100%, no-CoT at its first 100% or once it
    has failed at d >= 2 d_min(CoT), where the claim's verdict no longer depends on larger d."""
    rows = []
    r = cfg.twohop_relations
    for n in cfg.twohop_n_entities:
        facts = random_bijections(n, r, ctx.generator(f"twohop facts {n}"))
        one_seq, one_tgt = (t.to(ctx.device) for t in facts.queries())
        two_seq, two_tgt, _ = facts.chains(2)
        two_seq, two_tgt = two_seq.to(ctx.device), two_tgt.to(ctx.device)
        d_cot = float("inf")
        for d in cfg.twohop_dims:
            t0 = time.perf_counter()
            cot = fact_model(n, r, d, cfg.mlp_mult * d, seed=ctx.seed(f"cot {n} {d}")).to(ctx.device)
            train_facts(cot, one_seq, one_tgt, steps=cfg.steps, lr=cfg.lr, chunk=cfg.train_chunk)
            acc = float((cot_margins(cot, facts, cfg.chunk, ctx.device) > 0).double().mean())
            rows.append(dict(n=n, r=r, d=d, mode="cot", n_layers=1, accuracy=acc, seconds=time.perf_counter() - t0))
            if acc == 1.0:
                d_cot = d
                break
        for d in cfg.twohop_dims:
            t0 = time.perf_counter()
            deep = fact_model(n, r, d, cfg.mlp_mult * d, n_layers=2, length=3, seed=ctx.seed(f"no-cot {n} {d}")).to(
                ctx.device
            )
            train_facts(deep, two_seq, two_tgt, steps=cfg.steps, lr=cfg.lr, chunk=cfg.train_chunk)
            acc = float((fact_margins(deep, two_seq, two_tgt, cfg.chunk)[0] > 0).double().mean())
            rows.append(dict(n=n, r=r, d=d, mode="no-cot", n_layers=2, accuracy=acc, seconds=time.perf_counter() - t0))
            if acc == 1.0 or d >= 2 * d_cot:
                break
    ctx.table("twohop", pd.DataFrame(rows, columns=["n", "r", "d", "mode", "n_layers", "accuracy", "seconds"]))


@study(
    "geometric-memorization",
    title="Geometric factual recall: superposed sign codes and a ReLU selector MLP memorise R bijections at "
    "d = O(R log N)",
    paper=PAPER,
    config=GeometricMemorizationConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
    # tiny models and (chunk, N) logit blocks: one thread on a shared box
    cpu_threads=1,
)
def run(cfg: GeometricMemorizationConfig, ctx: RunContext) -> None:
    ctx.say(f"exact construction on N = {cfg.construction_n_entities} x R = {cfg.construction_relations}")
    _construction(cfg, ctx)
    ctx.say(f"chain-of-thought two-hop at N = {cfg.cot_n_entities}, R = {cfg.cot_relations}")
    _cot(cfg, ctx)
    ctx.say(
        f"training {len(cfg.train_n_entities) * len(cfg.train_relations) * len(cfg.width_multipliers) * cfg.seeds} "
        f"model(s), {cfg.steps} full-batch steps"
    )
    _training(cfg, ctx)
    if cfg.assoc_n_entities:
        ctx.say("associative-memory baseline")
    _assoc(cfg, ctx)
    if cfg.twohop_n_entities:
        ctx.say("two-hop: CoT vs 2 layers")
    _twohop(cfg, ctx)
    ctx.scalar(
        "trained_mlp_params_per_fact",
        float(
            np.mean(
                [_mlp_params(row.d, row.mlp_width) / (row.n * row.r) for row in ctx.tables["training"].itertuples()]
            )
        ),
    )
    figure_construction(ctx, ctx.tables["margin_hist"], ctx.tables["construction"], ctx.tables["tight"])
    figure_capacity(ctx, ctx.tables["training"])
    figure_superposition(ctx, ctx.tables["superposition_points"])
    figure_transfer(ctx, ctx.tables["transfer_curve"])
