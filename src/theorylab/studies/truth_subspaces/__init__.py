"""truth-subspaces: linear truth encodings emerging in a one-layer transformer.

Paper: Ravfogel, Yehudai, Linzen, Bruna & Bietti, *Emergence of Linear Truth Encodings in Language Models*,
arXiv 2510.15804 (NeurIPS 2025). Sequences ``(x, y, x', y')`` are entirely true (``y = g(x)``, ``y' = g(x')``) with
probability ρ and otherwise carry random attributes (``data.truth_cooccurrence``), so a model that infers the truth
of its context lowers its loss on ``y'`` from the memorise-only level ``L_mem`` to the Bayes level ``L_Bayes``
(``theory.truth_bayes``). A one-layer attention-only ``nn.ToyTransformer`` with a final LayerNorm is trained online
(``train.online_lm``); linear probes at logged steps (``probes.linear_probe``) show the two phases: facts first,
a linearly decodable truth feature much later. The paper preset adds depth, N and ρ sweeps, the no-LayerNorm
ablation, and our own 4-layer LM on synthetic documents; an optional local-weights path repeats the
confidence/probe check on a user's own pretrained model and CounterFact file.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.truth_cooccurrence import (
    corrupt_one_fact,
    document_vocab,
    fact_table,
    truth_bijection,
    truth_cooccurrence,
    truth_documents,
)
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.counterfact import counterfact_context_check
from theorylab.probes.linear_probe import linear_probe, probe_over_training
from theorylab.studies.truth_subspaces.config import PRESETS, TruthSubspacesConfig
from theorylab.studies.truth_subspaces.figures import (
    figure_norm_by_context,
    figure_probe_sites,
    figure_rho_sweep,
    figure_two_phase,
)
from theorylab.studies.truth_subspaces.judges import TEST_RHO_MAX, claims
from theorylab.theory.truth_bayes import bayes_y2_logprob, truth_bayes
from theorylab.train.online_lm import train_online_lm

PAPER = "Ravfogel, Yehudai, Linzen, Bruna & Bietti, arXiv 2510.15804 (NeurIPS 2025)"
POSITIONS = {"y": 1, "x2": 2}  # residual positions probed: the y token and the x' token
EMBEDDINGS = ("embed", "pos")  # the parameters cfg.weight_decay acts on: token embeddings and learned positions


def toy_model(n: int, d: int, n_layers: int, final_norm: str, seed: int) -> ToyTransformer:
    """The card's model: attention-only, 1 head, no pre-attention norm, learned positions, N(0, 1/d) embeddings and
    untied unembedding, and a final norm of kind ``final_norm`` ('layer' or 'none') before the readout."""
    return ToyTransformer(
        d_model=d,
        n_layers=n_layers,
        n_heads=1,
        mlp_width=0,
        norm="none",
        final_norm=True,
        final_norm_kind=final_norm,
        causal=True,
        positional="learned",
        max_len=4,
        vocab_size=2 * n,
        embedding_std=d**-0.5,
        seed=seed,
    )


def _sites(model: ToyTransformer, every: bool) -> dict[str, tuple[str, int]]:
    """Probe sites -> (hook name, position). 'pre' is the residual entering the final norm, 'post' leaves it."""
    last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
    if not every:
        return {"y/post": ("hook_final", 1), "y/pre": (last, 1), "x2/post": ("hook_final", 2)}
    sites = {}
    for pos, t in POSITIONS.items():
        for layer in range(model.cfg.n_layers - 1):
            sites[f"{pos}/L{layer}"] = (f"blocks.{layer}.hook_resid_post", t)
        sites[f"{pos}/pre"] = (last, t)
        sites[f"{pos}/post"] = ("hook_final", t)
    return sites


def _bayes(cfg: TruthSubspacesConfig, ctx: RunContext) -> None:
    """Claim 1: the Bayes and memorise-only predictors on generated sequences vs the closed forms."""
    rows, theory = [], []
    for n in cfg.n_entities:
        for rho in cfg.rhos:
            th = truth_bayes(n, rho)
            theory.append(
                dict(
                    n=n,
                    rho=rho,
                    pi=th.pi,
                    q_true=th.q_true,
                    f_true=th.f_true,
                    loss_bayes=th.loss_bayes,
                    loss_mem=th.loss_mem,
                )
            )
    ctx.table("theory", pd.DataFrame(theory))
    n, rho = cfg.n_entities[0], cfg.rhos[0]
    gen = ctx.generator("bayes")
    g = truth_bijection(n, gen)
    batch = truth_cooccurrence(n, rho, cfg.bayes_n, g, gen)
    th = truth_bayes(n, rho)
    for name, aware, closed in (("bayes", True, th.loss_bayes), ("memorise", False, th.loss_mem)):
        nll = -bayes_y2_logprob(batch.tokens, g, rho, truth_aware=aware)
        rows.append(
            dict(
                predictor=name,
                n=n,
                rho=rho,
                samples=cfg.bayes_n,
                empirical=float(nll.mean()),
                se=float(nll.std() / math.sqrt(len(nll))),
                closed_form=closed,
            )
        )
    ctx.table("bayes", pd.DataFrame(rows))


def _runs(cfg: TruthSubspacesConfig) -> list[tuple[int, int, float, str]]:
    """(N, layers, ρ, final norm): the N x layers grid at the base ρ, the ρ sweep and the ablation at the base."""
    n0, l0, r0 = cfg.n_entities[0], cfg.n_layers[0], cfg.rhos[0]
    runs = [(n, layers, r0, "layer") for n in cfg.n_entities for layers in cfg.n_layers]
    runs += [(n0, l0, rho, "layer") for rho in cfg.rhos[1:]]
    runs += [(n0, l0, r0, kind) for kind in cfg.final_norms[1:]]
    return list(dict.fromkeys(runs))


def _toy_run(
    cfg: TruthSubspacesConfig,
    ctx: RunContext,
    n: int,
    n_layers: int,
    rho: float,
    kind: str,
    seed: int,
    out: dict[str, list],
) -> None:
    key = dict(n=n, n_layers=n_layers, rho=rho, final_norm=kind, seed=seed)
    tag = f"N={n} L={n_layers} rho={rho} norm={kind} seed={seed}"
    gen = ctx.generator(f"data {tag}")
    g = truth_bijection(n, ctx.generator(f"bijection N={n} seed={seed}"))
    # Both probe classes need rows: above ρ = 0.9 the test set is drawn at 0.9 (>= 10% false contexts) and the
    # y'-loss is reweighted to the run's ρ, which is exact since E[loss] = ρ E[loss | true] + (1-ρ) E[loss | false].
    test_rho = min(rho, TEST_RHO_MAX)
    test = truth_cooccurrence(n, test_rho, cfg.test_n, g, gen)
    model = toy_model(n, cfg.d_model, n_layers, kind, ctx.seed(f"model {tag}")).to(ctx.device)
    sites = _sites(model, cfg.probe_every_site)
    hooks = sorted({h for h, _ in sites.values()})
    x_in, truth = test.tokens[:, :3].to(ctx.device), test.true
    y2, target = test.tokens[:, 3].to(ctx.device), (n + g[test.tokens[:, 0]]).to(ctx.device)
    features: dict[int, dict[str, np.ndarray]] = {}
    last = cfg.evaluate_at[-1]

    def measure(m: ToyTransformer, step: int) -> dict:
        logits, cache = m.run_with_cache(x_in, hooks)
        ctx.check_finite("logits", logits, step)
        mem = float((logits[:, 0, n:].argmax(-1) + n == target).float().mean())
        nll = -logits[:, 2].log_softmax(-1).gather(1, y2[:, None])[:, 0].cpu()
        resid = cache[f"blocks.{n_layers - 1}.hook_resid_post"][:, 2].norm(dim=-1).cpu()
        features[step] = {s: cache[h][:, t].double().cpu().numpy() for s, (h, t) in sites.items()}
        if step in (cfg.evaluate_at[0], last):
            k = cfg.histogram_n
            out["norms"] += [
                dict(**key, step=step, true=bool(a), norm=float(b))
                for a, b in zip(truth[:k].tolist(), resid[:k].tolist())
            ]
        l_true, l_false = float(nll[truth].mean()), float(nll[~truth].mean())
        loss = float(nll.mean()) if test_rho == rho else rho * l_true + (1 - rho) * l_false
        return dict(
            **key,
            step=step,
            mem_acc=mem,
            loss_y2=loss,
            loss_y2_true=l_true,
            loss_y2_false=l_false,
            norm_x2_true=float(resid[truth].mean()),
            norm_x2_false=float(resid[~truth].mean()),
        )

    def sample(b: int, generator: torch.Generator) -> torch.Tensor:
        return truth_cooccurrence(n, rho, b, g, generator).tokens

    measured, _ = train_online_lm(
        model,
        sample,
        steps=cfg.steps,
        batch=cfg.batch,
        lr=cfg.lr,
        generator=gen,
        targets=(1, 2, 3),
        evaluate_at=cfg.evaluate_at,
        measure=measure,
        device=ctx.device,
        progress=lambda it, d: ctx.progress(it, f"{d} ({tag})"),
        weight_decay=cfg.weight_decay,
        decay=EMBEDDINGS,
    )
    out["curve"] += [measured[s] for s in sorted(measured)]
    half = cfg.test_n // 2
    rows = probe_over_training(features, {s: (lambda c, s=s: c[s]) for s in sites}, truth.numpy(), half)
    out["probes"] += [dict(**key, **r) for r in rows]


def _own_lm(cfg: TruthSubspacesConfig, ctx: RunContext) -> None:
    """Claim 9: our own LM on synthetic documents; P(correct later attribute) after one false fact, and a probe on
    the mean residual of the context."""
    s, r, a, f = cfg.lm_n_subjects, cfg.lm_n_relations, cfg.lm_n_attributes, cfg.lm_n_facts
    gen = ctx.generator("own LM data")
    table = fact_table(s, r, a, ctx.generator("own LM facts"))
    voc = document_vocab(s, r, a)
    model = ToyTransformer(
        d_model=cfg.lm_d_model,
        n_layers=cfg.lm_n_layers,
        n_heads=cfg.lm_n_heads,
        mlp_width=4 * cfg.lm_d_model,
        norm="layer",
        final_norm=True,
        causal=True,
        positional="learned",
        max_len=3 * f,
        vocab_size=voc["size"],
        seed=ctx.seed("own LM model"),
    ).to(ctx.device)
    attrs = [3 * k + 2 for k in range(f)]
    train_online_lm(
        model,
        lambda b, gg: truth_documents(table, a, f, cfg.lm_rho, b, gg).tokens,
        steps=cfg.lm_steps,
        batch=cfg.lm_batch,
        lr=cfg.lm_lr,
        generator=gen,
        targets=attrs,
        device=ctx.device,
        progress=lambda it, d: ctx.progress(it, f"{d} (own LM)"),
    )
    model.eval()
    clean = truth_documents(table, a, f, 1.0, cfg.lm_test_n, gen)
    dirty = corrupt_one_fact(clean, table, a, 0, gen)
    t = attrs[-1]
    rows = []
    with torch.no_grad():
        for name, docs in (("all_true", clean), ("one_false", dirty)):
            logits = model(docs.tokens[:, :t].to(ctx.device))[:, t - 1].log_softmax(-1)
            lp = logits.gather(1, docs.tokens[:, t : t + 1].to(ctx.device))[:, 0].cpu()
            rows.append(
                dict(metric=f"logp_last_{name}", value=float(lp.mean()), se=float(lp.std() / math.sqrt(len(lp))))
            )
        mixed = truth_documents(table, a, f, 0.5, cfg.lm_test_n, gen)
        _, cache = model.run_with_cache(
            mixed.tokens[:, :t].to(ctx.device), [f"blocks.{cfg.lm_n_layers - 1}.hook_resid_post"]
        )
        feats = next(iter(cache.values())).mean(1).double().cpu().numpy()
    probe = linear_probe(feats, mixed.true.numpy(), cfg.lm_test_n // 2)
    rows.append(dict(metric="probe_mean_residual", value=probe.score, se=math.nan))
    ctx.table("own_lm", pd.DataFrame(rows))


@study(
    "truth-subspaces",
    title="Linear truth encodings emerging in a one-layer transformer (truth co-occurrence, two-phase dynamics, "
    "final LayerNorm)",
    paper=PAPER,
    config=TruthSubspacesConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
    # a 4-token, d = 64 model: one thread is fastest on a shared box
    cpu_threads=1,
)
def run(cfg: TruthSubspacesConfig, ctx: RunContext) -> None:
    ctx.say(f"Bayes check on {cfg.bayes_n} sequences")
    _bayes(cfg, ctx)
    out: dict[str, list] = {"curve": [], "probes": [], "norms": []}
    for n, n_layers, rho, kind in _runs(cfg):
        for seed in range(cfg.seeds):
            _toy_run(cfg, ctx, n, n_layers, rho, kind, seed, out)
    ctx.table("curve", pd.DataFrame(out["curve"]))
    ctx.table("probes", pd.DataFrame(out["probes"]))
    ctx.table("norms", pd.DataFrame(out["norms"]))
    if cfg.lm_steps:
        ctx.say(f"own LM: {cfg.lm_n_layers} layers, d = {cfg.lm_d_model}, {cfg.lm_steps} steps")
        _own_lm(cfg, ctx)
    if cfg.local_model_path is not None:
        rows = counterfact_context_check(
            cfg.local_model_path, cfg.counterfact_path, cfg.counterfact_prompts, ctx.device
        )
        feats = np.stack([r.pop("feature") for r in rows])
        labels = np.array([r["context"] == "all_true" for r in rows])
        order = np.argsort([r["prompt"] for r in rows], kind="stable")
        probe = linear_probe(feats[order], labels[order], 0.5)
        ctx.table("pretrained", pd.DataFrame(rows))
        ctx.scalar("pretrained_probe", probe.score)
    base = dict(n=cfg.n_entities[0], n_layers=cfg.n_layers[0], rho=cfg.rhos[0])
    figure_two_phase(ctx, ctx.tables["curve"], ctx.tables["probes"], ctx.tables["theory"], base)
    figure_probe_sites(ctx, ctx.tables["probes"])
    figure_rho_sweep(ctx, ctx.tables["probes"], base)
    figure_norm_by_context(ctx, ctx.tables["norms"], base)
