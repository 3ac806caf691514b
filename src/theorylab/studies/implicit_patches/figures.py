"""implicit-patches: its figures, drawn from the run's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from theorylab.core import RunContext
from theorylab.core.plotting import color, new_figure
from theorylab.data.random_prompts import embedded_prompt_pair
from theorylab.nn.blocks import BlockStack, make_stack
from theorylab.probes.weight_patches import (
    chain_patches,
    spectrum,
)
from theorylab.studies.implicit_patches.config import ImplicitPatchesConfig
from theorylab.studies.implicit_patches.judges import BOUND

DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}


def _stack(cfg: ImplicitPatchesConfig, ctx: RunContext, family: str, d: int, seed: int, depth: int) -> BlockStack:
    extra = dict(n_experts=cfg.n_experts, top_k=cfg.top_k) if family == "moe" else {}
    init = int(ctx.rng(f"stack/{family}/{d}/{seed}").integers(2**62))
    return make_stack(
        family, depth, d, seed=init, hidden_mult=cfg.mlp_mult, n_heads=cfg.n_heads, g_std=cfg.g_std, **extra
    )


def _prompt(
    cfg: ImplicitPatchesConfig, ctx: RunContext, d: int, c: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Embedded prompt (context + query) and an alternative query token's embedding (same context)."""
    return embedded_prompt_pair(cfg.vocab_size, d, c, ctx.generator(f"prompt/{d}/{c}/{seed}"))


def figure_error_vs_depth(ctx: RunContext, sweep: pd.DataFrame) -> None:
    ok = sweep[sweep["feasible"]]
    dtypes = list(ok["dtype"].unique())
    fig, axes = new_figure(ncols=len(dtypes), width=4.2 * len(dtypes))
    axes = np.atleast_1d(axes)
    for ax, dtype in zip(axes, dtypes):
        t = ok[ok["dtype"] == dtype].assign(rel=lambda f: f["error"] / (1 + f["scale"]))
        fams = list(t["family"].unique())
        for i, fam in enumerate(fams):
            g = t[t["family"] == fam].groupby("depth")["rel"]
            shift = 1 + 0.04 * (i - len(fams) / 2)
            ax.plot(g.median().index * shift, g.median().values, "o", color=color(i), ms=4, label=f"{fam} (median)")
            ax.plot(g.max().index * shift, g.max().values, "v", color=color(i), ms=4, mfc="none", label=f"{fam} (max)")
        ax.axhline(float(torch.finfo(DTYPES[dtype]).eps), color="grey", ls=":", lw=1, label="machine epsilon")
        ax.axhline(BOUND[dtype], color="k", ls="--", lw=0.8, label="claim bound")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("depth (layer of the stack)")
        ax.set_ylabel("max |Δ| / (1 + max |out|)")
        ax.set_title(f"patched without context vs with context, {dtype}", fontsize=8)
    axes[0].legend(fontsize=5, ncol=2)
    ctx.figure("patch_error_vs_depth", fig)


def figure_spectrum(ctx: RunContext, cfg: ImplicitPatchesConfig) -> None:
    d = cfg.d_models[0]
    stack = _stack(cfg, ctx, "gemma", d, 0, 1)
    X, _ = _prompt(cfg, ctx, d, cfg.contexts[-1], 0)
    res = chain_patches(stack, X, "full")
    fig, ax = new_figure()
    for i, (name, f) in enumerate(res.patches[0].factors.items()):
        s = spectrum(f).numpy()
        s = np.maximum(s[:8], 1e-300)
        ax.bar(np.arange(len(s)) + 0.27 * (i - 1), s, width=0.27, color=color(i), label=f"ΔW_{name[2:]}")
    ax.set_yscale("log")
    ax.set_xlabel("singular value index")
    ax.set_ylabel("singular value (float64)")
    ax.set_title(f"Gemma block, d = {d}, context {cfg.contexts[-1]}: one non-zero singular value per patch", fontsize=8)
    ax.legend(fontsize=7)
    ctx.figure("patch_spectrum", fig)


def figure_generation(ctx: RunContext, gen: pd.DataFrame) -> None:
    if gen.empty:
        return
    fig, ax = new_figure()
    for i, ((name, length), g) in enumerate(gen.groupby(["model", "prompt"])):
        same = bool((g["token_context"] == g["token_patched"]).all())
        ax.plot(
            g["step"],
            g["logit_error"].clip(lower=1e-18),
            "o-",
            ms=3,
            color=color(i),
            label=f"{name}, prompt {length}: tokens identical = {same}",
        )
    ax.axhline(1e-8, color="k", ls="--", lw=0.8, label="1e-8 (claim bound / (1 + max|logit|))")
    ax.set_yscale("log")
    ax.set_xlabel("generated token")
    ax.set_ylabel("max |Δ logit| at that step (float64)")
    ax.set_title("greedy generation: with context vs patched without, patches recomputed per token", fontsize=8)
    ax.legend(fontsize=6)
    ctx.figure("generation_trace", fig)


def figure_icl(ctx: RunContext, icl: pd.DataFrame, ft: pd.DataFrame) -> None:
    fig, (ax, bx) = new_figure(ncols=2, width=8.4)
    g = icl.groupby("i")["increment_norm"]
    m, lo, hi = g.mean(), g.quantile(0.25), g.quantile(0.75)
    ax.plot(m.index, m.values, color=color(0), label="‖ΔW_i‖_F (C≤i vs C≤i−1), mean")
    ax.fill_between(m.index, lo.values, hi.values, color=color(0), alpha=0.25, label="25-75% over prompts")
    ax.plot(icl.groupby("i")["patch_norm"].mean(), color=color(1), label="‖ΔW(C≤i)‖_F")
    ax.set_yscale("log")
    ax.set_xlabel("context examples i")
    ax.set_ylabel("Frobenius norm")
    ax.set_title("implicit patches converge as the context grows", fontsize=8)
    ax.legend(fontsize=7)
    bx.plot(icl.groupby("i")["sq_error"].mean(), color=color(0), label="implicit (= model with context)")
    bx.plot(ft.groupby("i")["finetuned_sq_error"].mean(), color=color(2), label="explicit online fine-tuning of W₁")
    bx.set_yscale("log")
    bx.set_xlabel("context examples i")
    bx.set_ylabel("query squared error (mean)")
    bx.set_title("in-context regression: implicit vs explicit update", fontsize=8)
    bx.legend(fontsize=7)
    ctx.figure("icl_patch_norms", fig)
