"""implicit-patches: a context is an exact, token-dependent rank-1 patch of the MLP weights.

Papers: A. Goldwaser, M. Munn, J. Gonzalvo, B. Dherin, "Equivalence of Context and Parameter
Updates in Modern Transformer Blocks", arXiv 2511.17864 (2025), after B. Dherin, M. Munn, H.
Mazzawi, M. Wunder, J. Gonzalvo, "Learning without training: the implicit dynamics of in-context
learning", arXiv 2507.16003 (2025).

For six block families (vanilla, Llama, Gemma, post-norm, parallel, top-k MoE) and stacks of
them, the study computes the patches that make the query-only run reproduce the with-context run
(:mod:`theorylab.theory.patches`, :mod:`theorylab.probes.weight_patches`) and measures the gap in
float64 and float32; checks rank 1, the Gemma norm-scale patch, the controllability failure, token
dependence; patches real Hugging Face modules (Gemma 3, Llama, Mixtral; random-init, optionally
self-trained, or local weights) through greedy generation; and repeats Dherin et al.'s in-context
linear-regression experiment (implicit patch vs explicit fine-tuning, patch norms vs context length).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext, study
from theorylab.data.tasks import in_context_linear_regression
from theorylab.data.text import random_span, word_stream
from theorylab.nn.hf import small_config
from theorylab.nn.regression_stack import in_context_regression_stack
from theorylab.probes.weight_patches import (
    dead_scale_refusals,
    depth_report,
    hf_dead_scale_refusals,
    hf_patch_exactness,
    patched_greedy,
)
from theorylab.studies.implicit_patches.config import PRESETS, ImplicitPatchesConfig
from theorylab.studies.implicit_patches.figures import (
    DTYPES,
    _prompt,
    _stack,
    figure_error_vs_depth,
    figure_generation,
    figure_icl,
    figure_spectrum,
)
from theorylab.studies.implicit_patches.judges import BOUND, HF_SOURCE, claims
from theorylab.theory.patches import NotControllable
from theorylab.train.causal_lm import train_hf_causal_lm
from theorylab.train.in_context_regression import implicit_vs_explicit, train_in_context_regression

PAPER = "Goldwaser, Munn, Gonzalvo, Dherin, arXiv 2511.17864 (2025); Dherin et al., arXiv 2507.16003 (2025)"


FULL_MODE = ("llama", "gemma", "postnorm")  # families whose MLP input sees the context (input patches meaningful)


def _modes(cfg: ImplicitPatchesConfig, family: str) -> list[str]:
    # "full" differs from "output" only where the MLP input sees the context.
    return [m for m in cfg.modes if m == "output" or family in FULL_MODE] or ["output"]


def _sweep(cfg: ImplicitPatchesConfig, ctx: RunContext) -> pd.DataFrame:
    depth = max(cfg.n_layers)
    rows = []
    combos = [(f, d, c, s) for f in cfg.families for d in cfg.d_models for c in cfg.contexts for s in range(cfg.seeds)]
    for family, d, c, seed in ctx.progress(combos, "patch sweep"):
        base = _stack(cfg, ctx, family, d, seed, depth)
        X64, other64 = _prompt(cfg, ctx, d, c, seed)
        for dtype in cfg.dtypes:
            stack = base if dtype == "float64" else copy.deepcopy(base).to(DTYPES[dtype])
            X, other = X64.to(DTYPES[dtype]), other64.to(DTYPES[dtype])
            for mode in _modes(cfg, family):
                case = dict(family=family, mode=mode, d=d, context=c, seed=seed, dtype=dtype)
                try:  # rank and controls in float64 only (float32 singular values sit at 1e-7 noise)
                    report = depth_report(stack, X, mode, other=other if dtype == "float64" else None)
                except NotControllable as err:
                    ctx.log(f"{family} d={d} c={c} seed={seed} {dtype} {mode}: {err}")
                    rows.append(dict(case, depth=depth, error=math.inf, scale=0.0, feasible=False))
                    continue
                rows.extend(dict(case, **report[k - 1]) for k in cfg.n_layers)
    table = pd.DataFrame(rows)
    table["bound"] = table["dtype"].map(BOUND) * (1 + table["scale"])
    ctx.table("sweep", table)
    return table


def _controllability(cfg: ImplicitPatchesConfig, ctx: RunContext) -> pd.DataFrame:
    """Gemma blocks with one entry of (1 + g₄) set to 0: the construction must refuse."""
    rows = []
    for d in cfg.d_models:
        for c in cfg.contexts:
            for seed in range(cfg.seeds):
                block = _stack(cfg, ctx, "gemma", d, seed, 1).blocks[0]
                j = int(ctx.rng(f"dead/{d}/{c}/{seed}").integers(d))
                X, _ = _prompt(cfg, ctx, d, c, seed)
                target_j, tries = dead_scale_refusals(block, X, j, _modes(cfg, "gemma"))
                rows += [
                    dict(
                        source="GemmaBlock",
                        d=d,
                        context=c,
                        seed=seed,
                        mode=mode,
                        coordinate=j,
                        unreachable=target_j,
                        flagged=flagged,
                        message=message,
                    )
                    for mode, flagged, message in tries
                ]
    return pd.DataFrame(rows)


def _hf_config(cfg: ImplicitPatchesConfig, arch: str) -> dict:
    return small_config(
        arch,
        hidden=cfg.hf_d_model,
        intermediate=cfg.hf_mlp_width,
        layers=cfg.hf_n_layers,
        heads=cfg.hf_n_heads,
        kv_heads=cfg.hf_n_kv_heads,
        head_dim=cfg.hf_head_dim,
        vocab=cfg.hf_vocab_size,
        window=cfg.hf_window,
        global_every=cfg.hf_global_every,
        experts=cfg.hf_n_experts,
        max_positions=max(4096, max(cfg.hf_prompt_lengths) + cfg.hf_generate + 8),
    )


def _hf_models(cfg: ImplicitPatchesConfig, ctx: RunContext):
    """(name, arch, float64 model, prompt source) for every model the HF part checks."""
    from theorylab.nn.hf import load_local_causal_lm, random_init

    for arch in cfg.hf_archs:
        seed = ctx.seed(f"hf/init/{arch}")
        yield f"{arch} (random init)", arch, random_init(arch, seed=seed, **_hf_config(cfg, arch)).to(ctx.device), None
    if cfg.hf_train_steps:  # weights moved away from Gaussian by a few hundred steps on a real text
        _, stream = word_stream(cfg.hf_corpus, cfg.hf_vocab_size)
        seed = ctx.seed("hf/init/trained")
        model = random_init("gemma3", seed=seed, dtype=torch.float32, init_std=0.02, **_hf_config(cfg, "gemma3")).to(
            ctx.device
        )
        losses = train_hf_causal_lm(
            model,
            stream,
            cfg.hf_train_steps,
            generator=ctx.generator("hf/train"),
            progress=ctx.progress,
            check=ctx.check_finite,
            device=ctx.device,
        )
        ctx.table("hf_training", pd.DataFrame(dict(step=np.arange(len(losses)), loss=losses)))
        yield "gemma3 (self-trained)", "gemma3", model.double(), stream
    if cfg.hf_local:
        path = Path(cfg.hf_local).expanduser()
        model, _ = load_local_causal_lm(path, ctx.device)
        yield f"local: {path.name}", getattr(model.config, "model_type", "?"), model.double(), None


def _hf(cfg: ImplicitPatchesConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    from theorylab.nn.hf import full_precision_norms

    exact, gen, control = [], [], []
    for name, arch, model, stream in _hf_models(cfg, ctx):
        for length in cfg.hf_prompt_lengths:
            g = ctx.generator(f"hf/prompt/{name}/{length}")
            if stream is not None:
                ids = random_span(stream, length, g)[None].to(ctx.device)
            else:
                ids = torch.randint(0, model.config.vocab_size, (1, length), generator=g).to(ctx.device)
            key = dict(model=name, arch=arch, prompt=length)
            exact += [dict(key, **r) for r in hf_patch_exactness(model, ids, [DTYPES[dt] for dt in cfg.hf_dtypes])]
            with full_precision_norms(model):
                trace = patched_greedy(model, ids, cfg.hf_generate)
            gen += [dict(key, **r, norms="float64") for r in trace.rows()]
            ctx.log(f"{name}, prompt {length}: {len(trace.tokens_context)} greedy tokens identical: {trace.identical}")
        if arch == "gemma3" and "random init" in name:  # one entry of layer 0's post-feedforward scale 1 + w set to 0
            length = cfg.hf_prompt_lengths[0]
            j = int(ctx.rng("hf/dead").integers(model.config.hidden_size))
            g = ctx.generator("hf/dead")
            ids = torch.randint(0, model.config.vocab_size, (1, length), generator=g).to(ctx.device)
            control += [
                dict(
                    source=f"{HF_SOURCE} layer 0",
                    d=model.config.hidden_size,
                    context=length - 1,
                    seed=0,
                    mode=mode,
                    coordinate=j,
                    unreachable=np.nan,
                    flagged=flagged,
                    message=message,
                )
                for mode, flagged, message in hf_dead_scale_refusals(model, ids, j)
            ]
        del model
    return pd.DataFrame(exact), pd.DataFrame(gen), pd.DataFrame(control)


def _icl(cfg: ImplicitPatchesConfig, ctx: RunContext) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    seed = int(ctx.rng("icl/init").integers(2**62))
    model = in_context_regression_stack(cfg.icl_dim, cfg.icl_n_layers, cfg.icl_mlp_mult, cfg.g_std, seed=seed)
    log = train_in_context_regression(
        model,
        steps=cfg.icl_steps,
        tasks=cfg.icl_batch,
        length=cfg.icl_length,
        dim=cfg.icl_dim,
        lr=cfg.icl_lr,
        generator=ctx.generator("icl/train"),
        progress=ctx.progress,
        check=ctx.check_finite,
    )
    model.requires_grad_(False)
    test = in_context_linear_regression(cfg.icl_test, cfg.icl_length, cfg.icl_dim, generator=ctx.generator("icl/test"))
    rows, ft_rows = implicit_vs_explicit(model, test.tokens, test.y_query, cfg.icl_ft_lr, progress=ctx.progress)
    no_ctx = model(test.tokens[:, -1:])[:, -1, -1]
    ctx.scalar("icl_no_context_mse", float((no_ctx - test.y_query).pow(2).mean()))
    return pd.DataFrame(log), pd.DataFrame(rows), pd.DataFrame(ft_rows)


@study(
    "implicit-patches",
    title="Context as exact token-dependent rank-1 weight patches in modern transformer blocks",
    paper=PAPER,
    config=ImplicitPatchesConfig,
    presets=PRESETS,
    family="transformers",
    claims=claims,
    # Every op here is tiny (one query row, d <= 64): intra-op threading costs more than it gives (HF part on 2
    # cores: 3.5 s with 2 threads, 1.0 s with 1).
    cpu_threads=1,
)
def run(cfg: ImplicitPatchesConfig, ctx: RunContext) -> None:
    sweep = _sweep(cfg, ctx)
    figure_error_vs_depth(ctx, sweep)
    if "gemma" in cfg.families:
        figure_spectrum(ctx, cfg)
    control = _controllability(cfg, ctx)
    exact = gen = pd.DataFrame()
    if cfg.hf:
        try:
            exact, gen, hf_control = _hf(cfg, ctx)
        except ImportError as err:
            ctx.log(f"Hugging Face part skipped: {err}")
            ctx.scalar("hf_skipped", str(err))
        else:
            control = pd.concat([control, hf_control], ignore_index=True)
            ctx.table("hf_exact", exact)
            ctx.table("generation", gen)
            figure_generation(ctx, gen)
    ctx.table("controllability", control)
    log, icl, ft = _icl(cfg, ctx)
    ctx.table("icl_training", log)
    ctx.table("icl_patches", icl)
    ctx.table("icl_finetune", ft)
    figure_icl(ctx, icl, ft)
